"""The renewal heartbeat: exact on the virtual clock, with margins on live Valkey in real time."""

import json

import pytest

from emqlab.scenarios import load
from emqlab.scenarios.heartbeat import heartbeat
from realtime import premise
from support.records import REAL_SLACK_S, slack

RUN_SECONDS = 95  # about how long this file runs on a quiet 2-core machine: the suite starts the longest first


def times(timeline, kind, actor="holder"):
    return [e.t for e in timeline.of(kind, actor)]


# -- exact, on fakeredis and the virtual clock -------------------------------------------------
def test_no_renewal_lapses_at_30_and_the_job_runs_twice(fake):
    tl = heartbeat(lease=30, job=75, renew="none", backend=fake)
    v = tl.verdict
    assert v.lapsed_at == 30.0
    assert v.reclaimed_at == 30.5  # the contender's first try after the lapse
    assert v.runs == 2 and v.double_run is True
    assert v.overlap == [[30.5, 75.0]]
    assert v.finished_once is False
    assert times(tl, "lapse") == [30.0]
    # the late holder's release is refused: its token no longer owns the lock
    assert times(tl, "release_refused") == [75.0]
    assert v.headline == "no renewal: the 30 s lease lapsed at 30 s; the job finished twice, by the holder and the contender."
    assert v.facts == ("the contender reclaimed the job at 30.5 s", "both ran it at once for 44.5 s",
                       "the contender's own lease lapsed at 60.5 s")


def test_renew_at_half_holds_to_the_end_with_four_renewals(fake):
    tl = heartbeat(lease=30, job=75, renew="half", backend=fake)
    v = tl.verdict
    assert v.lapsed_at is None
    assert v.renewals == 4 and times(tl, "renew") == [15.0, 30.0, 45.0, 60.0]
    assert v.runs == 1 and v.finished_once is True and v.double_run is False
    assert v.reclaimed_at is None
    # each band end is the server's word: the extend's PTTL reply, 30 s past the renewal
    assert [e.data["deadline"] for e in tl.of("renew", "holder")] == [45.0, 60.0, 75.0, 90.0]
    [lease] = tl.spans("lease", "holder")
    assert (lease.start, lease.end, lease.data["ended"]) == (0.0, 75.0, "released")
    # the contender tried every second and never got in while the holder worked
    failed = times(tl, "acquire_failed", "contender")
    assert failed[0] == 0.5 and failed[-1] == 74.5 and len(failed) == 75
    assert times(tl, "saw_done", "contender") == [75.5]


def test_renewing_at_a_third_holds(fake):
    v = heartbeat(renew="third", backend=fake).verdict
    assert v.lapsed_at is None and v.renewals == 7 and v.finished_once and v.runs == 1


def test_renewing_slower_than_the_lease_lapses(fake):
    tl = heartbeat(renew=1.2, backend=fake)
    v = tl.verdict
    assert v.lapsed_at == 30.0 and v.double_run is True
    # the first renewal comes at 36 s, after the lapse: the extend replies 0 and the holder stops
    assert v.renew_lost_at == 36.0 and times(tl, "work_stopped") == [36.0]
    assert v.overlap == [[30.5, 36.0]]


def test_a_pause_longer_than_the_lease_left_loses_it_and_the_holder_stops(fake):
    # renewed at 15 (deadline 45); paused at 20 for 40 s: 25 s of lease were left
    tl = heartbeat(renew="half", pause="20:40", backend=fake)
    v = tl.verdict
    assert v.lapsed_at == 45.0
    assert v.reclaimed_at == 45.5
    assert v.renew_lost_at == 60.0  # the overdue tick fires as the world resumes, and replies 0
    assert times(tl, "work_stopped") == [60.0]
    assert v.double_run is False  # the holder did no work between the lapse and the stop
    assert v.runs == 2 and v.finished_once is True
    assert times(tl, "work_done", "contender") == [120.5]
    assert "stopped at once" in v.text


@pytest.mark.parametrize("seconds,held", [(24, True), (25, True), (26, False)])
def test_the_boundary_is_the_lease_left_at_the_pause(fake, seconds, held):
    v = heartbeat(renew="half", pause=f"20:{seconds}", backend=fake).verdict
    assert (v.lapsed_at is None) is held
    assert v.finished_once is True
    assert v.runs == (1 if held else 2)


def test_a_short_pause_keeps_the_lease_and_delays_the_job(fake):
    tl = heartbeat(renew="half", pause="20:20", backend=fake)
    assert tl.verdict.lapsed_at is None and tl.verdict.finished_once
    assert times(tl, "renew") == [15.0, 40.0, 55.0, 70.0, 85.0]  # the missed 30 s tick fires at 40
    assert times(tl, "work_done") == [95.0]  # 75 s of work, 20 s of which were frozen


def test_without_renewal_a_pause_changes_nothing_about_the_lapse(fake):
    v = heartbeat(renew="none", pause="10:5", backend=fake).verdict
    assert v.lapsed_at == 30.0 and v.double_run


def test_runs_leave_no_keys_behind(fake):
    heartbeat(renew="half", backend=fake)
    heartbeat(renew="none", pause="20:40", backend=fake)
    assert fake.keys() == []


def test_the_timeline_round_trips_through_json(fake):
    tl = heartbeat(renew="half", pause="20:40", backend=fake)
    again = load(json.loads(tl.to_json()))
    assert again.to_dict() == tl.to_dict()
    assert json.loads(tl.to_json())["verdict"]["renewals"] == 1


def test_round_trips_are_counted_per_run(fake):
    a = heartbeat(renew="half", backend=fake).counts
    b = heartbeat(renew="half", backend=fake).counts
    assert a == b and a["round_trips"] > 0
    # holder: acquire (SET+PTTL pipelined), 4 extends, SET done, release = 7;
    # contender: 75 failed tries, 1 acquire, GET done, release = 78
    assert a["round_trips"] == 85


def test_the_same_run_gives_the_same_timeline(fake):
    assert heartbeat(renew="none", backend=fake).to_dict()["events"] == \
        heartbeat(renew="none", backend=fake).to_dict()["events"]


# -- live Valkey, real clock, margins sized in real time for a loaded 2-core machine ----------
@pytest.mark.live
@pytest.mark.realtime
def test_live_runs_in_a_row_give_the_same_verdicts(valkey_url):
    """The same story five times, the times within a loaded machine's slack (support.records.slack). Renewing at
    TTL/2 leaves 15 model s between an extend and the deadline: at 0.01 that was 150 ms of real time, and a loaded
    machine once woke a timer 220 ms late and the lease lapsed; at 0.04 it is 0.6 s, and a slower host once woke
    one later still. So the scale is sized from this host: those 15 model s last at least twice its slack."""
    from emqlab.store.backend import connect

    with connect(valkey_url, clock="real", scale=max(0.04, round(2 * REAL_SLACK_S / 15, 4))) as live:
        for _ in range(5):
            none = heartbeat(renew="none", backend=live).verdict
            # real time: event times are when things really happened (a late wake-up shows), and a
            # PTTL has 1 real ms = 0.025 model s of resolution; the server expires the key at 30 s, never sooner
            assert 29.9 <= none.lapsed_at <= 30 + slack(live)
            assert none.lapsed_at - 0.2 < none.reclaimed_at <= none.lapsed_at + slack(live, 2.5)
            assert none.runs == 2 and none.double_run is True and none.finished_once is False

            half = heartbeat(renew="half", backend=live).verdict
            # each timer waits 15 s from the previous reply: on a loaded machine late wake-ups add up, and the
            # third and fourth extends (due at 45 s and 60 s) can slip past the job's end at 75 s. What holds
            # whatever the lateness: a lease that never lapsed kept the key, token and all, from the acquire
            # to the release 75 s later, and each 30 s grant starts before the one it replaces runs out, so
            # at least ceil(75 / 30) - 1 = 2 extends (exactly 4 on the virtual clock:
            # test_renew_at_half_holds_to_the_end_with_four_renewals)
            premise(half.lapsed_at is None and half.finished_by == ["holder"],
                    "the holder's lease never lapsed: its token-checked release after its 75 s job succeeded")
            assert 2 <= half.renewals <= 4
            assert half.runs == 1 and half.finished_once is True and half.double_run is False
        assert live.keys() == []


@pytest.mark.live
@pytest.mark.realtime
def test_live_pause_loses_and_short_pause_holds(slow_live):
    """At SLOW_SCALE: the short pause holds with 10 model s (1 s) to spare, and the holder learns of the
    lost lock within a loaded machine's slack (0.5 s) of waking at 60 s."""
    live = slow_live
    tl = heartbeat(renew="half", pause="20:40", backend=live)
    lost = tl.verdict
    assert lost.renew_lost_at is not None and 59.0 <= lost.renew_lost_at <= 60 + slack(live, 3.0)
    [stopped] = times(tl, "work_stopped")
    assert stopped - lost.renew_lost_at < slack(live, 0.5)  # told at once
    # In real time the holder's work may resume a moment before its renewer learns the lock is gone:
    # that sliver is real (and why the fencing lesson fences writes); it ends when the 0 reply arrives, a slack's
    # worth after the wake at most, never the 40 s pause
    assert all(end <= stopped for _, end in lost.overlap)
    assert sum(end - start for start, end in lost.overlap) < slack(live, 1.5)
    assert lost.finished_once is True and lost.runs == 2
    held = heartbeat(renew="half", pause="20:15", backend=live).verdict
    assert held.lapsed_at is None and held.runs == 1
