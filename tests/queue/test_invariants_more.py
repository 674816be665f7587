"""The invariants issue 37 adds to `emqlab.queue.invariants` (done_has_effect, lease_kept, current_fence,
sessions_agree, lease_granted, reap_told, limit_kept): each breaks on a planted fact and holds on a good one, each is judged only where the facts
can judge it (`evaluable`, `needs`), both store readers see the session keys alike, and a history's events
are read by the same rules (a granted deadline, an accepted stale value, a snapshot's session keys)."""

from __future__ import annotations

import pytest

from emqlab.queue import invariants as inv
from emqlab.queue.jobs import Queue
from emqlab.store import snapshot

NEW = ("done_has_effect", "lease_kept", "current_fence", "sessions_agree", "lease_granted", "reap_told", "limit_kept")


def row(*places, state=None, attempts=1, worker=None, session=None):
    return inv.Row(tuple(places), state, attempts, worker, session)


def names(broken):
    return [(b.invariant, b.job) for b in broken]


def test_the_table_names_twelve_each_with_a_rule_a_test_of_when_and_what_it_needs():
    assert tuple(inv.INVARIANTS) == ("one_place", "never_lost", "attempts_grow", "one_effect", "no_resurrection",
                                     *NEW)
    for i in inv.INVARIANTS.values():
        assert i.rule and i.needs.startswith("no ") and callable(i.evaluable)
    assert inv.PROGRESS[0] == "progress" and "progress" not in inv.INVARIANTS  # the explorer's search judges it
    assert inv.evaluable(inv.Facts()) == ()  # nothing known: nothing can be judged


# -- done_has_effect -------------------------------------------------------------------------------------------
def test_done_has_effect_breaks_on_a_job_done_without_its_effect():
    dropped = inv.Facts(snapshot=inv.Snapshot({"A": row("done", state="done")}, {}))
    broken = inv.done_has_effect(dropped)
    assert names(broken) == [("done_has_effect", "A")]
    assert broken[0].what == "job A is done but its effect was never applied: the work was dropped"
    kept = inv.Facts(snapshot=inv.Snapshot({"A": row("done", state="done"), "B": row("pending", state="pending")},
                                           {"A": 1}))
    assert inv.done_has_effect(kept) == []  # a pending job owes no effect yet


def test_done_has_effect_is_judged_only_where_the_snapshot_tracks_effects():
    untracked = inv.Facts(snapshot=inv.Snapshot({"A": row("done", state="done")}, None))
    assert inv.done_has_effect(untracked) == [] and "done_has_effect" not in inv.evaluable(untracked)
    assert inv.INVARIANTS["done_has_effect"].needs == "no snapshot events with effects"


# -- lease_kept ------------------------------------------------------------------------------------------------
def lease(job_row, now=20.0, deadline=30.0, attempts=1):
    return inv.Facts(snapshot=inv.Snapshot({"J": job_row}), now=now,
                     holders=(inv.Holder("w1", "J", attempts, deadline),))


def test_lease_kept_breaks_when_a_job_is_taken_before_the_granted_deadline():
    reaped = inv.lease_kept(lease(row("pending", state="pending")))
    assert names(reaped) == [("lease_kept", "J")]
    assert reaped[0].what == ("job J was taken from w1 (attempts 1) 10 s before the deadline the store granted it: "
                              "it is in pending")
    again = inv.lease_kept(lease(row("active", state="active", attempts=2)))
    assert "it is active under attempts 2" in again[0].what  # handed to another holder early
    marked = inv.lease_kept(lease(row("active", state="pending")))
    assert "its state says pending" in marked[0].what


def test_lease_kept_holds_while_the_holder_keeps_it_and_once_the_deadline_passed():
    assert inv.lease_kept(lease(row("active", state="active"))) == []
    assert inv.lease_kept(lease(row("pending", state="pending"), now=30.0)) == []  # at the deadline the reaper may
    assert inv.lease_kept(lease(row("pending", state="pending"), now=45.0)) == []


def test_lease_kept_needs_the_time_a_snapshot_and_a_granted_deadline():
    good = lease(row("pending", state="pending"))
    assert "lease_kept" in inv.evaluable(good)
    for missing in (dict(now=None), dict(snapshot=None), dict(holders=(inv.Holder("w1", "J", 1, None),))):
        facts = inv.Facts(**{**good.__dict__, **missing})
        assert "lease_kept" not in inv.evaluable(facts) and inv.lease_kept(facts) == []


# -- current_fence ---------------------------------------------------------------------------------------------
def test_current_fence_breaks_when_a_stale_value_is_accepted():
    stale = inv.current_fence(inv.Facts(issued={"J1": 2}, accepted=(("J1", 1),)))
    assert names(stale) == [("current_fence", "J1")]
    assert stale[0].what == ("the store accepted job J1's holder of attempts 1 after attempts 2 was handed out: "
                             "a stale fencing value")
    # a value handed out at this same point counts too
    assert names(inv.current_fence(inv.Facts(issued={"J1": 1}, claimed=(("J1", 2),), accepted=(("J1", 1),)))) == [
        ("current_fence", "J1")]


def test_current_fence_holds_for_the_current_value_and_needs_a_value_handed_out():
    assert inv.current_fence(inv.Facts(issued={"J1": 2}, accepted=(("J1", 2),))) == []
    unknown = inv.Facts(issued={"J2": 3}, accepted=(("J1", 1),))  # nothing was handed out for J1
    assert inv.current_fence(unknown) == [] and "current_fence" not in inv.evaluable(unknown)
    assert "current_fence" in inv.evaluable(inv.Facts(issued={"J1": 2}, accepted=(("J1", 2),)))


# -- sessions_agree --------------------------------------------------------------------------------------------
HELD = row("active", state="active", worker="w1", session="1")


def sessions(jobs, held, present=("w1",)):
    return inv.Facts(snapshot=inv.Snapshot(jobs, {}, held, tuple(present)))


def test_sessions_agree_holds_when_the_index_and_the_active_set_agree():
    assert inv.sessions_agree(sessions({"A": HELD, "B": row("pending", state="pending")}, {"w1": ("A",)})) == []


@pytest.mark.parametrize("jobs, held, present, what", [
    ({"A": row("pending", state="pending", worker="w1", session="0")}, {"w1": ("A",)}, ("w1",),
     "job A is in worker w1's session index but it is in pending"),
    ({"A": row("active", state="active", worker="w2", session="1")}, {"w1": ("A",), "w2": ("A",)}, ("w1", "w2"),
     "job A is in worker w1's session index but its row names worker w2"),
    ({"A": row("active", state="active", worker="w1")}, {"w1": ("A",)}, ("w1",),
     "job A is in worker w1's session index but its row has no session mark"),
    ({"A": HELD}, {}, ("w1",),
     "job A is active under worker w1's session but not in its session index: a lapsed session would never "
     "return it"),
    ({"A": HELD}, {"w1": ("A",)}, (), "worker w1's session index holds A but w1 has no session"),
])
def test_sessions_agree_names_each_way_to_break_it(jobs, held, present, what):
    broken = inv.sessions_agree(sessions(jobs, held, present))
    assert what in [b.what for b in broken] and {b.invariant for b in broken} == {"sessions_agree"}


def test_sessions_agree_is_not_judged_when_the_session_keys_were_not_read():
    facts = inv.Facts(snapshot=inv.Snapshot({"A": HELD}, {}))
    assert inv.sessions_agree(facts) == [] and "sessions_agree" not in inv.evaluable(facts)


# -- the data: carried in a snapshot event, read from the store -------------------------------------------------
def test_a_snapshot_carries_its_session_keys_and_says_what_it_did_not_track():
    snap = inv.Snapshot({"A": HELD, "B": row("done", state=None, attempts=None)}, {"B": 1}, {"w1": ("A",)}, ("w1",))
    data = snap.to_dict()
    assert data["held"] == {"w1": ["A"]} and data["sessions"] == ["w1"]
    assert data["jobs"]["A"] == {"places": ["active"], "state": "active", "attempts": 1, "worker": "w1", "session": "1"}
    assert "worker" not in data["jobs"]["B"]  # a field the row lacks is not written
    assert inv.Snapshot.from_dict(data) == snap
    bare = inv.Snapshot.from_dict({"jobs": {"A": {"places": ["done"], "state": "done", "attempts": 1}}})
    assert (bare.effects, bare.held, bare.sessions) == (None, None, None)  # absent: not tracked, not read
    assert inv.evaluable(inv.Facts(snapshot=bare)) == ("one_place", "never_lost")


def test_both_readers_see_the_session_keys_alike_and_see_them_disagree(fake):
    q = Queue(fake, "orders", prefix=fake.run_prefix("sessions"))
    for job in ("A", "B", "C"):
        q.enqueue(job, "p")
    s1 = q.open_session("w1", 30_000)
    q.claim(30_000, 2, session=s1)
    [c] = q.claim(30_000, worker="w2")
    q.record_effect(c.id, c.attempts, fenced=True)
    ids = ["A", "B", "C"]

    def both():
        by_pipeline = inv.read(q, ids)
        assert by_pipeline == inv.from_contents(q, ids, snapshot.read(fake.client, q.base).entries)
        return by_pipeline

    snap = both()
    assert snap.held == {"w1": ("A", "B")} and snap.sessions == ("w1",) and snap.jobs["A"].session == "1"
    assert snap.jobs["C"].worker == "w2" and snap.effects == {"C": 1}
    facts = inv.Facts(snapshot=snap)
    assert set(NEW) - set(inv.evaluable(facts)) == {"lease_kept", "current_fence", "lease_granted", "reap_told",
                                                        "limit_kept"}  # a snapshot alone
    assert inv.judge(facts) == []
    fake.client.zrem(q.held_key("w1"), "B")  # damage: the session's index loses a job it holds
    assert [b.what for b in inv.judge(inv.Facts(snapshot=both()))] == [
        "job B is active under worker w1's session but not in its session index: a lapsed session would never "
        "return it"]


# -- a history, by the format's rules ---------------------------------------------------------------------------
def ev(t, actor, kind, **data):
    return {"t": t, "actor": actor, "kind": kind, **data}


def test_a_history_that_accepts_attempts_1_after_2_was_handed_out_breaks_the_fencing_rule():
    events = [ev(0, "w1", "claim", job="J1", attempts=1), ev(31, "w2", "claim", job="J1", attempts=2),
              ev(32, "w1", "complete", job="J1", attempts=1), ev(33, "w2", "complete", job="J1", attempts=2)]
    judged = inv.judge_history(events)
    [found] = judged.found
    assert (found.broken.invariant, found.first, found.last) == ("current_fence", 1, 2)
    assert "attempts 1 after attempts 2 was handed out" in found.broken.what
    assert judged.evaluated == ("attempts_grow", "current_fence")  # no snapshot, effect or refusal to judge more
    effect = [ev(0, "w1", "claim", job="J1", attempts=1), ev(31, "w2", "claim", job="J1", attempts=2),
              ev(32, "w1", "effect", job="J1", attempts=1)]
    assert [f.broken.invariant for f in inv.found_in_history(effect)] == ["current_fence"]


def snap_event(t, jobs, **kw):
    return ev(t, "store", "snapshot", **inv.Snapshot(jobs, **kw).to_dict())


def test_a_history_shows_a_lease_taken_before_its_granted_deadline():
    events = [ev(0, "w1", "claim", job="J", attempts=1, deadline=30.0),
              ev(10, "w1", "extend", job="J", attempts=1, held=True, deadline=40.0),
              ev(25, "reaper", "reap", jobs=["J"]),
              snap_event(25, {"J": row("pending", state="pending")})]
    judged = inv.judge_history(events)
    [found] = judged.found
    assert (found.broken.invariant, found.first, found.last) == ("lease_kept", 1, 3)  # from the extend's grant
    assert found.broken.what == ("job J was taken from w1 (attempts 1) 15 s before the deadline the store granted "
                                 "it: it is in pending")
    assert "lease_kept" in judged.evaluated


def test_a_holder_that_settled_or_was_refused_holds_nothing():
    done = [ev(0, "w1", "claim", job="J", attempts=1, deadline=30.0), ev(5, "w1", "complete", job="J", attempts=1),
            snap_event(6, {"J": row("done", state="done")}, effects={"J": 1})]
    judged = inv.judge_history(done)
    assert judged.found == () and "lease_kept" not in judged.evaluated  # no holder left to judge
    refused = [ev(0, "w1", "claim", job="J", attempts=1, deadline=30.0),
               ev(5, "w1", "extend", job="J", attempts=1, held=False),
               snap_event(6, {"J": row("pending", state="pending")})]
    assert inv.found_in_history(refused) == []


def test_a_history_without_deadlines_does_not_judge_lease_kept():
    events = [ev(0, "w1", "claim", job="J", attempts=1), snap_event(5, {"J": row("pending", state="pending")})]
    judged = inv.judge_history(events)
    assert "lease_kept" not in judged.evaluated and judged.found == ()


def test_snapshot_events_judge_done_has_effect_and_sessions_agree_when_they_carry_them():
    events = [ev(0, "w1", "claim", job="J", attempts=1),
              snap_event(1, {"J": row("done", state="done")}, effects={}, held={"w1": ("J",)}, sessions=("w1",))]
    judged = inv.judge_history(events)
    assert {f.broken.invariant for f in judged.found} == {"done_has_effect", "sessions_agree"}
    assert {"done_has_effect", "sessions_agree"} <= set(judged.evaluated)
    plain = [events[0], ev(1, "store", "snapshot", jobs={"J": {"places": ["done"], "state": "done", "attempts": 1}})]
    judged = inv.judge_history(plain)
    assert judged.found == () and not {"done_has_effect", "sessions_agree"} & set(judged.evaluated)


def test_a_lease_granted_short_of_what_was_asked_breaks_lease_granted():
    short = inv.Facts(grants=(inv.Grant("w1", "job J1's lease", 30.0, 15.0),))
    whole = inv.Facts(grants=(inv.Grant("w1", "job J1's lease", 30.0, 30.0),))
    [b] = inv.judge(short, ["lease_granted"])
    assert b.what == "w1 asked for job J1's lease to 30 s and the store granted it to 15 s: 15 s short"
    assert inv.judge(whole, ["lease_granted"]) == []
    assert "lease_granted" in inv.evaluable(short) and "lease_granted" not in inv.evaluable(inv.Facts())
    too_long = inv.Facts(grants=(inv.Grant("w1", "job J1's lease", 45.0, 60.0),))
    [b] = inv.judge(too_long, ["lease_granted"])
    assert b.what == "w1 asked for job J1's lease to 45 s and the store granted it to 60 s: 15 s too long"


# -- reap_told -------------------------------------------------------------------------------------------------
def reap(replied=("J1",), replied_ended=(), moved=("J1",), ended=(), counted=1, limit=100):
    return inv.Facts(reaps=(inv.Reaped(tuple(replied), tuple(replied_ended), tuple(moved), tuple(ended), counted, limit),))


def test_reap_told_holds_when_the_reply_the_count_and_the_store_agree():
    assert inv.judge(reap(), ["reap_told"]) == []
    assert inv.judge(reap((), ("worker-1",), (), ("worker-1",), 0), ["reap_told"]) == []
    assert "reap_told" in inv.evaluable(reap()) and "reap_told" not in inv.evaluable(inv.Facts())
    assert inv.INVARIANTS["reap_told"].needs == "no reap call with the store read before and after"


@pytest.mark.parametrize("facts, what", [
    (reap(replied=()), "the reaper took J1 out of active and its reply did not name it"),
    (reap(moved=(), counted=0), "the reaper's reply named J1, which it did not take out of active"),
    (reap(ended=("worker-2",)), "the reaper ended the sessions of worker-2 and its reply named none"),
    (reap(counted=0), "the reaper took back 1 and its reaped count grew by 0"),
    (reap(("J1", "J2"), moved=("J1", "J2"), counted=2, limit=1),
     "one reap call with a limit of 1 took back 2 and ended 0 sessions: past its limit"),
])
def test_reap_told_names_each_way_a_reply_or_a_count_can_lie(facts, what):
    assert [b.what for b in inv.judge(facts, ["reap_told"])] == [what]


# -- limit_kept ------------------------------------------------------------------------------------------------
def hung(job_row, now=46.0, hard=45.0, moved=(), limit=100):
    return inv.Facts(snapshot=inv.Snapshot({"J": job_row}), now=now,
                     holders=(inv.Holder("w1", "J", 1, hard, hard),),
                     reaps=(inv.Reaped(tuple(moved), (), tuple(moved), (), len(moved), limit),))


def test_limit_kept_breaks_when_a_reap_past_the_hard_deadline_leaves_the_job_with_its_holder():
    [b] = inv.judge(hung(row("active", state="active")), ["limit_kept"])
    assert b.what == ("job J is still active under w1's attempts 1 after a reap 1 s past its hard deadline: "
                      "a hung job kept past its limit")
    assert inv.judge(hung(row("pending", state="pending")), ["limit_kept"]) == []  # taken back: kept


def test_limit_kept_waits_for_the_deadline_and_for_a_reap_with_room():
    early = hung(row("active", state="active"), now=44.0)
    full = hung(row("active", state="active"), moved=("K",), limit=1)  # the slice was full: the next call's turn
    for facts in (early, full):
        assert inv.judge(facts, ["limit_kept"]) == [] and "limit_kept" not in inv.evaluable(facts)
    assert "limit_kept" in inv.evaluable(hung(row("active", state="active")))
