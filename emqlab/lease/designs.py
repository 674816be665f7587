"""Three ways for one worker to keep K leases fresh, as SimPy processes on the backend's clock.

*Per-job timers* (`PerJobTimers`): every lease has its own timer; each tick it sends its own
token-checked extend (`extend_lease.lua`), one round trip per lease per tick.

*One sweep* (`Sweep`): one timer for the worker; each tick sends every lease it holds through
`extend_leases.lua` in bounded batches (so no single script call holds the server long), all
batches of the tick written at once and their replies read back: one round trip per tick.

*One session* (`Session`): the worker holds one lease on itself; each job's key names its holder;
each tick extends the session alone (`extend_lease.lua` on one key), one call whatever K is. Lose
the session and every job goes with it.

`DESIGNS` names each design once (CLI name, label, colour, one-line description, class): the CLI,
the scenario, the plots and the benchmark read it, so a new design is one entry plus its class.
What they share (`Holding`, `Call`, `RenewalPlane`) is in `emqlab.lease.planes`.

Each tells a holder at once when its lease is gone: the lease's `lost` event fires (with a
`LeaseLost` as its value) and `on_lost` is called, in the same model instant as the reply that
said so. Each round trip is reported to `on_call` as a `Call`, counted from the client side.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import redis

from ..core.errors import BadParameter, LeaseLost, StoreError
from .leases import Leases, new_token
from .planes import WRITE_CHUNK, Call, Holding, RenewalPlane, _all_taken, check_count
from ..store.scripts import source

__all__ = ["Call", "Holding", "RenewalPlane", "PerJobTimers", "Sweep", "Session", "Design", "DESIGNS", "make_plane",
           "check_count", "check_design", "design_names", "design_help"]

# Leases per sweep script call. Measured on this 2-core machine (Valkey 9.1, loopback, slow log):
# ≈ 1.5 µs of server time per lease, so a 500-lease call runs ≈ 0.8 ms and 1000 ≈ 1.5 ms, while
# 4000 reached 8.6 ms. 500 leaves room under the 5 ms bound for a call the OS preempts on a loaded
# machine (the slow log times wall clock); per-lease cost barely changes from 250 to 2000.
DEFAULT_BATCH = 500
MAX_CALL_MS = 5.0  # the bound a single script call must stay under

PER_JOB, SWEEP, SESSION = "per-job", "sweep", "session"


def check_design(design: str) -> str:
    if design not in DESIGNS:
        raise BadParameter(f"unknown renewal design {design!r}; allowed: {', '.join(design_names())}")
    return design


class PerJobTimers(RenewalPlane):
    """K timers: each lease renews itself with its own `extend_lease` call, one round trip each."""

    design = PER_JOB

    @classmethod
    def round_trips_per_tick(cls, leases: int) -> int:
        return leases

    def start(self, from_ms: float | None = None) -> None:
        self._leases = Leases(self.backend)
        first = self._first_tick_ms(from_ms)
        for holding in self.holdings:
            self.clock.process(self._timer(holding, first))

    def _timer(self, holding: Holding, next_ms: float):
        clock, counter = self.clock, self.backend.counter
        for tick in self._ticks():
            yield clock.timeout(max(0, next_ms - clock.now_ms))
            if self.stopped or not holding.live:
                return
            rt0, cmd0 = counter.snapshot()
            sent_ms, started = clock.now_ms, time.perf_counter()
            lost = False
            try:
                self._leases.extend(holding.key, holding.token, self.lease_ms)
            except LeaseLost:
                lost = True
            wall_ms = (time.perf_counter() - started) * 1000
            rt1, cmd1 = counter.snapshot()
            call = Call(sent_ms, tick, self.design, 1, rt1 - rt0, cmd1 - cmd0, wall_ms, [], holding.index, (1,))
            if lost:
                call.lost.append(holding)
                self._tell_lost(holding)
            self._record(call)
            if lost:
                return
            # a timer reschedules from when it fired, as a per-lock timer does
            next_ms = sent_ms + self.every_ms


class Sweep(RenewalPlane):
    """One timer: each tick, every held lease goes through `extend_leases` in batches of at most
    `batch` leases per script call, all calls of the tick written at once (one round trip)."""

    design = SWEEP
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
        self.clock.process(self._sweeper(self._first_tick_ms(from_ms)))

    def batches(self, live: list[Holding]) -> list[list[Holding]]:
        """Bounded batches whose keys share a cluster slot (one worker's leases share a hashtag)."""
        by_slot: dict[int, list[Holding]] = {}
        for holding in live:
            by_slot.setdefault(holding.slot, []).append(holding)
        return [group[i:i + self.batch] for group in by_slot.values() for i in range(0, len(group), self.batch)]

    def _sweeper(self, next_ms: float):
        clock, counter = self.clock, self.backend.counter
        for tick in self._ticks():
            yield clock.timeout(max(0, next_ms - clock.now_ms))
            if self.stopped:
                return
            rt0, cmd0 = counter.snapshot()
            sent_ms, started = clock.now_ms, time.perf_counter()  # choosing the batches is part of the tick
            if self._batches is None or self._batches[0] != self.generation:
                self._batches = (self.generation, self.batches([h for h in self.holdings if h.live]))
            batches = self._batches[1]
            if not batches:
                return
            live = sum(len(chunk) for chunk in batches)
            replies = self._send(batches)
            wall_ms = (time.perf_counter() - started) * 1000
            rt1, cmd1 = counter.snapshot()
            lost = [chunk[pos - 1] for chunk, reply in zip(batches, replies) for pos in reply]
            self._record(Call(sent_ms, tick, self.design, live, rt1 - rt0, cmd1 - cmd0, wall_ms, lost,
                              sizes=tuple(len(chunk) for chunk in batches)))
            told_ms = clock.now_ms  # one reply: every lease it reports lost is lost in this one instant
            for holding in lost:
                self._tell_lost(holding, told_ms)
            next_ms = sent_ms + self.every_ms

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

    design = SESSION

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
            _all_taken([client.msetnx({h.key: self.worker for h in chunk})], chunk[0].key)
        pipe = client.pipeline(transaction=False)
        pipe.set(self.session_key, self.token, nx=True, px=self.clock.to_server_ms(self.lease_ms))
        pipe.pttl(self.session_key)
        taken, pttl = pipe.execute()
        _all_taken([taken], self.session_key)
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
        self.clock.process(self._renewer(self._first_tick_ms(from_ms)))

    def _renewer(self, next_ms: float):
        clock, counter = self.clock, self.backend.counter
        for tick in self._ticks():
            yield clock.timeout(max(0, next_ms - clock.now_ms))
            if self.stopped:
                return
            # which jobs it holds is bookkeeping, not renewal: the extend carries no job, so the list
            # (kept until the held set changes) is only read to say how many, or whom to tell
            if self._live is None or self._live[0] != self.generation:
                self._live = (self.generation, [h for h in self.holdings if h.live])
            live = self._live[1]
            if not live:
                return
            rt0, cmd0 = counter.snapshot()
            sent_ms, started = clock.now_ms, time.perf_counter()
            try:
                self._leases.extend(self.session_key, self.token, self.lease_ms)
                lost = []
            except LeaseLost:
                lost = live  # the session is gone or re-owned: every job it held goes with it
            wall_ms = (time.perf_counter() - started) * 1000
            rt1, cmd1 = counter.snapshot()
            self._record(Call(sent_ms, tick, self.design, len(live), rt1 - rt0, cmd1 - cmd0, wall_ms, lost))
            told_ms = clock.now_ms  # one reply: every job goes in this one instant
            for holding in lost:
                self._tell_lost(holding, told_ms)
            if lost:
                return
            next_ms = sent_ms + self.every_ms


@dataclass(frozen=True)
class Design:
    """One renewal design, named once: what the CLI, the scenario, the plots and the benchmark call it."""

    name: str  # the CLI's --design value
    label: str  # its name in words, as a figure's lane title says it
    colour: str  # hex, Okabe–Ito as in emqlab/plot/style.py (the model imports no plotting)
    description: str  # one line, for the CLI help
    plane: type[RenewalPlane]
    trip: str  # what one of its round trips is called in a sentence ("extend round trip")
    cost: str  # how its cost grows, the tail of its static verdict


DESIGNS: dict[str, Design] = {d.name: d for d in (
    Design(PER_JOB, "K per-job timers", "#E69F00", "one timer and one extend per lease, each its own round trip",
           PerJobTimers, "extend round trip", "one per lease held: the cost grows with the jobs a worker holds"),
    Design(SWEEP, "one sweep", "#009E73", "one timer; every lease in bounded script calls, one round trip per tick",
           Sweep, "bounded round trip", "however many leases it carries: the cost grows with ticks, not with jobs"),
    Design(SESSION, "one session", "#0072B2", "one lease on the worker itself; each job names its holder; one "
           "extend per tick whatever K is", Session, "session extend",
           "whatever K is: the server touches one key per tick, and every job goes if the session does"),
)}


def design_names() -> list[str]:
    """The CLI's --design choices."""
    return list(DESIGNS)


def design_help(default: str | None = SWEEP) -> str:
    """Each design and its one-line description, for the CLI help."""
    return "; ".join(f"{d.name}: {d.description}{' (default)' if d.name == default else ''}" for d in DESIGNS.values())


def make_plane(design: str, backend, lease_ms: float, every_ms: float, *, batch: int | None = None,
               **kw: Any) -> RenewalPlane:
    """The registered design's plane (`per-job` -> PerJobTimers, `sweep` -> Sweep, `session` ->
    Session); only a plane that batches takes `batch`, the others check it and refuse a bad one;
    `session=` (its key) and `worker=` (its id) reach only the session plane."""
    plane = DESIGNS[check_design(design)].plane
    if plane is not Session:
        kw.pop("session", None), kw.pop("worker", None)  # only the session design names its key and worker
    if plane.batched:
        return plane(backend, lease_ms, every_ms, batch=batch, **kw)
    if batch is not None:
        check_count("batch", batch, "leases per sweep script call")
    return plane(backend, lease_ms, every_ms, **kw)
