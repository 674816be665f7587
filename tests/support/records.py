"""A scenario's records and small helpers over its runs: a Params or Verdict holding only what a words test
names (`record`), a renewal plane's holders stopped by a theft on the virtual clock (`stop_when_lost`), how
late a loaded machine may be on a real clock (`REAL_SLACK_S`, `SLOW_SCALE`, `slack`), and a run's lease read
on the server's clock (`reaped_past_its_lease`, `lease_on_the_server`)."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, TypeVar

import realtime


# -- records ---------------------------------------------------------------------------------------
R = TypeVar("R")


def record(cls: type[R], **given: Any) -> R:
    """A scenario's record (its Params or Verdict) holding what a test names; every other field the
    record needs is None. A words test reads only the facts it names, so a None it did not expect
    fails the test loudly."""
    needed = {f.name: None for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    return cls(**{**needed, **given})


# -- a renewal plane: its holders wait on their lost events, and a thief re-owns one key ------------
def stop_when_lost(backend, plane, holdings, stolen: str) -> dict[int, tuple[int, Exception]]:
    """On the virtual clock: a holder for each of `holdings` works up to 50 s unless its `lost` event fires first,
    a thief re-owns `stolen` at 20 s, and `plane` renews until its ticks are done. {index: (the clock's ms when
    the holder stopped, what its lost event carried)} for every holder that stopped."""
    clock = backend.clock
    stopped = {}

    def holder(h):
        result = yield clock.timeout(50_000) | h.lost
        if h.lost in result:
            stopped[h.index] = (clock.now_ms, result[h.lost])

    for h in holdings:
        clock.process(holder(h))

    def thief():
        yield clock.timeout(20_000)
        backend.client.set(stolen, "someone-else", px=30_000)

    clock.process(thief())
    plane.start()
    clock.run()
    return stopped


# -- real time: how late a loaded machine may be ---------------------------------------------------
# Sized from this host (tests/realtime.py, which states the rule a real-clock test follows): 0.5 s on the
# host the suite was first tuned on (a wake-up or a reply seen 0.31 s late there beside two CPU-bound loops),
# stretched by how much slower this host's speed probe is, plus the wake-up lateness measured at the start.
REAL_SLACK_S = realtime.real_slack_s()  # s
# `slow_live`: 0.1 s a model second on the reference host, slower on a slower one, so a 5 model s margin
# stays about REAL_SLACK_S of real time: the scale grows instead of the margin, up to SLOW_SCALE_MAX
SLOW_SCALE = realtime.slow_scale(0.1)


def slack(backend, model_s: float = 0.0) -> float:
    """A margin in model seconds for a run on `backend`: `model_s`, and on a real clock never less than
    REAL_SLACK_S of real time (at scale 0.01 that is 30 model seconds: claim the order of things there,
    and the numbers on the virtual clock or at SLOW_SCALE)."""
    return model_s if not backend.clock.real else max(model_s, backend.clock.model_s(REAL_SLACK_S))


def reaped_past_its_lease(tl, job: str | None = None) -> bool:
    """The reap that moved `job` read a server TIME at or past the score its first claim set: "never
    reaped before its lease lapsed", on the one clock that decided it. (Each local record time trails
    the server's by its reply's trip back, and a descheduled process makes one trip long: compared
    on the local clock, a reap right at the deadline can look early.)"""
    job = job or tl.of("claim")[0].data["job"]  # by default the run's first job
    claim = next(e for e in tl.of("claim") if e.data.get("job") == job and e.data.get("attempts") == 1)
    reap = next(e for e in tl.of("reap") if job in e.data.get("jobs", []))
    return reap.data["time_s"] >= claim.data["score_s"]


def lease_on_the_server(tl, actor: str, job: str | None = None) -> tuple[int, int | None]:
    """`actor`'s hold on `job` (default: the first job it claimed) on the server's clock: (the server TIME of
    its first claim, the deadline its last renewal stamped if every renewal landed before the deadline it
    pushed out; None if one landed at or past it, or found the job gone: the lease, or the worker's session,
    had lapsed in between). A session's claim reports the session's deadline, and each renewal its next one."""
    job = job or tl.of("claim", actor)[0].data["job"]
    claim = next(e for e in tl.of("claim", actor) if e.data["job"] == job and e.data["attempts"] == 1)
    deadline = claim.data["score"]
    for r in tl.of("renew", actor):
        if job in r.data["jobs"]:
            if r.data["now"] >= deadline or job in r.data["lost"]:
                return claim.data["now"], None
            deadline = r.data["score"]
    return claim.data["now"], deadline
