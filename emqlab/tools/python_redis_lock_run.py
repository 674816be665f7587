"""python-redis-lock: `auto_renewal=True` renews the lock from one thread per lock; a holder frozen past the
expiry loses the lock to a second holder and is told only by its `release()`, after its effect.

What the library does (`redis_lock/__init__.py`, read and then run here): `Lock(redis, name, expire=E,
auto_renewal=True)` takes `lock:<name>` with SET NX EX E (whole seconds) and starts a daemon thread that
every 2/3 × E runs an EXTEND script (EXPIRE E if the value is still its id). When the process is frozen (a
SIGSTOP, a long GC pause, swapping: users report locks lost under auto_renewal in
ionelmc/python-redis-lock#85, cause not found, and #91, where a blocked gevent pool was suspected) that
thread is frozen too, the key expires, and a second holder's acquire (SET NX, retried on a BLPOP of
`lock-signal:<name>`) succeeds. When the first process thaws, its renewal thread's extend finds another id and raises
`NotAcquired` — inside that thread, which dies; the holder's own code hears nothing, goes on, writes the
job's effect, and only its `release()` raises `NotAcquired`, after the fact.

The run: a holder and a second holder, each its own process with python-redis-lock's `Lock` (auto_renewal,
`expire` seconds), each doing the job (`task` seconds) if nobody has done it; emqlab freezes the holder
(SIGSTOP) `pause_at` seconds into its job for `PAUSE_S` seconds. By default the freeze starts just before
the renewal thread's first extend (2/3 of `expire` after the acquire, less `PAUSE_MARGIN_S`): like the moment
before any extend, a worst moment, when only a third of `expire` is left on the key.
- failure: expire 1 s, under the freeze: the second holder takes the lock and does the job, the first thaws
  and does it too: two holders at once, two effects, the first told only by its release(), after its effect;
- fix: expire above three times the longest freeze (3 × the freeze + 2 s): even at the worst moment the third
  of `expire` left outlasts the freeze, the second holder waits, finds the job done: once. (An expire merely
  above the freeze holds only when the freeze happens to start soon after an extend. The cost: a holder that
  dies keeps everyone out for up to about twice `expire`: its key lasts up to `expire`, and a waiter retries
  only when its BLPOP of `expire` seconds times out, since an expiring key pushes no signal.)
The sampler reads `lock:<name>` (whose id, its PTTL). The renewal thread's death is reported from the
holder's process by `threading.excepthook` (Python's hook for an exception that ends a thread): the library
itself is not touched. The library's key is `lock:` + the name, and the name starts with emqlab's prefix.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass, field

from ..core.environment import TOOLS_PREFIX_ENV, TOOLS_URL_ENV
from ..core.errors import BadParameter
from ..core.kinds import Kind
from ..core.ranges import within
from ..core.timeline import Timeline, json_name
from ..core.words import ModeWords, plural, seconds, times
from ..store.clock import to_ms, to_s
from .declaration import Library, Option, Repeat
from .harness import LibraryRun, check_budget, require
from .redis_lock_run import LockProbe
from .report import Reporter, main
from .story import ToolParams, ToolVerdict, counts, judged, lock_lanes, most_at_once

ROLES = ("holder", "second")
# the job outlasts the freeze by 1.5 s: thawed, the holder's renewal thread (whose wait ran out during the freeze)
# extends and dies while the holder still sleeps in its job; a job that ended inside the freeze would race that
# thread to release(), which stops the thread, and on a busy machine release() sometimes won (no NotAcquired)
TASK_S = 5.0
AFTER_RESUME_S = 1.5  # the job goes on this long after the thaw (see above)
# how far before the renewal thread's extend the freeze is placed: the harness lands a freeze within about 0.1 s
# of its time on this machine (benchmarks/tools_repeat.py reports the placements it met), and a freeze landing
# after the extend would be no worst case
PAUSE_MARGIN_S = 0.3
# the second holder retries its SET NX once a second (a BLPOP timed out at expire), so it takes the lock up to
# a second after it ran out, which is up to a second into the freeze: a 3 s freeze leaves it a second more
PAUSE_S = 3.0
EXPIRE_S = 1


@dataclass(frozen=True, kw_only=True)
class Params(ToolParams):
    """A python-redis-lock run: the job (seconds), the lock's `expire` (whole seconds; the renewal thread
    runs every 2/3 of it), when the holder is frozen and for how long (seconds)."""

    expire: int
    pause_at: float = field(metadata=json_name("freeze_at"))
    pause: float = field(default=PAUSE_S, metadata=json_name("freeze"))

    def span(self) -> float:
        return self.pause_at + self.pause + 2 * self.task + 2 * self.expire + 3


@dataclass(frozen=True, kw_only=True)
class PythonRedisLockVerdict(ToolVerdict):
    """A python-redis-lock run's facts: the freeze, when the holder's lock ran out on the server and the
    second holder took it, what the holder's renewal thread raised (it dies with it), what the holder's
    release raised, and whether the holder wrote its effect after it had lost the lock."""

    expire: int
    renewal_every: float
    frozen: list
    lapsed_at: float | None
    second_acquired_at: float | None
    renewal_thread_error: str | None
    release_error: str | None
    effect_after_loss: bool


VERDICT = PythonRedisLockVerdict  # what `emqlab.tools.load` reads a run's verdict back as


def default_timeout(fix: bool) -> int:
    """The story's expire: 1 s (under the freeze), or with `fix` three times the freeze + 2 s."""
    return 3 * int(PAUSE_S) + 2 if fix else EXPIRE_S


def renewal_every(expire: float) -> float:
    """How often python-redis-lock's renewal thread extends: every 2/3 of `expire` (redis_lock 4.0.1,
    `__init__.py:168`: `_lock_renewal_interval = float(expire) * 2 / 3`, the wait of `_lock_renewer`'s loop)."""
    return expire * 2 / 3


def worst_pause_at(expire: float) -> float:
    """The worst moment to freeze the holder: just before its renewal thread's first extend."""
    return round(renewal_every(expire) - PAUSE_MARGIN_S, 3)


def python_redis_lock(fix: bool = False, task: float | None = None, timeout: float | None = None,
                      pause_at: float | None = None) -> Timeline:
    """Run python-redis-lock's story (see the module) on a server of its own; the Timeline, verdict included.

    fix: expire above three times the freeze; timeout: the lock's expire (whole seconds, default 1, or 11 with
    fix); pause_at: when the holder is frozen, seconds into its job (default: the worst moment, just before its
    renewal thread's first extend); task: the job (default 5 s, or as long as the freeze needs)."""
    expire = within("timeout", timeout) if timeout is not None else default_timeout(fix)
    if float(expire) != int(expire) or int(expire) < 1:
        raise BadParameter(f"python-redis-lock's expire (--timeout) is whole seconds, at least 1, got {expire:g}")
    at = float(within("tools_pause_at", pause_at)) if pause_at is not None else max(0.1, worst_pause_at(expire))
    needed = at + PAUSE_S + AFTER_RESUME_S
    task = float(within("task", task)) if task is not None else max(TASK_S, to_s(math.ceil(to_ms(needed))))
    if task < needed - 1e-9:
        raise BadParameter(f"a pause at {at:g} s ends at {at + PAUSE_S:g} s, and the task must go on "
                           f"{AFTER_RESUME_S:g} s after it: --task at least {needed:g} s, got {task:g} s")
    params = Params(fix=bool(fix), task=task, expire=int(expire), pause_at=at)
    check_budget(LIBRARY.name, params.span(), "--pause-at, --timeout or --task")
    version = require(LIBRARY)
    with LibraryRun(LIBRARY.name, params, lambda prefix: LockProbe("lock:" + prefix + "job"), version) as run:
        for role in ROLES:
            run.spawn(role, ["-m", __name__, role, str(params.expire), repr(task)])
        run.wait_ready(("blpop",), len(ROLES))
        run.begin()
        run.open_gate("holder")
        started = run.wait_until("the holder's start", lambda: run.reported(Kind.START, "holder"), 30)[0]
        run.open_gate("second")
        run.sleep_until(started["ts"] - run.t0 + params.pause_at)
        run.pause("holder")
        run.sleep_until(run.t + params.pause)
        run.resume("holder")
        tl = run.end(run.exited, params.span())
    return judged(tl, lock_lanes, verdict)


# -- reading the run --------------------------------------------------------------------------------------
def verdict(tl: Timeline) -> PythonRedisLockVerdict:
    p = tl.params
    c = counts(tl)
    lapse = tl.first(Kind.LOCK_LAPSED, "server")
    got = tl.first(Kind.ACQUIRE, "second")
    thread = tl.first(Kind.RENEWAL_THREAD_DIED, "holder")
    refused = tl.first(Kind.RELEASE_REFUSED, "holder")
    effect = tl.first(Kind.EFFECT, "holder")
    lost_it = lapse is not None and lapse.data.get("holder") == "holder"
    frozen = [[round(i.start, 3), round(i.end, 3)] for i in tl.spans("pause", "holder")]
    v = PythonRedisLockVerdict(
        **{**c, "holders_at_once": most_at_once([(i.start, i.end) for i in tl.spans("holds")])},
        lost=c["effects"] == 0,
        # told: an exception in the holder's own code before it wrote its effect (none comes: the renewal
        # thread's NotAcquired ends that thread; release() raises only after the effect is written)
        holder_told=(False if effect is not None or not refused else True) if lost_it else None,
        expire=p.expire, renewal_every=round(renewal_every(p.expire), 3), frozen=frozen,
        lapsed_at=lapse.t if lapse else None, second_acquired_at=got.t if got else None,
        renewal_thread_error=thread.data.get("error") if thread else None,
        release_error=refused.data.get("error") if refused else None,
        effect_after_loss=bool(lost_it and effect is not None and effect.t > lapse.t))
    return v.worded(words(p, v))


# -- the one place a python-redis-lock run is put into words -----------------------------------------------
CAPTION = ("python-redis-lock with auto_renewal: the holder is frozen mid-job, with an expire under the freeze "
           "and above it, and emqlab's attempts fence facing a worker that stops past its lease. Bands: the lock, "
           "to the deadline its PTTL gave.")
# the caption's words for emqlab's own run: a figure without that run drops them
OURS = ", and emqlab's attempts fence facing a worker that stops past its lease"


def outcome(label: str, p: Params, v: PythonRedisLockVerdict) -> tuple[str, str]:
    """The headline and the static verdict: what the run came to."""
    if v.holders_at_once >= 2 and v.holder_told is False:
        head = (f"{label}: frozen past its expiry, the holder lost the lock, learned it only at its release, "
                f"and the job ran {times(v.runs)}.")
        return head, f"2 holders, told only at release, runs {times(v.runs)}"
    if v.holders_at_once >= 2:
        head = f"{label}: the lock passed to a second holder while the first was frozen."
        return head, "2 holders at once"
    head = f"{label} outlasted the {seconds(p.pause)} freeze: one holder at a time, the job ran {times(v.runs)}."
    return head, f"one holder, runs {times(v.runs)}"


def words(p: Params, v: PythonRedisLockVerdict) -> ModeWords:
    label = f"expire={p.expire} s, auto_renewal"
    said = [f"python-redis-lock {v.version}; renewal thread every {seconds(v.renewal_every)}; the job works "
            f"{seconds(p.task)}; the freeze starts {seconds(p.pause_at)} into it"
            + (", just before the renewal thread's first extend" if p.pause_at == worst_pause_at(p.expire) else "")]
    for a, b in v.frozen:
        said.append(f"the holder was frozen (SIGSTOP) from {seconds(a)} to {seconds(b)}, its renewal thread with it")
    if v.lapsed_at is not None:
        said.append(f"its lock ran out on the server at {seconds(v.lapsed_at)}")
    if v.second_acquired_at is not None:
        said.append(f"the second holder took the lock at {seconds(v.second_acquired_at)}")
    if v.renewal_thread_error:
        said.append(f"thawed, the holder's renewal thread raised {v.renewal_thread_error} and died, telling no one")
    if v.effect_after_loss:
        said.append("the holder wrote its effect after it had lost the lock")
    if v.release_error:
        said.append(f"only its release() raised {v.release_error}, after the effect")
    said.append(f"the job ran {times(v.runs)} ({plural(v.effects, 'effect')}); "
                + (f"{v.holders_at_once} holders at once" if v.holders_at_once > 1 else "one holder at a time"))
    return ModeWords(label, *outcome(label, p, v), tuple(said))


# -- a holder, as its own process ---------------------------------------------------------------------------
def holder_main(role: str, argv: list[str]) -> int:
    """`python -m emqlab.tools.python_redis_lock_run holder|second EXPIRE TASK`: take the lock (auto_renewal),
    do the job unless it is done, release."""
    import redis
    import redis_lock

    expire, task = int(argv[0]), float(argv[1])
    report = Reporter(role)
    # a thread that ends with an exception is reported (Python's own hook: the renewal thread's NotAcquired)
    threading.excepthook = lambda hook: report.event(Kind.RENEWAL_THREAD_DIED, error=hook.exc_type.__name__,
                                                     message=str(hook.exc_value)[:160])
    # no read timeout: a blocked acquire waits in BLPOP for up to `expire` seconds, and redis-py 8's default
    # (5 s) would end a wait of 5 s or more with a TimeoutError instead of the lock
    client = redis.StrictRedis.from_url(os.environ[TOOLS_URL_ENV], socket_timeout=None)
    lock = redis_lock.Lock(client, os.environ[TOOLS_PREFIX_ENV] + "job", expire=expire, auto_renewal=True)
    report.wait_gate()
    lock.acquire(blocking=True)
    report.event(Kind.ACQUIRE, token=lock.id)
    if report.done():
        report.event(Kind.SKIPPED, why="the job was done")
    else:
        report.start()
        time.sleep(task)
        report.effect()
        report.mark_done()
        report.end()
    report.release(lock, redis_lock.NotAcquired)
    return 0


LIBRARY = Library(
    name="python-redis-lock", title="python-redis-lock", place=5, run="python_redis_lock", imports="redis_lock",
    distribution="python-redis-lock",
    requires={"python-redis-lock": "python-redis-lock>=4.0.1,<4.1"},  # also the renewal-cost benchmark's peer
    task="5, or longer when the pause needs it",
    timeout="expire (whole seconds, default 1; with --fix 11: three times the 3 s freeze, plus 2 s)",
    options=(Option("pause_at", "python-redis-lock only: when the holder is frozen for 3 s, seconds into its job "
                                "(default: 0.3 s before its renewal thread's first extend, due at 2/3 of expire: a worst "
                                "moment, with a third of expire left)", seconds=True, range_name="tools_pause_at"),),
    counterpart=("fencing", {"fencing": "on"}),
    failure="`auto_renewal`, the holder frozen past `expire`: a second holder, the first told only by its `release()`, "
            "after its effect (its renewal thread dies with `NotAcquired`)",
    fix="`expire` above three times the freeze (3 × 3 s + 2 = 11 s): one holder even when frozen just before an "
        "extend, with a third of `expire` left (the cost: a holder that dies keeps others out for up to about twice "
        "`expire`)",
    repeats=(Repeat((), "holders_at_once 2, told false", lambda v: v["holders_at_once"] == 2 and v["told"] is False,
                    ("holders_at_once", "told")),
             Repeat(("--timeout", "5"), "expire 5 s (above the 3 s freeze, under 3×), frozen at the worst moment: "
                    "holders_at_once 2", lambda v: v["holders_at_once"] == 2, ("holders_at_once", "runs")),
             Repeat(("--fix",), "runs 1, frozen at the worst moment", lambda v: v["runs"] == 1,
                    ("runs", "holders_at_once"))),
)


if __name__ == "__main__":
    main(holder_main, ROLES)
