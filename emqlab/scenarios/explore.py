"""Every interleaving, checked on the real scripts: a breadth-first search over every order of a small
world's steps, each step the real Lua script call on fakeredis on the virtual clock, looking for the
shortest schedule that breaks one of the queue's invariants; and the replay of that schedule on a
live server.

The world: 2 or 3 workers, 1 or 2 jobs (J1, J2), a lease and a beat (model seconds), a renewal design
(`emqlab.lease.designs`: none, per-job, sweep, session, each worker keeping its jobs through its
design's keeper), fencing on or off. A step is one choice among what is enabled:

- `claim`: an idle worker claims a job (a session worker first opens its session if it has none);
- `extend`: a worker's keeper renews (per-job, sweep: the batched extend; session: the session);
- `effect`: a worker holding a job writes its effect. Fencing on: one fenced write that settles the
  job; fencing off: an unchecked write, and the completion is a step of its own;
- `complete` (fencing off): the worker sends its completion;
- `freeze`: a worker holding a job is stopped for a lease and a beat: the clock moves on while it
  takes no step (it wakes believing it still holds its job);
- `crash`: a worker holding a job dies; it takes no step again;
- `beat` (the reaper): the clock moves one beat, then the reap script runs on the server's TIME.

A state is what the store holds, read from the store itself (every key under the queue's prefix,
`emqlab.store.snapshot`), plus each worker's local state (alive, the job and attempts it believes it
holds, whether its effect is written, its session's token) and two things the run has seen that the
store no longer shows (the highest attempts handed out per job; the holders the store refused),
which two invariants need. Before each step the search writes the parent's keys back and rewinds
the virtual clock to the parent's time (`VirtualClock.rewind`); `method="rerun"` instead replays the
parent's whole schedule from an empty store (the benchmark measures both).

Two states are the same when their canonical forms are: every key relative to the queue's prefix; a
deadline (active, sessions, schedule, a job's hard deadline) as its distance from the server's TIME,
every one already passed as "due" (time only moves forward and no script reads a passed deadline
except to find it passed); pending, dead and a session's `held:` index by order alone (a reaped job's
score 0 kept as 0, a score equal to TIME kept as "now"); session tokens renamed in order of first
appearance (scripts only compare them); the reap counter and the wake list left out (no script's
effect on any other key depends on them). No symmetry reduction: worker-1 and worker-2 swapped are
two states.

The search is breadth-first, so the first violation found is a shortest one; it is bounded by depth
and by a state budget (both in `emqlab.core.ranges`). A violating state is counted and not expanded.
`minicheck` (0.4.0) was evaluated and not used: it keys its visited set on the state itself, so a
store snapshot with absolute times could not be deduplicated on a canonical form while restored
exactly; it has no depth bound (this world's space is infinite: attempts grow), no per-transition
check (a claim handing out a value twice) and no per-depth counts; the 70 lines of search here do
what is needed, and nothing else.
"""

from __future__ import annotations

import math
import os
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core import ranges
from ..core.errors import BadParameter, StaleToken, StoreError
from ..core.timeline import Record, Timeline, Verdict, json_name
from ..core.words import HEADLINE_WORDS, ModeWords, headline_words, plural, seconds
from ..lease.designs import DESIGNS, NONE, lookup_design
from ..queue import invariants as inv
from ..queue.jobs import Queue
from ..store import snapshot as store_snapshot
from ..store.backend import Backend, connect, store_spec
from ..store.clock import DEFAULT_SCALE
from ..store.scripts import KEY_COUNTS
from .base import mode_words, run_on

QUEUE = "orders"
REAPER = "reaper"
STORE = "store"
ACTIONS = ("claim", "extend", "effect", "complete", "freeze", "crash")  # a worker's, in the order tried
BEAT = "beat"
REAL_MARGIN_S = 0.5  # a replay's every race with the server's clock is won or lost by at least this much real time
MS = 1000.0
DEFAULT_STATES = 8_000  # the state budget's default: the largest its range allows


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
    """What one worker knows: alive or not, the job and attempts it believes it holds, whether its
    effect is written (fencing off, completion not sent yet), its session (design session)."""

    name: str
    alive: bool = True
    job: str | None = None
    attempts: int | None = None
    written: bool = False
    session: Any = None

    @property
    def token(self) -> str | None:
        return None if self.session is None else self.session.token


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
    package's (name -> Lua text), the invariants checked, and the real clock's scale a replay starts from."""

    workers: int
    jobs: int
    depth: int
    states: int
    lease: float
    beat: float
    design: str
    fencing: str
    scripts: tuple[tuple[str, str], ...] = field(default=(), metadata=json_name("scripts", load=_scripts_tuple))
    invariants: tuple[str, ...] = field(default=tuple(inv.INVARIANTS), metadata=json_name("invariants", load=tuple))
    scale: float = DEFAULT_SCALE  # the fastest real clock a replay may use (it slows down for its margins)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out["scripts"] = dict(self.scripts)
        return out

    @property
    def mode(self) -> str:
        return f"fencing {self.fencing}"

    @property
    def freeze(self) -> float:
        """How long a freeze lasts (model seconds): a lease and a beat, so any lease outlives it never."""
        return self.lease + self.beat

    @property
    def replaced(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.scripts)

    def cost(self) -> tuple[float, float]:
        """(model span, store steps): the virtual clock costs no real time; a state costs the steps tried
        from it (measured: about 4.3 each) of about four store steps each (write back, the step, the read,
        and the step's own script calls)."""
        return 0.0, STEPS_PER_STATE * self.states


# store steps a state of the search costs, measured on fakeredis with 2 workers (benchmarks/explore.py); a third
# worker tries about a third more steps a state, and its largest budget still ran in under a minute there
STEPS_PER_STATE = 17


@dataclass(frozen=True, kw_only=True)
class ExploreVerdict(Verdict):
    """What the search found. `states`: distinct states; `transitions`: steps tried; `depth_reached`:
    the deepest new state; `complete`: every state within the depth was explored (the budget did not
    cut the search); `violations`: violating states; `counterexample`: the shortest schedule to the first
    (its steps with what the store answered each), or None; `invariant` and `broken`: which invariant
    broke and how; `levels`: new states at each depth (0 = the start); `seconds`: wall time."""

    states: int
    transitions: int
    depth_reached: int
    complete: bool
    violations: int
    counterexample: list | None
    invariant: str | None
    broken: str | None
    levels: list
    seconds: float


@dataclass(frozen=True, kw_only=True)
class ReplayVerdict(Verdict):
    """A schedule played on a store. `expected`: the invariant the search saw break at its last step;
    `broke_at`: the step (1-based) where an invariant first broke here, or None; `invariant`, `broken`:
    which and how; `same`: the same invariant broke at the same, last step; `why`: when not, the first
    step the store answered otherwise than in the search; `scale`: real seconds per model second."""

    steps: int
    expected: str | None
    broke_at: int | None
    invariant: str | None
    broken: str | None
    same: bool
    why: str | None
    scale: float | None
    store: str


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
        self.lease_ms = params.lease * MS
        self.keepers = {name: self.design.keeper(self.q, name, self.lease_ms) for name in self.names}

    def _event(self, actor: str, kind: str, **data: Any) -> None:
        if self.rec is not None:
            self.rec.event(actor, kind, **data)

    def start(self) -> tuple[Hand, ...]:
        """Enqueue the jobs; a session design opens each worker's session. The hands at the start."""
        for job in self.ids:
            self.q.enqueue(job, "order")
            self._event("producer", "enqueue", job=job)
        hands = []
        for name in self.names:
            session = self.keepers[name].open() if self.design.per_worker else None
            if session is not None:
                self._event(name, "session_open")
            hands.append(Hand(name, session=session))
        return tuple(hands)

    def enabled(self, hands: Sequence[Hand]) -> list[Step]:
        """What each worker may do now, then the reaper's beat: the choices of one step."""
        steps = []
        for h in hands:
            if not h.alive:
                continue
            holds = h.job is not None
            for action in ACTIONS:
                if (action == "claim" and not holds
                        or action == "extend" and self.design.renews and (holds or h.session is not None)
                        or action == "effect" and holds and not h.written
                        or action == "complete" and holds and h.written
                        or action in ("freeze", "crash") and holds):
                    steps.append(Step(h.name, action))
        steps.append(Step(REAPER, BEAT))
        return steps

    def step(self, hands: tuple[Hand, ...], step: Step) -> tuple[tuple[Hand, ...], Outcome]:
        """Do `step` on the store: the real script call(s), the clock moved where the step moves it."""
        if step.action == BEAT:
            self.clock.run(until=self.clock.now_ms + self.p.beat * MS)
            reaped = self.q.reap_slice()
            self._event(REAPER, "reap", jobs=list(reaped.ids), ended=list(reaped.ended))
            return hands, Outcome()
        k = [h.name for h in hands].index(step.actor)
        hand, outcome = getattr(self, f"_{step.action}")(hands[k])
        return hands[:k] + (hand,) + hands[k + 1:], outcome

    def _claim(self, h: Hand) -> tuple[Hand, Outcome]:
        keeper = self.keepers[h.name]
        keeper.session = h.session
        if self.design.per_worker and keeper.session is None:
            if keeper.open() is None:  # its lapsed session is not ended yet: nothing to claim under
                self._event(h.name, "claim_waits", reason="its old session is not ended yet")
                return h, Outcome()
            self._event(h.name, "session_open")
        try:
            got = self.q.claim(self.lease_ms, 1, **keeper.claim_options())
        except StaleToken:
            keeper.forget()
            self._event(h.name, "claim_refused", reason="its session is gone")
            return replace(h, session=None), Outcome()
        if not got:
            self._event(h.name, "claim_empty")
            return replace(h, session=keeper.session), Outcome()
        c = got[0]
        self._event(h.name, "claim", job=c.id, attempts=c.attempts)
        return (replace(h, job=c.id, attempts=c.attempts, written=False, session=keeper.session),
                Outcome(claimed=((c.id, c.attempts),)))

    def _extend(self, h: Hand) -> tuple[Hand, Outcome]:
        keeper = self.keepers[h.name]
        keeper.session = h.session
        held = [_Held(h.job, h.attempts)] if h.job is not None else []
        renewed = keeper.renew(held)
        session = keeper.session
        if renewed is None:  # nothing to renew (a session already gone)
            return replace(h, session=session), Outcome()
        pair = (h.job, h.attempts)
        if h.job is not None and h.job in renewed.lost:
            self._event(h.name, "extend", job=h.job, attempts=h.attempts, held=False)
            return replace(h, job=None, attempts=None, written=False, session=session), Outcome(refused=(pair,))
        if h.job is None:
            self._event(h.name, "extend", held=renewed.session is not False)
            return replace(h, session=session), Outcome()
        self._event(h.name, "extend", job=h.job, attempts=h.attempts, held=True)
        return replace(h, session=session), Outcome(accepted=(pair,))

    def _effect(self, h: Hand) -> tuple[Hand, Outcome]:
        pair = (h.job, h.attempts)
        fenced = self.p.fencing == "on"
        try:
            applied = self.q.record_effect(h.job, h.attempts, fenced=fenced)
        except StaleToken:
            self._event(h.name, "effect_refused", job=h.job, attempts=h.attempts)
            return replace(h, job=None, attempts=None), Outcome(refused=(pair,))
        self._event(h.name, "effect", job=h.job, attempts=h.attempts, applied=applied, fenced=fenced)
        if fenced:  # the fenced write settled the job in the same step
            return replace(h, job=None, attempts=None), Outcome(accepted=(pair,))
        return replace(h, written=True), Outcome()

    def _complete(self, h: Hand) -> tuple[Hand, Outcome]:
        pair = (h.job, h.attempts)
        idle = replace(h, job=None, attempts=None, written=False)
        try:
            self.q.complete(h.job, h.attempts)
        except StaleToken:
            self._event(h.name, "complete_refused", job=h.job, attempts=h.attempts)
            return idle, Outcome(refused=(pair,))
        except StoreError:  # the row is gone: nothing to complete
            self._event(h.name, "complete_refused", job=h.job, attempts=h.attempts, reason="no such job")
            return idle, Outcome(refused=(pair,))
        self._event(h.name, "complete", job=h.job, attempts=h.attempts)
        return idle, Outcome(accepted=(pair,))

    def _freeze(self, h: Hand) -> tuple[Hand, Outcome]:
        self._event(h.name, "freeze", job=h.job, attempts=h.attempts, seconds=self.p.freeze)
        self.clock.run(until=self.clock.now_ms + self.p.freeze * MS)
        return h, Outcome()

    def _crash(self, h: Hand) -> tuple[Hand, Outcome]:
        self._event(h.name, "crash", holding=[h.job])
        return Hand(h.name, alive=False), Outcome()

    # -- reading the store ---------------------------------------------------------------------------
    def read(self, types: dict[str, str]) -> store_snapshot.Stored:
        return store_snapshot.read(self.q.backend.client, self.q.base, types)

    def facts(self, stored: store_snapshot.Stored, seen: Seen, outcome: Outcome) -> inv.Facts:
        return inv.Facts(snapshot=inv.from_contents(self.q, self.ids, stored.entries), issued=dict(seen.issued),
                         claimed=outcome.claimed, refused=seen.refused | frozenset(outcome.refused),
                         accepted=outcome.accepted)

    def record_snapshot(self, stored: store_snapshot.Stored, step: int) -> None:
        """The store after step `step`, as a `snapshot` event (README's history format), with each active
        job's lease left (model seconds, from its ZSCORE against the server's TIME)."""
        if self.rec is None:
            return
        snap = inv.from_contents(self.q, self.ids, stored.entries)
        active = dict(stored.entries[self.q.active].value) if self.q.active in stored.entries else {}
        left = {job: (None if math.isinf(score) else round(self.clock.from_server_ms(score - stored.server_ms) / MS, 3))
                for job, score in active.items()}
        self._event(STORE, "snapshot", step=step, lease_left=left, **snap.to_dict())


# -- the canonical form ---------------------------------------------------------------------------------------
DEADLINES = ("active", "sessions", "schedule")  # sorted sets scored by a deadline on the server's clock
ORDERED = ("pending", "dead")  # sorted sets whose scores only order their members
LEFT_OUT = ("reaped", "wake")  # written by scripts, read by none for any other key


def _due(score: float, now: int) -> Any:
    return score if math.isinf(score) else ("due" if score <= now else score - now)


def _ordered(pairs: Sequence[tuple[str, float]], now: int) -> tuple:
    past = sorted({s for _, s in pairs if s != 0 and s != now})
    rank = {s: k + 1 for k, s in enumerate(past)}
    return tuple((m, 0 if s == 0 else "now" if s == now else rank[s]) for m, s in pairs)


def canonical(base: str, stored: store_snapshot.Stored, hands: Sequence[Hand], seen: Seen) -> tuple:
    """A state's canonical form (see the module's doc): equal forms, equal futures."""
    now = stored.server_ms
    tokens: dict[str, str] = {}

    def token(value: str | None) -> str | None:
        if value is None:
            return None
        return tokens.setdefault(value, f"t{len(tokens) + 1}")

    held = tuple((h.name, h.alive, h.job, h.attempts, h.written, token(h.token)) for h in hands)
    keys = []
    for key, entry in stored.entries.items():
        rel = key[len(base):]
        if rel in LEFT_OUT:
            continue
        value = entry.value
        if entry.type == "zset" and rel in DEADLINES:
            value = tuple((m, _due(s, now)) for m, s in value)
        elif entry.type == "zset" and (rel in ORDERED or rel.startswith("held:")):
            value = _ordered(value, now)
        elif entry.type == "hash" and rel.startswith("job:"):
            value = tuple((f, _due(float(v), now) if f == "hard" else v) for f, v in value)
        elif entry.type == "hash" and rel == "session_tokens":
            value = tuple((f, token(v)) for f, v in value)
        keys.append((rel, entry.type, value, entry.pttl))
    return tuple(keys), held, seen.issued, tuple(sorted(seen.refused))


# -- the search -----------------------------------------------------------------------------------------------
@dataclass
class _Node:
    parent: int | None
    step: Step | None
    depth: int


@dataclass(frozen=True)
class _Concrete:
    stored: store_snapshot.Stored
    now_ms: int
    hands: tuple[Hand, ...]
    seen: Seen


def _read_scripts(scripts: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """{name: a path to a .lua file, or Lua text} as (name, text) pairs, each name a registered script."""
    out = {}
    for name, given in (scripts or {}).items():
        if name not in KEY_COUNTS:
            raise BadParameter(f"no script named {name!r} to replace; known: {', '.join(sorted(KEY_COUNTS))}")
        if isinstance(given, os.PathLike) or (isinstance(given, str) and given.endswith(".lua") and "\n" not in given):
            path = Path(given)
            if not path.is_file():
                raise BadParameter(f"the script for {name!r}, {str(path)!r}, is not a readable file")
            given = path.read_text(encoding="utf-8")
        if not isinstance(given, str) or not given.strip():
            raise BadParameter(f"the script for {name!r} must be a path to a .lua file or Lua text")
        out[name] = given
    return tuple(sorted(out.items()))


def _choice(what: str, value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise BadParameter(f"{what} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def explore_params(workers: int = 2, jobs: int = 1, depth: int = 12, states: int = DEFAULT_STATES, lease: float = 30,
                   beat: float = 20, design: str = NONE, fencing: str = "on", scripts: Mapping[str, Any] | None = None,
                   invariants: Any = None, scale: float = DEFAULT_SCALE) -> Params:
    """The world's parameters, each checked once against its range (BadParameter names what is allowed)."""
    try:
        names = inv.check_names(invariants)
    except ValueError as exc:
        raise BadParameter(str(exc)) from None
    return Params(workers=ranges.check("explore_workers", workers), jobs=ranges.check("explore_jobs", jobs),
                  depth=ranges.check("depth", depth), states=ranges.check("states", states),
                  lease=float(ranges.check("lease", lease)), beat=float(ranges.check("beat", beat)),
                  design=lookup_design(design).name, fencing=_choice("fencing", fencing, ("on", "off")),
                  scripts=_read_scripts(scripts), invariants=names, scale=float(ranges.check("scale", scale)))


def explore(workers: int = 2, jobs: int = 1, depth: int = 12, states: int = DEFAULT_STATES, lease: float = 30,
            beat: float = 20, design: str = NONE, fencing: str = "on", scripts: Mapping[str, Any] | None = None,
            invariants: Any = None, method: str = "restore", scale: float = DEFAULT_SCALE) -> Timeline:
    """Explore every schedule of up to `depth` steps of the world (see the module's doc) on fakeredis, on
    the virtual clock, breadth-first, until `states` distinct states; return a Timeline whose verdict
    holds the counts and the shortest counterexample, and whose events are that counterexample played
    once more, recorded (a `snapshot` event after each step).

    scripts: {script name: a path to a .lua file, or Lua text}, run instead of the package's script of
    that name (a model of another system's script, a deliberately broken copy). invariants: the names
    checked (default: all five of `emqlab.queue.invariants`). method: restore (write the parent's keys
    back before each step) or rerun (replay the parent's schedule from an empty store). scale: the real
    clock's scale a `replay` of this run starts from (it slows down further for its margins)."""
    params = explore_params(workers, jobs, depth, states, lease, beat, design, fencing, scripts, invariants, scale)
    _choice("method", method, ("restore", "rerun"))
    with connect("fake", scripts=dict(params.scripts)) as backend:
        with run_on(backend, "explore", params, cost=params.cost()) as run:
            found = _search(backend, run.prefix, params, method)
            steps = found.pop("path")
            played = _play(backend, run.prefix, params, steps, run) if steps is not None else None
            if played is not None and (played.invariant != found["invariant"] or played.broke_at != len(steps)):
                raise StoreError(f"the counterexample did not break {found['invariant']} when played again on "
                                 f"fakeredis (it broke {played.invariant} at step {played.broke_at}): the search "
                                 "is not deterministic, which it must be")
            cex = None if steps is None else [{**s.to_dict(), **played.said[k]} for k, s in enumerate(steps)]
            v = ExploreVerdict(counterexample=cex, **found)
            run.timeline.verdict = v.worded(words(params, v))
    return run.timeline


def _search(backend: Backend, prefix: str, p: Params, method: str) -> dict[str, Any]:
    started = time.perf_counter()
    clock, client = backend.clock, backend.client
    world = World(backend, prefix, p)
    base = world.q.base
    types: dict[str, str] = {}
    hands = world.start()
    root = _Concrete(world.read(types), clock.now_ms, hands, Seen())
    nodes = [_Node(None, None, 0)]
    visited = {canonical(base, root.stored, hands, root.seen)}
    frontier = deque([(0, root)])
    levels = [1]
    transitions = violations = 0
    first: tuple[int, inv.Broken] | None = None
    cut = False
    on_store: _Concrete | None = root

    def path_to(node: int) -> list[Step]:
        out = []
        while nodes[node].parent is not None:
            out.append(nodes[node].step)
            node = nodes[node].parent
        return out[::-1]

    while frontier:
        node, conc = frontier.popleft()
        depth = nodes[node].depth
        if depth >= p.depth:
            continue
        for step in world.enabled(conc.hands):
            if method == "restore":
                if on_store is not conc:  # the clock first: a time to live is written back from its now
                    clock.rewind(conc.now_ms)
                    store_snapshot.write(client, conc.stored.entries, on_store.stored.entries)
                here = conc.hands
            else:  # an empty store at 0, then the parent's whole schedule again
                clock.rewind(0)
                store_snapshot.write(client, {}, on_store.stored.entries)
                here = world.start()
                for s in path_to(node):
                    here, _ = world.step(here, s)
            hands, outcome = world.step(here, step)
            transitions += 1
            stored = world.read(types)
            on_store = child = _Concrete(stored, clock.now_ms, hands, conc.seen.after(outcome))
            form = canonical(base, stored, hands, child.seen)
            if form in visited:
                continue
            if len(visited) >= p.states:
                cut = True
                break
            visited.add(form)
            nodes.append(_Node(node, step, depth + 1))
            if len(levels) <= depth + 1:
                levels.append(0)
            levels[depth + 1] += 1
            broken = inv.check(world.facts(stored, conc.seen, outcome), p.invariants)
            if broken:
                violations += 1
                if first is None:
                    first = (len(nodes) - 1, broken[0])
                continue
            frontier.append((len(nodes) - 1, child))
        if cut:
            break
    path = path_to(first[0]) if first else None
    return {"states": len(visited), "transitions": transitions, "depth_reached": len(levels) - 1,
            "complete": not cut, "violations": violations, "invariant": first[1].invariant if first else None,
            "broken": first[1].what if first else None, "levels": levels,
            "seconds": round(time.perf_counter() - started, 3), "path": path}


# -- playing a schedule ---------------------------------------------------------------------------------------
@dataclass
class _Played:
    broke_at: int | None = None
    invariant: str | None = None
    broken: str | None = None
    said: list = field(default_factory=list)  # per step: what the store answered, as recorded


def _play(backend: Backend, prefix: str, p: Params, steps: Sequence[Step], run: Any) -> _Played:
    """Play `steps` from an empty queue on `backend`, recording each step and the store after it to `run`;
    check the invariants after every step (the first break is kept)."""
    world = World(backend, prefix, p, run)
    if not backend.clock.real:  # the search's own store: empty it, and start its clock again at 0
        backend.clock.rewind(0)
        store_snapshot.write(backend.client, {}, backend.keys(world.q.base))
        run.t0_ms = 0
    types: dict[str, str] = {}
    hands = world.start()
    world.record_snapshot(world.read(types), 0)
    seen, out = Seen(), _Played()
    for k, step in enumerate(steps, start=1):
        if step.actor != REAPER and step.actor not in world.names:
            raise BadParameter(f"step {k} names {step.actor!r}, who is not in this world ({', '.join(world.names)})")
        if step not in world.enabled(hands):
            raise BadParameter(f"step {k} ({step.actor} {step.action}) is not enabled in the state the steps before "
                               "it reached")
        mark = len(run.timeline.events)
        hands, outcome = world.step(hands, step)
        stored = world.read(types)
        for e in run.timeline.events[mark:]:
            e.data["step"] = k
        said = [e for e in run.timeline.events[mark:]]
        out.said.append({"t": said[0].t if said else run.t,
                         "answer": [{"kind": e.kind, **{x: y for x, y in e.data.items() if x != "step"}} for e in said]})
        broken = inv.check(world.facts(stored, seen, outcome), p.invariants)
        world.record_snapshot(stored, k)
        seen = seen.after(outcome)
        if broken and out.broke_at is None:
            out.broke_at, out.invariant, out.broken = k, broken[0].invariant, broken[0].what
    return out


def schedule_span(p: Params, steps: Sequence[Step]) -> float:
    """The model seconds a schedule's freezes and beats move the clock."""
    return sum(p.freeze if s.action == "freeze" else p.beat if s.action == BEAT else 0.0 for s in steps)


def margin(p: Params) -> float:
    """The least model time by which any reap in this world finds a deadline passed or still ahead: a
    deadline set at a claim, extend or renewal lies a lease ahead, and the clock moves by beats and
    freezes (a lease and a beat), so the reap is decided by |lease - k·beat - m·freeze| for k + m up to the
    depth. 0 when a reap can land exactly on a deadline (the lease a whole number of beats)."""
    gaps = [abs(p.lease - k * p.beat - m * p.freeze) for k in range(p.depth + 1) for m in range(p.depth + 1 - k)
            if k + m > 0]
    return min(gaps)


def replay_scale(p: Params, scale: float | None = None) -> float:
    """The real clock's scale for a replay: at least `scale` (default the run's own), and slow enough that
    every race with the server's clock is decided by REAL_MARGIN_S of real time or more."""
    gap = margin(p)
    scale = p.scale if scale is None else scale
    if gap <= 0:
        raise BadParameter(f"a lease of {p.lease:g} s is a whole number of {p.beat:g} s beats: a reap would land "
                           "exactly on a deadline, which a live server decides by chance; choose another beat")
    return float(ranges.check("scale", max(float(ranges.check("scale", scale)), REAL_MARGIN_S / gap)))


def replay(source: Timeline, backend: Any = "valkey", scale: float | None = None, **connect_kw: Any) -> Timeline:
    """Play an exploration's counterexample step by step on `backend` (default: an embedded Valkey, on the
    real clock at `replay_scale`: a freeze or a beat sleeps its model seconds scaled), through the same
    Queue calls, recording it as a Timeline (a lane per worker, each step's answer, the store after each
    step with every active job's lease left from its ZSCORE). Its verdict says whether the same invariant
    broke at the same, last step, and if not, the first step the store answered otherwise."""
    v, p = source.verdict, source.params
    if not isinstance(v, ExploreVerdict) or not isinstance(p, Params):
        raise BadParameter("replay takes the Timeline an exploration returned (emqlab.scenarios.explore.explore)")
    if not v.counterexample:
        raise BadParameter("this exploration found no counterexample: there is no schedule to replay")
    steps = [Step.from_dict(s) for s in v.counterexample]
    if isinstance(backend, Backend):
        raise BadParameter("replay opens its own store (it may run other scripts than the package's): pass "
                           "'valkey', 'fake' or a URL")
    spec = store_spec(backend)
    real_scale = None if spec.kind == "fake" else replay_scale(p, scale)
    opts = dict(connect_kw)
    if real_scale is not None:
        opts.update(clock="real", scale=real_scale)
    with connect(spec, scripts=dict(p.scripts), **opts) as be:
        cost = (schedule_span(p, steps), 10 * len(steps) + 20)
        with run_on(be, "explore-replay", p, cost=cost) as run:
            played = _play(be, run.prefix, p, steps, run)
            expected = [s["answer"] for s in v.counterexample]
            why = None
            same = played.invariant == v.invariant and played.broke_at == len(steps)
            if not same:
                why = _first_difference(steps, expected, played.said)
            rv = ReplayVerdict(steps=len(steps), expected=v.invariant, broke_at=played.broke_at,
                               invariant=played.invariant, broken=played.broken, same=same, why=why,
                               scale=real_scale, store=be.name)
            run.timeline.verdict = rv.worded(replay_words(p, rv))
    return run.timeline


ANSWER_KEYS = ("kind", "job", "attempts", "held", "applied", "jobs")  # what a step's answer is compared on


def _first_difference(steps: Sequence[Step], expected: Sequence[list], got: Sequence[dict]) -> str:
    def gist(answer: list) -> list:
        return [{k: a.get(k) for k in ANSWER_KEYS if k in a} for a in answer]

    for k, (step, want) in enumerate(zip(steps, expected), start=1):
        have = got[k - 1]["answer"] if k - 1 < len(got) else []
        if gist(want) != gist(have):
            return (f"step {k} ({step.actor} {step.action}): the search's store answered {_answer(want)}, "
                    f"this one {_answer(have)}")
    return "every step was answered as in the search, yet the invariants judged the store otherwise"


def _answer(answer: list) -> str:
    return "; ".join(" ".join([a["kind"], *(f"{k}={a[k]}" for k in ANSWER_KEYS[1:] if k in a)]) for a in answer) or "nothing"


# -- words ----------------------------------------------------------------------------------------------------
def steps_told(v: ExploreVerdict) -> str:
    """The counterexample, one numbered line a step (what `emqlab explore` prints after the readout)."""
    return "\n".join(f"{k:>3}. {step_words(s)}" for k, s in enumerate(v.counterexample or (), start=1))


def step_words(step: Mapping[str, Any]) -> str:
    """One step of a counterexample as a reader says it: who did what, and what the store answered."""
    actor, action = step["actor"], step["action"]
    answers = step.get("answer", [])
    a = answers[-1] if answers else {}
    if action == BEAT:
        jobs = a.get("jobs") or []
        return f"the reaper beats: {'reaps ' + ', '.join(jobs) if jobs else 'nothing to reap'}"
    if action == "claim":
        return (f"{actor} claims {a['job']} (attempts {a['attempts']})" if a.get("kind") == "claim"
                else f"{actor} claims nothing")
    if action == "extend":
        job = a.get("job")
        if job is None:
            return f"{actor} renews its session" + ("" if a.get("held", True) else ": gone")
        return f"{actor} extends {job}: {'held' if a.get('held') else 'lost'}"
    if action == "effect":
        refused = a.get("kind") == "effect_refused"
        return (f"{actor}'s effect on {a['job']} is refused" if refused else
                f"{actor} writes {a.get('job')}'s effect (attempts {a.get('attempts')}): applied ×{a.get('applied')}")
    if action == "complete":
        ok = a.get("kind") == "complete"
        return f"{actor} completes {a.get('job')}: {'accepted' if ok else 'refused'}"
    if action == "freeze":
        return f"{actor} freezes {a.get('seconds', 0):g} s holding {a.get('job')}"
    if action == "crash":
        return f"{actor} crashes"
    return f"{actor} {action}"


def label(p: Params) -> str:
    """The world's name in words: fencing, design, and any script replaced."""
    replaced = f" · replaced: {', '.join(p.replaced)}" if p.replaced else ""
    return f"fencing {p.fencing} · design {p.design}{replaced}"


def words(p: Params, v: ExploreVerdict) -> ModeWords:
    """The exploration in words: a headline with the outcome, the world and the search as facts, and the
    static line; every number read from `v`."""
    world = (f"{plural(p.workers, 'worker')}, {plural(p.jobs, 'job')}, lease {seconds(p.lease)}, "
             f"beat {seconds(p.beat)}, a freeze {seconds(p.freeze)}")
    searched = (f"{v.states:,} states and {v.transitions:,} steps tried, to depth {v.depth_reached} "
                f"of {p.depth}, in {v.seconds:.1f} s")
    if v.counterexample:
        headline = (f"{label(p)}: the shortest break takes {plural(len(v.counterexample), 'step')}: "
                    f"{v.broken}.")
        if headline_words(headline) > HEADLINE_WORDS:
            headline = f"{label(p)}: {v.invariant} breaks in {plural(len(v.counterexample), 'step')} at the shortest."
        facts = (world, f"it breaks {v.invariant}: {v.broken}", searched)
        static = f"{v.invariant} breaks in {len(v.counterexample)} steps · {v.violations:,} violating states"
    elif v.complete:
        headline = (f"{label(p)}: every schedule of up to {p.depth} steps keeps every invariant checked: "
                    f"{v.states:,} states, 0 violations.")
        facts = (world, searched, f"checked: {', '.join(p.invariants)}",
                 "a bounded search proves nothing about longer schedules or other worlds")
        static = f"complete · {v.states:,} states · 0 violations"
    else:
        headline = (f"{label(p)}: no violation in the first {v.states:,} states, but the budget ended the search "
                    f"before depth {p.depth}.")
        facts = (world, searched, "an incomplete search proves nothing about the states it did not reach")
        static = f"incomplete · {v.states:,} states · 0 violations so far"
    return ModeWords(label(p), headline, static, facts)


def replay_words(p: Params, v: ReplayVerdict) -> ModeWords:
    """A replay in words: did the same invariant break at the same step, on which store."""
    where = f"live {v.store}" if v.store != "fake" else "fakeredis"
    name = f"replayed on {where}"
    if v.same:
        headline = f"{name}: the same {v.steps} steps broke {v.invariant} at step {v.broke_at}: {v.broken}."
        static = f"same break · {v.invariant} at step {v.broke_at} of {v.steps}"
    elif v.broke_at is not None:
        headline = f"{name}: {v.invariant} broke at step {v.broke_at}, not {v.expected} at step {v.steps}."
        static = f"another break · {v.invariant} at step {v.broke_at}"
    else:
        headline = f"{name}: the {v.steps} steps broke nothing here, unlike on fakeredis."
        static = "no break"
    facts = []
    if v.scale is not None:
        facts.append(f"on the real clock at {v.scale:g} real s per model s: every race with the server's clock "
                     f"decided by at least {REAL_MARGIN_S:g} s of real time")
    if v.why:
        facts.append(v.why)
    return ModeWords(name, headline, static, tuple(facts))


figure_words = mode_words(
    "A schedule per panel, step by step: each worker's lane, what the store answered each step, where each "
    "job is after it (and its lease left), and the step where an invariant broke: as the explorer found it on "
    "fakeredis, or as a replay played the same steps on a live server.",
    "Point at a run to read what it found.")


def growth(depth: int = 8, workers: Sequence[int] = (2, 3), **world: Any) -> dict[str, Timeline]:
    """The same world searched to `depth` with each number of `workers` (fencing on, design none unless
    `world` says otherwise): what the lesson's depth slider runs, {"2 workers": …, "3 workers": …}."""
    return {f"{w} workers": explore(workers=w, depth=depth, **world) for w in workers}


growth_words = mode_words(
    "How many distinct states the search met at each depth (bars), and in all (the line): each step "
    "multiplies the orders, and dedup on the store's canonical form keeps the count in check.",
    "Point at a run to read its counts.")
