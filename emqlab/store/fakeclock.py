"""Put fakeredis on a virtual clock.

fakeredis has no clock hook: it reads `time.time()` through the `time` module imported in a few
of its modules (the per-command `db.time` stamp, the TIME command, and `_helpers.current_time`).
This adapter swaps that module reference, in exactly those modules, for a proxy whose `time()`
answers the virtual clock of the connection that is running a command, and real time otherwise.
It is pinned to a tested fakeredis range; `ensure_supported()` fails loudly if an upgrade moves the reads.
"""

from __future__ import annotations

import contextvars
import time as _real_time
from contextlib import contextmanager
from importlib import import_module

from ..core.errors import BackendUnavailable

# the modules whose `time` global the store's clock comes from (fakeredis 2.40 – 2.41)
PATCHED_MODULES = (
    "fakeredis._socket._base",  # db.time = time.time() before every command: expiry
    "fakeredis.commands_mixins.server_mixin",  # TIME
    "fakeredis._helpers",  # current_time(): hash-field and other millisecond expiries
)
SUPPORTED = ((2, 40), (2, 41))

# Virtual epoch: model time 0 is this Unix time, so TIME replies look like a real server's.
EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z

_current = contextvars.ContextVar("emqlab_fake_clock", default=None)


class _TimeModuleProxy:
    """Looks like the `time` module; `time()` follows the active virtual clock."""

    def time(self) -> float:
        clock = _current.get()
        if clock is None:
            return _real_time.time()
        # a step of the server's clock (`Backend.jump_server_clock`) moves only what the store reads
        return (EPOCH_MS + clock.now_ms + getattr(clock, "server_offset_ms", 0)) / 1000.0

    def __getattr__(self, name):
        return getattr(_real_time, name)


_PROXY = _TimeModuleProxy()
_installed = False


def ensure_supported() -> None:
    """Raise BackendUnavailable if fakeredis no longer reads its clock where this adapter expects:
    the fake store cannot keep the model's time then."""
    import fakeredis

    version = tuple(int(p) for p in fakeredis.__version__.split(".")[:2])
    if version not in SUPPORTED:
        raise BackendUnavailable(
            f"emqlab's virtual clock is tested on fakeredis {', '.join('%d.%d' % v for v in SUPPORTED)}; "
            f"found {fakeredis.__version__}. Check fakeredis's time reads and update emqlab/store/fakeclock.py."
        )
    for name in PATCHED_MODULES:
        module = import_module(name)
        held = getattr(module, "time", None)
        if held is not _real_time and held is not _PROXY:
            raise BackendUnavailable(f"{name} no longer imports the time module as `time`; update emqlab/store/fakeclock.py")


def install() -> None:
    """Idempotent: route fakeredis's time reads through the proxy."""
    global _installed
    if _installed:
        return
    ensure_supported()
    for name in PATCHED_MODULES:
        setattr(import_module(name), "time", _PROXY)
    _installed = True


@contextmanager
def following(clock):
    """Within this block, fakeredis commands run on `clock`'s time."""
    token = _current.set(clock)
    try:
        yield
    finally:
        _current.reset(token)
