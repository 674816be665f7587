"""The search: breadth-first over every schedule of the world's steps, each step the real script call on
fakeredis on the virtual clock, judging every transition by the queue's invariants and every state by
bounded progress.

Breadth-first, so the first violation found is a shortest one; bounded by depth and by a state budget
(`emqlab.core.ranges`). Every transition is judged (one that reaches a state already seen as well: a
claim that hands out a value twice breaks on the step, whatever state it reaches); a state reached by a
broken step is counted and not gone on from. Before each step the search writes the parent's keys back
and rewinds the virtual clock to the parent's time (`VirtualClock.rewind`); `method="rerun"` replays the
parent's whole schedule from an empty store instead (the benchmark measures both).

Two reductions, each one switchable and each checked against the full search by a differential test:

- **symmetry**: states that differ only by which worker is which are one (`canonical.canonical_form`);
- **sleep sets**: two steps that commute (`independent`: a freeze or a crash beside another worker's step;
  on the package's own scripts also two workers' steps on different jobs, or a claim beside a step on a job
  not waiting in pending) lead to one
  state in either order and are judged alike in either, so once one order is tried from a state the other
  is not tried again from its successor. A state reached again with a smaller sleep set is expanded again
  for the steps it had skipped, so every state within the depth is still reached; the fair schedule's step
  is never put to sleep (progress walks its edge). Sleep sets are kept in the state key's names, so they
  carry over between copies of a state that differ by which worker is which.

Two ways back cost less than a full restore: only the keys that differ are written back, and a step that
writes nothing is not read back (a freeze or a crash, which touch no key; on the package's scripts, a
refused write, an empty claim or reap, by their own replies: only the server's time moved).

Progress: from every state reached, one fair schedule runs (`fair_step`): an awake holder writes its
effect or completes, else an awake idle worker claims while a job is pending, else the reaper beats.
It must settle every job (done or dead) within `Params.progress_steps` steps; what it reaches is
remembered, so each state's schedule is run once. A pass proves a settling schedule exists; a failure
shows the state and the steps tried (another schedule might still settle it, which the verdict says).

`minicheck` (0.4.0) was evaluated and not used: it keys its visited set on the state itself (no
canonical form while the store is restored exactly), has no depth bound, no per-transition check and no
per-depth counts.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core import ranges
from ...core.errors import BadParameter, StoreError
from ...core.timeline import Timeline
from ...lease.designs import NONE, lookup_design
from ...queue import invariants as inv
from ...queue.jobs import REAP_LIMIT
from ...store import snapshot as store_snapshot
from ...store.backend import Backend, connect, store_spec
from ...store.clock import DEFAULT_SCALE
from ...store.scripts import SCRIPTS
from ..run_harness import run_on
from .canonical import state_key
from .replay import play
from .in_words import words
from .verdicts import ExploreVerdict
from .world import BEAT, CHECKS, FAILING, PROGRESS, REAPER, Hand, Outcome, Params, Seen, Step, World

DEFAULT_STATES = 40_000  # the state budget's default: the largest its range allows
BROKEN = -1  # a fair schedule that runs into a broken step (a safety violation, which the verdict names instead)


@dataclass
class Node:
    """A state the search reached: its parent and the step from it (None at the start), its depth, the
    steps it was told not to try (its sleep set), whether it was expanded."""

    parent: int | None
    step: Step | None
    depth: int
    sleep: frozenset = frozenset()
    expanded: bool = False


@dataclass(frozen=True)
class Concrete:
    """A state as the store and the workers hold it, to go back to."""

    stored: store_snapshot.Stored
    now_ms: float
    hands: tuple[Hand, ...]
    seen: Seen


def independent(a: Step, b: Step, jobs: Mapping[str, str | None], scripts_known: bool,
                pending: frozenset = frozenset()) -> bool:
    """Two steps (of one state whose workers hold `jobs`, with `pending` the jobs waiting) that commute, and
    whose judgements do not depend on their order: different workers, neither the reaper's beat, and

    - one of them a freeze or a crash (no key written, no clock moved), unless both crash (one may disable the
      other: the last living worker never crashes); or, on the package's own scripts (`scripts_known`):
    - neither a claim, each on a job of its own or on none (a session's renewal): every script but the claim
      and the reap touches only its own job's fields and members and its worker's own session keys;
    - a claim and another worker's step on a job not waiting in pending, or on none: the claim pops only
      a pending job and hands out that job's fencing value, and no other step touches pending.
    """
    if a.actor == b.actor or REAPER in (a.actor, b.actor):
        return False
    if a.action in FAILING or b.action in FAILING:
        return not (a.action == "crash" and b.action == "crash")
    if not scripts_known:
        return False
    ja, jb = jobs.get(a.actor), jobs.get(b.actor)
    if a.action == "claim" or b.action == "claim":
        if a.action == b.action:
            return False
        other = jb if a.action == "claim" else ja
        return other is None or other not in pending
    return ja is None or jb is None or ja != jb


@dataclass
class Found:
    """What a search found, before the verdict is made of it."""

    states: int = 0
    transitions: int = 0
    violations: int = 0
    levels: list = field(default_factory=lambda: [1])
    cut: bool = False
    first: tuple[int, Step | None, inv.Broken] | None = None  # (parent or the state, the step or None, what broke)
    first_depth: int | None = None
    tried: list | None = None  # progress: the fair schedule's steps from the state that did not settle
    progress_checked: int = 0
    seconds: float = 0.0
    progress: bool = False


class Search:
    """One breadth-first search of a world on one store (see the module's doc)."""

    def __init__(self, backend: Backend, prefix: str, p: Params, method: str = "restore"):
        self.p, self.method = p, method
        self.clock, self.client = backend.clock, backend.client
        self.world = World(backend, prefix, p)
        self.base = self.world.q.base
        self.types: dict[str, str] = {}
        self.nodes: list[Node] = []
        self.index: dict[tuple, int] = {}
        self.on_store: Concrete | None = None  # the state the store and the clock are at now
        self.on_hands: tuple[Hand, ...] = ()  # and the hands that go with it
        self.settle: dict[tuple, int] = {}  # state key (and whether the last fair step was an empty claim) -> steps to settle
        self.keys: list[tuple] = []  # each node's state key
        self.names: list[dict[str, str]] = []  # each node's workers, named as in its key
        self.concrete: dict[int, Concrete] = {}  # each node's state, to go back to
        self.succ: dict[int, dict[Step, tuple[int | None, bool]]] = {}  # node -> step -> (child node or None: broken, an empty claim)
        self.safety = tuple(n for n in p.invariants if n != PROGRESS)
        self.first_child: Concrete | None = None  # the state the first broken step reached

    # -- the store, moved ------------------------------------------------------------------------------------
    def key(self, c: Concrete) -> tuple[tuple, dict[str, str]]:
        return state_key(self.base, c.stored, c.hands, c.seen, c.now_ms, self.p.abstract, self.p.symmetric)

    def path_to(self, node: int) -> list[Step]:
        out = []
        while self.nodes[node].parent is not None:
            out.append(self.nodes[node].step)
            node = self.nodes[node].parent
        return out[::-1]

    def goto(self, node: int, c: Concrete) -> tuple[Hand, ...]:
        """Put the store and the clock back to `c` (the state of `node`); the hands to step from (a rerun's own:
        its sessions have new tokens)."""
        if self.on_store is c:
            return self.on_hands
        if self.method == "restore":
            self.clock.rewind(c.now_ms)  # the clock first: a time to live is written back from its now
            old = self.on_store.stored.entries if self.on_store is not None else store_snapshot.read(
                self.client, self.base, self.types).entries
            # only what differs is written back: the keys the steps since changed, and those they made
            changed = {key: e for key, e in c.stored.entries.items() if old.get(key) != e}
            store_snapshot.write(self.client, changed, [key for key in old if key not in c.stored.entries])
        else:  # an empty store at 0, then the state's whole schedule again
            self.clock.rewind(0)
            store_snapshot.write(self.client, {}, self.on_store.stored.entries if self.on_store else {})
            here = self.world.start()
            stored = self.world.read(self.types)
            for s in self.path_to(node):
                here, _ = self.world.step(here, s, stored)
                stored = self.world.read(self.types)
            self.on_store, self.on_hands = c, here
            return here
        self.on_store, self.on_hands = c, c.hands
        return c.hands

    def do(self, node: int, c: Concrete, step: Step) -> tuple[Concrete, Outcome]:
        if step.action in FAILING:  # a freeze or a crash touches no key and moves no clock: no store call
            hands, outcome = self.world.step(c.hands, step, c.stored, now_ms=c.now_ms)
            return Concrete(c.stored, c.now_ms, hands, c.seen.after(outcome)), outcome
        try:
            hands, outcome = self.world.step(self.goto(node, c), step, c.stored)
        except (BadParameter, StoreError):
            raise
        except Exception as exc:  # a replaced script that fails, or replies in a form the queue cannot read
            if not self.p.scripts:
                raise
            raise BadParameter(f"the replaced script ({', '.join(self.p.replaced)}) failed on a step "
                               f"({step.actor} {step.action}): {type(exc).__name__}: {str(exc)[:160]}") from None
        if outcome.quiet and self.p.abstract and self.method == "restore":  # the package's script wrote nothing: only the server's time moved
            stored = store_snapshot.Stored(c.stored.entries, c.stored.server_ms + round(self.clock.now_ms - c.now_ms))
        else:
            stored = self.world.read(self.types)
        child = Concrete(stored, self.clock.now_ms, hands, c.seen.after(outcome))
        self.on_store, self.on_hands = child, hands
        return child, outcome

    # -- the search --------------------------------------------------------------------------------------------
    def run(self) -> Found:
        started = time.perf_counter()
        p, found = self.p, Found()
        hands = self.world.start()
        root = Concrete(self.world.read(self.types), self.clock.now_ms, hands, Seen())
        self.on_store, self.on_hands = root, hands
        self.nodes.append(Node(None, None, 0))
        k, names = self.key(root)
        self.index[k] = 0
        self.keys.append(k)
        self.names.append(names)
        concrete = self.concrete
        concrete[0] = root
        frontier = deque([(0, None)])  # (node, the steps to try again, in the key's names: None for all)
        # the start itself is judged on what it granted (the sessions a session design opens)
        opened = inv.judge(self.world.facts(root.stored, hands, Seen(), self.world.opened, root.now_ms),
                           self.safety) if self.world.opened.grants else []
        if opened:
            found.violations, found.first, found.first_depth = 1, (0, None, opened[0]), 0
            self.first_child = root
            frontier.clear()
        found.progress = PROGRESS in p.invariants and self.method == "restore"  # a fair schedule needs the restore
        known = p.abstract  # the package's own scripts: the wider independence holds
        while frontier:
            node, only = frontier.popleft()
            n = self.nodes[node]
            c = concrete[node]
            if n.depth >= p.depth:
                continue
            n.expanded = True
            back = {v: k for k, v in self.names[node].items()}  # the key's names -> this copy's
            asleep = {self.local(s, back) for s in n.sleep} if p.sleep else set()
            again = None if only is None else {self.local(s, back) for s in only}
            jobs = {h.name: h.job for h in c.hands}
            entry = c.stored.entries.get(self.world.q.pending)
            pending = frozenset(m for m, _ in entry.value) if entry is not None else frozenset()
            fair = self.fair_step(c, False) if found.progress else None  # never asleep: progress walks its edge
            tried: list[Step] = []
            for step in self.world.enabled(c.hands):
                if step in asleep and step != fair:
                    tried.append(step)
                    continue
                if again is not None and step not in again:
                    continue
                child, outcome = self.do(node, c, step)
                found.transitions += 1
                sleep = [u for u in (*asleep, *tried) if independent(u, step, jobs, known, pending)] if p.sleep else []
                tried.append(step)
                broken = inv.judge(self.world.facts(child.stored, child.hands, c.seen, outcome, child.now_ms), self.safety)
                edges = self.succ.setdefault(node, {})
                empty = step.action == "claim" and not outcome.claimed
                if broken:
                    edges[step] = (None, empty)
                    found.violations += 1
                    if found.first is None:
                        found.first, found.first_depth = (node, step, broken[0]), n.depth + 1
                        self.first_child = child
                    continue
                k, names = self.key(child)
                sleep_key = frozenset(self.local(u, names) for u in sleep)
                if k in self.index:
                    edges[step] = (self.index[k], empty)
                    self.revisit(self.index[k], sleep_key, frontier)
                    continue
                if len(self.index) >= p.states:
                    found.cut = True
                    break
                self.index[k] = len(self.nodes)
                self.keys.append(k)
                self.names.append(names)
                edges[step] = (len(self.nodes), empty)
                self.nodes.append(Node(node, step, n.depth + 1, sleep_key))
                concrete[len(self.nodes) - 1] = child
                if len(found.levels) <= n.depth + 1:
                    found.levels.append(0)
                found.levels[n.depth + 1] += 1
                frontier.append((len(self.nodes) - 1, None))
            if found.cut:
                break
        if found.progress:
            self.progress_all(found)
        found.states = len(self.index)
        found.seconds = round(time.perf_counter() - started, 3)
        return found

    @staticmethod
    def local(step: Step, names: Mapping[str, str]) -> Step:
        """`step` with its worker renamed by `names` (the reaper keeps its name)."""
        return step if step.actor == REAPER else Step(names[step.actor], step.action)

    def revisit(self, node: int, sleep: frozenset, frontier: deque) -> None:
        """A state reached again: with a sleep set smaller than the one it kept, the steps it skipped are
        tried after all (now, if it was already expanded; else when it is)."""
        n = self.nodes[node]
        missing = n.sleep - sleep
        if not missing:
            return
        n.sleep = n.sleep & sleep
        if n.expanded:
            frontier.append((node, missing))

    # -- progress ------------------------------------------------------------------------------------------------
    def fair_step(self, c: Concrete, claimed_nothing: bool) -> Step:
        """The fair schedule's next step from `c`: an awake holder writes its effect (or completes), else an
        awake idle worker claims while a job is pending (not twice in a row for nothing), else the beat."""
        for h in c.hands:
            if self.world.awake(h) and h.job is not None:
                return Step(h.name, "complete" if h.written else "effect")
        pending = c.stored.entries.get(self.world.q.pending)
        if pending is not None and pending.value and not claimed_nothing:
            for h in c.hands:
                if self.world.awake(h) and h.job is None:
                    return Step(h.name, "claim")
        return Step(REAPER, BEAT)

    def fair_walk(self, node: int | None, c: Concrete, limit: int) -> tuple[int | None, list[Step]]:
        """Follow the fair schedule from `c` (the state of `node`, if it is one the search reached) until every
        job is settled, or a state whose schedule is known: the steps it takes in all (None: more than `limit`,
        or through a broken step), and the steps walked. It goes along the edges the search already tried, and
        steps on the store only where the search did not go (past its depth, or a step a sleep set skipped)."""
        walked: list[tuple[tuple, Step]] = []
        empty, total = False, None
        key = self.keys[node] if node is not None else self.key(c)[0]
        for _ in range(limit + 1):
            if (key, empty) in self.settle:
                total = self.settle[(key, empty)]
                break
            if self.world.settled(c.stored):
                total = 0
                break
            step = self.fair_step(c, empty)
            walked.append(((key, empty), step))
            edge = self.succ.get(node, {}).get(step) if node is not None else None
            if edge is not None:
                child, empty = edge
                if child is None:  # a broken step: the safety violation is the verdict's, not progress's
                    return BROKEN, [s for _, s in walked]
                node, c, key = child, self.concrete[child], self.keys[child]
                continue
            c, outcome = self.do(node if node is not None else 0, c, step)
            empty = step.action == "claim" and not outcome.claimed
            key = self.key(c)[0]
            node = self.index.get(key)
            if node is not None:  # a state the search reached: go on from its own copy (its edges are its)
                c = self.concrete[node]
        if total is None:
            return None, [s for _, s in walked]
        for i, (k, _) in enumerate(reversed(walked)):
            self.settle[k] = total + i + 1
        return total + len(walked), [s for _, s in walked]

    def progress_all(self, found: Found) -> None:
        """Bounded progress from every state reached, the shallowest first: a state from which the fair
        schedule does not settle every job within `progress_steps` steps is a violation (the first kept)."""
        limit = self.p.progress_steps
        for node in sorted(range(len(self.nodes)), key=lambda i: self.nodes[i].depth):
            depth = self.nodes[node].depth
            if found.first_depth is not None and depth >= found.first_depth:
                break  # a violation no deeper is kept: progress has nothing shorter to add
            total, walked = self.fair_walk(node, self.concrete[node], limit)
            found.progress_checked += 1
            if total == BROKEN or (total is not None and total <= limit):
                continue
            here = self.concrete[node]
            snap = inv.from_contents(self.world.q, self.world.ids, here.stored.entries)
            jobs = ", ".join(j for j, row in snap.jobs.items() if row.places not in (("done",), ("dead",)))
            what = f"the fair schedule took {len(walked)} steps from here and left {jobs} unsettled"
            found.violations += 1
            found.first, found.first_depth = (node, None, inv.Broken(PROGRESS, jobs, what)), depth
            found.tried = [s.to_dict() for s in walked]
            break


def search(backend: Backend, prefix: str, p: Params, method: str = "restore") -> dict[str, Any]:
    """Search the world `p` on `backend` (fakeredis, virtual clock); the counts, the first violation's
    schedule (`path`) and, for progress, the fair schedule tried from its state (`tried`)."""
    s = Search(backend, prefix, p, method)
    f = s.run()
    path = None
    if f.first is not None:
        node, step, broken = f.first
        path = s.path_to(node) + ([step] if step is not None else [])
    broken = f.first[2] if f.first else None
    return {"states": f.states, "transitions": f.transitions, "depth_reached": len(f.levels) - 1,
            "complete": not f.cut, "violations": f.violations, "invariant": broken.invariant if broken else None,
            "broken": broken.what if broken else None, "levels": f.levels, "seconds": f.seconds,
            "tried": f.tried, "progress_checked": f.progress_checked if f.progress else 0, "path": path}


# -- the state space, walkable ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Space:
    """A search's states, for a figure to draw and a reader to walk: each state (`id`, `parent`, the `step`
    from it, `depth`, `state`: the store's keys and each worker's belief, times in model seconds; `next`: the
    steps tried from it and where each led, None for a broken step), the counterexample's states in order
    (`path`; its last a broken state when it broke on a step), and the search's own verdict."""

    states: list
    path: list
    timeline: Timeline


def _graph(s: "Search", found: Found) -> tuple[list, list]:
    out = []
    for i, n in enumerate(s.nodes):
        edges = [{"step": st.to_dict(), "to": to} for st, (to, _) in s.succ.get(i, {}).items()]
        out.append({"id": i, "parent": n.parent, "step": n.step.to_dict() if n.step else None, "depth": n.depth,
                    "state": s.world.describe(s.concrete[i].stored, s.concrete[i].hands, s.concrete[i].now_ms), "next": edges,
                    "broken": None})
    path: list = []
    if found.first is not None:
        node, step, broken = found.first
        at = node
        while at is not None:
            path.append(at)
            at = s.nodes[at].parent
        path.reverse()
        if step is not None and s.first_child is not None:
            c = s.first_child
            out.append({"id": len(out), "parent": node, "step": step.to_dict(), "depth": s.nodes[node].depth + 1,
                        "state": s.world.describe(c.stored, c.hands, c.now_ms), "next": [],
                        "broken": {"invariant": broken.invariant, "what": broken.what}})
            for e in out[node]["next"]:
                if e["step"] == step.to_dict():
                    e["to"] = len(out) - 1
            path.append(len(out) - 1)
        else:
            out[node]["broken"] = {"invariant": broken.invariant, "what": broken.what}
    return out, path


def state_space(workers: int = 2, jobs: int = 1, depth: int = 8, fencing: str = "on", **world: Any) -> Space:
    """Search a small world (as `explore` does, same arguments) and keep every state it reached, to draw and
    walk: the lesson's state-space figure. Keep it small: every state is kept with its keys."""
    params = explore_params(workers=workers, jobs=jobs, depth=depth, fencing=fencing, **world)
    with connect("fake", scripts=dict(params.scripts)) as backend:
        with run_on(backend, "explore", params, cost=params.cost()) as run:
            s = Search(backend, run.prefix, params)
            f = s.run()
            states, path = _graph(s, f)
            broken = f.first[2] if f.first else None
            cex = [states[i]["step"] for i in path[1:]] or None
            v = ExploreVerdict(states=len(s.index), transitions=f.transitions, depth_reached=len(f.levels) - 1,
                               complete=not f.cut, violations=f.violations, counterexample=cex,
                               invariant=broken.invariant if broken else None, broken=broken.what if broken else None,
                               tried=f.tried, progress_checked=f.progress_checked if f.progress else 0,
                               levels=f.levels, seconds=f.seconds)
            run.timeline.verdict = v.worded(words(params, v))
    return Space(states, path, run.timeline)


# -- the run -------------------------------------------------------------------------------------------------
def _read_scripts(scripts: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """{name: a path to a .lua file, or Lua text} as (name, text) pairs, each name a registered script."""
    out = {}
    for name, given in (scripts or {}).items():
        if name not in SCRIPTS:
            raise BadParameter(f"no script named {name!r} to replace; known: {', '.join(sorted(SCRIPTS))}")
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


def _flag(what: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise BadParameter(f"{what} must be True or False, got {value!r}")
    return value


def check_names(names: Any) -> tuple[str, ...]:
    """`names` (None: every invariant and progress) as a tuple of what an exploration checks, else
    BadParameter naming what is allowed."""
    if names is None:
        return CHECKS
    names = (names,) if isinstance(names, str) else tuple(names)
    unknown = [n for n in names if n not in CHECKS]
    if unknown or not names:
        raise BadParameter(f"unknown invariant {', '.join(map(repr, unknown)) or '(none named)'}; "
                           f"known: {', '.join(CHECKS)}")
    return names


def explore_params(workers: int = 2, jobs: int = 1, depth: int = 12, states: int = DEFAULT_STATES, lease: float = 30,
                   beat: float = 20, design: str = NONE, fencing: str = "on", scripts: Mapping[str, Any] | None = None,
                   invariants: Any = None, scale: float = DEFAULT_SCALE, exact: bool = False, symmetry: bool = True,
                   sleep: bool = True, max_runtime: float = 0, reap_limit: int = REAP_LIMIT) -> Params:
    """The world's parameters, each checked once against its range (BadParameter names what is allowed)."""
    return Params(workers=ranges.within("explore_workers", workers), jobs=ranges.within("explore_jobs", jobs),
                  depth=ranges.within("depth", depth), states=ranges.within("states", states),
                  lease=float(ranges.within("lease", lease)), beat=float(ranges.within("beat", beat)),
                  design=lookup_design(design).name, fencing=_choice("fencing", fencing, ("on", "off")),
                  scripts=_read_scripts(scripts), invariants=check_names(invariants),
                  exact=_flag("exact", exact), symmetry=_flag("symmetry", symmetry), sleep=_flag("sleep", sleep),
                  max_runtime=float(ranges.within("max_runtime", max_runtime)) if max_runtime else 0.0,
                  reap_limit=ranges.within("reap_limit", reap_limit),
                  scale=store_spec("valkey", scale=scale).scale)  # a replay's: checked where every scale is


def explore(workers: int = 2, jobs: int = 1, depth: int = 12, states: int = DEFAULT_STATES, lease: float = 30,
            beat: float = 20, design: str = NONE, fencing: str = "on", scripts: Mapping[str, Any] | None = None,
            invariants: Any = None, method: str = "restore", scale: float = DEFAULT_SCALE, exact: bool = False,
            symmetry: bool = True, sleep: bool = True, max_runtime: float = 0, reap_limit: int = REAP_LIMIT) -> Timeline:
    """Explore every schedule of up to `depth` steps of the world (`emqlab.scenarios.explore.world`) on
    fakeredis, on the virtual clock, breadth-first, until `states` distinct states; return a Timeline whose
    verdict holds the counts and the shortest counterexample, and whose events are that counterexample
    played once more, recorded (a `snapshot` event after each step).

    scripts: {script name: a path to a .lua file, or Lua text}, run instead of the package's script of
    that name (a model of another system's script, a deliberately broken copy); states are then compared
    exactly. invariants: the names checked (default: every one of `emqlab.queue.invariants`, and progress).
    method: restore (write the parent's keys back before each step) or rerun (replay the parent's schedule
    from an empty store; progress is then not checked). exact: compare states exactly even on the
    package's scripts. symmetry, sleep: the two reductions (`search`'s doc). max_runtime: a hard deadline this
    many model seconds after each claim (a hung job's limit; 0: none). reap_limit: the most jobs one reap call
    takes back (1 makes the reaper's slices bind in a small world). scale: the real clock's scale
    a `replay` of this run starts from (it slows down further for its margins)."""
    params = explore_params(workers, jobs, depth, states, lease, beat, design, fencing, scripts, invariants, scale,
                            exact, symmetry, sleep, max_runtime, reap_limit)
    _choice("method", method, ("restore", "rerun"))
    with connect("fake", scripts=dict(params.scripts)) as backend:
        with run_on(backend, "explore", params, cost=params.cost()) as run:
            found = search(backend, run.prefix, params, method)
            steps = found.pop("path")
            played = play(backend, run.prefix, params, steps, run) if steps is not None else None
            if played is not None and found["invariant"] != PROGRESS and (
                    played.invariant != found["invariant"] or played.broke_at != len(steps)):
                raise StoreError(f"the counterexample did not break {found['invariant']} when played again on "
                                 f"fakeredis (it broke {played.invariant} at step {played.broke_at}): the search "
                                 "is not deterministic, which it must be")
            cex = None if steps is None else [{**s.to_dict(), **played.said[k]} for k, s in enumerate(steps)]
            v = ExploreVerdict(counterexample=cex, margin=played.margin if played else None, **found)
            run.timeline.verdict = v.worded(words(params, v))
    return run.timeline


def growth(depth: int = 8, workers: Sequence[int] = (2, 3), **world: Any) -> dict[str, Timeline]:
    """The same world searched to `depth` with each number of `workers` (fencing on, design none unless
    `world` says otherwise): what the lesson's depth slider runs, {"2 workers": …, "3 workers": …}."""
    return {f"{w} workers": explore(workers=w, depth=depth, **world) for w in workers}
