"""BullMQ (the `bullmq` Python package, which runs BullMQ's own Lua scripts): a handler that blocks the
event loop stops the renewal of its job's lock, and the stalled-job checker runs the job again or fails it.

What the library does (`bullmq/worker.py`, `bullmq/lock_manager.py`, `commands/extendLocks-1.lua`,
`commands/moveStalledJobsToWait-9.lua`, read and then run here): a worker takes a job with a lock
`bull:<queue>:<id>:lock` (PX `lockDuration`, default 30 000 ms) and renews its locks from one asyncio task
that wakes every `lockRenewTime / 2` and renews each lock taken or renewed more than `lockRenewTime / 2`
ago (`lock_manager.py:172, 180, 193` at 3.4.4), so a lock is renewed after up to a whole `lockRenewTime`
(default: half the lock); a failed renewal emits `lockRenewalFailed` on the worker. Every `stalledInterval`
(default 30 000 ms) each worker's timer runs `moveStalledJobsToWait`, and the first to run in that interval
does the check (a `stalled-check` key keeps the others out): a job that was active at the previous check
and has no lock now is moved back to wait (its `stc` counter incremented), and once `stc` passes
`maxStalledCount` (default 1) it is marked to fail with "job stalled more than allowable limit", which the
next worker to fetch it does. A processor that does synchronous work holds the event loop: the renewal
task cannot run, the lock runs out, another worker takes the job again (taskforcesh/bullmq#2857, #3183).
The blocked worker's own completion is then refused ("Missing lock for job … moveToFinished"), after its
work is done.

The run: two BullMQ `Worker`s, each its own OS process with its own event loop, one job of `task` seconds.
- failure: the processor calls the work directly (it blocks the loop for the whole task);
- fix: the processor awaits `asyncio.to_thread(work)`: the loop stays free and the renewal keeps the lock.
The sampler reads the job's lock (its owner and PTTL), its `stc`, and the active, wait, failed and
completed sets. BullMQ's key prefix is set under emqlab's (`prefix`), on a server of the run's own.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

from ..core.environment import TOOLS_PREFIX_ENV, TOOLS_URL_ENV
from ..core.kinds import Kind
from ..core.ranges import within
from ..core.timeline import Timeline
from ..core.words import ModeWords, plural, seconds, times
from ..store.clock import to_ms, to_s
from .declaration import Library, Repeat
from .harness import LibraryRun, Probe, check_budget, require
from .report import Reporter, main, work
from .story import ToolParams, ToolVerdict, add_work_lanes, bodies, counts, judged, lock_bands, states

QUEUE, JOB_ID = "q", "job-1"
WORKERS = ("worker-1", "worker-2")
TASK_S = 3.0
STALLED_INTERVAL_S = 0.5
MAX_STALLED = 1  # BullMQ's default
DEFAULTS = {"lockDuration": 30_000, "stalledInterval": 30_000, "maxStalledCount": 1}
HANDLERS = {False: "blocks the event loop", True: "runs its work in a thread (asyncio.to_thread)"}


@dataclass(frozen=True, kw_only=True)
class Params(ToolParams):
    """A BullMQ run: the task (seconds), the lock's duration and the stalled check's interval (seconds),
    maxStalledCount; with `fix` the processor runs the work in a thread."""

    lock_duration: float
    stalled_interval: float = STALLED_INTERVAL_S
    max_stalled_count: int = MAX_STALLED

    def span(self) -> float:
        """The story at most: each run of the body, a lapse and two stalled checks between them."""
        return (self.max_stalled_count + 1) * (self.task + self.lock_duration + 2 * self.stalled_interval) + 3


@dataclass(frozen=True, kw_only=True)
class BullmqVerdict(ToolVerdict):
    """A BullMQ run's facts: the job's end on the server (completed, failed and why), how often the stalled
    checker moved it back (`stc`), when its lock first ran out, how often the lock's deadline moved on (a
    renewal), and which workers' completions the server refused."""

    lock_duration: float
    stalled_interval: float
    max_stalled_count: int
    handler: str
    final_state: str
    failed_reason: str | None
    stalled_count: int
    lapsed_at: float | None
    renewals: int
    refused: list


VERDICT = BullmqVerdict  # what `emqlab.tools.load` reads a run's verdict back as


def default_timeout(task: float) -> float:
    """The story's lockDuration: half the task, so a blocked loop lets it run out well inside the task."""
    return round(task / 2, 3)


def opts(p: Params, prefix: str) -> dict[str, Any]:
    """The Worker's options, in BullMQ's names and units (milliseconds)."""
    return {"prefix": prefix + "bull", "lockDuration": int(to_ms(p.lock_duration)),
            "stalledInterval": int(to_ms(p.stalled_interval)), "maxStalledCount": p.max_stalled_count}


class BullmqProbe(Probe):
    """BullMQ's keys for the job: its lock (owner and PTTL), its hash (stc, failedReason), the queue's lists."""

    def __init__(self, prefix: str):
        self.k = f"{prefix}bull:{QUEUE}:"

    def commands(self, pipe) -> None:
        job = self.k + JOB_ID
        pipe.get(job + ":lock")
        pipe.pttl(job + ":lock")
        pipe.hmget(job, "stc", "failedReason")
        pipe.lrange(self.k + "active", 0, -1)
        pipe.llen(self.k + "wait")
        pipe.zscore(self.k + "failed", JOB_ID)
        pipe.zscore(self.k + "completed", JOB_ID)

    def state(self, replies: list[Any], now: float) -> dict[str, Any]:
        owner, pttl, (stc, reason), active, waiting, failed, completed = replies
        where = ("completed" if completed is not None else "failed" if failed is not None
                 else "active" if JOB_ID in active else "wait" if waiting else "added")
        return {"lock_owner": owner, "lock_deadline": now + to_s(pttl) if owner is not None and pttl > 0 else None,
                "stc": int(stc or 0), "state": where, "failed_reason": reason}


def bullmq(fix: bool = False, task: float = TASK_S, timeout: float | None = None) -> Timeline:
    """Run BullMQ's story (see the module) on a server of its own; the Timeline, verdict included.

    fix: the processor runs the work in a thread; timeout: lockDuration (seconds), by default half the task."""
    task = float(within("task", task))
    lock = float(within("timeout", timeout)) if timeout is not None else default_timeout(task)
    params = Params(fix=bool(fix), task=task, lock_duration=lock)
    check_budget(LIBRARY.name, params.span())
    version = require(LIBRARY)
    with LibraryRun(LIBRARY.name, params, BullmqProbe, version) as run:
        mode = "thread" if fix else "block"
        for name in WORKERS:
            run.spawn(name, ["-m", __name__, "worker", name, mode, repr(lock), repr(params.stalled_interval),
                             str(params.max_stalled_count)])
        run.wait_ready(("bzpopmin",), len(WORKERS))
        run.begin()
        run.record("producer", Kind.SEND, job=JOB_ID)
        _add(run.url, opts(params, run.prefix)["prefix"], task)

        def over() -> bool:
            return run.sampler.last.get("state") in ("completed", "failed") and run.bodies_ended()

        tl = run.end(over, params.span())
    return judged(tl, lanes, verdict)


def _add(url: str, prefix: str, task: float) -> None:
    """Add the job with BullMQ's own Queue, on an event loop of its own in a thread of its own (the caller may
    be running a loop already: a notebook's kernel does)."""
    from concurrent.futures import ThreadPoolExecutor

    from bullmq import Queue

    async def add() -> None:
        queue = Queue(QUEUE, {"connection": url, "prefix": prefix})
        try:
            await queue.add("work", {"seconds": task}, {"jobId": JOB_ID})
        finally:
            await queue.close()

    with ThreadPoolExecutor(1, thread_name_prefix="emqlab-bullmq-producer") as pool:
        pool.submit(asyncio.run, add()).result()


# -- reading the run ---------------------------------------------------------------------------------
def owners(tl: Timeline) -> dict[str, str]:
    """{lock token: the worker whose body reported it}."""
    return {e.data["token"]: e.actor for e in tl.of(Kind.START) if e.data.get("token")}


def lanes(tl: Timeline) -> None:
    """The work lanes; on each worker's lane the job's lock while it was that worker's (`story.lock_bands`);
    the stalled checker's moves and the job's end as the server's events."""
    add_work_lanes(tl)
    if not tl.params.fix:  # the processor did its work on the event loop: drawn as a body holding its loop
        for run in tl.spans("run"):
            run.data["loop"] = "blocked"
    lock_bands(tl, owners(tl), moves="renewals")
    stc = 0
    for t, s in states(tl):
        if s.get("stc", 0) > stc:
            stc = s["stc"]
            tl.add(t, "server", Kind.STALLED, stc=stc)
        if s.get("state") in ("completed", "failed") and not tl.of(s["state"], "server"):
            tl.add(t, "server", s["state"], reason=s.get("failed_reason"))
    tl.finish()


def verdict(tl: Timeline) -> BullmqVerdict:
    p = tl.params
    c = counts(tl)
    last = states(tl)[-1][1] if states(tl) else {}
    lapses = tl.of(Kind.LOCK_LAPSED, "server")
    refused = sorted({e.actor for e in tl.of(Kind.LIBRARY_ERROR) if any(
        why in e.data.get("message", "") for why in ("Missing lock", "Lock mismatch"))})
    first_body = bodies(tl)[0] if bodies(tl) else None
    lost_it = bool(lapses) and first_body is not None
    v = BullmqVerdict(
        **c, lost=c["effects"] == 0,
        # the blocked handler cannot hear anything until its work is done: told is whether the first worker's
        # processor learned of the lapse before its body ended (BullMQ tells the worker, with lockRenewalFailed
        # once its loop runs again; the processor only through its optional AbortSignal, if the app aborts it)
        holder_told=False if lost_it else None,
        lock_duration=p.lock_duration, stalled_interval=p.stalled_interval, max_stalled_count=p.max_stalled_count,
        handler=HANDLERS[p.fix], final_state=last.get("state", "unknown"), failed_reason=last.get("failed_reason"),
        stalled_count=int(last.get("stc", 0)), lapsed_at=lapses[0].t if lapses else None,
        renewals=sum(i.data.get("renewals", 0) for i in tl.spans("lease")), refused=refused)
    return v.worded(words(p, v))


# -- the one place a BullMQ run is put into words --------------------------------------------------------
CAPTION = ("BullMQ (Python): two workers, one job whose processor does synchronous work, with the work on the "
           "event loop and in a thread, and emqlab's own design facing a worker that stops past its lease. "
           "Bands: the job's lock, until let go or to the deadline the server reported.")
# the caption's words for emqlab's own run: a figure without that run drops them
OURS = ", and emqlab's own design facing a worker that stops past its lease"


def outcome(label: str, p: Params, v: BullmqVerdict) -> tuple[str, str]:
    """The headline and the static verdict: what the run came to."""
    if v.runs >= 2 and v.final_state == "failed":
        head = f"{label}: its lock ran out, the job ran {times(v.runs)}, then BullMQ failed it as stalled."
        return head, f"runs {times(v.runs)}, then fails as stalled"
    if v.runs >= 2:
        head = f"{label}: its lock ran out and the job ran {times(v.runs)}."
        return head, f"runs {times(v.runs)}"
    if v.final_state == "failed":
        head = f"{label}: its lock ran out and BullMQ failed the job as stalled."
        return head, "fails as stalled"
    head = f"{label}: the lock was renewed throughout and the job ran once."
    return head, "runs once"


def words(p: Params, v: BullmqVerdict) -> ModeWords:
    label = f"the handler {v.handler.split(' (')[0]}"
    said = [f"bullmq {v.version}; lockDuration {seconds(p.lock_duration)}, stalledInterval "
            f"{seconds(p.stalled_interval)}, maxStalledCount {p.max_stalled_count}; the task works {seconds(p.task)}"]
    if v.renewals:
        said.append(f"the lock's deadline moved on {plural(v.renewals, 'time')} (renewed from the event loop)")
    if v.lapsed_at is not None:
        said.append(f"{v.workers[0] if v.workers else 'the worker'}'s lock ran out at {seconds(v.lapsed_at)}, "
                    "its event loop blocked")
    if v.stalled_count:
        said.append(f"the stalled checker moved the job back {times(v.stalled_count)} (stc {v.stalled_count})")
    said.append(f"the body ran to its end {times(v.runs)} ({plural(v.effects, 'effect')}), in "
                f"{', '.join(v.finished_in) or 'no worker'}")
    if v.refused:
        said.append(f"the server refused the completion of {', '.join(v.refused)} (Missing lock, Lock mismatch)")
    said.append(f"the job ended {v.final_state}" + (f": {v.failed_reason}" if v.failed_reason else ""))
    return ModeWords(label, *outcome(label, p, v), tuple(said))


# -- a worker, as its own process -------------------------------------------------------------------------
def worker_main(_role: str, argv: list[str]) -> int:
    """`python -m emqlab.tools.bullmq_run worker NAME block|thread LOCK_S STALLED_S MAX_STALLED`: one BullMQ
    Worker with its own event loop, on the server in $EMQLAB_TOOLS_URL, until it is ended."""
    name, mode, lock, stalled, max_stalled = argv[0], argv[1], float(argv[2]), float(argv[3]), int(argv[4])
    p = Params(fix=mode == "thread", lock_duration=lock, stalled_interval=stalled, max_stalled_count=max_stalled)
    asyncio.run(_serve(name, mode, opts(p, os.environ[TOOLS_PREFIX_ENV])))
    return 0


async def _serve(name: str, mode: str, options: dict[str, Any]) -> None:
    from bullmq import Worker

    reporter = Reporter(name)

    async def processor(job, token):
        seconds_ = float(job.data["seconds"])
        if mode == "thread":  # the fix: the loop stays free, so the lock's renewal keeps running
            await asyncio.to_thread(work, seconds_, name, token=token)
        else:  # synchronous work in the processor: the loop is held for the whole task
            work(seconds_, name, token=token)
        return "done"

    worker = Worker(QUEUE, processor, {"connection": os.environ[TOOLS_URL_ENV], "name": name, **options})
    # what the worker itself emits (its public events), reported as it happens: how it learns, and when
    worker.on("error", lambda err, *job: reporter.event(Kind.LIBRARY_ERROR, message=str(err)[:200]))
    worker.on("failed", lambda job, err: reporter.event(Kind.LIBRARY_FAILED, message=str(err)[:200]))
    try:
        await asyncio.Event().wait()  # until the run ends this process
    finally:
        await worker.close(force=True)


def _stalled(v) -> bool:
    return v["runs"] >= 2 or (v["final_state"] == "failed" and v["failed_reason"] == "job stalled more than allowable limit")


LIBRARY = Library(
    name="bullmq", title="BullMQ", place=2, run="bullmq", imports="bullmq", distribution="bullmq",
    requires={"bullmq": "bullmq>=3.4.4,<3.5"},
    task="3", timeout="lockDuration (default half the task)",
    counterpart=("fencing", {"fencing": "on"}),
    failure="the processor blocks the event loop past `lockDuration`: the lock is not renewed, the stalled checker "
            "runs the job again and fails it (\"job stalled more than allowable limit\")",
    fix="the work in `asyncio.to_thread`: renewed, once",
    repeats=(Repeat((), "runs ≥ 2 or failed as stalled", _stalled, ("runs", "final_state")),
             Repeat(("--fix",), "runs 1", lambda v: v["runs"] == 1 and v["final_state"] == "completed",
                    ("runs", "final_state"))),
)


if __name__ == "__main__":
    main(worker_main, ("worker",))
