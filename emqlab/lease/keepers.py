"""How a worker of a queue keeps the jobs it holds: the queue side of each renewal design.

A consumer of `emqlab.queue` holds the jobs it claimed by their lease scores in the queue's active
set, not by keys of their own, so the designs reach the server through the queue's operations
(`JobLeases`, which `emqlab.queue.jobs.Queue` provides) instead of the bare-lease scripts of
`emqlab.lease.planes`. One keeper per consumer; the design (`emqlab.lease.designs`) picks its class:

- `Unrenewed` (design none, EchoMQ's shipped path): nobody renews; each job's lease runs out on
  the server clock and the reaper returns the job;
- `PerJobExtends`: each tick one token-checked extend per held job (K round trips);
- `BatchedExtend` (sweep): each tick one batched extend of every held job (one round trip);
- `WorkerSession` (session): the worker holds one lease on itself; a claim records the holder; each
  tick one token-checked renewal of the session alone, whatever K is. When the session lapses the
  reaper returns every job it held, in bounded slices, and the keeper opens a new one once the old
  is ended.

A keeper talks to the server and reports what the server said (`Renewed`); the consumer records
it. Durations are model milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from ..core.errors import StoreError


class HeldJob(Protocol):
    """A job a worker holds: its id, its fencing token and its hard deadline (server ms, 0: none)."""

    id: str
    attempts: int
    hard: int


class JobLeases(Protocol):
    """The queue's operations a keeper calls (`emqlab.queue.jobs.Queue` has them all)."""

    def extend(self, held: Sequence[tuple[str, int]], lease_ms: float) -> Any: ...
    def open_session(self, worker: str, lease_ms: float) -> Any: ...
    def renew_session(self, session: Any, lease_ms: float) -> Any: ...
    def close_session(self, session: Any) -> int: ...


@dataclass(frozen=True)
class Renewed:
    """What one renewal tick found on the server.

    jobs: the ids it renewed, in the order it sent them. server_now: the server TIME the renewal used
    (ms). score: the deadline the server stamped (server ms), None when nothing was held. lease_ms:
    model ms from `server_now` to `score`. lost: the ids no longer held. deadlines: each job still
    held -> the server ms its lease now runs to (never past its hard deadline). calls: round trips.
    session: per-worker designs only, whether the worker's own lease is still held (else None)."""

    jobs: tuple[str, ...]
    server_now: int
    score: int | None
    lease_ms: float | None
    lost: tuple[str, ...]
    deadlines: dict[str, int] = field(default_factory=dict)
    calls: int = 1
    session: bool | None = None


class Keeper:
    """The design none, and what every keeper shares: no renewal, no session."""

    renews = False  # whether it has anything to send each tick
    per_worker = False  # whether the worker holds one lease on itself that its jobs hang on

    def __init__(self, queue: JobLeases, worker: str, lease_ms: float):
        self.queue, self.worker, self.lease_ms = queue, worker, lease_ms
        self.session: Any = None

    def open(self) -> Any:
        """Take what the worker needs before it claims (a session); None when there is nothing to take."""
        return None

    @property
    def ready(self) -> bool:
        """Whether the worker may claim now (a per-worker design needs its session)."""
        return True

    def claim_options(self) -> dict[str, Any]:
        """What the claim passes on: who holds the jobs (a worker's name is written to each job)."""
        return {"worker": self.worker} if self.worker else {}

    def forget(self) -> None:
        """A claim was refused because the worker's own lease is gone: hold nothing until it is retaken."""
        self.session = None

    def renew(self, held: Sequence[HeldJob]) -> Renewed | None:
        """One tick; None when there is nothing to renew."""
        return None

    def close(self) -> bool:
        """On a graceful stop: let go of what `open` took. True if something was let go."""
        return False


def _deadlines(held: Sequence[HeldJob], lost: Sequence[str], score: int) -> dict[str, int]:
    """Each job still held -> its new deadline, capped at its hard deadline (no extend pushes past it)."""
    return {j.id: min(score, j.hard) if j.hard else score for j in held if j.id not in lost}


class Unrenewed(Keeper):
    """EchoMQ's shipped path: the lease set at the claim is the lease; the reaper returns the job after it."""


class PerJobExtends(Keeper):
    """One token-checked extend per held job each tick: K round trips."""

    renews = True

    def renew(self, held: Sequence[HeldJob]) -> Renewed | None:
        if not held:
            return None
        exts = [self.queue.extend([(j.id, j.attempts)], self.lease_ms) for j in held]
        lost = tuple(i for e in exts for i in e.lost)
        last = exts[-1]
        return Renewed(tuple(j.id for j in held), last.server_now, last.deadline, last.lease_ms, lost,
                       _deadlines(held, lost, last.deadline), calls=len(exts))


class BatchedExtend(Keeper):
    """One batched extend of every held job each tick (`extend_active.lua`): one round trip, K leases
    touched on the server."""

    renews = True

    def renew(self, held: Sequence[HeldJob]) -> Renewed | None:
        if not held:
            return None
        ext = self.queue.extend([(j.id, j.attempts) for j in held], self.lease_ms)
        lost = tuple(ext.lost)
        return Renewed(tuple(j.id for j in held), ext.server_now, ext.deadline, ext.lease_ms, lost,
                       _deadlines(held, lost, ext.deadline))


class WorkerSession(Keeper):
    """One lease on the worker itself, renewed once a tick whatever it holds; a job's lease is the
    session's (its hard deadline, if any, is the reaper's to keep)."""

    renews = True
    per_worker = True

    def open(self) -> Any:
        """Open the worker's session; None if its name is still taken (a lapsed session of the same
        name the reaper has not ended yet)."""
        try:
            self.session = self.queue.open_session(self.worker, self.lease_ms)
        except StoreError:
            return None
        return self.session

    @property
    def ready(self) -> bool:
        return self.session is not None

    def claim_options(self) -> dict[str, Any]:
        return {"session": self.session}

    def renew(self, held: Sequence[HeldJob]) -> Renewed | None:
        if self.session is None:  # lost earlier: a new one is opened at the next drain, once the old is ended
            return None
        s = self.session = self.queue.renew_session(self.session, self.lease_ms)
        jobs = tuple(sorted(j.id for j in held))
        if not s.held:
            self.session = None
            return Renewed(jobs, s.server_now, None, None, jobs, {}, session=False)
        return Renewed(jobs, s.server_now, s.deadline, s.lease_ms, (), {i: s.deadline for i in jobs}, session=True)

    def close(self) -> bool:
        if self.session is not None and self.queue.close_session(self.session) == 1:
            self.session = None
            return True
        return False
