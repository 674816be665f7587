"""The generic lease: acquire with SET NX PX and a random token, extend and release only with it.

Public methods validate and speak model milliseconds; the `do_*` methods touch the server
(override points, as redis-py's `Lock.do_extend`). A `Leases` works under one key prefix (the
backend's, or a run's beneath it) and touches nothing else: a key is a name relative to that
prefix ("lock", or `leases.key("job", "7")`), or a full key that already starts with it; anything
else (`user:1`, `emq:{orders}:lock`) is refused with BadParameter before the server is asked.
Ownership is checked only in Lua (`extend_lease.lua`, `release_lease.lua`): the client never
reads then writes in two calls.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from ..core.errors import BadParameter, LeaseLost, StaleToken
from ..core.ranges import within

NAME_RE = re.compile(r"[A-Za-z0-9_.{}-]{1,200}")  # a relative name: no ':' (a key with one must carry the prefix)
TOKEN_RE = re.compile(r"[\x21-\x7e]{1,256}")  # printable, no spaces


def new_token() -> str:
    """A fresh random token: 128 bits, so no two holders ever share one."""
    return secrets.token_hex(16)


def _check_ttl(ttl_ms: float) -> None:
    within("ttl_ms", ttl_ms)  # finite, >= 1 ms (PX 0 is an error), at most a day


def _check_token(token: str) -> str:
    if not isinstance(token, str) or not TOKEN_RE.fullmatch(token):
        raise BadParameter(f"a lease token is 1-256 printable characters without spaces, got {token!r}")
    return token


@dataclass
class Grant:
    """What an acquire or extend got: the token, and how long the server says the lease has left."""

    key: str
    token: str
    ttl_ms: float  # model milliseconds, as reported by the server (PTTL)


class Leases:
    """Lease operations on one backend. Durations are model milliseconds; the clock scales them."""

    def __init__(self, backend, prefix: str | None = None):
        prefix = backend.prefix if prefix is None else prefix
        if not (isinstance(prefix, str) and prefix.startswith(backend.prefix) and prefix.endswith(":")):
            raise BadParameter(f"lease prefix {prefix!r} must lie under {backend.prefix!r} and end with ':'; "
                               "emqlab writes nowhere else")
        self.backend, self.prefix = backend, prefix
        self.clock = backend.clock

    def key(self, *parts: str) -> str:
        """The full key of a name made of `parts` under this prefix: key("job", "7") -> <prefix>job:7."""
        if not parts or not all(isinstance(p, str) and NAME_RE.fullmatch(p) for p in parts):
            raise BadParameter(f"a lease name's parts are 1-200 letters, digits, '_', '.', '-' or braces, got {parts!r}")
        return self.prefix + ":".join(parts)

    def full_key(self, key: str) -> str:
        """`key` as the full key this Leases may touch: a relative name gets the prefix; a key that
        already starts with the prefix is kept; anything else is outside and refused."""
        if isinstance(key, str) and key.startswith(self.prefix) and len(key) > len(self.prefix):
            return key
        if isinstance(key, str) and NAME_RE.fullmatch(key):
            return self.prefix + key
        raise BadParameter(f"lease key {key!r} lies outside {self.prefix!r}: emqlab touches no other key; give a "
                           f"name relative to it (e.g. 'lock', or leases.key('job', '7') for a name with ':')")

    # -- public: validate ----------------------------------------------------------------------
    def acquire(self, key: str, ttl_ms: float, token: str | None = None) -> Grant | None:
        """SET key token NX PX ttl. None if another holder has the key."""
        key = self.full_key(key)
        _check_ttl(ttl_ms)
        return self.do_acquire(key, new_token() if token is None else _check_token(token), ttl_ms)

    def extend(self, key: str, token: str, ttl_ms: float) -> Grant:
        """Reset the TTL if `token` still owns `key`; raise LeaseLost (the 0 reply) if not."""
        key, token = self.full_key(key), _check_token(token)
        _check_ttl(ttl_ms)
        remaining = self.do_extend(key, token, ttl_ms)
        if remaining <= 0:
            raise LeaseLost(f"lease {key} is no longer held by token {token[:8]}…: the extend replied 0; stop work now",
                            key=key, token=token)
        return Grant(key, token, remaining)

    def release(self, key: str, token: str) -> None:
        """Delete `key` if `token` still owns it; raise StaleToken (nothing changed) if not."""
        key, token = self.full_key(key), _check_token(token)
        if not self.do_release(key, token):
            raise StaleToken(f"release of {key} refused: token {token[:8]}… no longer owns it, nothing was deleted",
                             key=key, token=token)

    def ttl_ms(self, key: str) -> float | None:
        """What the server says the lease has left, in model ms; None if the key is gone."""
        reply = self.backend.client.pttl(self.full_key(key))
        return self.clock.from_server_ms(reply) if reply > 0 else None

    # -- the server: no validation; override points ------------------------------------------
    def do_acquire(self, key: str, token: str, ttl_ms: float) -> Grant | None:
        pipe = self.backend.client.pipeline(transaction=False)
        pipe.set(key, token, nx=True, px=self.clock.to_server_ms(ttl_ms))
        pipe.pttl(key)  # the band's end is the server's word, read in the same round trip
        acquired, pttl = pipe.execute()
        if not acquired:
            return None
        return Grant(key, token, self.clock.from_server_ms(pttl))

    def do_extend(self, key: str, token: str, ttl_ms: float) -> float:
        reply = self.backend.scripts("extend_lease", [key], [token, self.clock.to_server_ms(ttl_ms)])
        return self.clock.from_server_ms(reply) if reply > 0 else 0

    def do_release(self, key: str, token: str) -> bool:
        return bool(self.backend.scripts("release_lease", [key], [token]))
