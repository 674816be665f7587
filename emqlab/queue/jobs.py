"""The EchoMQ applied form's keyspace and its scripts: a queue whose leases live on the server clock.

Every key of one queue shares the `{q}` hashtag, so a cluster keeps them in one slot:

    <prefix>emq:{q}:pending     sorted set, ready ids
    <prefix>emq:{q}:active      sorted set, leased ids scored by lease deadline (server ms)
    <prefix>emq:{q}:job:<id>    hash: state, attempts, payload (last_error once an attempt failed)
    <prefix>emq:{q}:schedule    sorted set, delayed ids scored by when they fall due
    <prefix>emq:{q}:wake        list a parked consumer blocks on
    <prefix>emq:{q}:done        set, finished ids
    <prefix>emq:{q}:dead        sorted set, ids whose last allowed attempt failed, scored by when (server ms)
    <prefix>emq:{q}:effects     hash, the results store: id -> times its effect was applied
    <prefix>emq:{q}:sessions    sorted set, worker sessions scored by session deadline (server ms)
    <prefix>emq:{q}:session_tokens  hash, worker -> the token its session was opened with
    <prefix>emq:{q}:held:<w>    sorted set, the ids worker <w>'s session holds

Two ways to hold a claimed job. A lease per job (EchoMQ's form): the active score is the job's
deadline, pushed out (or not) by the holder's extend. A session (`session=` on claim): the worker
holds one lease on itself, renewed once per tick whatever it holds; its jobs sit in active at +inf
(or their hard deadline) and the reaper returns them, in bounded slices, once the session lapses.
Either way a claim may set a hard deadline (`max_runtime_ms`), once, that no renewal pushes out.

A job's `attempts` is its fencing token: the claim bumps it, and completion, retry, the batched
extend and a fenced effect write are refused unless the caller's value is current *and* the job
is still active. A failure reported by the current holder (`retry`) sends the job back, or, on its
`max_attempts`-th attempt, to the dead set, where nothing claims it again. Public methods validate and speak model milliseconds; `do_*` touch the server (override points).
"""

from __future__ import annotations

import math
import numbers
import re
import secrets
from dataclasses import dataclass
from typing import Any, Iterable

from ..core.errors import BadParameter, StaleToken, StoreError
from ..core.ranges import within, get

PLACES = ("pending", "active", "schedule", "done", "dead")  # where a job can be: exactly one at a time
STATE_OF_PLACE = {"pending": "pending", "active": "active", "schedule": "scheduled", "done": "done", "dead": "dead"}
RETRY_PLACES = {"pending": "pending", "scheduled": "schedule", "dead": "dead"}  # retry.lua's reply -> the place
MAX_ATTEMPTS = 3  # EchoMQ's consumer default: the third failure is the last

NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
ID_RE = re.compile(r"[A-Za-z0-9_.-]{1,128}")
DIGITS_RE = re.compile(r"[0-9]{1,19}")
NAME_RULE = "1-64 letters, digits, '_', '.' or '-' (no ':', braces or spaces, which would break the keyspace)"
ID_RULE = "1-128 letters, digits, '_', '.' or '-' (no ':', braces or spaces, which would break the keyspace)"

ATTEMPTS = get("attempts")
REAP_LIMIT = 100  # the course's LIMIT 0 100: one bounded slice per beat


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise BadParameter(f"queue name {name!r} is not allowed; a queue name is {NAME_RULE}")
    return name


def check_attempts(attempts: Any) -> str:
    """A fencing token, exactly: an int (not a bool) or a string of ASCII decimal digits, from 1 to
    2**63 - 1 (the store's counter). Returned as the canonical decimal string the scripts compare
    with the stored value: 1.9, True, " 1", "1e0", 1.0 and -1 are refused, never rounded to 1."""
    number = None
    if isinstance(attempts, numbers.Integral) and not isinstance(attempts, bool):
        number = int(attempts)
    elif isinstance(attempts, str) and DIGITS_RE.fullmatch(attempts):
        number = int(attempts)
    if number is None or not ATTEMPTS.low <= number <= ATTEMPTS.high:
        raise BadParameter(f"attempts {attempts!r} is not a fencing token; {ATTEMPTS.rule()} (an int or a string "
                           "of decimal digits, exactly as the claim returned it)")
    return str(number)


def check_id(job_id: Any) -> str:
    if not isinstance(job_id, str) or not ID_RE.fullmatch(job_id):
        raise BadParameter(f"job id {job_id!r} is not allowed; a job id is {ID_RULE}")
    return job_id


MAX_SLICE = 1000  # a reap or promote slice; keeps every script call short and under Lua's unpack limit


def _check_limit(what: str, value: Any, most: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (most is not None and value > most):
        bound = f"from 1 to {most}" if most is not None else ">= 1"
        raise BadParameter(f"{what} must be a whole number {bound}, got {value!r}")
    return value


def _check_ms(what: str, value: Any, *, zero: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not zero):
        bound = ">= 0" if zero else "> 0"
        raise BadParameter(f"{what} must be a number of model milliseconds {bound}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Claimed:
    """A job leased to a caller: its fencing token (`attempts`) and the lease the server stamped."""

    id: str
    attempts: int
    payload: str
    server_now: int  # server ms when the lease was stamped
    deadline: int  # server ms the lease runs to (a session's jobs: the session's deadline at the claim)
    lease_ms: float  # model ms, from the server's deadline - now
    hard: int = 0  # server ms of the hard deadline (max runtime) set at the claim; 0: none


@dataclass(frozen=True)
class Extended:
    """One batched extend: the model ms the held leases now have left, and the ids no longer held."""

    server_now: int
    deadline: int
    lease_ms: float
    lost: tuple[str, ...]


@dataclass(frozen=True)
class Session:
    """A worker's one lease on itself: its name, its token, and the deadline the server stamped."""

    worker: str
    token: str
    server_now: int
    deadline: int  # server ms; 0 when the session is gone (a renewal found another token or none)
    lease_ms: float  # model ms left, from the server's deadline - now

    @property
    def held(self) -> bool:
        return self.deadline > 0


@dataclass(frozen=True)
class ReapSlice:
    """One reap call: the server TIME it used, the ids it returned, the sessions it ended."""

    now: int
    ids: list[str]
    ended: list[str]


def queue_base(prefix: str, name: str, *, hashtag: bool = True) -> str:
    """Where every key of queue `name` under `prefix` starts: `<prefix>emq:{name}:`. The one place a queue's
    keys are named from (the class server's key check and ACL use it too). hashtag=False, `<prefix>emq:name:`,
    only shows a cluster's cross-slot refusal."""
    return f"{prefix}emq:{{{name}}}:" if hashtag else f"{prefix}emq:{name}:"


class Queue:
    """One queue's keys and scripts on a backend (anything with `.client`, `.scripts`, `.clock`, `.prefix`)."""

    def __init__(self, backend, name: str = "orders", *, prefix: str | None = None, hashtag: bool = True,
                 max_attempts: int = MAX_ATTEMPTS):
        check_name(name)
        self.max_attempts = within("max_attempts", max_attempts)
        prefix = backend.prefix if prefix is None else prefix
        if not prefix.startswith(backend.prefix):
            raise BadParameter(f"queue prefix {prefix!r} must lie under {backend.prefix!r}; emqlab writes nowhere else")
        self.backend, self.name, self.prefix = backend, name, prefix
        self.clock = backend.clock
        # hashtag=False exists only to show the cluster's cross-slot refusal; never use it for work.
        self.base = queue_base(prefix, name, hashtag=hashtag)
        self.pending, self.active = self.base + "pending", self.base + "active"
        self.schedule, self.wake_key = self.base + "schedule", self.base + "wake"
        self.done, self.effects = self.base + "done", self.base + "effects"
        self.dead = self.base + "dead"
        self.reaped_key = self.base + "reaped"  # the reap script's own count of leases it returned
        self.sessions, self.session_tokens = self.base + "sessions", self.base + "session_tokens"

    def job_key(self, job_id: str) -> str:
        return f"{self.base}job:{job_id}"

    def enqueue_keys(self, job_id: str) -> list[str]:
        """The keys one enqueue touches, in the order `enqueue.lua` takes them."""
        return [self.job_key(job_id), self.pending, self.schedule, self.wake_key]

    def held_key(self, worker: str) -> str:
        return f"{self.base}held:{worker}"

    # -- public: validate ----------------------------------------------------------------------
    def enqueue(self, job_id: str, payload: str = "", *, delay_ms: float = 0) -> bool:
        """Add a job (after `delay_ms` if > 0). False if the id already exists: enqueue is idempotent."""
        check_id(job_id)
        _check_ms("delay", delay_ms, zero=True)
        return self.do_enqueue(job_id, str(payload), delay_ms)

    def enqueue_many(self, ids: Iterable[str], payload: str = "") -> int:
        """Enqueue many ids in one pipelined round trip; returns how many were new."""
        ids = [check_id(i) for i in ids]
        pipe = self.backend.client.pipeline(transaction=False)
        for job_id in ids:
            self.backend.scripts("enqueue", self.enqueue_keys(job_id), [job_id, str(payload), 0], client=pipe)
        return sum(pipe.execute()) if ids else 0

    def claim(self, lease_ms: float, count: int = 1, *, worker: str = "", session: Session | None = None,
              max_runtime_ms: float = 0) -> list[Claimed]:
        """Lease up to `count` ready jobs for `lease_ms`, scored in active at the server's TIME + lease.
        worker: written to each job (who holds it). session: hold the jobs by the worker's session
        instead of a lease each (StaleToken if the session is gone). max_runtime_ms > 0: a hard
        deadline at claim + this, which no renewal pushes out."""
        _check_ms("lease", lease_ms)
        _check_limit("claim count", count)
        _check_ms("max runtime", max_runtime_ms, zero=True)
        if session is not None:
            worker = session.worker
        if worker:
            check_name(worker)
        return self.do_claim(lease_ms, count, worker, session.token if session else "", max_runtime_ms)

    # -- sessions: one lease per worker ------------------------------------------------------------
    def open_session(self, worker: str, lease_ms: float) -> Session:
        """Open worker `worker`'s session for `lease_ms`. StoreError if a session of that name is
        still open or still being reaped (its jobs would pass to the new holder unworked)."""
        check_name(worker)
        _check_ms("session lease", lease_ms)
        token = secrets.token_hex(16)
        reply = self.backend.scripts("session_open", [self.sessions, self.session_tokens],
                                     [worker, token, self.clock.to_server_ms(lease_ms)])
        if int(reply[1]) == 0:
            raise StoreError(f"worker {worker!r} already has a session on queue {self.name!r} (open, or lapsed "
                             "and not yet reaped): use another name or wait for the reaper")
        return self._session(worker, token, reply)

    def renew_session(self, session: Session, lease_ms: float) -> Session:
        """One token-checked renewal of the worker's session, whatever it holds; `.held` is False
        when the session is gone (the reaper ended it): then every job it held is lost."""
        _check_ms("session lease", lease_ms)
        reply = self.backend.scripts("session_renew", [self.sessions, self.session_tokens],
                                     [session.worker, session.token, self.clock.to_server_ms(lease_ms)])
        return self._session(session.worker, session.token, reply)

    def close_session(self, session: Session) -> int:
        """End a session on a graceful stop: 1 closed, 0 not the holder, -1 jobs still held (left to the reaper)."""
        keys = [self.sessions, self.session_tokens, self.held_key(session.worker)]
        return int(self.backend.scripts("session_close", keys, [session.worker, session.token]))

    def session_deadlines(self) -> dict[str, int]:
        """{worker: session deadline in server ms} for every session not yet ended by the reaper."""
        return {w: int(score) for w, score in self.backend.client.zrange(self.sessions, 0, -1, withscores=True)}

    def held_by(self, worker: str) -> list[str]:
        """The ids worker `worker`'s session holds (its `held:` index)."""
        return list(self.backend.client.zrange(self.held_key(check_name(worker)), 0, -1))

    def _session(self, worker: str, token: str, reply) -> Session:
        now, deadline = int(reply[0]), int(reply[1])
        return Session(worker, token, now, deadline, self.clock.from_server_ms(deadline - now) if deadline else 0.0)

    def complete(self, job_id: str, attempts: int | str) -> None:
        """Settle a job done; StaleToken if `attempts` is not the current attempt of an active job."""
        token = check_attempts(attempts)
        self._settle(self.do_complete(check_id(job_id), token), "completion", job_id, token)

    def retry(self, job_id: str, attempts: int, *, delay_ms: float = 0, error: str = "") -> str:
        """Report the held attempt failed (`error` is kept as the job's `last_error`): the job goes back
        to pending, or to the schedule after `delay_ms` if > 0, or, if this was its `max_attempts`-th
        attempt, to the dead set. Returns where it went ('pending', 'schedule' or 'dead'); StaleToken as
        for complete (a lapsed holder's report after the reap changes nothing)."""
        check_id(job_id)
        token = check_attempts(attempts)
        _check_ms("delay", delay_ms, zero=True)
        reply = self.do_retry(job_id, token, delay_ms, str(error))
        if reply in RETRY_PLACES:
            return RETRY_PLACES[reply]
        self._settle(reply, "retry", job_id, token)
        raise StoreError(f"retry of job {job_id}: the store replied {reply!r}")

    def reap(self, limit: int = REAP_LIMIT) -> list[str]:
        """Return up to `limit` abandoned jobs to pending: leases and hard deadlines past the server's
        TIME, then the jobs of lapsed sessions; the ids returned."""
        return self.reap_slice(limit).ids

    def reap_slice(self, limit: int = REAP_LIMIT) -> ReapSlice:
        """One bounded reap call: the server TIME it compared the scores with, the ids it returned,
        the sessions it ended."""
        return self.do_reap(_check_limit("reap limit", limit, MAX_SLICE))

    def reap_all(self, limit: int = 1000) -> int:
        """Reap in bounded slices until none is left; how many were returned."""
        _check_limit("reap limit", limit, MAX_SLICE)
        total = 0
        while True:
            ids = self.do_reap(limit).ids
            total += len(ids)
            if len(ids) < limit:
                return total

    def reaped(self) -> int:
        """How many leases the reap script has returned to pending on this queue, as the server counted."""
        return int(self.backend.client.get(self.reaped_key) or 0)

    def promote(self, limit: int = REAP_LIMIT) -> int:
        """Move up to `limit` due scheduled jobs to pending."""
        return self.do_promote(_check_limit("promote limit", limit, MAX_SLICE))

    def extend(self, held: Iterable[tuple[str, int]], lease_ms: float) -> Extended:
        """One batched extend of (id, attempts) leases; `lost` names those no longer held."""
        _check_ms("lease", lease_ms)
        held = [(check_id(i), check_attempts(a)) for i, a in held]
        return self.do_extend(held, lease_ms)

    def record_effect(self, job_id: str, attempts: int, *, fenced: bool = True) -> int:
        """Apply the job's effect to the results store. Fenced: refused (StaleToken) unless the
        attempt is current and active, and the job is settled done in the same step. Returns how
        many times the effect has now been applied."""
        token = check_attempts(attempts)
        reply = self.do_record_effect(check_id(job_id), token, fenced)
        if reply < 0:
            raise StaleToken(f"effect of job {job_id} refused: attempt {attempts} is no longer the job's current "
                             "active attempt, nothing was written", key=self.job_key(job_id), token=token)
        return reply

    def wake(self) -> None:
        """Wake a parked consumer."""
        self.backend.client.rpush(self.wake_key, 1)

    # -- reading ---------------------------------------------------------------------------
    def job(self, job_id: str) -> dict[str, str]:
        return self.backend.client.hgetall(self.job_key(check_id(job_id)))

    def where(self, job_id: str) -> list[str]:
        """Which of the PLACES hold `job_id` (exactly one, if all is well)."""
        check_id(job_id)
        pipe = self.backend.client.pipeline(transaction=False)
        pipe.zscore(self.pending, job_id)
        pipe.zscore(self.active, job_id)
        pipe.zscore(self.schedule, job_id)
        pipe.sismember(self.done, job_id)
        pipe.zscore(self.dead, job_id)
        pending, active, schedule, done, dead = pipe.execute()
        # a reaped job sits in pending at score 0, so test for presence, not truth
        found = [pending is not None, active is not None, schedule is not None, bool(done), dead is not None]
        return [n for n, f in zip(PLACES, found) if f]

    def sizes(self) -> dict[str, int]:
        """How many ids each of the PLACES holds."""
        pipe = self.backend.client.pipeline(transaction=False)
        pipe.zcard(self.pending)
        pipe.zcard(self.active)
        pipe.zcard(self.schedule)
        pipe.scard(self.done)
        pipe.zcard(self.dead)
        return dict(zip(PLACES, pipe.execute()))

    def dead_jobs(self) -> dict[str, str]:
        """{id: its last error} for every job in the dead set."""
        ids = self.backend.client.zrange(self.dead, 0, -1)
        if not ids:
            return {}
        pipe = self.backend.client.pipeline(transaction=False)
        for job_id in ids:
            pipe.hget(self.job_key(job_id), "last_error")
        return dict(zip(ids, (e or "" for e in pipe.execute())))

    def effects_applied(self) -> dict[str, int]:
        return {k: int(v) for k, v in self.backend.client.hgetall(self.effects).items()}

    # -- the server: one script call each, no validation. Override points: a subclass may wrap
    # -- one to watch what the store replied (the fencing lesson's store lane does), as redis-py's Lock.do_extend
    def _settle(self, reply: str, what: str, job_id: str, attempts: str) -> None:
        if reply == "ok":
            return
        if reply == "missing":
            # the caller named a job it held: a store that no longer has it lost it (exit 1, not bad input)
            raise StoreError(f"{what} of job {job_id} refused: queue {self.name!r} has no such job")
        raise StaleToken(f"{what} of job {job_id} refused: attempt {attempts} is no longer the job's current "
                         "active attempt (its lease was reaped or re-claimed), nothing changed",
                         key=self.job_key(job_id), token=str(attempts))

    def do_enqueue(self, job_id: str, payload: str, delay_ms: float) -> bool:
        delay = self.clock.to_server_ms(delay_ms) if delay_ms > 0 else 0
        return bool(self.backend.scripts("enqueue", self.enqueue_keys(job_id), [job_id, payload, delay]))

    def do_claim(self, lease_ms: float, count: int, worker: str = "", token: str = "",
                  max_runtime_ms: float = 0) -> list[Claimed]:
        hard_ms = self.clock.to_server_ms(max_runtime_ms) if max_runtime_ms > 0 else 0
        reply = self.backend.scripts("claim", [self.pending, self.active],
                                     [self.base, self.clock.to_server_ms(lease_ms), count, hard_ms, worker, token])
        now, deadline, hard = int(reply[0]), int(reply[1]), int(reply[2])
        if deadline < 0:
            raise StaleToken(f"claim refused: worker {worker}'s session on queue {self.name!r} is gone (it lapsed "
                             "and the reaper ended it); nothing was claimed", key=self.sessions, token=token)
        lease = self.clock.from_server_ms(deadline - now)
        return [Claimed(reply[i], int(reply[i + 1]), reply[i + 2], now, deadline, lease, hard)
                for i in range(3, len(reply), 3)]

    # `attempts` below is always check_attempts()'s canonical decimal string: the scripts compare strings
    def do_complete(self, job_id: str, attempts: str) -> str:
        return self.backend.scripts("complete", [self.job_key(job_id), self.active, self.done],
                                    [job_id, attempts, self.base])

    def do_retry(self, job_id: str, attempts: str, delay_ms: float, error: str = "") -> str:
        delay = self.clock.to_server_ms(delay_ms) if delay_ms > 0 else 0
        return self.backend.scripts("retry", [self.job_key(job_id), self.active, self.pending, self.schedule, self.dead],
                                    [job_id, attempts, delay, self.base, self.max_attempts, error])

    def do_reap(self, limit: int) -> ReapSlice:
        reply = self.backend.scripts("reap", [self.active, self.pending, self.reaped_key, self.sessions],
                                     [self.base, limit])
        n = int(reply[1])
        return ReapSlice(int(reply[0]), list(reply[2:2 + n]), list(reply[2 + n:]))

    def do_promote(self, limit: int) -> int:
        return int(self.backend.scripts("promote", [self.schedule, self.pending, self.wake_key], [self.base, limit]))

    def do_extend(self, held: list[tuple[str, str]], lease_ms: float) -> Extended:
        args: list[Any] = [self.base, self.clock.to_server_ms(lease_ms)]
        for job_id, attempts in held:
            args += [job_id, attempts]
        reply = self.backend.scripts("extend_active", [self.active], args)
        now, deadline = int(reply[0]), int(reply[1])
        return Extended(now, deadline, self.clock.from_server_ms(deadline - now), tuple(reply[2:]))

    def do_record_effect(self, job_id: str, attempts: str, fenced: bool) -> int:
        keys = [self.job_key(job_id), self.effects, self.active, self.done]
        return int(self.backend.scripts("record_effect", keys, [job_id, attempts, "1" if fenced else "0", self.base]))
