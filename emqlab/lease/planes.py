"""Three ways for one worker to keep K bare leases fresh, as SimPy processes on the backend's clock.

*Per-job timers* (`PerJobTimers`): every lease has its own timer; each tick it sends its own
token-checked extend (`extend_lease.lua`), one round trip per lease per tick.

*One sweep* (`Sweep`): one timer for the worker; each tick sends every lease it holds through
`extend_leases.lua` in bounded batches (so no single script call holds the server long), all
batches of the tick written at once and their replies read back: one round trip per tick.

*One session* (`Session`): the worker holds one lease on itself; each job's key names its holder;
each tick extends the session alone (`extend_lease.lua` on one key), one call whatever K is. Lose
the session and every job goes with it.

What they share: the leases a worker holds (`Holding`), one round trip as a plane counts it
(`Call`), and `RenewalPlane`, the held leases, the cadence and the hooks, with taking the leases on
the server and reading back which are still held; a plane overrides what differs. The designs are
named once, in `emqlab.lease.designs`, which picks a plane for bare leases and a keeper
(`emqlab.lease.keepers`) for the queue.

Each tells a holder at once when its lease is gone: the lease's `lost` event fires (with a
`LeaseLost` as its value) and `on_lost` is called, in the same model instant as the reply that
said so. Each round trip is reported to `on_call` as a `Call`, counted from the client side.
"""

from __future__ import annotations

import math
import time
from functools import partial
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import redis
from redis.crc import key_slot

from ..core.errors import BadParameter, LeaseLost, StoreError
from ..core.ranges import RANGES, within
from ..store.scripts import source
from ..store.clock import wall_ms_since
from .leases import Leases, new_token

# Leases per sweep script call. Measured on this 2-core machine (Valkey 9.1, loopback, slow log):
# ≈ 1.5 µs of server time per lease, so a 500-lease call runs ≈ 0.8 ms and 1000 ≈ 1.5 ms, while
# 4000 reached 8.6 ms. 500 leaves room under the 5 ms bound for a call the OS preempts on a loaded
# machine (the slow log times wall clock); per-lease cost barely changes from 250 to 2000.
DEFAULT_BATCH = 500
MAX_CALL_MS = 5.0  # the bound a single script call must stay under

WRITE_CHUNK = 10_000  # leases per pipeline when taking or checking them (outside the counted ticks)


def check_count(name: str, value: Any, what: str) -> int:
    """A whole number >= 1 (inside its range in `emqlab.core.ranges` when the table names it), or BadParameter."""
    if name in RANGES:
        return int(within(name, value))
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
    per_worker = False  # True: the worker holds one lease on itself, and its jobs hang on it

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
            all_taken(acquired, chunk[0].key)
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

    def _ticking(self, next_ms: float, tick: Callable[[int], float | None]):
        """A design's process on the clock: at each tick (the first at `next_ms`, each next one `every_ms`
        after the last was sent, as a timer that reschedules from when it fired) `tick(n)` renews and returns
        when it sent, or None to end the process (nothing left to renew, or all of it lost). It also ends
        when the design is stopped, and after `ticks` ticks."""
        for n in self._ticks():
            yield self.clock.timeout(max(0, next_ms - self.clock.now_ms))
            if self.stopped:
                return
            sent_ms = tick(n)
            if sent_ms is None:
                return
            next_ms = sent_ms + self.every_ms


def _forever():
    n = 1
    while True:
        yield n
        n += 1


def all_taken(acquired: list, key: str) -> None:
    if not all(acquired):  # a fresh run prefix makes this impossible unless the store misbehaves
        raise StoreError(f"a fresh lease beside {key} was already taken: the store holds keys this run has not written")


class PerJobTimers(RenewalPlane):
    """K timers: each lease renews itself with its own `extend_lease` call, one round trip each."""

    design = "per-job"  # the name its Calls carry; `designs.make_plane` sets the registered one

    @classmethod
    def round_trips_per_tick(cls, leases: int) -> int:
        return leases

    def start(self, from_ms: float | None = None) -> None:
        self._leases = Leases(self.backend)
        first = self._first_tick_ms(from_ms)
        for holding in self.holdings:
            self.clock.process(self._ticking(first, partial(self._timer, holding)))

    def _timer(self, holding: Holding, tick: int) -> float | None:
        """One lease's own tick: one `extend_lease` round trip."""
        if not holding.live:
            return None
        clock, counter = self.clock, self.backend.counter
        rt0, cmd0 = counter.snapshot()
        sent_ms, started = clock.now_ms, time.perf_counter()
        lost = False
        try:
            self._leases.extend(holding.key, holding.token, self.lease_ms)
        except LeaseLost:
            lost = True
        wall_ms = wall_ms_since(started)
        rt1, cmd1 = counter.snapshot()
        call = Call(sent_ms, tick, self.design, 1, rt1 - rt0, cmd1 - cmd0, wall_ms, [], holding.index, (1,))
        if lost:
            call.lost.append(holding)
            self._tell_lost(holding)
        self._record(call)
        return None if lost else sent_ms


class Sweep(RenewalPlane):
    """One timer: each tick, every held lease goes through `extend_leases` in batches of at most
    `batch` leases per script call, all calls of the tick written at once (one round trip)."""

    design = "sweep"
    batched = True

    @classmethod
    def round_trips_per_tick(cls, leases: int) -> int:
        return 1 if leases else 0

    def __init__(self, backend, lease_ms: float, every_ms: float, *, batch: int | None = None, **kw: Any):
        super().__init__(backend, lease_ms, every_ms, **kw)
        self.batch = DEFAULT_BATCH if batch is None else check_count("batch", batch, "leases per sweep script call")
        self._cache: tuple[tuple, list[bytes]] | None = None
        self._batches: tuple[int, list[list[Holding]]] | None = None

    def start(self, from_ms: float | None = None) -> None:
        self.clock.process(self._ticking(self._first_tick_ms(from_ms), self._sweep))

    def batches(self, live: list[Holding]) -> list[list[Holding]]:
        """Bounded batches whose keys share a cluster slot (one worker's leases share a hashtag)."""
        by_slot: dict[int, list[Holding]] = {}
        for holding in live:
            by_slot.setdefault(holding.slot, []).append(holding)
        return [group[i:i + self.batch] for group in by_slot.values() for i in range(0, len(group), self.batch)]

    def _sweep(self, tick: int) -> float | None:
        """One tick: every held lease extended in one round trip (bounded batches, one script call each)."""
        clock, counter = self.clock, self.backend.counter
        rt0, cmd0 = counter.snapshot()
        sent_ms, started = clock.now_ms, time.perf_counter()  # choosing the batches is part of the tick
        if self._batches is None or self._batches[0] != self.generation:
            self._batches = (self.generation, self.batches([h for h in self.holdings if h.live]))
        batches = self._batches[1]
        if not batches:
            return None
        live = sum(len(chunk) for chunk in batches)
        replies = self._send(batches)
        wall_ms = wall_ms_since(started)
        rt1, cmd1 = counter.snapshot()
        lost = [chunk[pos - 1] for chunk, reply in zip(batches, replies) for pos in reply]
        self._record(Call(sent_ms, tick, self.design, live, rt1 - rt0, cmd1 - cmd0, wall_ms, lost,
                          sizes=tuple(len(chunk) for chunk in batches)))
        told_ms = clock.now_ms  # one reply: every lease it reports lost is lost in this one instant
        for holding in lost:
            self._tell_lost(holding, told_ms)
        return sent_ms

    def _packed(self, batches: list[list[Holding]], conn) -> list[bytes]:
        """The tick's EVALSHA calls as wire bytes, packed once per set of held leases: between
        ticks the set rarely changes, so a tick is a send and a read, not 2K arguments re-encoded."""
        ttl = self.clock.to_server_ms(self.lease_ms)
        sha = self.backend.scripts.sha("extend_leases")
        key = (self.generation, ttl, sha)
        if self._cache is None or self._cache[0] != key:
            chunks = [part for chunk in batches for part in conn.pack_command(
                "EVALSHA", sha, len(chunk), *(h.key for h in chunk), ttl, *(h.token for h in chunk))]
            self._cache = (key, chunks)
        return self._cache[1]

    def _send(self, batches: list[list[Holding]]) -> list[list[int]]:
        """One round trip: every batch's EVALSHA written at once, then every reply read. If the
        server forgot the script (SCRIPT FLUSH, a restart), load it and send the tick again: the
        extra round trips are counted, not hidden."""
        pool = self.backend.client.connection_pool
        for attempt in (1, 2):
            conn = pool.get_connection()
            try:
                conn.send_packed_command(self._packed(batches, conn))
                replies: list[Any] = []
                for _ in batches:  # read every reply, errors included, so the connection stays in step
                    try:
                        replies.append(conn.read_response())
                    except redis.exceptions.ResponseError as exc:
                        replies.append(exc)
            except BaseException:
                conn.disconnect()  # a half-read reply stream cannot be reused
                raise
            finally:
                pool.release(conn)
            # the counting connection counts the round trip; the calls in it are counted here,
            # because the bytes were packed (once) outside the counted send
            self.backend.counter.commands += len(batches)
            if attempt == 1 and any(isinstance(r, redis.exceptions.NoScriptError) for r in replies):
                self.backend.client.script_load(source("extend_leases"))
                continue
            for reply in replies:
                if isinstance(reply, Exception):
                    raise StoreError(f"the store refused a sweep's extend_leases call: {reply}") from reply
            return [list(map(int, reply)) for reply in replies]
        raise AssertionError("unreachable")


class Session(RenewalPlane):
    """One lease on the worker itself: the session key holds the worker's token; each job's key
    names its holder (the worker id, written once at acquire, no TTL of its own: it lives as long
    as the session does). Each tick sends one token-checked extend of the session, whatever K is.
    When that extend finds the session gone or re-owned, every job the worker holds is lost at once."""

    design = "session"
    per_worker = True  # one lease on the worker: takes `session=` (its key) and `worker=` (its id)

    @classmethod
    def round_trips_per_tick(cls, leases: int) -> int:
        return 1 if leases else 0

    def __init__(self, backend, lease_ms: float, every_ms: float, *, session: str | None = None,
                 worker: str | None = None, **kw: Any):
        super().__init__(backend, lease_ms, every_ms, **kw)
        self.worker = worker or f"worker-{new_token()[:12]}"
        self.token = new_token()  # the session's token: only this worker's extend renews it
        self._session = session
        self._live: tuple[int, list[Holding]] | None = None

    @property
    def session_key(self) -> str:
        """The worker's one lease; by default beside its jobs, under their hashtag (one cluster slot)."""
        if self._session is None:
            first = self.holdings[0].key if self.holdings else self.backend.prefix
            head = first[:first.index("}") + 1] + ":" if "}" in first else self.backend.prefix
            self._session = f"{head}worker:{self.worker}:session"
        return self._session

    def acquire(self) -> float:
        """Record the holder of every job (MSETNX job worker, once, no TTL), then SET the session NX
        PX lease with the worker's token. Taken last, so that writing 100,000 records (seconds on a
        real clock) does not spend the session's lease before its first renewal; a queue's worker
        opens its session first and claims one job at a time under it."""
        client = self.backend.client
        for i in range(0, len(self.holdings), WRITE_CHUNK):  # MSETNX: a chunk's records in one command
            chunk = self.holdings[i:i + WRITE_CHUNK]
            all_taken([client.msetnx({h.key: self.worker for h in chunk})], chunk[0].key)
        pipe = client.pipeline(transaction=False)
        pipe.set(self.session_key, self.token, nx=True, px=self.clock.to_server_ms(self.lease_ms))
        pipe.pttl(self.session_key)
        taken, pttl = pipe.execute()
        all_taken([taken], self.session_key)
        return self.clock.from_server_ms(pttl)

    def still_held(self) -> list[Holding]:
        """A job is held while the session holds the worker's token and the job names the worker."""
        if self.backend.client.get(self.session_key) != self.token:
            return []
        held = []
        for i in range(0, len(self.holdings), WRITE_CHUNK):
            chunk = self.holdings[i:i + WRITE_CHUNK]
            held.extend(h for h, v in zip(chunk, self.backend.client.mget([h.key for h in chunk])) if v == self.worker)
        return held

    def steal_key(self, holding: Holding) -> str:
        """Every job hangs on the session: whoever takes it takes them all."""
        return self.session_key

    def start(self, from_ms: float | None = None) -> None:
        self._leases = Leases(self.backend)
        self.clock.process(self._ticking(self._first_tick_ms(from_ms), self._renew))

    def _renew(self, tick: int) -> float | None:
        """One tick: the session extended, one round trip, whatever the number of jobs it holds."""
        clock, counter = self.clock, self.backend.counter
        # which jobs it holds is bookkeeping, not renewal: the extend carries no job, so the list
        # (kept until the held set changes) is only read to say how many, or whom to tell
        if self._live is None or self._live[0] != self.generation:
            self._live = (self.generation, [h for h in self.holdings if h.live])
        live = self._live[1]
        if not live:
            return None
        rt0, cmd0 = counter.snapshot()
        sent_ms, started = clock.now_ms, time.perf_counter()
        try:
            self._leases.extend(self.session_key, self.token, self.lease_ms)
            lost = []
        except LeaseLost:
            lost = live  # the session is gone or re-owned: every job it held goes with it
        wall_ms = wall_ms_since(started)
        rt1, cmd1 = counter.snapshot()
        self._record(Call(sent_ms, tick, self.design, len(live), rt1 - rt0, cmd1 - cmd0, wall_ms, lost))
        told_ms = clock.now_ms  # one reply: every job goes in this one instant
        for holding in lost:
            self._tell_lost(holding, told_ms)
        return None if lost else sent_ms
