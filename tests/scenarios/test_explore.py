"""The explorer (`emqlab.scenarios.explore`): every schedule of a small world, on the real scripts.

What it must find, and what it must not: fencing on holds in every order of the bounded space, for every
design; fencing off breaks, at the shortest, by a freeze past the lease, a reap, a re-claim and two
effects; a model of EchoMQ's extend (tests/scenarios/echomq_like_extend.lua, in our own words) resurrects a
reaped job, where emqlab's own extend holds in the same space. The explorer's numbers are its own: a
deliberately broken copy of a script is caught, and a counterexample played again breaks at its last step,
on fakeredis and on a live server."""

from __future__ import annotations

from pathlib import Path

import pytest

from emqlab.core.errors import BadParameter
from emqlab.core.words import HEADLINE_WORDS, headline_words
from emqlab.scenarios import load
from emqlab.scenarios.explore import Params, explore, explore_params, margin, replay
from emqlab.store.scripts import source

HERE = Path(__file__).parent
ECHOMQ_EXTEND = HERE / "echomq_like_extend.lua"
ECHOMQ_LIKE = {"extend_active": ECHOMQ_EXTEND, "complete": HERE / "echomq_like_complete.lua",
               "claim": HERE / "echomq_like_claim.lua"}
DEPTH = 12  # the must-hold's bound: every schedule of up to 12 steps


def actions(tl) -> list[tuple[str, str]]:
    return [(s["actor"], s["action"]) for s in tl.verdict.counterexample]


@pytest.mark.parametrize("design", ["none", "per-job", "sweep", "session"])
def test_fencing_on_holds_in_every_order_of_the_bounded_space(design):
    v = explore(workers=2, jobs=1, depth=DEPTH, design=design, fencing="on").verdict
    assert v.complete and v.violations == 0 and v.counterexample is None
    assert v.depth_reached == DEPTH and sum(v.levels) == v.states > 100
    assert f"{v.states:,} states, 0 violations" in v.summary


def test_fencing_off_breaks_by_a_freeze_a_reap_a_reclaim_and_two_effects():
    tl = explore(workers=2, jobs=1, depth=8, fencing="off")
    v = tl.verdict
    assert v.invariant == "one_effect" and v.broken == "job J1's effect was applied twice"
    assert actions(tl) == [("worker-1", "claim"), ("worker-1", "effect"), ("worker-1", "freeze"), ("reaper", "beat"),
                           ("worker-2", "claim"), ("worker-2", "effect")]
    assert v.counterexample[3]["answer"] == [{"kind": "reap", "jobs": ["J1"], "ended": []}]
    assert v.violations > 1 and v.complete  # every violating state counted, the first kept: a shortest one


def test_an_echomq_like_extend_resurrects_a_reaped_job_where_emqlabs_does_not():
    """The same space as the fencing-on sweep above, only extend_active replaced by a model of EchoMQ's."""
    v = explore(workers=2, jobs=1, depth=DEPTH, design="sweep", fencing="on",
                scripts={"extend_active": ECHOMQ_EXTEND}).verdict
    assert v.invariant == "one_place" and v.broken == "job J1 is in pending and active at once"
    assert [(s["actor"], s["action"]) for s in v.counterexample] == [
        ("worker-1", "claim"), ("worker-1", "freeze"), ("reaper", "beat"), ("worker-1", "extend")]


def test_echomq_like_extend_complete_and_claim_issue_a_fencing_value_twice():
    tl = explore(workers=2, jobs=1, depth=8, design="sweep", fencing="off", scripts=ECHOMQ_LIKE,
                 invariants=["attempts_grow"])
    assert tl.verdict.broken == "a claim handed out attempts 1 for job J1: a fencing value issued twice"
    assert actions(tl)[-3:] == [("worker-1", "extend"), ("worker-1", "complete"), ("worker-1", "claim")]
    assert tl.params.replaced == ("claim", "complete", "extend_active")


def test_a_deliberately_broken_record_effect_is_caught(tmp_path):
    """record_effect.lua, copied with its fence check taken out: the fenced write of a lapsed holder now
    settles a job the reaper already put back in pending; and with that invariant set aside, the late
    write lands a second effect."""
    text = source("record_effect")
    broken = text.replace("if job_fence(job_key, attempts) then", "if false then")
    assert broken != text
    copy = tmp_path / "record_effect_unfenced.lua"
    copy.write_text(broken)
    tl = explore(workers=2, jobs=1, depth=8, fencing="on", scripts={"record_effect": copy})
    assert tl.verdict.broken == "job J1 is in pending and done at once"
    assert actions(tl) == [("worker-1", "claim"), ("worker-1", "freeze"), ("reaper", "beat"), ("worker-1", "effect")]
    effects = explore(workers=2, jobs=1, depth=8, fencing="on", scripts={"record_effect": copy},
                      invariants=["one_effect"]).verdict
    assert effects.broken == "job J1's effect was applied twice" and effects.violations > 0


def test_the_counterexample_played_again_on_fakeredis_breaks_at_its_last_step():
    tl = explore(workers=2, jobs=1, depth=8, fencing="off")
    again = replay(tl, backend="fake")
    r = again.verdict
    assert r.same and r.broke_at == r.steps == len(tl.verdict.counterexample) and r.invariant == "one_effect"
    assert r.scale is None and again.clock == "virtual"
    steps = [e for e in again.events if e.kind not in ("snapshot", "enqueue")]
    assert [(e.actor, e.kind) for e in steps] == [(e.actor, e.kind) for e in tl.events
                                                   if e.kind not in ("snapshot", "enqueue")]


def test_the_counterexample_breaks_the_same_invariant_on_a_live_server(valkey_url):
    tl = explore(workers=2, jobs=1, depth=8, fencing="off")
    r = replay(tl, backend=valkey_url).verdict
    assert r.same, r.why
    assert r.scale >= 0.05 and r.store != "fake"  # every race with the server's clock decided by >= 0.5 s real


def test_both_ways_of_returning_to_a_state_find_the_same_space():
    restore = explore(depth=5, design="session").verdict
    rerun = explore(depth=5, design="session", method="rerun").verdict
    assert (restore.states, restore.transitions, restore.levels) == (rerun.states, rerun.transitions, rerun.levels)


def test_the_budget_cuts_the_search_and_says_so():
    v = explore(depth=12, states=40).verdict
    assert not v.complete and v.states == 40 and "budget ended the search" in v.summary


def test_a_run_reads_back_typed_and_replays_from_its_json():
    tl = explore(depth=8, fencing="off", scripts={"extend_active": ECHOMQ_EXTEND})
    back = load(tl.to_dict())
    assert isinstance(back.params, Params) and back.params == tl.params and back.verdict == tl.verdict
    assert replay(back, backend="fake").verdict.same


@pytest.mark.parametrize("kw, says", [
    ({"design": "bogus"}, "unknown design 'bogus'; allowed: none, per-job, sweep, session"),
    ({"depth": 25}, "depth must be a whole number from 1 to 24 steps, got 25"),
    ({"workers": 4}, "explore_workers must be a whole number from 1 to 3 workers"),
    ({"states": 0}, "states must be a whole number from 1 to 8000 states"),
    ({"fencing": "maybe"}, "fencing must be one of on, off"),
    ({"scripts": {"extend": "x.lua"}}, "no script named 'extend' to replace"),
    ({"scripts": {"claim": "missing.lua"}}, "is not a readable file"),
    ({"invariants": ["fast"]}, "unknown invariant 'fast'"),
])
def test_bad_input_is_refused_before_anything_runs(kw, says):
    with pytest.raises(BadParameter, match=says.replace("(", r"\(")):
        explore_params(**kw)


def test_a_replay_refuses_a_lease_a_reap_could_land_on():
    p = explore_params(lease=30, beat=5)
    assert margin(p) == 0
    tl = explore(lease=30, beat=5, depth=8, fencing="off")
    with pytest.raises(BadParameter, match="whole number of 5 s beats"):
        replay(tl, backend="valkey")  # refused before any server starts


def test_every_readout_headline_is_short():
    runs = [explore(depth=8), explore(depth=8, fencing="off"), explore(depth=12, states=40)]
    runs.append(replay(runs[1], backend="fake"))
    for tl in runs:
        assert headline_words(tl.verdict.summary) <= HEADLINE_WORDS, tl.verdict.summary
