"""What every renewal plane shares (`emqlab.lease.designs` holds the designs): the leases a worker
holds (`Holding`), one round trip as the plane counts it (`Call`), and `RenewalPlane`, the held
leases, the cadence and the hooks, with taking the leases on the server and reading back which are
still held. A design overrides what differs (the session design takes one key for the worker).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from redis.crc import key_slot

from ..core.errors import BadParameter, LeaseLost, StoreError
from ..core.ranges import RANGES, check

WRITE_CHUNK = 10_000  # leases per pipeline when taking or checking them (outside the counted ticks)


def check_count(name: str, value: Any, what: str) -> int:
    """A whole number >= 1 (inside its range in `emqlab.core.ranges` when the table names it), or BadParameter."""
    if name in RANGES:
        return int(check(name, value))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer() or value < 1:
        raise BadParameter(f"{name} must be a whole number >= 1 ({what}), got {value!r}")
    return int(value)


class Holding:
    """One lease the worker holds. `lost` fires when a renewal finds the key gone or re-owned."""

    __slots__ = ("index", "key", "token", "slot", "released", "lost_at_ms", "_lost", "_clock")

    def __init__(self, index: int, key: str, token: str, clock):
        self.index, self.key, self.token = index, key, token
        self.slot = key_slot(key.encode())  # a sweep batch must stay on one cluster slot
        self.released = False
        self.lost_at_ms: int | None = None
        self._lost = None
        self._clock = clock

    @property
    def lost(self):
        """A SimPy event; a holder can `yield work | holding.lost` to stop the moment it is lost."""
        if self._lost is None:  # made on demand: a worker may hold 100 000 leases nobody waits on
            self._lost = self._clock.event()
        return self._lost

    @property
    def live(self) -> bool:
        return not self.released and self.lost_at_ms is None


@dataclass
class Call:
    """One round trip of the renewal plane, counted from the client side."""

    t_ms: int  # model time the call was sent
    tick: int  # which renewal tick (1-based)
    design: str
    leases: int  # leases the call tried to extend
    round_trips: int
    commands: int  # commands in the round trip (script calls)
    wall_ms: float  # real time the call took, measured around it
    lost: list[Holding] = field(default_factory=list)
    job: int | None = None  # per-job timers: whose timer sent it
    sizes: tuple[int, ...] = ()  # leases in each script call of the round trip


class RenewalPlane:
    """What both designs share: the held leases, the cadence, the hooks. Subclasses renew."""

    design = ""
    batched = False  # True: takes `batch`, the most leases one script call carries

    @classmethod
    def round_trips_per_tick(cls, leases: int) -> int:
        """What the design promises a tick costs while `leases` are held (no script reload)."""
        raise NotImplementedError

    def __init__(self, backend, lease_ms: float, every_ms: float, *, ticks: int | None = None,
                 on_call: Callable[[Call], None] | None = None, on_lost: Callable[[Holding], None] | None = None):
        if not (math.isfinite(lease_ms) and lease_ms > 0):
            raise BadParameter(f"lease must be > 0 model milliseconds, got {lease_ms!r}")
        if not (math.isfinite(every_ms) and every_ms > 0):
            raise BadParameter(f"renewal cadence must be > 0 model milliseconds, got {every_ms!r}")
        if ticks is not None:
            ticks = check_count("ticks", ticks, "renewal ticks to run")
        self.backend, self.clock = backend, backend.clock
        self.lease_ms, self.every_ms, self.ticks = lease_ms, every_ms, ticks
        self.on_call, self.on_lost = on_call, on_lost
        self.holdings: list[Holding] = []
        self.calls: list[Call] = []
        self.stopped = False
        self.generation = 0  # bumped whenever the set of leases to renew changes

    # -- public --------------------------------------------------------------------------------
    def hold(self, key: str, token: str) -> Holding:
        """Start renewing `key` (already acquired with `token`) from the next tick."""
        holding = Holding(len(self.holdings), key, token, self.clock)
        self.holdings.append(holding)
        self.generation += 1
        return holding

    def hold_all(self, pairs: Iterable[tuple[str, str]]) -> list[Holding]:
        return [self.hold(key, token) for key, token in pairs]

    def release(self, holding: Holding) -> None:
        """Stop renewing a lease its holder is done with (the holder releases the key itself)."""
        holding.released = True
        self.generation += 1

    def start(self, from_ms: float | None = None) -> None:
        """Begin renewing. The first tick comes one cadence after `from_ms` (model ms; default now):
        pass the moment acquiring began, so leases taken in a long acquire are renewed in time."""
        raise NotImplementedError

    def acquire(self) -> float:
        """Take every held lease on the server: SET key token NX PX lease (chunked pipelines, not
        counted as renewal). Returns the TTL the server reported, model ms. StoreError if a key was taken."""
        client, px, pttl = self.backend.client, self.clock.to_server_ms(self.lease_ms), None
        for i in range(0, len(self.holdings), WRITE_CHUNK):
            chunk = self.holdings[i:i + WRITE_CHUNK]
            pipe = client.pipeline(transaction=False)
            for h in chunk:
                pipe.set(h.key, h.token, nx=True, px=px)
            pipe.pttl(chunk[0].key)
            *acquired, ttl = pipe.execute()
            _all_taken(acquired, chunk[0].key)
            pttl = ttl if pttl is None else pttl
        return self.clock.from_server_ms(pttl or 0)

    def still_held(self) -> list[Holding]:
        """The leases whose key still holds the holder's token (read on the server, not counted)."""
        held = []
        for i in range(0, len(self.holdings), WRITE_CHUNK):
            chunk = self.holdings[i:i + WRITE_CHUNK]
            values = self.backend.client.mget([h.key for h in chunk])
            held.extend(h for h, v in zip(chunk, values) if v == h.token)
        return held

    def steal_key(self, holding: Holding) -> str:
        """The key another holder takes to make `holding` lost: the lease's own key here."""
        return holding.key

    def _first_tick_ms(self, from_ms: float | None) -> float:
        return (self.clock.now_ms if from_ms is None else from_ms) + self.every_ms

    def stop(self) -> None:
        """No further ticks; a call already sent completes."""
        self.stopped = True

    @property
    def lost(self) -> list[Holding]:
        return [h for h in self.holdings if h.lost_at_ms is not None]

    # -- shared plumbing -----------------------------------------------------------------------
    def _tell_lost(self, holding: Holding, at_ms: float | None = None) -> None:
        """`at_ms`: the instant of the reply that said so (leases lost in one reply share it)."""
        holding.lost_at_ms = self.clock.now_ms if at_ms is None else at_ms
        self.generation += 1
        error = LeaseLost(f"lease {holding.key} is no longer held by token {holding.token[:8]}…: the renewal found "
                          "it gone or re-owned; stop work now", key=holding.key, token=holding.token)
        if holding._lost is not None and not holding._lost.triggered:
            holding._lost.succeed(error)
        if self.on_lost is not None:
            self.on_lost(holding)

    def _record(self, call: Call) -> None:
        self.calls.append(call)
        if self.on_call is not None:
            self.on_call(call)

    def _ticks(self):
        return range(1, self.ticks + 1) if self.ticks is not None else _forever()


def _forever():
    n = 1
    while True:
        yield n
        n += 1


def _all_taken(acquired: list, key: str) -> None:
    if not all(acquired):  # a fresh run prefix makes this impossible unless the store misbehaves
        raise StoreError(f"a fresh lease beside {key} was already taken: the store holds keys this run has not written")
