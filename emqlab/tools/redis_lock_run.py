"""redis-py's `Lock`: `extend(t)` adds `t` to what is left of the lock's TTL unless `replace_ttl=True`, so a
holder that extends on a cadence grows its lease without bound; and a holder learns it lost the lock only
when it next touches it (`extend` or `release` raise `LockNotOwnedError`).

What the library does (`redis/lock.py`, read and then run here): `Lock.extend(additional_time,
replace_ttl=False)` runs a Lua script that, if the token matches, sets the key's PEXPIRE to the remaining
PTTL plus `additional_time`, or, with `replace_ttl=True`, to `additional_time` alone (issue redis/redis-py#629,
PR #1303). The lock never renews itself: the holder extends when it decides to, and nothing tells it that the
key ran out or passed to another token until its next `extend` or `release`.

The run: a holder and a contender, each its own process with redis-py's `Lock` (timeout `lease`, polling
every 50 ms). The holder takes the lock, works in `EXTENDS` steps of 0.4 × the lease, extending by the
lease after each, then works one long stretch (`task`, longer than the lease) without extending, then
touches the lock (`extend`) before it writes the job's effect; the contender waits for the lock from the
holder's acquire on and does the job if nobody has done it yet.
- failure: `extend(lease)`: the TTL the server reports after each extend grows by 0.6 × the lease; the long
  stretch never outlasts it, and had the holder died there, the lock would have kept everyone out that long;
- fix: `extend(lease, replace_ttl=True)`: the TTL stays at the lease; the long stretch outlasts it, the
  contender takes the lock and does the job, and the holder's next touch raises `LockNotOwnedError`, so it
  stops before writing the effect; its `release()` raises the same.
The sampler reads the lock key's value (whose token) and PTTL. The key is under emqlab's prefix.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from ..core.environment import TOOLS_PREFIX_ENV, TOOLS_URL_ENV
from ..core.kinds import Kind
from ..core.ranges import within
from ..core.timeline import Timeline
from ..core.words import ModeWords, plural, seconds, times
from ..store.clock import to_s
from .declaration import Library, Repeat
from .harness import LibraryRun, Probe, check_budget, require
from .report import Reporter, main
from .story import ToolParams, ToolVerdict, counts, judged, lock_lanes, most_at_once

ROLES = ("holder", "contender")
LEASE_S = 1.0
EXTENDS = 5
STEP = 0.4  # × the lease: the time between two extends
STRETCH_S = 2.0  # the long stretch of work without an extend
CONTENDER_WORK = 0.5  # × the lease: the contender works well inside its own lock
POLL_S = 0.05  # the Lock's `sleep`: how often a blocked acquire tries again


@dataclass(frozen=True, kw_only=True)
class Params(ToolParams):
    """A redis-py Lock run: the lock's timeout (`lease`, seconds), how many extends and how far apart, the
    long stretch without an extend (`task`, seconds); with `fix`, `replace_ttl=True`."""

    lease: float
    extends: int = EXTENDS
    step: float = STEP

    def span(self) -> float:
        return self.extends * self.step * self.lease + self.task + self.extends * self.lease + CONTENDER_WORK * self.lease + 3


@dataclass(frozen=True, kw_only=True)
class RedisLockVerdict(ToolVerdict):
    """A redis-py Lock run's facts: the PTTL the server reported right after each extend (seconds), after the
    fifth, whether it grew past the lease; when the holder's lock ran out and the contender took it; how the
    holder learned (the exception its next touch raised) and what its release raised; and how long, at the
    start of the long stretch, the lock would have outlived a holder that died there."""

    lease: float
    replace_ttl: bool
    pttl_after_extends: list
    pttl_after_fifth: float | None
    grew: bool
    lapsed_at: float | None
    contender_acquired_at: float | None
    told_how: str | None
    release_error: str | None
    would_outlive_s: float | None


VERDICT = RedisLockVerdict  # what `emqlab.tools.load` reads a run's verdict back as


def default_timeout() -> float:
    return LEASE_S


class LockProbe(Probe):
    """The lock key: whose token it holds, and its PTTL."""

    def __init__(self, key: str):
        self.key = key

    def commands(self, pipe) -> None:
        pipe.get(self.key)
        pipe.pttl(self.key)

    def state(self, replies: list[Any], now: float) -> dict[str, Any]:
        owner, pttl = replies
        return {"lock_owner": owner, "lock_deadline": now + to_s(pttl) if owner is not None and pttl > 0 else None}


def redis_lock(fix: bool = False, task: float = STRETCH_S, timeout: float | None = None) -> Timeline:
    """Run redis-py Lock's story (see the module) on a server of its own; the Timeline, verdict included.

    fix: extend with replace_ttl=True; task: the long stretch without an extend (seconds); timeout: the
    lock's timeout (seconds, default 1)."""
    task = float(within("task", task))
    lease_s = float(within("timeout", timeout)) if timeout is not None else default_timeout()
    params = Params(fix=bool(fix), task=task, lease=lease_s)
    check_budget(LIBRARY.name, params.span())
    version = require(LIBRARY)
    with LibraryRun(LIBRARY.name, params, lambda prefix: LockProbe(prefix + "lock"), version) as run:
        for role in ROLES:
            run.spawn(role, ["-m", __name__, role, "replace" if fix else "add", repr(lease_s), repr(task),
                             str(params.extends), repr(params.step)])
        run.wait_ready(("blpop",), len(ROLES))
        run.begin()
        run.open_gate("holder")
        run.wait_until("the holder's acquire", lambda: run.reported(Kind.ACQUIRE, "holder"), 30)
        run.open_gate("contender")
        tl = run.end(run.exited, params.span())
    return judged(tl, lock_lanes, verdict)


# -- reading the run -------------------------------------------------------------------------------------
def verdict(tl: Timeline) -> RedisLockVerdict:
    p = tl.params
    c = counts(tl)
    after = [round(to_s(e.data["pttl"]), 3) for e in tl.of(Kind.EXTEND, "holder")]
    fifth = after[4] if len(after) >= 5 else None
    lapse = tl.first(Kind.LOCK_LAPSED, "server")
    got = tl.first(Kind.ACQUIRE, "contender")
    told = tl.first(Kind.TOLD, "holder")
    refused = tl.first(Kind.RELEASE_REFUSED, "holder")
    stretch = tl.first(Kind.STRETCH, "holder")
    outlive = round(to_s(stretch.data["pttl"]), 3) if stretch and stretch.data.get("pttl", 0) > 0 else None
    v = RedisLockVerdict(
        **{**c, "holders_at_once": most_at_once([(i.start, i.end) for i in tl.spans("holds")])},
        lost=c["effects"] == 0, holder_told=(told is not None) if lapse is not None else None,
        lease=p.lease, replace_ttl=p.fix, pttl_after_extends=after, pttl_after_fifth=fifth,
        grew=fifth is not None and fifth > p.lease + 0.1, lapsed_at=lapse.t if lapse else None,
        contender_acquired_at=got.t if got else None, told_how=told.data.get("how") if told else None,
        release_error=refused.data.get("error") if refused else None, would_outlive_s=outlive)
    return v.worded(words(p, v))


# -- the one place a redis-py Lock run is put into words ------------------------------------------------
CAPTION = ("redis-py's Lock: a holder that extends on a cadence, then works a stretch longer than the lease, "
           "with extend(t) and with replace_ttl, and emqlab's token-checked extend facing a holder that "
           "stops. Bands: the lock, to the deadline its PTTL gave.")
# the caption's words for emqlab's own run: a figure without that run drops them
OURS = ", and emqlab's token-checked extend facing a holder that stops"


def outcome(label: str, p: Params, v: RedisLockVerdict) -> tuple[str, str]:
    """The headline and the static verdict: what the run came to."""
    fifth = seconds(v.pttl_after_fifth)
    if v.grew:
        head = f"{label}: each extend added to what was left; after five the TTL was {fifth}, not the {seconds(p.lease)} lease."
        return head, f"TTL grows to {fifth}"
    if v.holder_told:
        head = (f"{label}: the TTL stayed at {fifth}; the stretch outlasted it, and the holder's next touch "
                "raised LockNotOwnedError.")
        return head, f"TTL stays {fifth}; told at next touch"
    head = f"{label}: after five extends the TTL was {fifth}."
    return head, f"TTL {fifth}"


def words(p: Params, v: RedisLockVerdict) -> ModeWords:
    label = f"extend({p.lease:g})" + (" with replace_ttl" if p.fix else "")  # in words: an output says no True
    said = [f"redis-py {v.version}; a {seconds(p.lease)} lock, extended every {seconds(p.step * p.lease)}, "
            f"then a {seconds(p.task)} stretch without an extend"]
    if v.pttl_after_extends:
        said.append("the PTTL after each extend: " + ", ".join(seconds(x) for x in v.pttl_after_extends[:p.extends]))
    if v.would_outlive_s is not None and v.grew:
        said.append(f"had the holder died as its long stretch began, the lock would have kept everyone out "
                    f"for {seconds(v.would_outlive_s)}")
    if v.lapsed_at is not None:
        said.append(f"the holder's lock ran out at {seconds(v.lapsed_at)}, mid-stretch")
    if v.contender_acquired_at is not None:
        said.append(f"the contender took the lock at {seconds(v.contender_acquired_at)}")
    if v.told_how:
        said.append(f"the holder learned at its next touch: {v.told_how}; it stopped before its effect")
    if v.release_error:
        said.append(f"its release() raised {v.release_error}")
    said.append(f"the job ran {times(v.runs)} ({plural(v.effects, 'effect')})")
    return ModeWords(label, *outcome(label, p, v), tuple(said))


# -- a holder or the contender, as its own process ------------------------------------------------------
def holder_main(role: str, argv: list[str]) -> int:
    """`python -m emqlab.tools.redis_lock_run holder|contender add|replace LEASE STRETCH EXTENDS STEP`."""
    import redis
    from redis.exceptions import LockNotOwnedError

    how, lease_s, stretch, extends, step = argv[0], float(argv[1]), float(argv[2]), int(argv[3]), float(argv[4])
    replace = how == "replace"
    client = redis.Redis.from_url(os.environ[TOOLS_URL_ENV], decode_responses=True)
    name = os.environ[TOOLS_PREFIX_ENV] + "lock"
    lock = client.lock(name, timeout=lease_s, sleep=POLL_S, thread_local=False)
    report = Reporter(role)
    report.wait_gate()
    token = f"{role}-{os.getpid()}"
    lock.acquire(blocking=True, token=token)
    report.event(Kind.ACQUIRE, token=token, pttl=client.pttl(name))
    if report.done():
        report.event(Kind.SKIPPED, why="the job was done")
        report.release(lock, LockNotOwnedError)
        return 0
    report.start()
    if role == "holder":
        for n in range(1, extends + 1):
            time.sleep(step * lease_s)
            lock.extend(lease_s, replace_ttl=replace)
            report.event(Kind.EXTEND, n=n, pttl=client.pttl(name), replace_ttl=replace)
        report.event(Kind.STRETCH, pttl=client.pttl(name))
        time.sleep(stretch)
        try:
            lock.extend(lease_s, replace_ttl=replace)  # its next touch, before it writes the effect
            report.event(Kind.EXTEND, n=extends + 1, pttl=client.pttl(name), replace_ttl=replace)
        except LockNotOwnedError as exc:
            report.event(Kind.TOLD, how=f"{type(exc).__name__} from extend()", message=str(exc)[:160])
            report.event(Kind.STOP)
            report.release(lock, LockNotOwnedError)
            return 0
    else:
        time.sleep(CONTENDER_WORK * lease_s)
    report.effect()
    report.mark_done()
    report.end()
    report.release(lock, LockNotOwnedError)
    return 0


LIBRARY = Library(
    name="redis-lock", title="redis-py's Lock", place=4, run="redis_lock", imports="redis", distribution="redis",
    requires={"redis-py": "redis"},  # emqlab's own dependency (pyproject's dependencies), not the extra's
    task="the stretch between two extends, 2", timeout="lock timeout (default 1)",
    counterpart=("heartbeat", {"renew": "half", "pause": "20:40"}),
    failure="redis-py `Lock.extend(1)` five times: the PTTL grows 1.6 → 4 s",
    fix="`replace_ttl=True`: stays at 1 s; a stretch past it lets the contender in, and the holder's next touch "
        "raises `LockNotOwnedError`",
    repeats=(Repeat((), "PTTL after the 5th extend > lease", lambda v: v["pttl_after_fifth"] > v["lease"],
                    ("pttl_after_fifth",)),
             Repeat(("--fix",), "PTTL after the 5th extend = lease (±50 ms), runs 1",
                    lambda v: abs(v["pttl_after_fifth"] - v["lease"]) <= 0.05 and v["runs"] == 1,
                    ("pttl_after_fifth", "runs"))),
)


if __name__ == "__main__":
    main(holder_main, ROLES)
