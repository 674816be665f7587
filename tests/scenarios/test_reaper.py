"""Crash recovery by the reaper, the consumer beat, and the heartbeat on the queue — on both stores,
plus the reaper with real OS processes (SIGKILL) on live Valkey and the CLI contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from realtime import premise, timeout_s
from support.records import lease_on_the_server, reaped_past_its_lease, record
from support.words import (check_protocol, says_only_what_the_queue_heartbeat_verdict_holds,
                           says_only_what_the_reaper_verdict_holds)

from emqlab.cli.command import main
from emqlab.queue.consumer import Consumer
from emqlab.core.errors import BadParameter
from emqlab.queue.jobs import Queue
from emqlab.scenarios.run_harness import run_on
from emqlab.store.clock import RealClock
from emqlab.scenarios.queue_heartbeat import QueueHeartbeatParams, QueueHeartbeatVerdict, queue_heartbeat
from emqlab.scenarios.queue_heartbeat import figure_words as queue_heartbeat_figure_words
from emqlab.scenarios.queue_heartbeat import words as queue_heartbeat_words
from emqlab.scenarios.reaper import Params, ReaperVerdict, reaper
from emqlab.scenarios.reaper import figure_words as reaper_figure_words
from emqlab.scenarios.reaper import words as reaper_words

RUN_SECONDS = 40  # about how long this file runs on a quiet 2-core machine: the suite starts the longest first


def test_reaper_returns_the_crashed_job_and_fences_the_dead_worker(backend_slow):
    # the reap must land between the lease (30 s) and the late completion (45 s): a beat past the lease
    # leaves 10 model seconds, 1 real second at the slow scale (0.1 s at 0.01, less than a loaded machine's lateness)
    backend = backend_slow
    tl = reaper(lease=30, beat=5, job=20, crash_at=10, backend=backend)
    v = tl.verdict
    exact = not backend.clock.real
    if exact:  # the virtual clock: every time is exact
        assert (v.claimed_at, v.crashed_at, v.lease_deadline) == (0.0, 10.0, 30.0)
        assert v.reaped_at == 32.5 and v.reclaimed_at == 32.5 and v.completed_at == 52.5
        assert v.within_lease_plus_beat is True and v.back_in_pending_after == 32.5
    else:  # a real clock on a loaded machine: the order of things, not how fast they came
        assert v.claimed_at < v.crashed_at < v.lease_deadline and reaped_past_its_lease(tl)
        assert v.reaped_at <= v.reclaimed_at < v.completed_at
        assert v.within_lease_plus_beat == (v.back_in_pending_after <= 30 + 5)
    assert v.reaped_by == v.reclaimed_by == "worker-2"
    assert v.reclaim_attempts == 2
    assert v.stale_complete_refused is True
    assert v.stale_extend_held is False
    assert tl.counts["lost"] == 0 and tl.counts["completed"] == 1 and tl.counts["duplicate_effects"] == 0
    says_only_what_the_reaper_verdict_holds(tl)
    # the lease band of the dead worker is the server's deadline, and it is marked lapsed
    [band] = tl.spans("lease", "worker-1")
    assert band.data["ended"] == "lapsed" and band.end == v.lease_deadline


def test_reaper_is_deterministic_on_the_virtual_clock(fake):
    a = reaper(backend=fake).to_dict()
    b = reaper(backend=fake).to_dict()
    for d in (a, b):
        d.pop("round_trips"), d.pop("commands")
        # the server's TIME goes on between the two runs: keep each reading relative to the run's first
        first = min(e["now"] for e in d["events"] if "now" in e)
        for e in d["events"]:
            for key in ("now", "score"):
                if key in e:
                    e[key] -= first
            for key in ("time_s", "score_s"):
                if key in e:
                    e[key] = round(e[key] - first / 1000, 3)
    assert a == b


def test_reaper_validates(fake):
    with pytest.raises(BadParameter, match="crash_at must fall inside the job"):
        reaper(job=10, crash_at=12, backend=fake)
    with pytest.raises(BadParameter, match="lease"):
        reaper(lease=0, backend=fake)
    with pytest.raises(BadParameter, match="queue name"):
        reaper(queue="a:b", backend=fake)


@pytest.mark.parametrize("renew,runs,double", [("none", 2, True), ("half", 1, False)])
def test_queue_heartbeat(backend_slow, renew, runs, double):
    # live at the slow scale: each renewal lands within 15 model seconds of when it is due (1.5 real seconds),
    # and with none the reap comes 40 model seconds before the holder's completion
    backend = backend_slow
    tl = queue_heartbeat(lease=30, job=75, renew=renew, backend=backend)
    v = tl.verdict
    assert v.runs == runs and v.double_run is double
    assert tl.counts["completed"] == 1 and tl.counts["lost"] == 0
    if renew == "none":
        assert v.renewals == 0 and v.completions_refused == 1
        if not backend.clock.real:
            assert (v.lapsed_at, v.reaped_at) == (30.0, 32.5)
    else:
        # the queue's lease is a score only a reap acts on: a renewal that lands after it ran out still
        # succeeds when no beat reaped in between (a loaded machine stalls both), so the lease's holding is
        # read on the server's clock. Held from the claim for the job's 75 s on 30 s grants, each landing
        # before the deadline it pushed out: at least ceil(75 / 30) - 1 = 2 renewals, whatever their lateness
        claimed, deadline = lease_on_the_server(tl, "worker-1")
        premise(v.reaped_at is None and v.finished_once and deadline is not None
                and deadline >= claimed + backend.clock.to_server_ms(75_000),
                "worker-1's lease never lapsed on the server's clock from its claim through its 75 s job")
        assert v.reaped_at is None and v.renewals >= 2 and v.finished_once
        if not backend.clock.real:
            assert v.renewals == 4  # at 15, 30, 45 and 60 s
    says_only_what_the_queue_heartbeat_verdict_holds(tl)


def test_graceful_stop_settles_the_job_in_hand(fake):
    with run_on(fake, "stop-test", {}) as run:
        q = Queue(fake, "orders", prefix=run.prefix)
        q.enqueue("A1")
        c = Consumer(q, "w", lease_ms=30_000, beat_ms=5_000, work_ms=20_000, recorder=run)
        c.start()
        fake.clock.run(until=fake.clock.now_ms + 1_000)
        c.stop()
        fake.clock.run(until=fake.clock.now_ms + 60_000)
        assert not c.main.is_alive
        assert q.where("A1") == ["done"]
        assert [e.kind for e in run.timeline.events if e.kind != "step"][-2:] == ["complete", "stopped"]
        assert run.timeline.of("complete")[0].t == 20.0


def test_consumer_promotes_scheduled_jobs_on_its_beat(fake):
    with run_on(fake, "promote-test", {}) as run:
        q = Queue(fake, "orders", prefix=run.prefix)
        q.enqueue("later", delay_ms=12_000)
        c = Consumer(q, "w", lease_ms=30_000, beat_ms=5_000, work_ms=1_000, recorder=run)
        c.start()
        fake.clock.run(until=fake.clock.now_ms + 30_000)
        c.halt()
        [promote] = run.timeline.of("promote")
        assert promote.t == 15.0  # the first beat after the job fell due at 12 s
        assert run.timeline.of("complete")[0].t == 16.0


@pytest.mark.live
def test_reaper_with_real_processes_sigkill(slow_live):
    live = slow_live  # the reap must land between the lease (30 s) and the late completion (45 s): 1.5 s real
    tl = reaper(lease=30, beat=5, job=20, crash_at=10, procs=True, backend=live)
    v = tl.verdict
    crash = tl.of("crash", "worker-1")[0]
    assert crash.data["signal"] == "SIGKILL"
    assert v.reaped_by == "worker-2" and v.reclaim_attempts == 2
    assert v.stale_complete_refused is True
    assert reaped_past_its_lease(tl) and v.reaped_at <= v.reclaimed_at  # never reaped before the lease lapsed
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

    check_protocol(draw_reaper([tl], reaper_figure_words([tl])), ["processes"])
    says_only_what_the_reaper_verdict_holds(tl)


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
                          capture_output=True, text=True, timeout=timeout_s(60))
    assert proc.returncode == 2
    assert proc.stderr.startswith("emqlab: error: crash_at must fall inside the job")
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_draw_reaper_and_queue_heartbeat_follow_the_figure_protocol(fake):
    from emqlab.plot.applied import draw_queue_heartbeat, draw_reaper

    tl = reaper(backend=fake)
    drawing = draw_reaper([tl], reaper_figure_words([tl]))
    check_protocol(drawing, ["in-process"])
    assert drawing.words.modes["in-process"].label == "a worker dies holding the job"
    assert "attempts 2" in drawing.words.modes["in-process"].static
    runs = {r: queue_heartbeat(renew=r, backend=fake) for r in ("none", "half")}
    drawing = draw_queue_heartbeat(runs, queue_heartbeat_figure_words(runs))
    check_protocol(drawing, ["none", "half"])
    assert "runs twice" in drawing.words.modes["none"].static
    assert "finishes once" in drawing.words.modes["half"].static
    with pytest.raises(BadParameter):
        draw_reaper("not a timeline", reaper_figure_words([tl]))
    with pytest.raises(BadParameter, match="no mode half"):
        draw_reaper({"half": tl}, reaper_figure_words([tl]))
    with pytest.raises(BadParameter):
        reaper_figure_words("not a timeline")


@pytest.mark.parametrize("kw", [{}, {"lease": 10, "crash_at": 5}, {"late_at": 15}, {"beat": 20}])
def test_reaper_readout_says_only_what_the_verdict_holds(fake, kw):
    tl = reaper(backend=fake, **kw)
    says_only_what_the_reaper_verdict_holds(tl)
    if kw == {"late_at": 15}:  # the late completion came while the dead worker's lease still held: accepted
        assert tl.verdict.stale_complete_accepted and tl.verdict.reaped_at is None
        assert tl.verdict.headline == "The crashed job was never reaped."
        assert tl.verdict.facts == ("lease 30 s, beat 5 s", "worker-1's late completion at 15 s was accepted, inside its lease",
                                    "no job lost")
    if kw == {"beat": 20}:  # a long beat: the reap still comes within lease + beat
        assert tl.verdict.within_lease_plus_beat is True and tl.verdict.reaped_at <= 30 + 20


def test_reaper_words_name_whoever_did_each_step():
    v = record(ReaperVerdict, reaped_at=31.0, crashed_at=10.0, died_holding=True, lease_deadline=30.0,
               reaped_by="worker-2", back_in_pending_after=31.0, within_lease_plus_beat=False,
               reclaimed_by="worker-3", reclaim_attempts=2, completed_by=None, completed_at=None,
               stale_complete_refused=False, stale_complete_accepted=False, lost=1)
    w = reaper_words(record(Params, lease=30.0, beat=5.0, procs=True), v)
    assert w.label == "a worker dies holding the job (two OS processes, SIGKILL)"
    assert w.headline == "worker-1 died at 10 s holding the job; worker-2's beat reaped it at 31 s; worker-1 sent no late completion."
    assert w.facts == ("its 30 s lease ran out on the server clock at 30 s",
                       "back in pending 31 s after the claim: later than one lease plus one beat",
                       "worker-3 re-claimed it with attempts 2", "nobody finished it", "1 job lost")
    assert w.static == "reaped at 31 s · re-claimed, attempts 2 · stale completion not sent · 1 job lost"


@pytest.mark.parametrize("renew,job", [("none", 75), ("half", 75), ("none", 20), ("third", 75), ("none", 200)])
def test_queue_heartbeat_readout_says_only_what_the_verdict_holds(fake, renew, job):
    tl = queue_heartbeat(renew=renew, job=job, backend=fake)
    says_only_what_the_queue_heartbeat_verdict_holds(tl)
    if (renew, job) == ("none", 75):
        assert tl.verdict.headline == ("no renewal: the 30 s lease ran out at 30 s and the 75 s job ran twice, both runs "
                                      "overlapping.")
        assert tl.verdict.facts == (
            "the reaper returned the job at 32.5 s to a second consumer", "the first holder's completion was refused",
            "worker-2's own lease ran out at 62.5 s, yet its completion at 107.5 s was accepted",
            "no consumer beat in between, so no reap took the job back and nobody claimed it again, and attempt 2 was "
            "still the current one")
    if (renew, job) == ("none", 20):  # the job fits in its lease: no reap, no extend, and the words say so
        assert tl.text == "no renewal: the 30 s lease never ran out, with no extend; the 20 s job finished once."


def test_queue_heartbeat_words_count_runs_and_refusals_as_they_were():
    v = record(QueueHeartbeatVerdict, lapsed_at=30.0, reaped_at=32.5, reclaimed_by="worker-2", renewals=0, runs=3,
               double_run=True, completions=1, completions_refused=0, first_holder_refused=False)
    w = queue_heartbeat_words(record(QueueHeartbeatParams, renew="none", lease=30.0, job=75.0), v)
    assert "ran 3 times, runs overlapping." in w.headline and w.facts[1] == "no completion was refused"
    assert w.static == "lapses at 30 s · reaped · the job runs 3 times"
    v = v.but(reaped_at=None, lapsed_at=None, renewals=1, runs=1, double_run=False)
    w = queue_heartbeat_words(record(QueueHeartbeatParams, renew="half", lease=30.0, job=20.0), v)
    assert w.text == "renew at TTL/2: 1 batched extend held the 30 s lease to the end; the 20 s job finished once."


@pytest.mark.live
def test_blocking_park_wakes_on_enqueue(live, slow_live):
    """Real clock, BLPOP park: a job enqueued mid-park is claimed at once, not at the end of the beat.
    The park itself at SLOW_SCALE: 1.7 s of real time between the wake and the bound, not 170 ms."""
    import threading

    from emqlab.queue.procs import blpop_can_time

    assert blpop_can_time(live, 30_000)  # 300 ms at scale 0.01: three ticks at the default hz
    assert not blpop_can_time(live, 5_000)  # 50 ms: less than one tick
    be = slow_live
    with run_on(be, "park-test", {}) as run:
        q = Queue(be, "orders", prefix=run.prefix)
        c = Consumer(q, "w", lease_ms=30_000, beat_ms=30_000, work_ms=1_000, recorder=run, blocking_park=True)
        other = Queue(be, "orders", prefix=run.prefix)
        timer = threading.Timer(be.clock.real_s(8), lambda: other.enqueue("A1"))  # 8 model s into the first park
        c.start()
        timer.start()
        be.clock.run(until=be.clock.now_ms + 25_000)
        timer.join()
        c.halt()
        be.clock.run(until=be.clock.now_ms + 1)
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


def test_one_recorder_protocol_filtered_and_wall(fake):
    """Every run writes through `Recorder`: a Run is a ClockRecorder, Filtered drops what its predicates
    refuse (a dropped interval is returned but never reaches the timeline), WallRecorder reads the wall."""
    from emqlab.queue.consumer import unusual
    from emqlab.core.timeline import ClockRecorder, Filtered, Recorder, Timeline, WallRecorder

    with run_on(fake, "recorder-test", {}) as run:
        assert isinstance(run, ClockRecorder) and isinstance(run, Recorder)
        quiet = Filtered(run, keep_event=unusual(), keep_interval=lambda kind, data: kind == "pause")
        fake.clock.run(until=fake.clock.now_ms + 2_000)
        assert quiet.event("w", "claim", job="A") is None
        assert quiet.event("w", "effect", job="A", applied=1) is None
        kept = quiet.event("w", "effect", job="A", applied=2)
        band = quiet.open("w", "lease", job="A")
        pause = quiet.open("w", "pause")
        assert (kept.t, band.start, pause.start) == (2.0, 2.0, 2.0)
        assert run.timeline.events == [kept] and run.timeline.intervals == [pause]
        assert quiet.timeline is run.timeline and quiet.t == run.t == 2.0
    wall = WallRecorder(Timeline("wall", {}), t0_wall=time.time() - 1.0, clock=RealClock(0.01))
    assert wall.t >= 100  # one real second at 0.01 real seconds per model second
    assert wall.event("parent", "crash").t >= 100 and wall.timeline.of("crash")
    # a consumer given no recorder keeps a timeline of its own on its queue's clock
    c = Consumer(Queue(fake, "orders"), "w", lease_ms=30_000, beat_ms=5_000, work_ms=1_000)
    assert isinstance(c.rec, ClockRecorder) and c.rec.timeline.scenario == "w"


@pytest.mark.live
def test_a_blocking_park_longer_than_the_clients_read_timeout_waits_in_slices(slow_live):
    """A beat longer in real time than the client's socket timeout: the park blocks in slices shorter than
    that timeout, so the client never gives up on a BLPOP the server still holds, and the park lasts its beat."""
    from emqlab.queue.consumer import PARK_SLICE_S

    be = slow_live
    read_s = 1.5 * PARK_SLICE_S
    be.client.connection_pool.connection_kwargs["socket_timeout"] = read_s  # every new connection reads so long
    be.client.connection_pool.reset()  # and the ones made before are dropped
    beat_ms = be.clock.model_s(2.5 * PARK_SLICE_S) * 1000  # longer than the read timeout, in real time
    with run_on(be, "park-slices", {}) as run:
        q = Queue(be, "orders", prefix=run.prefix)
        c = Consumer(q, "w", lease_ms=beat_ms, beat_ms=beat_ms, work_ms=1_000, recorder=run, blocking_park=True)
        started = time.monotonic()
        park = be.clock.process(c.park())
        be.clock.run(until=park)
        took = time.monotonic() - started
        woken = park.value
    assert woken is False and took >= 2.5 * PARK_SLICE_S, took  # not an event count: the park's length, real s
