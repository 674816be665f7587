"""Consumers as OS processes, on live Valkey: a crash is SIGKILL, a stop-the-world pause is
SIGSTOP … SIGCONT, a graceful stop is SIGTERM (the job in hand is settled first).

Every child is tracked and always reaped: by `ProcessPool.close()` (also when the parent is
interrupted with Ctrl-C or an exception unwinds through the `with`), at interpreter exit, and by
the kernel if the parent itself is killed (PR_SET_PDEATHSIG). A child is started as
`python -m emqlab.procs consumer …` and reports what it did as JSON events pushed to a list under
the run's prefix, stamped on the parent's model time base (wall time since `t0`, over `scale`).
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from .timeline import Timeline

_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    # Ctrl-C in a terminal goes to the whole foreground group; the parent decides what children do.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _reap_all() -> None:
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        _finish(proc, graceful=False)


atexit.register(_reap_all)


def _finish(proc: subprocess.Popen, *, graceful: bool, timeout: float = 5.0) -> None:
    """End one child for sure: SIGCONT (a stopped child cannot act on SIGTERM), then SIGTERM or SIGKILL."""
    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
    finally:
        with _live_lock:
            _live.discard(proc)


def store_url(backend) -> str:
    """A URL another process can connect to for this backend's store (live backends only)."""
    if not backend.url:
        raise ValueError("fakeredis has no URL: it lives inside one process")
    return backend.url


class ProcessPool:
    """Consumer processes by name. Use as a context manager: every child is gone when it exits."""

    def __init__(self, backend, queue, *, t0_wall: float, events_key: str):
        if not backend.live:
            raise ValueError("consumer processes need a live server; fakeredis lives inside one process")
        self.url, self.scale = store_url(backend), backend.clock.scale
        self.queue, self.t0_wall, self.events_key = queue, t0_wall, events_key
        self.procs: dict[str, subprocess.Popen] = {}
        self.paused: set[str] = set()

    def spawn(self, name: str, *, lease_ms: float, beat_ms: float, work_ms: float, effect: str = "none",
              batch: int = 1, drain_limit: int = 100, quiet: tuple[str, ...] = ()) -> subprocess.Popen:
        prefix = self.queue.base[: -len(f"emq:{{{self.queue.name}}}:")]
        args = [sys.executable, "-m", "emqlab.procs", "consumer", "--url", self.url, "--scale", str(self.scale),
                "--prefix", prefix, "--queue", self.queue.name, "--name", name, "--lease-ms", str(lease_ms),
                "--beat-ms", str(beat_ms), "--work-ms", str(work_ms), "--effect", effect, "--batch", str(batch),
                "--drain-limit", str(drain_limit), "--t0", repr(self.t0_wall), "--events", self.events_key,
                "--quiet", ",".join(quiet)]
        proc = subprocess.Popen(args, preexec_fn=_die_with_parent, stdin=subprocess.DEVNULL)
        with _live_lock:
            _live.add(proc)
        self.procs[name] = proc
        return proc

    def alive(self) -> list[str]:
        return [n for n, p in self.procs.items() if p.poll() is None]

    def kill(self, name: str) -> None:
        """Crash: SIGKILL, nothing is settled."""
        proc = self.procs[name]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        self.paused.discard(name)
        with _live_lock:
            _live.discard(proc)

    def pause(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGSTOP)
        self.paused.add(name)

    def resume(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGCONT)
        self.paused.discard(name)

    def stop_all(self, timeout: float = 10.0) -> None:
        """Graceful: SIGTERM every child (each settles its job in hand), then make sure they are gone."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self.close()

    def close(self) -> None:
        for proc in self.procs.values():
            _finish(proc, graceful=False)

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs.values()]

    def __enter__(self) -> "ProcessPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def collect_events(backend, events_key: str, timeline: Timeline) -> int:
    """Move the children's reported events into `timeline` (model seconds on the parent's base)."""
    raw = backend.client.lrange(events_key, 0, -1)
    for line in raw:
        e = json.loads(line)
        timeline.add(e.pop("t"), e.pop("actor"), e.pop("kind"), **e)
    return len(raw)


def bands_from_events(timeline: Timeline) -> None:
    """Rebuild lease and work intervals from claim/complete/crash events (a child cannot ship
    intervals it never closed: a SIGKILLed one dies holding them)."""
    timeline.events.sort(key=lambda e: e.t)
    open_runs: dict[tuple[str, str], Any] = {}
    for e in timeline.events:
        job = e.data.get("job")
        if e.kind == "claim":
            key = (e.actor, job)
            timeline.open(e.t, e.actor, "lease", job=job, attempts=e.data["attempts"],
                          deadline=e.data["deadline"], ended=None)
            open_runs[key] = timeline.open(e.t, e.actor, "run", job=job, attempts=e.data["attempts"])
        elif e.kind in ("work_done", "complete", "complete_refused") and (e.actor, job) in open_runs:
            span = open_runs.pop((e.actor, job))
            span.end = e.t
        elif e.kind == "crash":
            for (actor, held), span in list(open_runs.items()):
                if actor == e.actor:
                    span.end, span.data["ended"] = e.t, "crashed"
                    del open_runs[(actor, held)]
    for lease in timeline.spans("lease"):
        done = next((x for x in timeline.events if x.actor == lease.actor and x.kind == "complete"
                     and x.data.get("job") == lease.data["job"] and x.t >= lease.start), None)
        if done is not None and done.t <= lease.data["deadline"]:
            lease.end, lease.data["ended"] = done.t, "completed"
        else:
            lease.end, lease.data["ended"] = lease.data["deadline"], "lapsed"


class WallRun:
    """The parent's side of a process run: events stamped on the same wall-clock base as the children's."""

    def __init__(self, run, t0_wall: float, scale: float):
        self.run, self.timeline, self.t0_wall, self.scale = run, run.timeline, t0_wall, scale

    @property
    def t(self) -> float:
        return (time.time() - self.t0_wall) / self.scale

    def sleep_until(self, t: float) -> None:
        time.sleep(max(0.0, t - self.t) * self.scale)

    def event(self, actor: str, kind: str, **data: Any):
        return self.timeline.add(self.t, actor, kind, **data)


def run_reaper_processes(run, q, lease_s: float, beat_s: float, job_s: float, crash_s: float, late_s: float,
                         job_id: str) -> None:
    """The reaper scenario with two consumer processes; worker-1 is SIGKILLed mid-job."""
    from .scenarios.reaper import late_completion

    scale = run.clock.scale
    events_key = q.base + "events"
    opts = dict(lease_ms=lease_s * 1000, beat_ms=beat_s * 1000, work_ms=job_s * 1000)
    pool = None
    try:
        q.enqueue(job_id, "order")
        t0 = time.time()
        wall = WallRun(run, t0, scale)
        wall.event("producer", "enqueue", job=job_id)
        pool = ProcessPool(run.backend, q, t0_wall=t0, events_key=events_key)
        pool.spawn("worker-1", **opts)
        # worker-1 must hold the job before the clock of the story starts; a child takes a moment to boot
        while q.where(job_id) != ["active"]:
            if time.time() - t0 > 30:
                raise RuntimeError("worker-1 did not claim the job within 30 s")
            time.sleep(0.005)
        # the story's clock starts at the claim as the child stamped it (its event is pushed before work starts)
        shift = (time.time() - t0) / scale
        for line in run.backend.client.lrange(events_key, 0, -1):
            e = json.loads(line)
            if e["kind"] == "claim" and e["actor"] == "worker-1":
                shift = e["t"]
        pool.spawn("worker-2", **opts)
        wall.sleep_until(shift + crash_s)
        pool.kill("worker-1")
        wall.event("worker-1", "crash", signal="SIGKILL", holding=[job_id])
        wall.sleep_until(shift + late_s)
        late_completion(wall, q, "worker-1", job_id, attempts=1)
        give_up = time.time() + (job_s + 2 * lease_s + 4 * beat_s) * scale + 30
        while q.sizes()["done"] < 1 and time.time() < give_up:
            time.sleep(0.01)
        pool.stop_all()
    finally:
        if pool is not None:
            pool.close()
    collect_events(run.backend, events_key, run.timeline)
    claim = next((e for e in sorted(run.timeline.events, key=lambda e: e.t)
                  if e.kind == "claim" and e.actor == "worker-1"), None)
    if claim is not None:  # the claim as the child stamped it, finer than the parent's poll
        shift = claim.t
    for e in run.timeline.events:  # the story's clock starts at worker-1's claim
        e.t = round(e.t - shift, 3)
        if "deadline" in e.data:
            e.data["deadline"] = round(e.data["deadline"] - shift, 3)
    bands_from_events(run.timeline)


def run_chaos_processes(run, q, params: dict[str, Any], plan, bar) -> None:
    """Chaos with one OS process per consumer: crashes are SIGKILLs (a supervisor starts a
    replacement), pauses are SIGSTOP for `pause_seconds`, then SIGCONT."""
    scale = run.clock.scale
    events_key = q.base + "events"
    effect = "fenced" if params["fencing"] == "on" else "unfenced"
    opts = dict(lease_ms=params["lease"] * 1000, beat_ms=params["beat"] * 1000, work_ms=params["job"] * 1000,
                effect=effect, drain_limit=params["drain"],
                quiet=("claim", "work_start", "work_done", "complete", "started"))
    jobs, pause_s = params["jobs"], params["pause_seconds"]
    expected = jobs * params["job"] / params["workers"]
    t0 = time.time()
    wall = WallRun(run, t0, scale)
    names = iter(f"worker-{i}" for i in range(1, 10_000))
    with ProcessPool(run.backend, q, t0_wall=t0, events_key=events_key) as pool:
        slots = [next(names) for _ in range(params["workers"])]
        for name in slots:
            pool.spawn(name, **opts)
        # faults are planned on the run's clock from the moment the consumers are up
        while q.sizes()["done"] == 0 and time.time() - t0 < 30:
            time.sleep(0.005)
        start = wall.t
        todo = [(start + at, kind, slot) for at, kind, slot in plan]
        resumes: list[tuple[float, str]] = []
        seen, give_up = 0, start + 4 * expected + 10 * params["lease"] + 30 / scale
        while wall.t < give_up:
            now = wall.t
            for when, name in [r for r in resumes if r[0] <= now]:
                resumes.remove((when, name))
                if pool.procs[name].poll() is None:
                    pool.resume(name)
                    wall.event(name, "pause_end")
            while todo and todo[0][0] <= now:
                _, kind, slot = todo.pop(0)
                free = [k for k, n in enumerate(slots) if n not in pool.paused and pool.procs[n].poll() is None]
                if not free:
                    continue
                slot = slot if slot in free else free[0]  # a busy victim passes the fault on
                name = slots[slot]
                if kind == "crash":
                    pool.kill(name)
                    wall.event(name, "crash", signal="SIGKILL")
                    slots[slot] = next(names)
                    pool.spawn(slots[slot], **opts)
                else:
                    pool.pause(name)
                    wall.event(name, "pause_start", seconds=pause_s, signal="SIGSTOP")
                    run.timeline.open(wall.t, name, "pause", end_planned=round(wall.t + pause_s, 3))
                    resumes.append((wall.t + pause_s, name))
            sizes = q.sizes()
            wall.event("monitor", "sample", **sizes)
            bar.update(sizes["done"] - seen)
            seen = sizes["done"]
            if seen >= jobs and not resumes:
                break
            time.sleep(min(0.02, params["beat"] * scale))
        for when, name in resumes:
            pool.resume(name)
            wall.event(name, "pause_end")
        pool.stop_all()
    for span in run.timeline.spans("pause"):
        end = next((e.t for e in run.timeline.of("pause_end", span.actor) if e.t >= span.start), None)
        span.end = end if end is not None else span.data["end_planned"]
    collect_events(run.backend, events_key, run.timeline)


# -- the child ------------------------------------------------------------------------------------
class ProcessRecorder:
    """A child's recorder: each event is pushed to the store as it happens."""

    def __init__(self, client, events_key: str, t0_wall: float, scale: float, quiet: frozenset = frozenset()):
        self.client, self.events_key, self.t0_wall, self.scale = client, events_key, t0_wall, scale
        self.quiet = quiet  # routine kinds not worth a round trip each (chaos: one per job)
        self.timeline = Timeline("process", {})  # intervals stay local; the parent rebuilds them
        self._buffer: list[str] = []

    @property
    def t(self) -> float:
        return (time.time() - self.t0_wall) / self.scale

    def event(self, actor: str, kind: str, **data: Any) -> None:
        if kind in self.quiet or (self.quiet and kind == "effect" and data.get("applied", 1) <= 1):
            return
        self._buffer.append(json.dumps({"t": round(self.t, 3), "actor": actor, "kind": kind, **data}))
        # pushed at once: a SIGKILL may come any moment, and what the child did before it is the story
        self.flush()

    def flush(self) -> None:
        if self._buffer:
            self.client.rpush(self.events_key, *self._buffer)
            self._buffer.clear()


def blpop_can_time(backend, beat_ms: float) -> bool:
    """Whether the server can time out a BLPOP of one beat faithfully. Valkey checks blocking
    timeouts on its `hz` tick (default 10 a second): at hz 10 a 50 ms BLPOP waits ~100 ms. A beat
    shorter than two ticks is parked with a timed wait and a non-blocking LPOP instead."""
    try:
        hz = int(backend.client.config_get("hz").get("hz", 10))
    except Exception:  # a managed server may refuse CONFIG; assume the default
        hz = 10
    return backend.clock.to_server_ms(beat_ms) >= 2 * 1000 / max(hz, 1)


def child_main(argv: list[str]) -> int:
    from .backend import connect
    from .consumer import Consumer, run_clock
    from .queue import Queue

    p = argparse.ArgumentParser(prog="python -m emqlab.procs consumer")
    p.add_argument("--url", required=True)
    p.add_argument("--scale", type=float, required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--queue", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--lease-ms", type=float, required=True)
    p.add_argument("--beat-ms", type=float, required=True)
    p.add_argument("--work-ms", type=float, required=True)
    p.add_argument("--effect", default="none")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--drain-limit", type=int, default=100)
    p.add_argument("--t0", type=float, required=True)
    p.add_argument("--events", required=True)
    p.add_argument("--quiet", default="", help="comma-separated event kinds not to report")
    a = p.parse_args(argv)
    with connect(a.url, clock="real", scale=a.scale) as backend:
        queue = Queue(backend, a.queue, prefix=a.prefix)
        blocking = blpop_can_time(backend, a.beat_ms)
        recorder = ProcessRecorder(backend.client, a.events, a.t0, a.scale,
                                   frozenset(k for k in a.quiet.split(",") if k))
        consumer = Consumer(queue, a.name, lease_ms=a.lease_ms, beat_ms=a.beat_ms, work_ms=a.work_ms,
                            batch=a.batch, effect=a.effect, run=recorder, blocking_park=blocking,
                            drain_limit=a.drain_limit)
        signal.signal(signal.SIGTERM, lambda *_: consumer.stop())
        recorder.event(a.name, "started", pid=os.getpid())
        main = consumer.start()
        try:
            run_clock(backend.clock, until=main)
        finally:
            recorder.flush()
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "consumer":
        sys.exit(child_main(sys.argv[2:]))
    print("usage: python -m emqlab.procs consumer --url URL …", file=sys.stderr)
    sys.exit(2)
