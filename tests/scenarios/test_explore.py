"""The explorer (`emqlab.scenarios.explore`): every schedule of a small world, on the real scripts.

What it must find, and what it must not: fencing on holds in every order of the bounded space, for every
design, progress included; fencing off breaks, at the shortest, by a worker that writes after the reaper took
its job and another claimed it (current_fence); each defect planted in the scripts (tests/planted.py)
is found, naming the invariant that catches it; a model of EchoMQ's extend (tests/scenarios/echomq_like_extend.lua,
in our own words) resurrects a reaped job. Each reduction (symmetry, sleep sets) and the canonical form agree
with the full, exact search on small worlds. A counterexample played again breaks at its last step, on
fakeredis and on a live server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from emqlab.core.errors import BadParameter
from emqlab.core.words import HEADLINE_WORDS, headline_words
from emqlab.scenarios import load
from emqlab.scenarios.explore import (CHECKS, PROGRESS, Params, Step, explore, explore_params, independent, replay,
                                      replay_scale, state_space, steps_text)
from emqlab.store.scripts import QUEUE, family, source

from planted import planted

HERE = Path(__file__).parent
ECHOMQ_EXTEND = HERE / "echomq_like_extend.lua"
ECHOMQ_LIKE = {"extend_active": ECHOMQ_EXTEND, "complete": HERE / "echomq_like_complete.lua",
               "claim": HERE / "echomq_like_claim.lua"}
DEPTH = 12  # the must-hold's bound: every schedule of up to 12 steps
SAFETY = [n for n in CHECKS if n != PROGRESS]
PLANTED = planted()


def actions(tl) -> list[tuple[str, str]]:
    return [(s["actor"], s["action"]) for s in tl.verdict.counterexample]


@pytest.mark.parametrize("design", ["none", "per-job", "sweep", "session"])
def test_fencing_on_holds_in_every_order_of_the_bounded_space(design):
    v = explore(workers=2, jobs=1, depth=DEPTH, design=design, fencing="on").verdict
    assert v.complete and v.violations == 0 and v.counterexample is None
    assert v.depth_reached == DEPTH and sum(v.levels) == v.states > 100
    assert v.progress_checked == v.states  # progress judged from every state reached
    assert f"{v.states:,} states, 0 violations" in v.headline


@pytest.mark.parametrize("design", ["none", "session"])
def test_with_a_reap_limit_of_1_and_two_jobs_the_shipped_scripts_hold_and_each_slice_stays_in_it(design):
    """The reaper's slices fill in this world (a small world never fills 100): reap_told judges every beat,
    limit_kept every beat past a hard deadline."""
    tl = explore(workers=2, jobs=2, depth=6, design=design, reap_limit=1, max_runtime=45)
    v = tl.verdict
    assert v.complete and v.violations == 0 and tl.params.reap_limit == 1
    with pytest.raises(BadParameter, match="reap_limit must be a whole number from 1 to 1000 jobs, got 0"):
        explore(reap_limit=0)


def test_fencing_off_breaks_first_on_the_fencing_rule_without_any_freeze():
    """A worker need not freeze to be late: it takes no step while the clock passes its deadline."""
    tl = explore(workers=2, jobs=1, depth=8, fencing="off")
    v = tl.verdict
    assert v.invariant == "current_fence"
    assert v.broken == "the store accepted job J1's holder of attempts 1 after attempts 2 was handed out: a stale fencing value"
    assert actions(tl) == [("worker-1", "claim"), ("reaper", "beat"), ("reaper", "beat"), ("worker-2", "claim"),
                           ("worker-1", "effect")]
    beats = [s for s in v.counterexample if s["action"] == "beat"]
    assert [b["t"] for b in beats] == [28.0, 32.0]  # near = 2 s before and after the 30 s deadline
    assert beats[1]["answer"][0] == {"kind": "reap", "jobs": ["J1"], "ended": []}
    assert v.margin == 2.0 and v.complete and v.violations > 1


def test_fencing_off_without_the_fencing_rule_still_lands_a_second_effect():
    v = explore(workers=2, jobs=1, depth=8, fencing="off", invariants=["one_effect"]).verdict
    assert v.broken == "job J1's effect was applied twice" and len(v.counterexample) == 6


@pytest.mark.parametrize("defect", list(PLANTED))
def test_each_planted_defect_is_found_naming_the_invariant_that_catches_it(defect):
    scripts, invariant = PLANTED[defect]
    # the space of the must-hold (2 workers, 1 job, depth 12, fencing on); a budget, for the exact key is larger:
    # breadth-first, the first violation found is a shortest one whatever the budget cut later
    v = explore(workers=2, jobs=1, depth=DEPTH, fencing="on", scripts=scripts, states=3_000).verdict
    assert v.invariant == invariant, (v.invariant, v.broken)
    assert len(v.counterexample) <= 4
    assert "states compared exact" in v.text


def test_a_reaper_that_never_reaps_breaks_progress_and_shows_what_it_tried():
    scripts, _ = PLANTED["the reaper never reaps"]
    tl = explore(workers=2, jobs=1, depth=DEPTH, scripts=scripts, states=3_000)
    v = tl.verdict
    assert actions(tl) == [("worker-1", "claim"), ("worker-1", "crash")]
    assert v.tried and {s["action"] for s in v.tried} == {"beat"} and len(v.tried) > explore_params().progress_steps
    assert "the fair schedule tried: the reaper beats ×" in steps_text(v)
    with pytest.raises(BadParameter, match="no break to replay"):
        replay(tl, backend="fake")


def test_an_echomq_like_extend_resurrects_a_reaped_job_where_emqlabs_does_not():
    """The space of the fencing-on sweep above, only extend_active replaced by a model of EchoMQ's."""
    v = explore(workers=2, jobs=1, depth=DEPTH, design="sweep", fencing="on", states=3_000,
                scripts={"extend_active": ECHOMQ_EXTEND}).verdict
    assert v.invariant == "one_place" and v.broken == "job J1 is in pending and active at once"
    assert [(s["actor"], s["action"]) for s in v.counterexample] == [
        ("worker-1", "claim"), ("reaper", "beat"), ("reaper", "beat"), ("worker-1", "extend")]


def test_echomq_like_extend_complete_and_claim_issue_a_fencing_value_twice():
    tl = explore(workers=2, jobs=1, depth=8, design="sweep", fencing="off", scripts=ECHOMQ_LIKE,
                 invariants=["attempts_grow"])
    assert tl.verdict.broken == "a claim handed out attempts 1 for job J1: a fencing value issued twice"
    assert actions(tl)[-3:] == [("worker-1", "extend"), ("worker-1", "complete"), ("worker-1", "claim")]
    assert tl.params.replaced == ("claim", "complete", "extend_active")


def test_a_deliberately_broken_record_effect_is_caught(tmp_path):
    """record_effect.lua with its fence check taken out: the lapsed holder's write settles a job the reaper put
    back in pending."""
    text = source("record_effect")
    broken = text.replace("if job_fence(job_key, attempts) then", "if false then")
    assert broken != text
    copy = tmp_path / "record_effect_unfenced.lua"
    copy.write_text(broken)
    tl = explore(workers=2, jobs=1, depth=8, fencing="on", scripts={"record_effect": copy})
    assert tl.verdict.invariant == "one_place" and tl.verdict.broken == "job J1 is in pending and done at once"
    assert actions(tl) == [("worker-1", "claim"), ("reaper", "beat"), ("reaper", "beat"), ("worker-1", "effect")]


# -- the reductions and the canonical form, each against the full search ------------------------------------------
def outcome(v) -> tuple:
    return (v.counterexample is None, None if v.counterexample is None else len(v.counterexample))


SMALL_WORLDS = [dict(workers=2, jobs=1, depth=8, design=d, fencing=f) for d in ("none", "per-job", "session")
                for f in ("on", "off")] + [dict(workers=3, jobs=1, depth=6, fencing="off"),
                                           dict(workers=2, jobs=2, depth=6, design="sweep", fencing="on")]


@pytest.mark.parametrize("world", SMALL_WORLDS, ids=lambda w: "-".join(str(v) for v in w.values()))
def test_symmetry_and_sleep_sets_find_what_the_full_search_finds(world):
    full = explore(**world, symmetry=False, sleep=False).verdict
    for reduced in (explore(**world).verdict, explore(**world, symmetry=False).verdict,
                    explore(**world, sleep=False).verdict):
        assert outcome(reduced) == outcome(full) and reduced.invariant == full.invariant
        assert reduced.states <= full.states and reduced.complete
    assert explore(**world).verdict.transitions < full.transitions


@pytest.mark.parametrize("defect", list(PLANTED))
def test_sleep_sets_find_each_planted_defect_the_full_search_finds(defect):
    scripts, invariant = PLANTED[defect]
    world = dict(workers=2, jobs=1, depth=6, scripts=scripts)
    full, reduced = explore(**world, sleep=False).verdict, explore(**world).verdict
    assert outcome(reduced) == outcome(full) and reduced.invariant == full.invariant == invariant


@pytest.mark.parametrize("world", [dict(design="none", fencing="off"), dict(design="session", fencing="on"),
                                   dict(design="per-job", fencing="on")], ids=lambda w: "-".join(w.values()))
def test_the_canonical_form_agrees_with_the_exact_state_key(world):
    """The canonical form (deadlines as time left, orders by rank, tokens as current or stale, workers
    interchangeable) claims equal keys have equal futures: the exact key finds the same."""
    exact = explore(workers=2, jobs=1, depth=7, exact=True, **world).verdict
    canonical = explore(workers=2, jobs=1, depth=7, **world).verdict
    assert outcome(exact) == outcome(canonical) and exact.invariant == canonical.invariant and exact.complete
    assert canonical.states < exact.states
    assert "states compared exact" in exact.text and "workers interchangeable" in canonical.text


def test_two_steps_commute_only_when_they_touch_nothing_in_common():
    jobs = {"worker-1": "J1", "worker-2": "J2", "worker-3": None}
    w1, w2, w3 = (lambda a: Step("worker-1", a)), (lambda a: Step("worker-2", a)), (lambda a: Step("worker-3", a))
    assert independent(w1("freeze"), w2("claim"), jobs, False)
    assert not independent(w1("crash"), w2("crash"), jobs, True)  # one may leave the other the last worker
    assert not independent(w1("effect"), Step("reaper", "beat"), jobs, True)
    assert not independent(w1("effect"), w1("freeze"), jobs, True)
    assert independent(w1("effect"), w2("extend"), jobs, True) and not independent(w1("effect"), w2("extend"), jobs, False)
    assert independent(w1("effect"), w3("claim"), jobs, True)  # J1 is held, not waiting: the claim cannot pop it
    # a claim may pop a job another worker still believes it holds, and hand out the value its write is judged by
    assert not independent(w1("effect"), w3("claim"), jobs, True, frozenset({"J1"}))
    assert not independent(w3("claim"), Step("worker-2", "claim"), {"worker-2": None, "worker-3": None}, True)
    assert not independent(w1("effect"), w2("effect"), {"worker-1": "J1", "worker-2": "J1"}, True)


def test_no_queue_script_sets_a_time_to_live():
    """The canonical search reads no key's TTL: sound only while no queue script sets one."""
    for name in family(QUEUE):  # not the lease family: a bare lease is its TTL
        assert not re.search(r"'P?EXPIRE(AT)?'|'SET'.*'P[XX]'", source(name), re.I), name


def test_both_ways_of_returning_to_a_state_find_the_same_space():
    restore = explore(depth=5, design="session", invariants=SAFETY).verdict
    rerun = explore(depth=5, design="session", method="rerun", invariants=SAFETY).verdict
    assert (restore.states, restore.transitions, restore.levels) == (rerun.states, rerun.transitions, rerun.levels)


# -- replay, the state space, the verdict -------------------------------------------------------------------------
def test_the_counterexample_played_again_on_fakeredis_breaks_at_its_last_step():
    tl = explore(workers=2, jobs=1, depth=8, fencing="off")
    again = replay(tl, backend="fake")
    r = again.verdict
    assert r.same and r.broke_at == r.steps == len(tl.verdict.counterexample) and r.invariant == "current_fence"
    assert r.scale is None and again.clock == "virtual"
    steps = [e for e in again.events if e.kind not in ("snapshot", "enqueue")]
    assert [(e.actor, e.kind) for e in steps] == [(e.actor, e.kind) for e in tl.events
                                                   if e.kind not in ("snapshot", "enqueue")]


@pytest.mark.live
def test_the_counterexample_breaks_the_same_invariant_on_a_live_server(valkey_url):
    tl = explore(workers=2, jobs=1, depth=8, fencing="off")
    r = replay(tl, backend=valkey_url).verdict
    assert r.same, r.why
    assert r.scale == replay_scale(tl.verdict.margin, tl.params.scale) >= 0.25 and r.store != "fake"


def test_a_replay_is_slowed_so_each_race_is_decided_by_half_a_second():
    assert replay_scale(2.0, 0.05) == 0.25 and replay_scale(None, 0.05) == 0.05
    with pytest.raises(BadParameter, match="exactly at a deadline"):
        replay_scale(0.0, 0.05)


def test_the_state_space_keeps_each_state_readable_and_lights_the_path():
    space = state_space(fencing="off", depth=6)
    ids = space.path
    assert ids[0] == 0 and space.states[ids[-1]]["broken"]["invariant"] == "current_fence"
    for a, b in zip(ids, ids[1:]):
        assert space.states[b]["parent"] == a and any(e["to"] == b for e in space.states[a]["next"])
    claimed = space.states[ids[1]]["state"]
    assert claimed["workers"]["worker-1"] == {"alive": True, "job": "J1", "attempts": 1, "lease_to": 30.0}
    assert claimed["keys"]["active"] == {"J1": 30.0}  # a deadline in model seconds, not a raw score
    assert all(s["depth"] <= 6 + 1 for s in space.states)


def test_the_budget_cuts_the_search_and_says_so():
    v = explore(depth=12, states=40).verdict
    assert not v.complete and v.states == 40 and "budget ended the search" in v.headline


def test_a_run_reads_back_typed_and_replays_from_its_json():
    tl = explore(depth=8, fencing="off", scripts={"extend_active": ECHOMQ_EXTEND}, states=2_000)
    back = load(tl.to_dict())
    assert isinstance(back.params, Params) and back.params == tl.params and back.verdict == tl.verdict
    assert replay(back, backend="fake").verdict.same


@pytest.mark.parametrize("kw, says", [
    ({"design": "bogus"}, "unknown design 'bogus'; allowed: none, per-job, sweep, session"),
    ({"depth": 25}, "depth must be a whole number from 1 to 24 steps, got 25"),
    ({"workers": 4}, "explore_workers must be a whole number from 1 to 3 workers"),
    ({"states": 0}, "states must be a whole number from 1 to 40000 states"),
    ({"fencing": "maybe"}, "fencing must be one of on, off"),
    ({"scripts": {"extend": "x.lua"}}, "no script named 'extend' to replace"),
    ({"scripts": {"claim": "missing.lua"}}, "is not a readable file"),
    ({"invariants": ["fast"]}, "unknown invariant 'fast'"),
    ({"exact": "yes"}, "exact must be True or False"),
    ({"symmetry": 1}, "symmetry must be True or False"),
    ({"max_runtime": 0.5}, "max_runtime must be a number from 1 to 3600"),
])
def test_bad_input_is_refused_before_anything_runs(kw, says):
    with pytest.raises(BadParameter, match=says.replace("(", r"\(")):
        explore_params(**kw)


def test_the_verdict_says_what_it_searched_and_how():
    text = explore(depth=6).verdict.text
    assert "the clock stopped 2 s before and after each deadline" in text
    assert "reached only by adding up these steps" in text and "progress: a fair schedule of up to" in text
    assert "a bounded search of a small world, at the time points it tried" in text


def test_every_readout_headline_is_short():
    runs = [explore(depth=8), explore(depth=8, fencing="off"), explore(depth=12, states=40),
            explore(depth=4, scripts=PLANTED["the reaper never reaps"][0])]
    runs.append(replay(runs[1], backend="fake"))
    for tl in runs:
        assert headline_words(tl.verdict.headline) <= HEADLINE_WORDS, tl.verdict.headline


def test_a_replaced_script_that_fails_is_named_in_one_line():
    with pytest.raises(BadParameter, match=r"the replaced script \(claim\) failed on a step \(worker-1 claim\): "):
        explore(depth=3, scripts={"claim": "return {1}"})
    with pytest.raises(BadParameter, match=r"the replaced script \(reap\) failed on a step \(reaper beat\): "):
        explore(depth=3, scripts={"reap": "return redis.call('NOSUCHCOMMAND')"})


@pytest.mark.parametrize("design", ["none", "per-job", "session"])
def test_a_hung_jobs_limit_is_a_deadline_the_search_stops_at_and_keeps(design):
    """A hard deadline 45 s after each claim: a holder is told the earlier of its lease and that limit, a renewal
    never passes it, and the fenced world still keeps every invariant."""
    tl = explore(workers=2, jobs=1, depth=8, design=design, max_runtime=45)
    v = tl.verdict
    assert v.complete and v.violations == 0 and "a hard deadline 45 s after each claim" in v.text
    space = state_space(depth=6, design=design, max_runtime=45)
    held = [(w["lease_to"], s["state"]["keys"][f"job:{w['job']}"]) for s in space.states
            for w in s["state"]["workers"].values() if w.get("job") and w.get("alive")]
    current = [(told, float(row["hard"])) for told, row in held if "hard" in row]
    assert current and all(told <= hard for told, hard in current)  # no holder told a lease past the hard deadline



def test_a_progress_failure_at_the_start_is_told_as_a_break_not_as_a_pass():
    """A claim that never hands a job out: the fair schedule settles nothing from the start state itself, so the
    counterexample has no steps; the words still say progress broke."""
    never = "local t = redis.call('TIME')\nreturn {tonumber(t[1]) * 1000, 0, 0}"
    tl = explore(depth=3, scripts={"claim": never})
    v = tl.verdict
    assert v.invariant == "progress" and v.counterexample == [] and v.violations >= 1
    assert "0 violations" not in v.headline and "from the start, the fair schedule took" in v.headline
    with pytest.raises(BadParameter, match="no break to replay"):
        replay(tl, backend="fake")
