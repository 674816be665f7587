"""The queue's invariants, stated once (`emqlab.queue.invariants`): each function on facts made by hand,
the two ways of reading the store agreeing, and the history reader's rules, window by window."""

from __future__ import annotations

import pytest

from emqlab.queue import invariants as inv
from emqlab.queue.jobs import Queue
from emqlab.store import snapshot


def row(*places, state=None, attempts=1):
    return inv.Row(tuple(places), state, attempts)


def facts(jobs=None, **kw):
    return inv.Facts(snapshot=None if jobs is None else inv.Snapshot(jobs, kw.pop("effects", {})), **kw)


def names(broken):
    return [(b.invariant, b.job) for b in broken]


# -- each invariant, on facts made by hand -----------------------------------------------------------------
def test_a_job_in_one_place_under_its_state_breaks_nothing():
    f = facts({"A": row("active", state="active"), "B": row("done", state=None, attempts=None)}, effects={"B": 1})
    assert inv.judge(f) == []  # a row retired in done (EchoMQ retires finished rows) is allowed


@pytest.mark.parametrize("job, what", [
    (row("pending", "active", state="pending"), "is in pending and active at once"),
    (row("pending", state="active"), "is in pending but its state says active"),
    (row("pending", state=None, attempts=None), "is in pending but its row is gone"),
])
def test_one_place_names_each_way_to_break_it(job, what):
    broken = inv.one_place(facts({"A": job}))
    assert names(broken) == [("one_place", "A")] and what in broken[0].what


def test_a_job_in_no_place_is_lost():
    assert names(inv.never_lost(facts({"A": row(state="active")}))) == [("never_lost", "A")]


def test_attempts_grow_refuses_a_value_handed_out_twice_and_a_row_that_went_down():
    twice = inv.attempts_grow(facts({}, issued={"A": 1}, claimed=(("A", 1),)))
    assert names(twice) == [("attempts_grow", "A")] and "issued twice" in twice[0].what
    down = inv.attempts_grow(facts({"A": row("active", state="active", attempts=1)}, issued={"A": 2}))
    assert "went down from 2 to 1" in down[0].what
    assert inv.attempts_grow(facts({"A": row("active", state="active", attempts=3)}, issued={"A": 2},
                                   claimed=(("A", 3),))) == []


def test_one_effect_counts_the_store_and_the_history():
    assert names(inv.one_effect(facts({"A": row("done", state="done")}, effects={"A": 2}))) == [("one_effect", "A")]
    assert inv.one_effect(facts({"A": row("done", state="done")}, effects={"A": 1})) == []
    ran = inv.one_effect(inv.Facts(effects={("the job", None): 2}, finished=True,
                                   effect_by={("the job", None): ("holder", "contender")}))
    assert ran[0].what == "the job ran to its end twice (by holder, then contender): a double run"


def test_no_resurrection_a_refused_holder_never_holds_again():
    refused = frozenset({("A", 1)})
    back = inv.no_resurrection(facts({"A": row("active", state="active", attempts=1)}, refused=refused))
    assert names(back) == [("no_resurrection", "A")]
    assert names(inv.no_resurrection(facts({}, refused=refused, accepted=(("A", 1),)))) == [("no_resurrection", "A")]
    assert inv.no_resurrection(facts({"A": row("active", state="active", attempts=2)}, refused=refused)) == []


def test_judge_picks_invariants_by_name_and_refuses_unknown_ones():
    f = facts({"A": row("pending", "active", state="pending")}, effects={"A": 2})
    assert {b.invariant for b in inv.judge(f)} == {"one_place", "one_effect"}
    assert {b.invariant for b in inv.judge(f, ["one_effect"])} == {"one_effect"}
    with pytest.raises(ValueError, match="unknown invariant 'nope'; known: one_place"):
        inv.check_names(["nope"])


# -- reading the store: both readers agree ------------------------------------------------------------------
def test_read_and_from_contents_see_the_same_store(fake):
    q = Queue(fake, "orders", prefix=fake.run_prefix("invariants"))
    for job in ("A", "B", "C"):
        q.enqueue(job, "p")
    [a] = q.claim(30_000)
    q.record_effect(a.id, a.attempts, fenced=True)
    q.claim(30_000)
    fake.client.zadd(q.pending, {"B": 5})  # B in pending and active: damage a reader must see
    ids = ["A", "B", "C"]
    by_pipeline = inv.read(q, ids)
    by_contents = inv.from_contents(q, ids, snapshot.read(fake.client, q.base).entries)
    assert by_pipeline == by_contents
    assert by_pipeline.jobs["B"].places == ("pending", "active") and by_pipeline.effects == {"A": 1}
    assert names(inv.judge(inv.Facts(snapshot=by_pipeline))) == [("one_place", "B")]


# -- a history, by README's rules ---------------------------------------------------------------------------
def ev(t, actor, kind, **data):
    return {"t": t, "actor": actor, "kind": kind, **data}


def test_a_planted_double_effect_is_found_with_its_window():
    events = [ev(0, "w1", "claim", job="J", attempts=1), ev(1, "w1", "effect", job="J", attempts=1, applied=1),
              ev(40, "w2", "reap", jobs=["J"]), ev(41, "w2", "claim", job="J", attempts=2),
              ev(42, "w2", "effect", job="J", attempts=2, applied=2)]
    [found] = inv.found_in_history(events)
    assert (found.broken.invariant, found.first, found.last) == ("one_effect", 1, 4)
    assert found.broken.what == "job J's effect was applied twice (by w1, then w2)"


def test_a_fencing_value_issued_twice_is_found_from_the_claims():
    events = [ev(0, "w1", "claim", job="J", attempts=1), ev(5, "w1", "complete", job="J", attempts=1),
              ev(9, "w2", "claim", job="J", attempts=1)]
    [found] = inv.found_in_history(events)
    assert (found.broken.invariant, found.first, found.last) == ("attempts_grow", 0, 2)


def test_a_holder_accepted_after_its_refusal_is_a_resurrection():
    events = [ev(0, "w1", "claim", job="J", attempts=1), ev(40, "w1", "effect_refused", job="J", attempts=1),
              ev(41, "w1", "complete", job="J", attempts=1)]
    [found] = inv.found_in_history(events)
    assert (found.broken.invariant, found.first, found.last) == ("no_resurrection", 1, 2)


def test_snapshot_events_are_judged_too():
    snap = inv.Snapshot({"J": row("pending", "active", state="pending")}).to_dict()
    events = [ev(0, "w1", "claim", job="J", attempts=1), ev(1, "w1", "extend", job="J", attempts=1, held=True),
              ev(1, "store", "snapshot", **snap)]
    [found] = inv.found_in_history(events)
    assert (found.broken.invariant, found.first, found.last) == ("one_place", 1, 2)  # the step, then the store


def test_a_history_without_claims_or_effects_counts_its_finishes():
    events = [ev(0, "holder", "acquire"), ev(30, "contender", "acquire"), ev(75, "holder", "work_done"),
              ev(105, "contender", "work_done")]
    [found] = inv.found_in_history(events)
    assert "a double run" in found.broken.what and (found.first, found.last) == (2, 3)
    assert inv.found_in_history(events[:3]) == []
