"""How a consumer holds its jobs (`emqlab.lease.designs`, each design's keeper): none, per-job, sweep, session. The reaper's crash
recovery under every design; a renewing holder told at once when its job is gone; a dead worker's
session taking all its jobs back to pending within one session lease plus one beat, in bounded
slices, in process (exact) and with a SIGKILLed consumer process on live Valkey."""

from __future__ import annotations

import json
import time

import pytest

from emqlab.queue.consumer import Consumer
from emqlab.core.errors import BadParameter
from emqlab.lease.designs import design_names
from emqlab.queue.procs import ProcessPool, collect_events
from emqlab.queue.jobs import Queue
from emqlab.scenarios.run_harness import run_on
from emqlab.scenarios.reaper import reaper
from emqlab.core.timeline import WallRecorder
from realtime import premise, timeout_s
from support.records import reaped_past_its_lease, slack

RUN_SECONDS = 30  # about how long this file runs on a quiet 2-core machine: the suite starts the longest first
LEASE_S, BEAT_S = 30.0, 5.0


def test_the_designs_are_none_and_the_renewing_ones():
    assert design_names() == ["none", *design_names(renewing=True)] and "session" in design_names()


@pytest.mark.parametrize("design", design_names())
def test_reaper_recovers_a_crashed_job_under_every_design(backend_slow, design):
    # the reap must land between the lease (30 s) and the late completion (45 s), within slack of a beat
    # past the lease: at 0.01 the slack alone (REAL_SLACK_S) is more model seconds than the whole lease
    backend = backend_slow
    tl = reaper(lease=LEASE_S, beat=BEAT_S, job=20, crash_at=10, design=design, backend=backend)
    v = tl.verdict
    assert v.reaped_by == v.reclaimed_by == "worker-2" and v.reclaim_attempts == 2
    assert v.stale_complete_refused is True and v.lost == 0
    if not backend.clock.real:
        assert v.reaped_at == 32.5 and v.within_lease_plus_beat is True
    else:
        assert reaped_past_its_lease(tl) and v.reaped_at <= LEASE_S + BEAT_S + slack(backend, 5)


@pytest.mark.parametrize("kw,match", [({"design": "twice"}, "unknown design"), ({"design": "none", "renew": 0.5}, "none"),
                                      ({"max_runtime_ms": -1}, "max runtime"), ({"reap_calls": 0}, "reap calls")])
def test_consumer_design_options_validate(fake, kw, match):
    with pytest.raises(BadParameter, match=match):
        Consumer(Queue(fake, "orders"), "w", lease_ms=30_000, beat_ms=5_000, work_ms=1_000, **kw)


def test_renewing_consumer_is_told_at_once_when_its_lease_was_reaped(fake):
    """Renewal on, but the holder is stopped past its lease: its next batched extend reports the
    job lost, and the holder stops work instead of finishing a job someone else now holds."""
    with run_on(fake, "renew-lost-test", {}) as run:
        clock = fake.clock
        q = Queue(fake, "orders", prefix=run.prefix)
        q.enqueue("A1")
        opts = dict(lease_ms=30_000, beat_ms=5_000, work_ms=75_000, renew=0.5, recorder=run)
        holder, other = Consumer(q, "worker-1", **opts), Consumer(q, "worker-2", **opts)
        holder.start()
        clock.run(until=clock.now_ms + 2_500)
        holder.stop()
        other.start()
        clock.process(holder.pause(40_000))
        clock.run(until=clock.now_ms + 120_000)
        for c in (holder, other):
            c.halt()
        clock.run(until=clock.now_ms + 1)
        tl = run.timeline
        [lost] = [e for e in tl.of("renew", "worker-1") if e.data["lost"]]
        assert lost.t == 42.5 and lost.data["lost"] == ["A1"]  # the first tick after the pause ends
        [stopped] = tl.of("work_stopped", "worker-1")
        assert stopped.t == lost.t
        assert not tl.of("complete", "worker-1") and not tl.of("complete_refused", "worker-1")
        assert [e.data["attempts"] for e in tl.of("complete", "worker-2")] == [2]


def test_a_dead_workers_session_returns_all_its_jobs_within_a_lease_and_a_beat(fake):
    """worker-1 holds 250 jobs by its session and dies; worker-2's next beat past the session's deadline
    returns all of them, in slices of at most 100 (several bounded calls in that one beat)."""
    n, ms = 250, 1000.0
    with run_on(fake, "session-crash-test", {}) as run:
        clock = fake.clock
        q = Queue(fake, "orders", prefix=run.prefix)
        q.enqueue_many([f"J{i:04d}" for i in range(n)])
        opts = dict(lease_ms=LEASE_S * ms, beat_ms=BEAT_S * ms, recorder=run, design="session")
        w1 = Consumer(q, "worker-1", work_ms=10 * LEASE_S * ms, batch=n, drain_limit=n, **opts)
        w2 = Consumer(q, "worker-2", work_ms=1, **opts)
        w1.start()
        clock.run(until=clock.now_ms + 20_000)  # worker-1 renewed its session at 15 s
        assert len(q.held_by("worker-1")) == n
        w1.crash()
        crashed = run.t
        w2.start()
        clock.run(until=clock.now_ms + (LEASE_S + 2 * BEAT_S) * ms)
        w2.halt()
        clock.run(until=clock.now_ms + 1)
        reaps = [e for e in run.timeline.of("reap", "worker-2") if e.data["jobs"]]
        assert len(reaps) == 1 and len(reaps[0].data["jobs"]) == n and reaps[0].data["sessions"] == ["worker-1"]
        assert reaps[0].t - crashed <= LEASE_S + BEAT_S
        [step] = [e for e in run.timeline.of("step", "worker-2") if e.data["step"] == "reap" and e.data["moved"]]
        assert step.data["calls"] == 3  # 100 + 100 + 50: bounded slices, all in the one beat
        assert list(q.session_deadlines()) == ["worker-2"]  # the dead session's entry is gone


@pytest.mark.live
def test_a_sigkilled_consumer_process_loses_no_job_and_holds_none_past_a_lease_and_a_beat(slow_live):
    """Real processes: worker-1 holds 300 jobs by its session and is SIGKILLed once worker-2, a process
    too, beats; worker-2 returns every one of them to pending within one session lease plus one beat
    (+ a loaded machine's slack), in bounded reap calls. At SLOW_SCALE, so the lease is 3 s of real
    time and the slack 0.5 s: a process start-up is not in the bound (worker-2 beats before the kill)."""
    live = slow_live
    n, margin = 300, slack(slow_live)
    with run_on(live, "session-sigkill-test", {}) as run:
        q = Queue(live, "orders", prefix=run.prefix)
        q.enqueue_many([f"J{i:04d}" for i in range(n)])
        events_key, t0 = q.base + "events", time.time()
        wall = WallRecorder(run.timeline, t0, live.clock)
        opts = dict(lease_ms=LEASE_S * 1000, beat_ms=BEAT_S * 1000, design="session")
        with ProcessPool(live, q, t0_wall=t0, events_key=events_key) as pool:
            pool.spawn("worker-1", work_ms=100 * LEASE_S * 1000, batch=n, drain_limit=n, **opts)
            deadline = time.time() + timeout_s(30)
            while len(q.held_by("worker-1")) < n and time.time() < deadline:
                time.sleep(0.005)
            assert len(q.held_by("worker-1")) == n
            pool.spawn("worker-2", work_ms=100 * LEASE_S * 1000, **opts)
            deadline = time.time() + timeout_s(60)  # a loaded machine starts a process slowly: wait for its first beat
            while not any(json.loads(e).get("actor") == "worker-2" and json.loads(e).get("kind") == "step"
                          for e in live.client.lrange(events_key, 0, -1)) and time.time() < deadline:
                time.sleep(0.01)
            pool.kill("worker-1")
            crashed = wall.event("worker-1", "crash", signal="SIGKILL").t
            deadline = time.time() + live.clock.real_s(LEASE_S + BEAT_S + margin) + timeout_s(5)
            while q.reaped() < n and time.time() < deadline:
                time.sleep(0.002)
            pool.stop_all()
        collect_events(live, events_key, run.timeline)
        assert q.reaped() == n and q.held_by("worker-1") == []
        reaps = [e for e in run.timeline.of("reap", "worker-2") if e.data["jobs"]]
        returned = [j for e in reaps for j in e.data["jobs"]]
        assert sorted(returned) == sorted(f"J{i:04d}" for i in range(n))
        assert max(e.t for e in reaps) - crashed <= LEASE_S + BEAT_S + margin, [e.t - crashed for e in reaps]
        steps = [e for e in run.timeline.of("step", "worker-2") if e.data.get("step") == "reap" and e.data["moved"]]
        assert all(e.data["moved"] <= 100 * e.data.get("calls", 1) for e in steps)
        premise(sum(e.data["moved"] for e in steps) == n, "worker-2's reaps moved all 300 jobs, at most 100 a call")
        assert sum(e.data.get("calls", 1) for e in steps) >= 3  # 300 jobs, at most 100 a call
        assert q.where("J0000") in (["pending"], ["active"], ["done"])
        assert json.dumps(run.timeline.to_dict())  # a real-process run records like any other
