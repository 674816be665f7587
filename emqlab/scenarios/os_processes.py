"""The applied scenarios with one OS process per consumer (live Valkey only): the reaper's crash is
a SIGKILL, chaos's crashes are SIGKILLs and its pauses SIGSTOP … SIGCONT.

The parent records on a `WallRecorder`, the same wall-clock time base the children stamp their
pushed events on (`emqlab.queue.procs`); their events are collected into the run's timeline at the end.
"""

from __future__ import annotations

import json
import time

from ..queue.consumer import ROUTINE, late_completion
from ..core.errors import StoreError
from ..queue.procs import ProcessPool, bands_from_events, collect_events
from ..queue.jobs import Queue
from ..core.kinds import Kind
from ..core.timeline import WallRecorder
from ..core.words import seconds
from ..store.clock import to_ms
from .run_harness import Run
from .fault_plan import fault_wait as in_process_wait, undelivered

BOOT_S = 30  # real seconds a child may take to boot and claim its first job


def fault_wait(params, clock) -> float:
    """Model seconds a due fault waits for a consumer that is in, awake and alive: the in-process bound
    (a pause and a restart) plus the boot bound on `clock`, so a replacement still booting on a slow host is
    waited for."""
    return in_process_wait(params) + clock.model_s(BOOT_S)


def _check_children(pool: ProcessPool) -> None:
    """A child that failed (its store died, most often) ends the run with one line, its own."""
    failed = pool.failures()
    if failed:
        name, line = sorted(failed.items())[0]
        raise StoreError(f"{name} failed: {line}")


def run_reaper_processes(run: Run, q: Queue, lease_s: float, beat_s: float, job_s: float, crash_s: float,
                         late_s: float, job_id: str, design: str = "none") -> None:
    """The reaper scenario with two consumer processes; worker-1 is SIGKILLed mid-job."""
    clock = run.clock
    events_key = q.base + "events"
    opts = dict(lease_ms=to_ms(lease_s), beat_ms=to_ms(beat_s), work_ms=to_ms(job_s), design=design)
    t0 = time.time()
    wall = WallRecorder(run.timeline, t0, clock)
    with ProcessPool(run.backend, q, t0_wall=t0, events_key=events_key) as pool:
        # both children boot and connect first, held at a gate: the story's clock holds no process start-up
        # (one can take longer than the whole job at a test's scale), and worker-2 is beating before the crash
        pool.spawn("worker-1", gated=True, **opts)
        pool.spawn("worker-2", gated=True, **opts)
        pool.wait_ready(["worker-1", "worker-2"], BOOT_S)
        q.enqueue(job_id, "order")
        wall.event("producer", Kind.ENQUEUE, job=job_id)
        pool.open("worker-1")
        while q.where(job_id) != ["active"]:
            _check_children(pool)
            if time.time() - t0 > 2 * BOOT_S:
                raise StoreError(f"worker-1 did not claim the job within {BOOT_S} s of its start (real time)")
            time.sleep(0.002)
        # the story's clock starts at the claim as the child stamped it (its event is pushed before work starts)
        shift = clock.model_s(time.time() - t0)
        for line in run.backend.client.lrange(events_key, 0, -1):
            e = json.loads(line)
            if e["kind"] == Kind.CLAIM and e["actor"] == "worker-1":
                shift = e["t"]
        wall.sleep_until(shift + beat_s / 2)  # the two beats interleave, as in the in-process run
        pool.open("worker-2")
        wall.sleep_until(shift + crash_s)
        pool.kill("worker-1")
        wall.event("worker-1", Kind.CRASH, signal="SIGKILL", holding=[job_id])
        wall.sleep_until(shift + late_s)
        late_completion(wall, q, "worker-1", job_id, attempts=1)
        give_up = time.time() + clock.real_s(job_s + 2 * lease_s + 4 * beat_s) + BOOT_S
        while q.sizes()["done"] < 1 and time.time() < give_up:
            _check_children(pool)
            time.sleep(0.01)
        pool.stop_all()
    collect_events(run.backend, events_key, run.timeline)
    claim = next((e for e in sorted(run.timeline.events, key=lambda e: e.t)
                  if e.kind == Kind.CLAIM and e.actor == "worker-1"), None)
    if claim is not None:  # the claim as the child stamped it, finer than the parent's poll
        shift = claim.t
    for e in run.timeline.events:  # the story's clock starts at worker-1's claim
        e.t = round(e.t - shift, 3)
        if "deadline" in e.data:
            e.data["deadline"] = round(e.data["deadline"] - shift, 3)
    bands_from_events(run.timeline)


def run_chaos_processes(run: Run, q: Queue, params, plan, bar) -> None:
    """Chaos with one OS process per consumer: crashes are SIGKILLs (a supervisor starts a
    replacement), pauses are SIGSTOP for `pause_seconds`, then SIGCONT.

    Every consumer boots behind a gate and is let in once it has connected; a fault strikes only a
    consumer that is in, so a slow start (a loaded machine takes seconds) is never what a crash or a
    pause hits: a process stopped while it imports holds nothing and shows nothing."""
    clock = run.clock
    events_key = q.base + "events"
    effect = "fenced" if params.fencing == "on" else "unfenced"
    opts = dict(lease_ms=to_ms(params.lease), beat_ms=to_ms(params.beat), work_ms=to_ms(params.job),
                effect=effect, drain_limit=params.drain, quiet=tuple(sorted(ROUTINE)),
                design=params.design)
    jobs, pause_s = params.jobs, params.pause_seconds
    expected = jobs * params.job / params.workers
    t0 = time.time()
    wall = WallRecorder(run.timeline, t0, clock)
    names = iter(f"worker-{i}" for i in range(1, 10_000))
    with ProcessPool(run.backend, q, t0_wall=t0, events_key=events_key) as pool:
        slots = [next(names) for _ in range(params.workers)]
        for name in slots:
            pool.spawn(name, gated=True, **opts)
        pool.wait_ready(slots, BOOT_S)
        for name in slots:
            pool.open(name)
        consuming = set(slots)
        # faults are planned on the run's clock from the moment the consumers are up
        while q.sizes()["done"] == 0 and time.time() - t0 < BOOT_S:
            _check_children(pool)
            time.sleep(0.005)
        start = wall.t
        todo = [(start + at, fault, slot) for at, fault, slot in plan]
        wait = fault_wait(params, clock)
        resumes: list[tuple[float, str]] = []
        seen, give_up = 0, start + 4 * expected + 10 * params.lease + clock.model_s(BOOT_S)
        while wall.t < give_up:
            now = wall.t
            for name in pool.booted():  # a replacement has connected: let it in
                pool.open(name)
                consuming.add(name)
            for when, name in [r for r in resumes if r[0] <= now]:
                resumes.remove((when, name))
                if pool.procs[name].poll() is None:
                    pool.resume(name)
                    wall.event(name, Kind.PAUSE_END)
            while todo and todo[0][0] <= now:
                due, fault, slot = todo[0]
                free = [k for k, n in enumerate(slots)
                        if n in consuming and n not in pool.paused and pool.procs[n].poll() is None]
                if not free:  # nobody to strike yet: the fault (and those behind it) waits, up to its bound
                    if now - due < wait:
                        break
                    todo.pop(0)
                    undelivered(wall, due - start, fault, f"no consumer was in, awake and alive for "
                                                        f"{seconds(wait)} after it fell due")
                    continue
                todo.pop(0)
                slot = slot if slot in free else free[0]  # a busy victim passes the fault on
                name = slots[slot]
                if fault == "crash":
                    pool.kill(name)
                    wall.event(name, Kind.CRASH, signal="SIGKILL")
                    slots[slot] = next(names)
                    pool.spawn(slots[slot], gated=True, **opts)
                else:
                    pool.pause(name)
                    wall.event(name, Kind.PAUSE_START, seconds=pause_s, signal="SIGSTOP")
                    band = wall.open(name, "pause", end_planned=round(wall.t + pause_s, 3))
                    resumes.append((band.start + pause_s, name))
            _check_children(pool)
            sizes = q.sizes()
            wall.event("monitor", Kind.SAMPLE, **sizes)
            bar.update(sizes["done"] - seen)
            seen = sizes["done"]
            if seen >= jobs and not resumes and not todo:
                break
            time.sleep(min(0.02, clock.real_s(params.beat)))
        for due, fault, _ in todo:  # the run's time limit passed first
            undelivered(wall, due - start, fault, "the run reached its time limit before a consumer was free")
        for when, name in resumes:
            pool.resume(name)
            wall.event(name, Kind.PAUSE_END)
        pool.stop_all()
    for span in run.timeline.spans("pause"):
        end = getattr(run.timeline.first(Kind.PAUSE_END, span.actor, where=lambda e: e.t >= span.start), "t", None)
        span.end = end if end is not None else span.data["end_planned"]
    collect_events(run.backend, events_key, run.timeline)
