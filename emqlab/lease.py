"""The generic lease: acquire with SET NX PX and a random token, extend and release only with it.

Public methods validate and speak model milliseconds; the private `_do_*` methods touch the
server. Ownership is checked only in Lua (`extend_lease.lua`, `release_lease.lua`): the client
never reads then writes in two calls.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass

from .errors import BadParameter, LeaseLost, StaleToken


def new_token() -> str:
    """A fresh random token: 128 bits, so no two holders ever share one."""
    return secrets.token_hex(16)


def _check_ttl(ttl_ms: float) -> None:
    if not (isinstance(ttl_ms, (int, float)) and math.isfinite(ttl_ms) and ttl_ms > 0):
        raise BadParameter(f"a lease's time to live must be a number of milliseconds > 0, got {ttl_ms!r}")


@dataclass
class Grant:
    """What an acquire or extend got: the token, and how long the server says the lease has left."""

    key: str
    token: str
    ttl_ms: float  # model milliseconds, as reported by the server (PTTL)


class Leases:
    """Lease operations on one backend. Durations are model milliseconds; the clock scales them."""

    def __init__(self, backend):
        self.backend = backend
        self.clock = backend.clock

    # -- public: validate ----------------------------------------------------------------------
    def acquire(self, key: str, ttl_ms: float, token: str | None = None) -> Grant | None:
        """SET key token NX PX ttl. None if another holder has the key."""
        _check_ttl(ttl_ms)
        return self._do_acquire(key, token or new_token(), ttl_ms)

    def extend(self, key: str, token: str, ttl_ms: float) -> Grant:
        """Reset the TTL if `token` still owns `key`; raise LeaseLost (the 0 reply) if not."""
        _check_ttl(ttl_ms)
        remaining = self._do_extend(key, token, ttl_ms)
        if remaining <= 0:
            raise LeaseLost(f"lease {key} is no longer held by token {token[:8]}…: the extend replied 0; stop work now",
                            key=key, token=token)
        return Grant(key, token, remaining)

    def release(self, key: str, token: str) -> None:
        """Delete `key` if `token` still owns it; raise StaleToken (nothing changed) if not."""
        if not self._do_release(key, token):
            raise StaleToken(f"release of {key} refused: token {token[:8]}… no longer owns it, nothing was deleted",
                             key=key, token=token)

    def ttl_ms(self, key: str) -> float | None:
        """What the server says the lease has left, in model ms; None if the key is gone."""
        reply = self.backend.client.pttl(key)
        return self.clock.from_server_ms(reply) if reply > 0 else None

    # -- private: the server ------------------------------------------------------------------
    def _do_acquire(self, key: str, token: str, ttl_ms: float) -> Grant | None:
        pipe = self.backend.client.pipeline(transaction=False)
        pipe.set(key, token, nx=True, px=self.clock.to_server_ms(ttl_ms))
        pipe.pttl(key)  # the band's end is the server's word, read in the same round trip
        acquired, pttl = pipe.execute()
        if not acquired:
            return None
        return Grant(key, token, self.clock.from_server_ms(pttl))

    def _do_extend(self, key: str, token: str, ttl_ms: float) -> float:
        reply = self.backend.scripts("extend_lease", [key], [token, self.clock.to_server_ms(ttl_ms)])
        return self.clock.from_server_ms(reply) if reply > 0 else 0

    def _do_release(self, key: str, token: str) -> bool:
        return bool(self.backend.scripts("release_lease", [key], [token]))
