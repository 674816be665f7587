"""The explorer's world: who is in it, what each one may do next, and what one step does on the store.

2 or 3 workers, 1 or 2 jobs (J1, J2), a lease and a beat (model seconds), a renewal design
(`emqlab.lease.designs`: none, per-job, sweep, session, each worker keeping its jobs through its design's
keeper), fencing on or off. A step is one choice among what is enabled:

- `claim`: an idle worker claims a job (a session worker first opens its session if it has none);
- `extend`: a worker's keeper renews (per-job, sweep: the batched extend; session: the session);
- `effect`: a worker holding a job writes its effect. Fencing on: one fenced write that settles the job;
  fencing off: an unchecked write, and the completion is a step of its own;
- `complete` (fencing off): the worker sends its completion;
- `freeze`: a worker holding a job stops for a lease and a beat: it takes no step until the clock has
  passed that time, and wakes believing it still holds its job;
- `crash`: a worker holding a job dies and takes no step again. A crash is enabled only while another
  worker lives, so the world always keeps a worker that does not fail (what progress needs);
- `beat` (the reaper): the clock moves to the next time that matters, then the reap script runs on the
  server's TIME, one call of at most `reap_limit` jobs (100, the course's LIMIT; 1 makes its slices bind).

The time that matters: a step of the clock goes to just before or just after the next deadline the world
knows (every active lease, session and schedule deadline the store holds, a job's hard deadline, the
deadline each holder was granted), `near` seconds either side (a tenth of the shorter of lease and beat),
so a reap lands just before and just after each of them whatever the lease/beat ratio; or to the end of a
freeze, where the frozen worker wakes (unless that end lies within `near` of a deadline: it wakes at the
next stop). With no deadline ahead the clock moves one beat, so time a
script counts for itself (a job that waited too long) is reached only by accumulating beats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ...core.errors import StaleToken, StoreError
from ...core.kinds import Kind
from ...core.timeline import Record, json_name
from ...lease.designs import DESIGNS
from ...queue import invariants as inv
from ...queue.jobs import REAP_LIMIT, Queue
from ...store import snapshot as store_snapshot
from ...store.backend import Backend
from ...store.clock import DEFAULT_SCALE, to_ms, to_s

QUEUE = "orders"
REAPER = "reaper"
STORE = "store"
ACTIONS = ("claim", "extend", "effect", "complete", "freeze", "crash")  # a worker's, in the order tried
BEAT = "beat"
FAILING = ("freeze", "crash")  # the steps of a worker that fails; progress is judged without them
REAL_MARGIN_S = 0.5  # a replay's every race with the server's clock is won or lost by at least this much real time
PROGRESS = "progress"
PROGRESS_RULE = ("from every state reached, a fair schedule of beats, claims, effects and completions by the "
                 "workers that do not fail settles every job (done or dead) within a bounded number of steps")
CHECKS = (*inv.INVARIANTS, PROGRESS)  # what an exploration may check: the state invariants, and progress


# -- the world's records --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """One step of a schedule: who acts, and what it does."""

    actor: str
    action: str

    def to_dict(self) -> dict[str, str]:
        return {"actor": self.actor, "action": self.action}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Step":
        return cls(str(data["actor"]), str(data["action"]))


@dataclass(frozen=True)
class Hand:
    """What one worker knows: alive or not, the job and attempts it believes it holds, the deadline the
    store's last reply granted it (server ms), whether its effect is written (fencing off, completion not
    sent yet), until when it is frozen (model ms), its session (design session). A crashed worker keeps
    the job it held and its deadline: the store still owes it that lease."""

    name: str
    alive: bool = True
    job: str | None = None
    attempts: int | None = None
    written: bool = False
    session: Any = None
    deadline: int | None = None
    frozen_until: float | None = None
    hard: int = 0  # the job's hard deadline the claim's reply gave (server ms; 0: none): no renewal passes it

    @property
    def token(self) -> str | None:
        return None if self.session is None else self.session.token

    def idle(self) -> "Hand":
        return replace(self, job=None, attempts=None, written=False, deadline=None, hard=0)


@dataclass(frozen=True)
class Seen:
    """What the run has seen that the store no longer shows: the highest attempts handed out per job,
    and every (job, attempts) the store refused."""

    issued: tuple[tuple[str, int], ...] = ()
    refused: frozenset = frozenset()

    def after(self, outcome: "Outcome") -> "Seen":
        issued = dict(self.issued)
        for job, attempts in outcome.claimed:
            issued[job] = max(issued.get(job, 0), attempts)
        return Seen(tuple(sorted(issued.items())), self.refused | frozenset(outcome.refused))


@dataclass(frozen=True)
class Outcome:
    """What the store answered one step: the attempts it handed out, the holders whose operation it
    accepted, the holders it refused."""

    claimed: tuple[tuple[str, int], ...] = ()
    accepted: tuple[tuple[str, int], ...] = ()
    refused: tuple[tuple[str, int], ...] = ()
    quiet: bool = False  # the package's script wrote nothing, by its own reply (a search need not read the store)
    grants: tuple[tuple[str, str, int, int], ...] = ()  # (worker, what, asked, granted): server ms
    # a reap call: (ids replied, sessions replied ended, the active ids, session workers and reaped count before, limit)
    reap: tuple | None = None


@dataclass(frozen=True)
class _Held:
    """A held job as a keeper takes it (`emqlab.lease.keepers.HeldJob`)."""

    id: str
    attempts: int
    hard: int = 0


def _scripts_tuple(data: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(dict(data).items()))


@dataclass(frozen=True, kw_only=True)
class Params(Record):
    """An exploration's world: workers, jobs, the deepest schedule and the state budget, the lease and
    the beat (model seconds), the renewal design, fencing on or off, the scripts run instead of the
    package's (name -> Lua text), the invariants checked (and `progress`), the state key (`exact`: absolute
    times and raw values, always so when a script is replaced), the reductions (`symmetry`: workers taken
    as interchangeable; `sleep`: independent steps tried in one order), and the real clock's scale a
    replay starts from."""

    workers: int
    jobs: int
    depth: int
    states: int
    lease: float
    beat: float
    design: str
    fencing: str
    scripts: tuple[tuple[str, str], ...] = field(default=(), metadata=json_name("scripts", load=_scripts_tuple))
    invariants: tuple[str, ...] = field(default=CHECKS, metadata=json_name("invariants", load=tuple))
    max_runtime: float = 0.0  # a hard deadline this long after each claim (model s; 0: none): a hung job's limit
    reap_limit: int = REAP_LIMIT  # the most jobs one reap call takes back
    exact: bool = False
    symmetry: bool = True
    sleep: bool = True
    scale: float = DEFAULT_SCALE  # the fastest real clock a replay may use (it slows down for its margins)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["scripts"] = dict(self.scripts)
        return out

    @property
    def mode(self) -> str:
        return f"fencing {self.fencing}"

    @property
    def pause(self) -> float:
        """How long a pause (the `freeze` step) lasts (model seconds): a lease and a beat, so it outlives any lease it holds."""
        return self.lease + self.beat

    @property
    def near(self) -> float:
        """How far before and after a deadline the clock stops (model seconds): a tenth of the shorter of
        lease and beat."""
        return min(self.lease, self.beat) / 10

    @property
    def replaced(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.scripts)

    @property
    def abstract(self) -> bool:
        """Whether states are compared on the canonical form (else exactly): never with a script replaced."""
        return not self.exact and not self.scripts

    @property
    def symmetric(self) -> bool:
        return self.symmetry and self.abstract

    def cost(self) -> tuple[float, float]:
        """(model span, store steps) for `run_on`'s limits: the virtual clock costs no real time, and the search
        is bounded by its state budget instead, whose range (`emqlab.core.ranges`, `states`) is what this
        machine searches in about 90 s."""
        return 0.0, 0.0

    @property
    def progress_steps(self) -> int:
        """How many steps of the fair schedule may settle every job: per job a claim, an effect and a
        completion and a renewal's worth of slack, and per worker a lapse (a step before and after its deadline)."""
        return 6 + 4 * self.jobs + 2 * self.workers


# -- the world ------------------------------------------------------------------------------------------------
class World:
    """The explorer's world on one store: the queue, each worker's keeper, and what one step does."""

    def __init__(self, backend: Backend, prefix: str, params: Params, recorder: Any = None):
        self.p, self.rec = params, recorder
        self.clock = backend.clock
        self.q = Queue(backend, QUEUE, prefix=prefix)
        self.design = DESIGNS[params.design]
        self.ids = [f"J{i}" for i in range(1, params.jobs + 1)]
        self.names = [f"worker-{i}" for i in range(1, params.workers + 1)]
        self.lease_ms = to_ms(params.lease)
        self.keepers = {name: self.design.keeper(self.q, name, self.lease_ms) for name in self.names}
        self.last_margin: float | None = None  # the last beat's distance from the nearest deadline (model s)
        self.opened: Outcome = Outcome()  # what the start's session openings granted (judged at the start)

    def _event(self, actor: str, kind: str, **data: Any) -> None:
        if self.rec is not None:
            self.rec.event(actor, kind, **data)

    def model_s(self, server_ms: float, server_now: int, now_ms: float | None = None) -> float:
        """A server time as model seconds from the run's start, given the server's TIME `server_now` when the
        model time was `now_ms` (default the clock's now)."""
        now = self.clock.now_ms if now_ms is None else now_ms
        return to_s(now + self.clock.from_server_ms(server_ms - server_now))

    def start(self) -> tuple[Hand, ...]:
        """Enqueue the jobs; a session design opens each worker's session. The hands at the start."""
        for job in self.ids:
            self.q.enqueue(job, "order")
            self._event("producer", Kind.ENQUEUE, job=job)
        hands, grants = [], []
        for name in self.names:
            session = self.keepers[name].open() if self.design.per_worker else None
            if session is not None:
                self._event(name, Kind.SESSION_OPEN)
                grants.append(self._session_grant(name, session))
            hands.append(Hand(name, session=session))
        self.opened = Outcome(grants=tuple(grants))
        return tuple(hands)

    def _session_grant(self, name: str, session: Any) -> tuple[str, str, int, int]:
        """A session's opening or renewal as a grant: the lease asked for from the reply's TIME, and the
        deadline granted."""
        return name, "its session", session.server_now + self._ms(self.lease_ms), session.deadline

    @staticmethod
    def awake(h: Hand) -> bool:
        return h.alive and h.frozen_until is None

    def enabled(self, hands: Sequence[Hand]) -> list[Step]:
        """What each worker may do now, then the reaper's beat: the choices of one step."""
        steps = []
        living = sum(h.alive for h in hands)
        for h in hands:
            if not self.awake(h):
                continue
            holds = h.job is not None
            for action in ACTIONS:
                if (action == "claim" and not holds
                        or action == "extend" and self.design.renews and (holds or h.session is not None)
                        or action == "effect" and holds and not h.written
                        or action == "complete" and holds and h.written
                        or action == "freeze" and holds
                        or action == "crash" and holds and living > 1):
                    steps.append(Step(h.name, action))
        steps.append(Step(REAPER, BEAT))
        return steps

    def deadlines(self, stored: store_snapshot.Stored, hands: Sequence[Hand]) -> list[float]:
        """Every deadline the world knows, as server ms: the store's deadline-scored sets and hard deadlines,
        and each holder's granted deadline."""
        out = []
        for key, entry in stored.entries.items():
            rel = key[len(self.q.base):]
            if entry.type == "zset" and rel in ("active", "sessions", "schedule"):
                out += [s for _, s in entry.value if not math.isinf(s)]
            elif entry.type == "hash" and rel.startswith("job:"):
                out += [float(v) for f, v in entry.value if f == "hard"]
        out += [h.deadline for h in hands if h.job is not None and h.deadline is not None]
        return out

    def next_time(self, stored: store_snapshot.Stored, hands: Sequence[Hand]) -> tuple[float, float | None]:
        """Where a beat moves the clock (model ms): `near` before or after the next deadline ahead, or the
        first freeze's end before that, or one beat on; and the nearest deadline's distance from there
        (model s; None when no deadline is known)."""
        now = self.clock.now_ms
        near = to_ms(self.p.near)
        ds = [to_ms(self.model_s(d, stored.server_ms)) for d in self.deadlines(stored, hands)]
        points = [t for d in ds for t in (d - near, d + near) if t > now]
        # a freeze's end, unless it falls within `near` of a deadline (a reap there would race the server's
        # clock): then the worker wakes at the step past that deadline
        points += [h.frozen_until for h in hands if h.alive and h.frozen_until is not None and h.frozen_until > now
                   and all(abs(h.frozen_until - d) >= near for d in ds)]
        to = min(points) if points else now + to_ms(self.p.beat)
        gap = min((abs(to - d) for d in ds), default=None)
        return to, None if gap is None else to_s(gap)

    def step(self, hands: tuple[Hand, ...], step: Step, stored: store_snapshot.Stored,
             now_ms: float | None = None) -> tuple[tuple[Hand, ...], Outcome]:
        """Do `step` on the store (`stored`: the store as read before it): the real script call(s), the
        clock moved where the step moves it. `now_ms`: the model time of a freeze, when the clock is not
        there (a search that does not put the store back for a step that touches none)."""
        if step.action == "freeze":
            k = [h.name for h in hands].index(step.actor)
            return hands[:k] + (self._pause(hands[k], now_ms),) + hands[k + 1:], Outcome()
        if step.action == BEAT:
            to, self.last_margin = self.next_time(stored, hands)
            self.clock.run(until=to)
            reaped = self.q.reap_slice(self.p.reap_limit)
            self._event(REAPER, Kind.REAP, jobs=list(reaped.ids), ended=list(reaped.ended))
            before = (*self._reap_view(stored), self.p.reap_limit)
            return self._resumed(hands, to), Outcome(quiet=not reaped.ids and not reaped.ended,
                                                    reap=(tuple(reaped.ids), tuple(reaped.ended), *before))
        k = [h.name for h in hands].index(step.actor)
        hand, outcome = getattr(self, f"_{step.action}")(hands[k])
        return hands[:k] + (hand,) + hands[k + 1:], outcome

    def _resumed(self, hands: tuple[Hand, ...], to_ms: float) -> tuple[Hand, ...]:
        out = []
        for h in hands:
            if h.frozen_until is not None and h.frozen_until <= to_ms:
                self._event(h.name, Kind.THAW, job=h.job)
                h = replace(h, frozen_until=None)
            out.append(h)
        return tuple(out)

    def _claim(self, h: Hand) -> tuple[Hand, Outcome]:
        keeper = self.keepers[h.name]
        keeper.session = h.session
        opened = self.design.per_worker and keeper.session is None
        opening = ()
        if opened:
            if keeper.open() is None:  # its lapsed session is not ended yet: nothing to claim under
                self._event(h.name, Kind.CLAIM_WAITS, reason="its old session is not ended yet")
                return h, Outcome()
            self._event(h.name, Kind.SESSION_OPEN)
            opening = (self._session_grant(h.name, keeper.session),)
        try:
            got = self.q.claim(self.lease_ms, 1, max_runtime_ms=to_ms(self.p.max_runtime), **keeper.claim_options())
        except StaleToken:
            keeper.forget()
            self._event(h.name, Kind.CLAIM_REFUSED, reason="its session is gone")
            return replace(h, session=None), Outcome(quiet=not opened, grants=opening)
        if not got:
            self._event(h.name, Kind.CLAIM_EMPTY)
            return replace(h, session=keeper.session), Outcome(quiet=not opened, grants=opening)
        c = got[0]
        granted = min(c.deadline, c.hard) if c.hard else c.deadline  # a session's deadline, capped by the hard one
        asked_hard = c.server_now + self._ms(to_ms(self.p.max_runtime)) if self.p.max_runtime else 0
        if self.design.per_worker:  # the session's lease is the session's: the claim asks only for the hard deadline
            grants = opening + (((h.name, f"job {c.id}'s hard deadline", asked_hard, c.hard),) if asked_hard else ())
        else:  # the lease the claim's reply scored (never past the hard deadline, which the reply also names)
            asked = c.server_now + self._ms(self.lease_ms)
            grants = ((h.name, f"job {c.id}'s lease", min(asked, asked_hard) if asked_hard else asked, c.deadline),)
        self._event(h.name, Kind.CLAIM, job=c.id, attempts=c.attempts, deadline=self._at(granted, c.server_now))
        return (replace(h, job=c.id, attempts=c.attempts, written=False, session=keeper.session, deadline=granted,
                        hard=c.hard), Outcome(claimed=((c.id, c.attempts),), grants=grants))

    def _ms(self, model_ms: float) -> int:
        return int(self.clock.to_server_ms(model_ms))

    def _at(self, server_ms: int, server_now: int) -> float:
        """A deadline the store replied with, as model seconds from the run's start (the reply's own TIME)."""
        return round(self.model_s(server_ms, server_now), 3)

    def _extend(self, h: Hand) -> tuple[Hand, Outcome]:
        keeper = self.keepers[h.name]
        keeper.session = h.session
        held = [_Held(h.job, h.attempts, h.hard)] if h.job is not None else []
        renewed = keeper.renew(held)
        session = keeper.session
        if renewed is None:  # nothing to renew (a session already gone)
            return replace(h, session=session), Outcome()
        pair = (h.job, h.attempts)
        if h.job is not None and h.job in renewed.lost:
            self._event(h.name, Kind.EXTEND, job=h.job, attempts=h.attempts, held=False)
            return replace(h.idle(), session=session), Outcome(refused=(pair,))
        asked = renewed.server_now + self._ms(self.lease_ms)
        session_grant = ((h.name, "its session", asked, renewed.score),) if (
            self.design.per_worker and renewed.score is not None and renewed.session) else ()
        if h.job is None:
            self._event(h.name, Kind.EXTEND, held=renewed.session is not False)
            return replace(h, session=session), Outcome(grants=session_grant)
        deadline = renewed.deadlines.get(h.job, h.deadline)
        if h.hard and deadline is not None:
            deadline = min(deadline, h.hard)  # a session's renewal does not move a job past its hard deadline
        self._event(h.name, Kind.EXTEND, job=h.job, attempts=h.attempts, held=True,
                    deadline=self._at(deadline, renewed.server_now))
        # a session's renewal is the session's, not an operation on the job: it checks no job's attempts
        if self.design.per_worker:
            return replace(h, session=session, deadline=deadline), Outcome(grants=session_grant)
        job_grant = (h.name, f"job {h.job}'s lease", min(asked, h.hard) if h.hard else asked, deadline)
        return replace(h, session=session, deadline=deadline), Outcome(accepted=(pair,), grants=(job_grant,))

    def _effect(self, h: Hand) -> tuple[Hand, Outcome]:
        pair = (h.job, h.attempts)
        fenced = self.p.fencing == "on"
        try:
            applied = self.q.record_effect(h.job, h.attempts, fenced=fenced)
        except StaleToken:
            self._event(h.name, Kind.EFFECT_REFUSED, job=h.job, attempts=h.attempts)
            return h.idle(), Outcome(refused=(pair,), quiet=True)
        self._event(h.name, Kind.EFFECT, job=h.job, attempts=h.attempts, applied=applied, fenced=fenced)
        if fenced:  # the fenced write settled the job in the same step
            return h.idle(), Outcome(accepted=(pair,))
        return replace(h, written=True), Outcome(accepted=(pair,))

    def _complete(self, h: Hand) -> tuple[Hand, Outcome]:
        pair = (h.job, h.attempts)
        try:
            self.q.complete(h.job, h.attempts)
        except StaleToken:
            self._event(h.name, Kind.COMPLETE_REFUSED, job=h.job, attempts=h.attempts)
            return h.idle(), Outcome(refused=(pair,), quiet=True)
        except StoreError:  # the row is gone: nothing to complete
            self._event(h.name, Kind.COMPLETE_REFUSED, job=h.job, attempts=h.attempts, reason="no such job")
            return h.idle(), Outcome(refused=(pair,), quiet=True)
        self._event(h.name, Kind.COMPLETE, job=h.job, attempts=h.attempts)
        return h.idle(), Outcome(accepted=(pair,))

    def _pause(self, h: Hand, now_ms: float | None = None) -> Hand:
        self._event(h.name, Kind.FREEZE, job=h.job, attempts=h.attempts, seconds=self.p.pause)
        return replace(h, frozen_until=(self.clock.now_ms if now_ms is None else now_ms) + to_ms(self.p.pause))

    def _crash(self, h: Hand) -> tuple[Hand, Outcome]:
        self._event(h.name, Kind.CRASH, holding=[h.job])
        return Hand(h.name, alive=False, job=h.job, attempts=h.attempts, deadline=h.deadline, hard=h.hard), Outcome()

    # -- reading the store ---------------------------------------------------------------------------
    def _reap_view(self, stored: store_snapshot.Stored) -> tuple[frozenset, frozenset, int]:
        """What a reap call is judged against: the ids in active, the workers with a `sessions` entry and the
        `reaped` count, as `stored` holds them."""
        def members(key: str) -> frozenset:
            entry = stored.entries.get(key)
            return frozenset(m for m, _ in entry.value) if entry is not None else frozenset()

        count = stored.entries.get(self.q.reaped_key)
        return (members(self.q.active), members(self.q.base + "sessions"),
                int(count.value) if count is not None else 0)

    def read(self, types: dict[str, str]) -> store_snapshot.Stored:
        """Every key of the queue. The package's queue scripts set no time to live (a test holds it), so only
        with a script replaced is each key's asked."""
        return store_snapshot.read(self.q.backend.client, self.q.base, types, ttl=bool(self.p.scripts))

    def settled(self, stored: store_snapshot.Stored) -> bool:
        """Every job done or dead: nothing left to run."""
        snap = inv.from_contents(self.q, self.ids, stored.entries)
        return all(row.places in (("done",), ("dead",)) for row in snap.jobs.values())

    def facts(self, stored: store_snapshot.Stored, hands: Sequence[Hand], seen: Seen, outcome: Outcome,
              now_ms: float) -> inv.Facts:
        """What the invariants judge after a step: the store, what the run has seen, and each holder with the
        deadline the store granted it (model seconds from the run's start, as `now`)."""
        def at(server_ms: float) -> float:
            return round(self.model_s(server_ms, stored.server_ms, now_ms), 3)

        holders = tuple(inv.Holder(h.name, h.job, h.attempts, at(h.deadline), at(h.hard) if h.hard else None)
                        for h in hands if h.job is not None and h.deadline is not None)
        grants = tuple(inv.Grant(who, what, round(self.model_s(asked, stored.server_ms, now_ms), 3),
                                 round(self.model_s(granted, stored.server_ms, now_ms), 3))
                       for who, what, asked, granted in outcome.grants)
        reaps = ()
        if outcome.reap is not None:
            replied, replied_ended, active, sessions, count, limit = outcome.reap
            active_after, sessions_after, count_after = self._reap_view(stored)
            reaps = (inv.Reaped(replied, replied_ended, tuple(sorted(active - active_after)),
                                tuple(sorted(sessions - sessions_after)), count_after - count, limit),)
        return inv.Facts(snapshot=inv.from_contents(self.q, self.ids, stored.entries), issued=dict(seen.issued),
                         claimed=outcome.claimed, refused=seen.refused | frozenset(outcome.refused),
                         accepted=outcome.accepted, now=round(to_s(now_ms), 3), holders=holders, grants=grants,
                         reaps=reaps)

    def describe(self, stored: store_snapshot.Stored, hands: Sequence[Hand], now_ms: float) -> dict[str, Any]:
        """A state as a reader reads it: each key of the queue (without its prefix) and what it holds, and what
        each worker believes; every time in model seconds from the run's start, never a raw score. A reaped
        job's pending score 0 reads as "first in line"; other pending and dead scores as their order."""
        def at(server_ms: float) -> Any:
            return "never" if math.isinf(server_ms) else round(self.model_s(server_ms, stored.server_ms, now_ms), 3)

        keys: dict[str, Any] = {}
        for key, entry in stored.entries.items():
            rel = key[len(self.q.base):]
            value: Any = entry.value
            if entry.type == "zset" and rel in ("active", "sessions", "schedule"):
                value = {m: at(sc) for m, sc in value}
            elif entry.type == "zset":
                value = [m if sc != 0 else f"{m} (first in line)" for m, sc in value]
            elif entry.type == "hash":
                value = {f: (at(float(v)) if f == "hard" else v) for f, v in value
                         if rel != "session_tokens"}
                if rel == "session_tokens":
                    value = {f: "a token" for f, _ in entry.value}
            elif entry.type in ("set", "list"):
                value = list(value)
            keys[rel] = value
        workers = {}
        for h in hands:
            w: dict[str, Any] = {"alive": h.alive}
            if h.job is not None:
                w.update(job=h.job, attempts=h.attempts, lease_to=None if h.deadline is None else at(h.deadline))
            if h.written:
                w["effect_written"] = True
            if h.frozen_until is not None:
                w["frozen_until"] = round(to_s(h.frozen_until), 3)
            if h.session is not None:
                current = dict(stored.entries[self.q.base + "session_tokens"].value).get(h.name) \
                    if self.q.base + "session_tokens" in stored.entries else None
                w["session"] = "current" if current == h.token else "stale"
            workers[h.name] = w
        return {"t": round(to_s(now_ms), 3), "keys": keys, "workers": workers}

    def record_snapshot(self, stored: store_snapshot.Stored, step: int) -> None:
        """The store after step `step`, as a `snapshot` event (README's history format), with each active
        job's lease left (model seconds, from its ZSCORE against the server's TIME)."""
        if self.rec is None:
            return
        snap = inv.from_contents(self.q, self.ids, stored.entries)
        active = dict(stored.entries[self.q.active].value) if self.q.active in stored.entries else {}
        left = {job: (None if math.isinf(score) else round(to_s(self.clock.from_server_ms(score - stored.server_ms)), 3))
                for job, score in active.items()}
        self._event(STORE, Kind.SNAPSHOT, step=step, lease_left=left, **snap.to_dict())
