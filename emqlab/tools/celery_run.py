"""Celery on a Redis broker: a task that runs longer than the transport's `visibility_timeout` runs twice.

What the library does (kombu's Redis transport, `kombu/transport/redis.py`, read and then run here): every
message a worker has taken stays on the server until its ack, in two keys, `unacked` (the message) and
`unacked_index` (a sorted set scored with the time the worker took it); the ack comes as the task starts,
or with `acks_late` as it ends. Every worker's event loop calls `restore_visible` every
`unacked_restore_interval` seconds (default 10, and only every `unacked_restore_throttle`-th call scans: 10):
it puts back on the queue every message whose score is older than its own `visibility_timeout` (default
3600 s), whether or not a worker is still running it. Another worker takes it and runs the task again
(celery/celery#5935, a long task; ETA tasks run more than once: celery/celery#2599, celery/kombu#337).
Nothing tells the first worker.

The run: two Celery workers (`celery worker`, prefork pool, concurrency 1, started as OS processes from
Celery's own entry point), one task of `task` seconds sent with `acks_late`. The sampler reads the
`unacked_index` score (when the server will let the message be restored: score + visibility_timeout), how
many messages are unacked and queued; each body reports its start, its effect and its end.
- failure: visibility_timeout below the task (2/3 of it): the message is restored while the first worker
  still runs it, the second worker runs it again: two effects, two pids.
- fix: visibility_timeout above the longest task (task + 2 s): the task runs once. Its cost, with `crash`:
  the first worker is killed (SIGKILL, pool child included) `CRASH_AT_S` into the task, and the task waits
  on the server until its whole visibility timeout has passed since it was taken.
The kombu key prefix is set under emqlab's (`global_keyprefix`), on a server of the run's own.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..core.environment import TOOLS_ACTOR_ENV, TOOLS_PREFIX_ENV, TOOLS_URL_ENV
from ..core.children import pause_tree, resume_tree
from ..core.errors import BadParameter, StoreError
from ..core.kinds import Kind
from ..core.ranges import within
from ..core.timeline import Timeline
from ..core.words import ModeWords, plural, seconds, times
from .declaration import Library, Option, Repeat
from .harness import LibraryRun, Probe, check_budget, require
from .report import main, work
from .story import ToolParams, ToolVerdict, add_work_lanes, bodies, counts, judged, lease, states

TASK_NAME = "emqlab.tools.work"
WORKERS = ("worker-1", "worker-2")
TASK_S = 3.0
CRASH_AT_S = 1.0  # into the task, with `crash`
RESTORE_EVERY_S = 0.2  # unacked_restore_interval here; kombu's default is 10 s (× a throttle of 10)
MUTEX = "unacked_mutex"  # kombu's lock around a restore scan (unacked_mutex_key), under the transport's key prefix
CRASH_TRIES = 100  # attempts at a crash outside a scan holding that lock
DEFAULTS = {"visibility_timeout": 3600, "unacked_restore_interval": 10, "unacked_restore_throttle": 10}


def transport_prefix(prefix: str) -> str:
    """Where kombu's keys live in a run (its `global_keyprefix`): under the run's own emqlab prefix."""
    return prefix + "celery:"


@dataclass(frozen=True, kw_only=True)
class Params(ToolParams):
    """A Celery run: the task (seconds), the transport's visibility_timeout, whether the first worker is
    killed `crash_at` seconds into the task, and how often each worker looks for messages to restore."""

    visibility_timeout: float
    crash: bool = False
    crash_at: float = CRASH_AT_S
    restore_interval: float = RESTORE_EVERY_S

    @property
    def mode(self) -> str:
        return ("fix" if self.fix else "failure") + ("+crash" if self.crash else "")

    def span(self) -> float:
        """The story's length at most (seconds): a redelivery per timeout while the task can be restored."""
        return self.crash_at + 2 * self.visibility_timeout + 2 * self.task + 3


@dataclass(frozen=True, kw_only=True)
class CeleryVerdict(ToolVerdict):
    """A Celery run's facts: when each worker took the message (the unacked_index score), when it was
    delivered again, the crash, how long the task waited after it, and how long a body ran after another
    worker's ack had removed the message's unacked entry (nothing left to restore it from)."""

    visibility_timeout: float
    task: float
    delivered_at: list
    redelivered_at: float | None
    acked_at: float | None
    crash_at: float | None
    waited_after_crash: float | None
    unprotected_s: float


VERDICT = CeleryVerdict  # what `emqlab.tools.load` reads a run's verdict back as


def default_timeout(task: float, fix: bool) -> float:
    """The story's visibility_timeout: above the task by 2 s (the fix), or 2/3 of it, so the message is
    restored once while the first worker runs it and not again before that worker's ack removes it."""
    return round(task + 2.0, 3) if fix else round(task * 2 / 3, 3)


def make_app(url: str, prefix: str, visibility_timeout: float, restore_interval: float):
    """The Celery app, the same in the producer and in each worker: the Redis broker on the run's server,
    acks_late, one message per worker at a time, the transport's keys under emqlab's prefix."""
    from celery import Celery

    app = Celery("emqlab-tools", broker=url, set_as_current=False)
    app.conf.update(
        broker_transport_options={"visibility_timeout": visibility_timeout,
                                  "global_keyprefix": transport_prefix(prefix),
                                  "unacked_restore_interval": restore_interval, "unacked_restore_throttle": 1},
        task_acks_late=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
    )

    @app.task(name=TASK_NAME, acks_late=True)
    def body(seconds: float) -> int:
        return work(float(seconds), os.environ.get(TOOLS_ACTOR_ENV, "worker"))

    return app


class CeleryProbe(Probe):
    """kombu's keys: the unacked_index (its score: when a worker took the message), the unacked hash, the queue."""

    def __init__(self, prefix: str, visibility_timeout: float):
        self.kp, self.vt = transport_prefix(prefix), visibility_timeout

    def commands(self, pipe) -> None:
        pipe.zrange(self.kp + "unacked_index", 0, -1, withscores=True)
        pipe.hlen(self.kp + "unacked")
        pipe.llen(self.kp + "celery")

    def state(self, replies: list[Any], now: float) -> dict[str, Any]:
        index, unacked, queued = replies
        taken = max((score for _, score in index), default=None)
        return {"visible_deadline": None if taken is None else taken + self.vt, "unacked": unacked, "queued": queued}


def celery(fix: bool = False, task: float = TASK_S, timeout: float | None = None, crash: bool = False) -> Timeline:
    """Run Celery's story (see the module) on a server of its own; the Timeline, verdict included.

    fix: visibility_timeout above the task; crash: kill the first worker `CRASH_AT_S` into the task.
    timeout: the visibility_timeout (seconds), by default 2/3 of the task, or with `fix` the task + 2 s."""
    task = float(within("task", task))
    vt = float(within("timeout", timeout)) if timeout is not None else default_timeout(task, fix)
    if crash and task <= CRASH_AT_S:
        raise BadParameter(f"with a crash the task must outlast the crash at {CRASH_AT_S:g} s, got {task:g} s")
    params = Params(fix=bool(fix), task=task, visibility_timeout=vt, crash=bool(crash))
    check_budget(LIBRARY.name, params.span())
    version = require(LIBRARY)
    with LibraryRun(LIBRARY.name, params, lambda prefix: CeleryProbe(prefix, vt), version) as run:
        for name in WORKERS:
            run.spawn(name, ["-m", __name__, "worker", name, repr(vt), repr(params.restore_interval)],
                      **{TOOLS_ACTOR_ENV: name})
        run.wait_ready(("brpop",), len(WORKERS))
        app = make_app(run.url, run.prefix, vt, params.restore_interval)
        try:
            run.begin()
            run.record("producer", Kind.SEND, task=TASK_NAME, acks_late=True)
            app.send_task(TASK_NAME, args=[task])
        finally:
            app.close()
        started = run.wait_until("the task's start", lambda: run.reported(Kind.START), 30)[0]
        if crash:
            run.sleep_until(started["ts"] - run.t0 + params.crash_at)
            crash_outside_the_mutex(run, started["actor"], transport_prefix(run.prefix) + MUTEX)

        def over() -> bool:
            # kombu leaves no key showing a message in flight: between a worker's BRPOP and its unacked entry,
            # and between a restore's removal of that entry and its LPUSH, the server holds nothing. The story
            # is over once a body ran to its end (an ack follows one), nothing is left, and every living worker
            # waits for work again (a busy worker is out of BRPOP: prefetch 1, concurrency 1)
            state = run.sampler.last
            return (state.get("unacked") == 0 and state.get("queued") == 0 and bool(run.reported(Kind.END))
                    and run.bodies_ended(cut=int(crash))
                    and len(run.blocked_on(("brpop",))) == len(WORKERS) - int(crash))

        tl = run.end(over, params.span())
    return judged(tl, lanes, verdict)


def crash_outside_the_mutex(run: LibraryRun, name: str, key: str) -> None:
    """Kill worker `name` (`LibraryRun.crash`) at a moment its restore scan does not hold kombu's lock `key`.

    Every restore interval each worker scans for messages to restore under a lock (SET NX, expiring after
    `unacked_mutex_expire`: 300 s) that it holds for a few ms. A worker killed inside that window leaves the
    lock behind and nobody restores anything for five minutes: a hazard of its own (a loaded machine's slow
    scans once made the story's crash land there), not the visibility timeout this story shows. So the worker
    is frozen first; if the lock is held and stays held (the other worker's scan lets go within ms, a frozen
    one never does), the worker goes on a moment and is frozen again."""
    pid = run.children[name].pid
    for _ in range(CRASH_TRIES):
        tree = pause_tree(pid)
        held = run.client.exists(key)
        if held:  # the other worker's scan, or this one's: look again once any scan would have let go
            time.sleep(0.05)
            held = run.client.exists(key)
        if not held:
            run.crash(name)
            return
        resume_tree(tree)
        time.sleep(0.02)
    raise StoreError(f"celery: {name} held kombu's {MUTEX} at each of {CRASH_TRIES} tries to crash it")


# -- reading the run ---------------------------------------------------------------------------------
def deliveries(tl: Timeline) -> tuple[list[float], float | None]:
    """(when a worker took the message, each time: its unacked_index score), and when the entry went."""
    vt = tl.params.visibility_timeout
    taken, gone, last = [], None, None
    for t, s in states(tl):
        d = s.get("visible_deadline")
        if d is not None and (last is None or abs(d - last) > 0.03):
            taken.append(round(d - vt, 3))
            gone = None
        elif d is None and last is not None:
            gone = t
        last = d
    return taken, gone


def lanes(tl: Timeline) -> None:
    """The work lanes, and on each worker's lane the visibility it had from the server: from when it took
    the message to the deadline its score gave (score + visibility_timeout), or the ack that removed it."""
    add_work_lanes(tl)
    vt = tl.params.visibility_timeout
    taken, gone = deliveries(tl)
    starts = bodies(tl)
    for k, at in enumerate(taken):
        body = min(starts, key=lambda b: abs(b.start - at), default=None)
        actor = body.actor if body is not None else "server"
        nxt = taken[k + 1] if k + 1 < len(taken) else None
        if nxt is not None:
            ended, end = "delivered again", nxt
        elif gone is not None and body is not None and body.end is not None and body.end > gone + 0.05:
            ended, end = "removed by another worker's ack", gone
        elif gone is not None:
            ended, end = "acked", gone
        else:
            ended, end = "held at the end", None
        lease(tl, actor, at, at + vt, ended, end, what="visible again at")
        tl.add(at, "server", Kind.REDELIVERED if k else Kind.DELIVERED, to=actor)
    if gone is not None:
        tl.add(gone, "server", Kind.ACKED)
    tl.finish()


def verdict(tl: Timeline) -> CeleryVerdict:
    p = tl.params
    c = counts(tl)
    taken, gone = deliveries(tl)
    crash = tl.first(Kind.CRASH)
    redelivered = taken[1] if len(taken) > 1 else None
    done = [b for b in bodies(tl) if b.end is not None]
    unprotected = max([round(b.end - gone, 3) for b in done if gone is not None and b.start < gone < b.end] + [0.0])
    v = CeleryVerdict(
        **c, lost=c["effects"] == 0, holder_told=(False if redelivered is not None and crash is None else None),
        visibility_timeout=p.visibility_timeout, task=p.task, delivered_at=taken, redelivered_at=redelivered,
        acked_at=gone, crash_at=crash.t if crash else None,
        waited_after_crash=round(redelivered - crash.t, 3) if crash and redelivered is not None else None,
        unprotected_s=unprotected)
    return v.worded(words(p, v))


# -- the one place a Celery run is put into words ------------------------------------------------------
CAPTION = ("Celery on a Redis broker: two workers, one acks_late task, with the transport's visibility_timeout "
           "under the task and above it (the first worker killed mid-task), and emqlab's own design facing a "
           "worker that dies. Bands: what the server granted each worker, until let go or to the deadline it "
           "reported.")
# the caption's words for emqlab's own run: a figure without that run drops them
OURS = ", and emqlab's own design facing a worker that dies"


def outcome(label: str, p: Params, v: CeleryVerdict) -> tuple[str, str]:
    """The headline and the static verdict: what the run came to."""
    task = seconds(p.task)
    if v.runs >= 2:
        head = f"{label} < the {task} task: Celery delivered it again and the body ran {times(v.runs)}, in two workers."
        return head, f"runs {times(v.runs)}"
    if v.crash_at is not None and v.waited_after_crash is not None:
        head = (f"{label}: the task ran once, but after the crash it waited {seconds(v.waited_after_crash)} "
                f"for its visibility timeout.")
        return head, f"runs once, {seconds(v.waited_after_crash)} after the crash"
    if v.runs == 1:
        head = f"{label} > the {task} task: it ran once, and was acked."
        return head, "runs once"
    head = f"{label}: the task never ran to its end."
    return head, "never finished"


def words(p: Params, v: CeleryVerdict) -> ModeWords:
    vt, task = seconds(p.visibility_timeout), seconds(p.task)
    label = f"visibility_timeout {vt}" + (", first worker killed" if p.crash else "")
    said = [f"Celery {v.version}, two workers, acks_late; the task works {task}"]
    first_worker = v.workers[0] if v.workers else "no worker"
    if v.delivered_at:
        said.append(f"{first_worker} took it at {seconds(v.delivered_at[0])}: the server would let it be restored "
                    f"from {seconds(v.delivered_at[0] + p.visibility_timeout)}")
    if v.crash_at is not None:
        said.append(f"{first_worker} was killed at {seconds(v.crash_at)}, its pool child with it")
    if v.redelivered_at is not None:
        again = v.workers[1] if len(v.workers) > 1 else "another worker"
        said.append(f"{again} took it again at {seconds(v.redelivered_at)}"
                    + (f", {seconds(v.waited_after_crash)} after the crash" if v.waited_after_crash is not None
                       else f" while {first_worker} still ran it"))
    said.append(f"the body ran to its end {times(v.runs)} ({plural(v.effects, 'effect')} on the server)")
    if v.holder_told is False:
        said.append(f"nothing told {first_worker}")
    if v.unprotected_s >= 0.1:
        said.append(f"{first_worker}'s ack removed the message's unacked entry while the second run went on: for "
                    f"{seconds(v.unprotected_s)} nothing on the server could have restored it")
    return ModeWords(label, *outcome(label, p, v), tuple(said))


# -- a worker, as its own process -------------------------------------------------------------------------
def worker_main(_role: str, argv: list[str]) -> int:
    """`python -m emqlab.tools.celery_run worker NAME VISIBILITY_TIMEOUT RESTORE_INTERVAL`: one Celery
    worker, from Celery's own entry point (`celery worker`), on the server in $EMQLAB_TOOLS_URL."""
    name, vt, restore = argv[0], float(argv[1]), float(argv[2])
    app = make_app(os.environ[TOOLS_URL_ENV], os.environ[TOOLS_PREFIX_ENV], vt, restore)
    app.worker_main(["worker", "--concurrency=1", "--pool=prefork", f"--hostname={name}@emqlab", "--without-gossip",
                     "--without-mingle", "--without-heartbeat", "--loglevel=WARNING"])
    return 0


LIBRARY = Library(
    name="celery", title="Celery", place=1, run="celery", imports="celery", distribution="celery",
    requires={"celery": "celery[redis]>=5.7,<5.8",
              "kombu": "kombu>=5.7,<5.8"},  # Celery's Redis transport: visibility_timeout, restore_visible
    task="3", timeout="visibility_timeout (default 2/3 of the task; with --fix the task + 2)",
    options=(Option("crash", "celery only: kill the first worker 1 s into the task (with --fix: what the fix costs)"),),
    runs=MappingProxyType({"failure": {}, "fix+crash": {"fix": True, "crash": True}}),
    counterpart=("reaper", {"design": "session"}),
    failure="`visibility_timeout` 2/3 of a 3 s `acks_late` task: delivered again, the body runs twice in two workers "
            "(celery/celery#5935; an ETA task held past the timeout: celery/kombu#337)",
    fix="the timeout above the task (task + 2 s): once; `--crash` kills the first worker 1 s in: the task waits the "
        "whole timeout",
    repeats=(Repeat((), "runs 2 (two effects, two pids)",
                    lambda v: v["runs"] == 2 and v["effects"] == 2 and len(set(v["pids"])) == 2, ("runs", "effects")),
             Repeat(("--fix",), "runs 1", lambda v: v["runs"] == 1, ("runs",))),
)


if __name__ == "__main__":
    main(worker_main, ("worker",))
