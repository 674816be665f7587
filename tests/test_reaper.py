"""Crash recovery by the reaper, the consumer beat, and the heartbeat on the queue — on both stores,
plus the reaper with real OS processes (SIGKILL) on live Valkey and the CLI contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from emqlab.cli import main
from emqlab.consumer import Consumer, run_clock
from emqlab.errors import BadParameter
from emqlab.queue import Queue
from emqlab.scenarios.base import run_on
from emqlab.scenarios.reaper import queue_heartbeat, reaper


def test_reaper_returns_the_crashed_job_and_fences_the_dead_worker(backend):
    tl = reaper(lease=30, beat=5, job=20, crash_at=10, backend=backend)
    v = tl.verdict
    exact = not backend.clock.real
    if exact:  # the virtual clock: every time is exact
        assert (v["claimed_at"], v["crashed_at"], v["lease_deadline"]) == (0.0, 10.0, 30.0)
        assert v["reaped_at"] == 32.5 and v["reclaimed_at"] == 32.5 and v["completed_at"] == 52.5
    else:  # scale 0.01 on a loaded machine: generous margins
        assert 29 <= v["lease_deadline"] <= 32
        assert 29 <= v["reaped_at"] <= 40
    assert v["within_lease_plus_beat"] is True
    assert v["back_in_pending_after"] <= 30 + 5
    assert v["reaped_by"] == v["reclaimed_by"] == "worker-2"
    assert v["reclaim_attempts"] == 2
    assert v["stale_complete_refused"] is True
    assert v["stale_extend_held"] is False
    assert tl.counts["lost"] == 0 and tl.counts["completed"] == 1 and tl.counts["duplicate_effects"] == 0
    assert "refused" in tl.summary and "attempts 2" in tl.summary
    # the lease band of the dead worker is the server's deadline, and it is marked lapsed
    [band] = tl.spans("lease", "worker-1")
    assert band.data["ended"] == "lapsed" and band.end == v["lease_deadline"]


def test_reaper_is_deterministic_on_the_virtual_clock(fake):
    a = reaper(backend=fake).to_dict()
    b = reaper(backend=fake).to_dict()
    for d in (a, b):
        d.pop("round_trips"), d.pop("commands")
    assert a == b


def test_reaper_validates(fake):
    with pytest.raises(BadParameter, match="crash_at must fall inside the job"):
        reaper(job=10, crash_at=12, backend=fake)
    with pytest.raises(BadParameter, match="lease"):
        reaper(lease=0, backend=fake)
    with pytest.raises(BadParameter, match="queue name"):
        reaper(queue="a:b", backend=fake)


@pytest.mark.parametrize("renew,runs,double", [("none", 2, True), ("half", 1, False)])
def test_queue_heartbeat(backend, renew, runs, double):
    tl = queue_heartbeat(lease=30, job=75, renew=renew, backend=backend)
    v = tl.verdict
    assert v["runs"] == runs and v["double_run"] is double
    assert tl.counts["completed"] == 1 and tl.counts["lost"] == 0
    if renew == "none":
        assert v["renewals"] == 0 and v["completions_refused"] == 1
        if not backend.clock.real:
            assert (v["lapsed_at"], v["reaped_at"]) == (30.0, 32.5)
    else:
        assert v["reaped_at"] is None and v["renewals"] >= 4 and v["finished_once"]


def test_graceful_stop_settles_the_job_in_hand(fake):
    with run_on(fake, "stop-test", {}) as run:
        q = Queue(fake, "orders", prefix=run.prefix)
        q.enqueue("A1")
        c = Consumer(q, "w", lease_ms=30_000, beat_ms=5_000, work_ms=20_000, run=run)
        c.start()
        run_clock(fake.clock, fake.clock.now_ms + 1_000)
        c.stop()
        run_clock(fake.clock, fake.clock.now_ms + 60_000)
        assert not c.main.is_alive
        assert q.where("A1") == ["done"]
        assert [e.kind for e in run.timeline.events][-2:] == ["complete", "stopped"]
        assert run.timeline.of("complete")[0].t == 20.0


def test_consumer_promotes_scheduled_jobs_on_its_beat(fake):
    with run_on(fake, "promote-test", {}) as run:
        q = Queue(fake, "orders", prefix=run.prefix)
        q.enqueue("later", delay_ms=12_000)
        c = Consumer(q, "w", lease_ms=30_000, beat_ms=5_000, work_ms=1_000, run=run)
        c.start()
        run_clock(fake.clock, fake.clock.now_ms + 30_000)
        c.halt()
        [promote] = run.timeline.of("promote")
        assert promote.t == 15.0  # the first beat after the job fell due at 12 s
        assert run.timeline.of("complete")[0].t == 16.0


@pytest.mark.live
def test_reaper_with_real_processes_sigkill(live):
    tl = reaper(lease=30, beat=5, job=20, crash_at=10, procs=True, backend=live)
    v = tl.verdict
    crash = tl.of("crash", "worker-1")[0]
    assert crash.data["signal"] == "SIGKILL"
    assert v["reaped_by"] == "worker-2" and v["reclaim_attempts"] == 2
    assert v["stale_complete_refused"] is True
    assert v["back_in_pending_after"] <= 30 + 5 + 5  # lease + beat, plus a margin for a loaded machine
    assert tl.counts["lost"] == 0
    assert tl.spans("lease", "worker-1") and tl.spans("lease", "worker-2")
    assert not live.keys(live.prefix + "reaper")
    # both consumer processes are gone: worker-1 by SIGKILL, worker-2 by a graceful stop
    pids = [e.data["pid"] for e in tl.of("started")]
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert tl.of("stopped", "worker-2")
    # and the timeline of a real-process run draws like any other
    from emqlab.plot.applied import draw_reaper

    check_protocol(draw_reaper(tl), ["processes"])


def test_procs_refused_on_fake(fake):
    with pytest.raises(BadParameter, match="live server"):
        reaper(procs=True, backend=fake)


def test_cli_reaper_json(capsys):
    assert main(["reaper", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scenario"] == "reaper" and out["lost"] == 0 and out["completed"] == 1
    v = out["verdict"]
    assert v["back_in_pending_after"] <= out["params"]["lease"] + out["params"]["beat"]
    assert v["reclaim_attempts"] == 2 and v["stale_complete_refused"] is True
    assert all({"t", "actor", "kind"} <= set(e) for e in out["events"])


def test_cli_reaper_bad_input_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "emqlab.cli", "reaper", "--crash-at", "99"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("emqlab: error: crash_at must fall inside the job")
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def _gids(fig):
    return [a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()]


def check_protocol(fig, names):
    gids = _gids(fig)
    assert list(fig.emqlab_modes) == names
    for name in names:
        assert gids.count(f"lane:{name}") == 1
        assert f"mode:{name}" in gids
        assert set(fig.emqlab_modes[name]) == {"label", "readout", "verdict"}
    assert fig.emqlab_caption


def test_draw_reaper_and_queue_heartbeat_follow_the_figure_protocol(fake):
    from emqlab.plot.applied import draw_queue_heartbeat, draw_reaper

    tl = reaper(backend=fake)
    fig = draw_reaper(tl)
    check_protocol(fig, ["in-process"])
    assert fig.emqlab_modes["in-process"]["readout"] == tl.summary
    assert "attempts 2" in fig.emqlab_modes["in-process"]["verdict"]
    fig = draw_queue_heartbeat([queue_heartbeat(renew="none", backend=fake),
                                queue_heartbeat(renew="half", backend=fake)])
    check_protocol(fig, ["none", "half"])
    assert "runs 2 times" in fig.emqlab_modes["none"]["verdict"]
    assert "finishes once" in fig.emqlab_modes["half"]["verdict"]
    with pytest.raises(TypeError):
        draw_reaper("not a timeline")


@pytest.mark.live
def test_blocking_park_wakes_on_enqueue(live):
    """Real clock, BLPOP park: a job enqueued mid-park is claimed at once, not at the end of the beat."""
    import threading

    from emqlab.procs import blpop_can_time

    assert blpop_can_time(live, 30_000)  # 300 ms at scale 0.01: three ticks at the default hz
    assert not blpop_can_time(live, 5_000)  # 50 ms: less than one tick
    with run_on(live, "park-test", {}) as run:
        q = Queue(live, "orders", prefix=run.prefix)
        c = Consumer(q, "w", lease_ms=30_000, beat_ms=30_000, work_ms=1_000, run=run, blocking_park=True)
        other = Queue(live, "orders", prefix=run.prefix)
        timer = threading.Timer(0.08, lambda: other.enqueue("A1"))  # 8 model s into the first park
        c.start()
        timer.start()
        run_clock(live.clock, live.clock.now_ms + 25_000)
        timer.join()
        c.halt()
        run_clock(live.clock, live.clock.now_ms + 1)
        [done] = run.timeline.of("complete")
        assert done.t < 25  # the beat would have ended at 30 s; the wake came at ~8 s (+ hz tick)
        assert q.where("A1") == ["done"]


@pytest.mark.parametrize("kw,match", [({"lease_ms": 0}, "lease"), ({"beat_ms": -1}, "beat"),
                                      ({"batch": 0}, "batch"), ({"effect": "twice"}, "effect"),
                                      ({"renew": 0}, "renewal")])
def test_consumer_validates(fake, kw, match):
    q = Queue(fake, "orders")
    opts = {"lease_ms": 30_000, "beat_ms": 5_000, "work_ms": 1_000, **kw}
    with pytest.raises(BadParameter, match=match):
        Consumer(q, "w", **opts)


def test_renewing_consumer_is_told_at_once_when_its_lease_was_reaped(fake):
    """Renewal on, but the holder is stopped past its lease: its next batched extend reports the
    job lost, and the holder stops work instead of finishing a job someone else now holds."""
    with run_on(fake, "renew-lost-test", {}) as run:
        clock = fake.clock
        q = Queue(fake, "orders", prefix=run.prefix)
        q.enqueue("A1")
        opts = dict(lease_ms=30_000, beat_ms=5_000, work_ms=75_000, renew=0.5, run=run)
        holder, other = Consumer(q, "worker-1", **opts), Consumer(q, "worker-2", **opts)
        holder.start()
        run_clock(clock, clock.now_ms + 2_500)
        holder.stop()
        other.start()
        clock.process(holder.pause(40_000))
        run_clock(clock, clock.now_ms + 120_000)
        for c in (holder, other):
            c.halt()
        run_clock(clock, clock.now_ms + 1)
        tl = run.timeline
        [lost] = [e for e in tl.of("renew", "worker-1") if e.data["lost"]]
        assert lost.t == 42.5 and lost.data["lost"] == ["A1"]  # the first tick after the pause ends
        [stopped] = tl.of("work_stopped", "worker-1")
        assert stopped.t == lost.t
        assert not tl.of("complete", "worker-1") and not tl.of("complete_refused", "worker-1")
        assert [e.data["attempts"] for e in tl.of("complete", "worker-2")] == [2]
