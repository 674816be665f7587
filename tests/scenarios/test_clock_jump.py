"""A step of the server's clock (`emqlab.faults.clock_jump`) on fakeredis's virtual clock, exactly: the store's
clock moves and the workers' clocks do not. The live half (a server of the run's own under libfaketime) is in
tests/store/test_faketime.py and the live runs below."""

from __future__ import annotations

import pytest

from emqlab.core.errors import BadParameter
from emqlab.faults.clock_jump import ClockJump, expires_at
from emqlab.faults.pauses import Pause
from emqlab.scenarios.heartbeat import Params as HeartbeatParams, heartbeat
from emqlab.scenarios.reaper import reaper
from emqlab.store.backend import connect, store_spec
from realtime import slow_scale
from support.records import SLOW_SCALE


def test_a_deadline_is_reached_when_the_servers_clock_reaches_it():
    assert expires_at([], 0, 30) == 30
    assert expires_at([(20, 60)], 15, 45) == 20  # forward past it: at the step
    assert expires_at([(20, 10)], 15, 45) == 35  # forward short of it: sooner by the step
    assert expires_at([(20, -60)], 15, 45) == 105  # back: later by the step
    assert expires_at([(40, 60)], 0, 30) == 30  # a step after the deadline moves nothing
    assert expires_at([(20, 60)], 25, 55) == 55  # a deadline set after the step is read on the new clock


def test_the_store_reads_the_stepped_clock_and_the_workers_do_not(fake):
    fake.client.set("emqlab:probe", "1", px=30_000)
    before = fake.client.time()
    fake.jump_server_clock(60_000)
    after = fake.client.time()
    assert after[0] - before[0] == 60 and fake.clock.now_ms == 0  # the model's clock did not move
    assert fake.client.get("emqlab:probe") is None  # a 30 s key is gone at a 60 s step
    fake.jump_server_clock(-60_000)
    fake.client.set("emqlab:probe", "1", px=30_000)
    fake.jump_server_clock(-60_000)
    assert fake.client.pttl("emqlab:probe") == 90_000  # back: the key has the step to live on top
    fake.client.delete("emqlab:probe")


def test_forward_60_s_at_20_s_loses_the_lease_at_the_step(fake):
    """The issue's case: a 30 s lease renewed at TTL/2 is gone at the step; the contender takes it, the job runs
    twice, and the holder learns at its next extend (30 s)."""
    tl = heartbeat(renew="half", clock_jump="20:60", backend=fake)
    v = tl.verdict
    assert (v.clock_jumped_at, v.clock_jump_s, v.lost_at_jump, v.lapsed_at) == (20.0, 60.0, True, 20.0)
    assert v.reclaimed_at == 20.5 and v.double_run and v.renew_lost_at == 30.0 and v.holder_stopped_at == 30.0
    assert v.lapse_moved_s == -25.0  # the extend at 15 s had given it until 45 s
    assert [(e.t, e.data["seconds"]) for e in tl.of("clock_jump", "server")] == [(20.0, 60.0)]
    assert "the server's clock stepped forward 60 s at 20 s" in v.facts
    assert "the holder's lease vanished at the step, 25 s before the deadline the server had given it" in v.facts
    assert tl.to_dict()["params"]["clock_jump"] == {"at": 20.0, "seconds": 60.0}


def test_a_step_back_keeps_a_stopped_holders_lease_past_its_ttl(fake):
    """A holder frozen after its extend at 15 s (deadline 45 s): a step back of 60 s at 20 s keeps its lease
    until 105 s, and the contender waits that long."""
    plain = heartbeat(renew="half", pause="16:100", backend=fake).verdict
    stepped = heartbeat(renew="half", pause="16:100", clock_jump="20:-60", backend=fake).verdict
    assert (plain.lapsed_at, plain.reclaimed_at) == (45.0, 45.5)
    assert (stepped.lapsed_at, stepped.reclaimed_at, stepped.lapse_moved_s) == (105.0, 105.5, 60.0)
    assert "the holder's lease outlived the deadline the server had given it by 60 s" in stepped.facts


def test_a_run_without_a_step_says_nothing_of_one(fake):
    v = heartbeat(renew="half", backend=fake).verdict
    assert v.clock_jumped_at is None and not v.lost_at_jump and v.lapse_moved_s is None
    assert "clock" not in v.text and "clock_jump" not in heartbeat(backend=fake).to_dict()["params"]


@pytest.mark.parametrize("spec, says", [("20", "AT:SECONDS"), ("20:0", "moves nothing"),
                                        ("20:4000", "clock_jump must be"), ("-1:60", "clock_jump_at must be")])
def test_a_bad_jump_is_refused_before_anything_runs(spec, says):
    with pytest.raises(BadParameter, match=says):
        ClockJump.parse(spec)


def test_a_jump_on_a_real_clock_fake_store_is_refused_before_any_key():
    with connect("fake", clock="real") as be:
        with pytest.raises(BadParameter, match="virtual clock"):
            heartbeat(renew="half", clock_jump="20:60", backend=be)
        assert be.keys() == []


def test_forward_60_s_at_20_s_takes_a_working_workers_job_and_the_fence_refuses_its_completion(fake):
    """The issue's reaper case: worker-1 lives and works a 25 s job; the step at 20 s puts the server's clock past
    its lease's score, worker-2's next beat (22.5 s) reaps the job and claims it with attempts 2, and worker-1's own
    completion at 25 s, made under attempts 1, is refused."""
    tl = reaper(job=25, crash_at=None, clock_jump="20:60", backend=fake)
    v = tl.verdict
    assert v.crashed_at is None and (v.clock_jumped_at, v.clock_jump_s, v.lease_ended_at) == (20.0, 60.0, 20.0)
    assert (v.reaped_at, v.reaped_by, v.reclaim_attempts) == (22.5, "worker-2", 2) and v.reaped_while_working
    assert v.refused_completions == [{"t": 25.0, "by": "worker-1", "attempts": 1}] and v.stale_complete_refused
    assert (v.completed_by, v.completed_at, v.lost) == ("worker-2", 47.5, 0)
    assert "worker-1 was still working the job when the reap took it back" in v.facts


def test_a_step_back_keeps_a_crashed_workers_lease_past_its_ttl(fake):
    """worker-1 dies at 10 s; the step back of 60 s at 15 s holds its 30 s lease on the server until 90 s, so the
    reap comes at the first beat after (92.5 s), not at 32.5 s; the late completion waits past it by default."""
    plain = reaper(backend=fake).verdict
    stepped = reaper(clock_jump="15:-60", backend=fake).verdict
    assert (plain.reaped_at, stepped.reaped_at, stepped.lease_ended_at) == (32.5, 92.5, 90.0)
    assert stepped.lease_deadline == 30.0 and not stepped.within_lease_plus_beat
    assert stepped.stale_complete_refused and stepped.late_completion_at == 105.0  # lease + 3 beats + the step


# the live step back: the holder's extend at 15 s, the step at 20 s, its pause at 25 s and the extend it then
# misses at 30 s lie 5 model seconds apart (on fakeredis the pause starts at 16 s; the facts are the same)
BACK = dict(renew="half", pause="25:100", clock_jump="20:-60")


def _live_scale() -> float:
    """The scale at which 5 model seconds stay about the reference host's slack (0.1, as `slow_live`), no larger
    than lets the step back's run, the longest here by its own cost, fit the whole-run bound."""
    back = HeartbeatParams(lease=30.0, job=75.0, renew="half", cadence=0.5, pause=Pause.parse(BACK["pause"]),
                           clock_jump=ClockJump.parse(BACK["clock_jump"]))
    return slow_scale(0.1, longest_run_s=back.cost()[0])


@pytest.mark.live
def test_on_live_valkey_the_steps_say_what_they_say_on_fakeredis():
    """The same runs on a valkey-server of their own under libfaketime: the same facts (the times are the
    machine's, so only what happened is compared; benchmarks/clock_jump_repeat.py repeats them ten times).
    Each run's order rests on steps a few model seconds apart, so they run at a scale sized for it, not at 0.01,
    where a slow host's lateness swaps them."""
    live = store_spec("valkey", scale=_live_scale())
    forward = heartbeat(renew="half", clock_jump="20:60", backend=live).verdict
    assert forward.lost_at_jump and forward.double_run and forward.renew_lost_at is not None
    assert forward.lapsed_at < forward.renew_lost_at and forward.finished_by == ["contender"]
    back = heartbeat(**BACK, backend=live).verdict
    # read through the recorded step, not timed: the lease outlived the deadline it was given by the whole step
    assert back.lapse_moved_s == -back.clock_jump_s == 60.0
    # the reap (22.5 s) falls 2.5 s after the step and 2.5 s before the job ends
    taken = reaper(job=25, crash_at=None, clock_jump="20:60", backend=store_spec("valkey", scale=SLOW_SCALE)).verdict
    assert taken.reaped_while_working and taken.stale_complete_refused and taken.lost == 0
