"""The notebook's store: one backend shared by every cell of a notebook, and the prefixes it holds.

`backend()` is the store every lesson runs on: fakeredis on the virtual clock by default, or what
EMQLAB_BACKEND / EMQLAB_URL name (`valkey` starts an embedded server, stopped when the kernel exits).
`use("valkey")` switches with one line; `reset()` deletes what dead runs left behind (and nothing else).
This module alone holds the shared backend; the lab's other modules reach it through `backend()`.
"""

from __future__ import annotations

import os

from ...core.children import TRACKER
from ...core.environment import SCALE_ENV
from ...store.backend import Backend, connect
from ...store.clock import DEFAULT_SCALE
from ...core import ranges
from ...core.errors import BadParameter

_current: Backend | None = None
_held: dict = {}  # name -> RunLease of a prefix a notebook holds (see `prefix`)




def backend() -> Backend:
    """The notebook's shared backend, opened on first use from EMQLAB_BACKEND / EMQLAB_URL (default fake),
    on a live store at EMQLAB_SCALE real seconds per model second (default 0.01)."""
    global _current
    if _current is None:
        _current = connect(None, scale=_scale())
        TRACKER.own(_current, close)  # closed (its prefixes freed, its server stopped) with the kernel
    return _current


def _scale() -> float:
    text = os.environ.get(SCALE_ENV)
    if text is None:
        return DEFAULT_SCALE
    value = ranges.parse(text)
    if value is None:
        raise BadParameter(f"${SCALE_ENV} is {text!r}, not a number; {ranges.get('scale').rule()}")
    return value  # its range is checked where the store's specification is made (store_spec)


def use(spec: str | None = None, *, clock: str | None = None, scale: float = DEFAULT_SCALE) -> Backend:
    """Switch every following cell to another store: "fake", "valkey" (embedded) or a URL.

    The backend in use before is closed (an embedded server it started is stopped)."""
    global _current
    new = connect(spec, clock=clock, scale=scale)  # open first: a bad spec leaves the old one working
    close()
    _current = new
    TRACKER.own(new, close)
    return new


def describe() -> str:
    """Which store and clock the lessons run on, in one line."""
    be = backend()
    mode = "virtual clock (instant, deterministic)" if not be.clock.real else \
        f"real clock (1 model second = {be.clock.scale:g} real seconds)"
    return f"{be.describe()}, {mode}"


def reset() -> int:
    """Delete what dead runs left behind on the current store (keys under `emqlab:` of runs whose
    run-lease has lapsed); a live run's keys, this notebook's own included, and anything outside
    `emqlab:` are never touched. Returns how many keys went."""
    from ...lease.runs import clean

    return clean(backend()).keys_removed


def prefix(name: str) -> str:
    """A key prefix of this notebook's own, for cells that write keys outside a scenario run:
    unique on the server (two learners never meet), held by a run-lease while the kernel lives (so
    `emqlab clean` leaves it alone), and deleted by `done(name)` or when the kernel stops."""
    if name not in _held:
        from ...lease.runs import RunLease

        lease = RunLease(backend(), backend().run_prefix(name)).take()
        _held[name] = lease
    return _held[name].prefix


def message(error: BaseException) -> str:
    """An error's message as a lesson prints it: a key under one of this notebook's prefixes (`prefix`)
    named without it, since the prefix is random and says nothing to the reader."""
    text = str(error)
    for lease in _held.values():
        text = text.replace(lease.prefix, "")
    return text


def done(name: str) -> int:
    """Let go of `prefix(name)`: release its run-lease and delete its keys; how many keys went."""
    lease = _held.pop(name, None)
    if lease is None:
        return 0
    try:
        lease.release()
    finally:
        removed = lease.backend.delete_prefix(lease.prefix)
    return removed


def close() -> None:
    """Close the shared backend (stopping an embedded server); the next `backend()` opens a fresh one."""
    global _current
    for name in list(_held):
        done(name)
    current, _current = _current, None
    if current is not None:
        TRACKER.release(current)
        current.close()

