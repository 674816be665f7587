"""What a library's worker or holder reports, from inside its own process (the child side of `emqlab tools`).

A task body (a Celery task, an RQ job, a BullMQ processor) and a lock holder are emqlab's code running
inside the library's process: they report what the job itself did, and nothing of the library's insides.
Each report is one JSON line pushed to the run's list, stamped with the server's TIME (one clock for
every process of the run, the same one the sampler reads): `start` when the body begins, `effect` when it
writes the job's effect (an INCR of the run's counter: the count the verdict reads), `end` when it
returns; a holder also reports `acquire`, what the done flag said, and what the library raised.

The server's address and the run's prefix come from the environment (`EMQLAB_TOOLS_URL`,
`EMQLAB_TOOLS_PREFIX`), never from a command line, where `ps` would show them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from ..core.environment import TOOLS_PREFIX_ENV, TOOLS_URL_ENV
from ..core.kinds import Kind
from ..store.clock import time_reply_s



def keys(prefix: str) -> dict[str, str]:
    """The run's own keys, under emqlab's prefix: the reports, the effect counter, the job's done flag."""
    return {"reports": prefix + "reports", "effects": prefix + "effects", "done": prefix + "done",
            "gate": prefix + "gate:"}


class Reporter:
    """One process's reports, stamped on the server's clock. `actor`: the lane it is drawn on."""

    def __init__(self, actor: str):
        import redis

        url, prefix = os.environ.get(TOOLS_URL_ENV), os.environ.get(TOOLS_PREFIX_ENV)
        if not url or not prefix:
            raise RuntimeError(f"a library's worker reads the server from ${TOOLS_URL_ENV} and ${TOOLS_PREFIX_ENV}; they are not set")
        self.actor = actor
        self.keys = keys(prefix)
        self.client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=30)

    def now(self) -> float:
        """The server's clock, in seconds."""
        return time_reply_s(self.client.time())

    def event(self, kind: str, *, ts: float | None = None, **data: Any) -> float:
        """Push one report, stamped `ts` (the server's clock; default now); returns its time."""
        ts = self.now() if ts is None else ts
        self.client.rpush(self.keys["reports"], json.dumps({"ts": ts, "actor": self.actor, "kind": kind,
                                                            "pid": os.getpid(), **data}))
        return ts

    def release(self, lock: Any, refused: type[BaseException]) -> None:
        """Release a library's `lock` and report it, stamped when this process let go (before it asked): a
        contender the release lets in reports its acquire later, whoever is scheduled first. `release`, or
        `release_refused` with the library's `refused` error (the lock was no longer this process's)."""
        let_go = self.now()
        try:
            lock.release()
            self.event(Kind.RELEASE, ts=let_go)
        except refused as exc:
            self.event(Kind.RELEASE_REFUSED, ts=let_go, error=type(exc).__name__, message=str(exc)[:160])

    # -- a task body: start, effect, end ------------------------------------------------------
    def start(self, **data: Any) -> None:
        self.event(Kind.START, **data)

    def effect(self, **data: Any) -> int:
        """The job's effect: one increment of the run's counter, then its report (the count it reached)."""
        count = int(self.client.incr(self.keys["effects"]))
        self.event(Kind.EFFECT, count=count, **data)
        return count

    def end(self, **data: Any) -> None:
        self.event(Kind.END, **data)

    # -- a lock's job: done once -----------------------------------------------------------------
    def done(self) -> bool:
        """Whether the job has been done (a holder checks before it works, as a careful holder does)."""
        return self.client.exists(self.keys["done"]) == 1

    def mark_done(self) -> None:
        self.client.set(self.keys["done"], self.actor)

    def wait_gate(self) -> None:
        """Block until the run opens this process's gate (a BLPOP: the server shows the process is ready)."""
        while not self.client.blpop([self.keys["gate"] + self.actor], timeout=1):
            pass

    def close(self) -> None:
        self.client.close()


def work(seconds: float, actor: str, **data: Any) -> int:
    """A task body: report its start, work `seconds` (a blocking sleep, as synchronous work is), write the
    effect, report its end. Returns the effect count it reached."""
    import time

    reporter = Reporter(actor)
    try:
        reporter.start(**data)
        time.sleep(seconds)
        count = reporter.effect(**data)
        reporter.end(**data)
        return count
    finally:
        reporter.close()


def main(entry: Callable[[str, list[str]], int], roles: tuple[str, ...]) -> NoReturn:
    """A library's process, started as `python -m emqlab.tools.<its module> ROLE ARG…`: it runs `entry(ROLE,
    [ARG…])` and exits with what that returns. Anything else prints the usage that opens `entry`'s docstring
    (between its first backticks) and exits 2."""
    argv = sys.argv[1:]
    if argv[:1] and argv[0] in roles:
        sys.exit(entry(argv[0], argv[1:]))
    print("usage: " + (entry.__doc__ or "``").split("`")[1], file=sys.stderr)
    sys.exit(2)
