"""A schedule played again, step by step: on the search's own fakeredis (to record the counterexample it
found) or on a live server in real time (`replay`), judging the store after every step by the same
invariants, and saying whether the same one broke at the same, last step."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core.errors import BadParameter
from ...core.timeline import Timeline
from ...queue import invariants as inv
from ...store import snapshot as store_snapshot
from ...store.backend import Backend, connect, store_spec
from ..run_harness import run_on
from .in_words import replay_words
from .verdicts import ExploreVerdict, ReplayVerdict
from .world import BEAT, PROGRESS, REAL_MARGIN_S, REAPER, Params, Seen, Step, World

ANSWER_KEYS = ("kind", "job", "attempts", "held", "applied", "jobs")  # what a step's answer is compared on


@dataclass
class Played:
    broke_at: int | None = None
    invariant: str | None = None
    broken: str | None = None
    said: list = field(default_factory=list)  # per step: what the store answered, as recorded
    margin: float | None = None  # the least distance of a beat from a deadline (model s), None: no deadline met


def play(backend: Backend, prefix: str, p: Params, steps: Sequence[Step], run: Any) -> Played:
    """Play `steps` from an empty queue on `backend`, recording each step and the store after it to `run`;
    check the invariants after every step (the first break is kept)."""
    world = World(backend, prefix, p, run)
    if not backend.clock.real:  # the search's own store: empty it, and start its clock again at 0
        backend.clock.rewind(0)
        store_snapshot.write(backend.client, {}, backend.keys(world.q.base))
        run.t0_ms = 0
    types: dict[str, str] = {}
    hands = world.start()
    stored = world.read(types)
    world.record_snapshot(stored, 0)
    seen, out = Seen(), Played()
    checked = tuple(n for n in p.invariants if n != PROGRESS)
    opened = inv.judge(world.facts(stored, hands, seen, world.opened, backend.clock.now_ms), checked)
    if opened:  # the start broke already (a session opened short of what it asked)
        out.broke_at, out.invariant, out.broken = 0, opened[0].invariant, opened[0].what
    for k, step in enumerate(steps, start=1):
        if step.actor != REAPER and step.actor not in world.names:
            raise BadParameter(f"step {k} names {step.actor!r}, who is not in this world ({', '.join(world.names)})")
        if step not in world.enabled(hands):
            raise BadParameter(f"step {k} ({step.actor} {step.action}) is not enabled in the state the steps before "
                               "it reached")
        mark = len(run.timeline.events)
        hands, outcome = world.step(hands, step, stored)
        if step.action == BEAT and world.last_margin is not None:
            out.margin = world.last_margin if out.margin is None else min(out.margin, world.last_margin)
        stored = world.read(types)
        for e in run.timeline.events[mark:]:
            e.data["step"] = k
        said = [e for e in run.timeline.events[mark:]]
        out.said.append({"t": said[0].t if said else run.t,
                         "answer": [{"kind": e.kind, **{x: y for x, y in e.data.items() if x != "step"}} for e in said]})
        broken = inv.judge(world.facts(stored, hands, seen, outcome, backend.clock.now_ms), checked)
        world.record_snapshot(stored, k)
        seen = seen.after(outcome)
        if broken and out.broke_at is None:
            out.broke_at, out.invariant, out.broken = k, broken[0].invariant, broken[0].what
    return out


def schedule_span(p: Params, counterexample: Sequence[Mapping[str, Any]]) -> float:
    """The model seconds a recorded schedule moves the clock: its last step's time (`t`, as the search recorded
    it), and a beat more."""
    return max((float(a.get("t", 0.0)) for a in counterexample), default=0.0) + p.beat


def replay_scale(margin_s: float | None, scale: float) -> float:
    """The real clock's scale for a replay: at least `scale`, and slow enough that every race with the
    server's clock (a beat `margin_s` model seconds from the nearest deadline) is decided by REAL_MARGIN_S
    of real time or more."""
    if margin_s is None:
        return scale
    if margin_s <= 0:
        raise BadParameter("this schedule has a reap exactly at a deadline, which a live server decides by chance: "
                           "there is no scale at which its replay is decided")
    return max(scale, REAL_MARGIN_S / margin_s)  # the replay's store specification checks it against its range


def replay(source: Timeline, backend: Any = "valkey", scale: float | None = None) -> Timeline:
    """Play an exploration's counterexample step by step on `backend` (default: an embedded Valkey, on the
    real clock at `replay_scale`: a beat sleeps to its time, scaled), through the same Queue calls, recording
    it as a Timeline (a lane per worker, each step's answer, the store after each step with every active
    job's lease left from its ZSCORE). Its verdict says whether the same invariant broke at the same, last
    step, and if not, the first step the store answered otherwise. A progress counterexample (a state from
    which the fair schedule settles nothing) is not a break to replay: it is refused."""
    v, p = source.verdict, source.params
    if not isinstance(v, ExploreVerdict) or not isinstance(p, Params):
        raise BadParameter("replay takes the Timeline an exploration returned (emqlab.scenarios.explore.explore)")
    if v.invariant is None:
        raise BadParameter("this exploration found no counterexample: there is no schedule to replay")
    if v.invariant == PROGRESS:
        raise BadParameter("this exploration's counterexample is a state the fair schedule never settles, not a step "
                           "that breaks an invariant: there is no break to replay")
    steps = [Step.from_dict(s) for s in v.counterexample]
    if isinstance(backend, Backend):
        raise BadParameter("replay opens its own store (it may run other scripts than the package's): pass "
                           "'valkey', 'fake' or a URL")
    spec = store_spec(backend, scale=p.scale if scale is None else scale)
    if spec.source != "fake":
        spec = store_spec(spec, clock="real", scale=replay_scale(v.margin, spec.scale))
    with connect(spec, scripts=dict(p.scripts)) as be:
        cost = (schedule_span(p, v.counterexample), 10 * len(steps) + 20)
        with run_on(be, "explore-replay", p, cost=cost) as run:
            played = play(be, run.prefix, p, steps, run)
            expected = [s["answer"] for s in v.counterexample]
            why = None
            same = played.invariant == v.invariant and played.broke_at == len(steps)
            if not same:
                why = first_difference(steps, expected, played.said)
            rv = ReplayVerdict(steps=len(steps), expected=v.invariant, broke_at=played.broke_at,
                               invariant=played.invariant, broken=played.broken, same=same, why=why,
                               scale=spec.scale if spec.source != "fake" else None, store=be.name)
            run.timeline.verdict = rv.worded(replay_words(p, rv))
    return run.timeline


def first_difference(steps: Sequence[Step], expected: Sequence[list], got: Sequence[dict]) -> str:
    def gist(answer: list) -> list:
        return [{k: a.get(k) for k in ANSWER_KEYS if k in a} for a in answer]

    for k, (step, want) in enumerate(zip(steps, expected), start=1):
        have = got[k - 1]["answer"] if k - 1 < len(got) else []
        if gist(want) != gist(have):
            return (f"step {k} ({step.actor} {step.action}): the search's store answered {answer_words(want)}, "
                    f"this one {answer_words(have)}")
    return "every step was answered as in the search, yet the invariants judged the store otherwise"


def answer_words(answer: list) -> str:
    return "; ".join(" ".join([a["kind"], *(f"{k}={a[k]}" for k in ANSWER_KEYS[1:] if k in a)]) for a in answer) or "nothing"
