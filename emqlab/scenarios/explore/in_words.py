"""The explorer's words: a search's verdict, a replay's, and a schedule step by step, every number read
from the verdict."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...core.kinds import Kind
from ...core.words import HEADLINE_WORDS, FigureWords, ModeWords, headline_words, plural, seconds
from ..run_harness import mode_words
from .canonical import differs
from .verdicts import ReplayVerdict
from .world import BEAT, PROGRESS, REAL_MARGIN_S, Params


def steps_text(v: Any) -> str:
    """The counterexample, one numbered line a step (what `emqlab explore` prints after the run's text); for a
    progress violation, then the fair schedule tried from the state it reaches."""
    lines = [f"{k:>3}. {step_words(s)}" for k, s in enumerate(v.counterexample or (), start=1)]
    if v.invariant == PROGRESS and v.tried:
        runs: list[list] = []  # the same step again and again, said once with its count
        for s in v.tried:
            if runs and runs[-1][0] == s:
                runs[-1][1] += 1
            else:
                runs.append([s, 1])
        tried = "; ".join(fair_words(s) + (f" ×{n}" if n > 1 else "") for s, n in runs)
        lines.append(f"from there, the fair schedule tried: {tried}")
    return "\n".join(lines)


def fair_words(step: Mapping[str, Any]) -> str:
    return "the reaper beats" if step["action"] == BEAT else f"{step['actor']} {step['action']}s"


def step_words(step: Mapping[str, Any]) -> str:
    """One step of a counterexample as a reader says it: who did what (and when, at a beat), and what the
    store answered."""
    actor, action = step["actor"], step["action"]
    answers = step.get("answer", [])
    a = answers[-1] if answers else {}
    if action == BEAT:
        reap = next((x for x in answers if x.get("kind") == Kind.REAP), {})
        jobs = reap.get("jobs") or []
        woke = [x for x in answers if x.get("kind") == Kind.THAW]
        at = f" at {seconds(step['t'])}" if "t" in step else ""
        beat = f"the reaper beats{at}: {'reaps ' + ', '.join(jobs) if jobs else 'nothing to reap'}"
        return beat + "".join(f"; a frozen worker wakes holding {x.get('job')}" for x in woke)
    if action == "claim":
        return (f"{actor} claims {a['job']} (attempts {a['attempts']}, lease to {seconds(a['deadline'])})"
                if a.get("kind") == Kind.CLAIM and "deadline" in a else
                f"{actor} claims {a['job']} (attempts {a['attempts']})" if a.get("kind") == Kind.CLAIM
                else f"{actor} claims nothing")
    if action == "extend":
        job = a.get("job")
        if job is None:
            return f"{actor} renews its session" + ("" if a.get("held", True) else ": gone")
        return f"{actor} extends {job}: {'held' if a.get('held') else 'lost'}"
    if action == "effect":
        refused = a.get("kind") == Kind.EFFECT_REFUSED
        return (f"{actor}'s effect on {a['job']} is refused" if refused else
                f"{actor} writes {a.get('job')}'s effect (attempts {a.get('attempts')}): applied ×{a.get('applied')}")
    if action == "complete":
        ok = a.get("kind") == Kind.COMPLETE
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


def time_points(p: Params) -> str:
    """Where the search stopped the clock, in words."""
    return (f"the clock stopped {seconds(p.near)} before and after each deadline and at each freeze's end, else a "
            f"beat ({seconds(p.beat)}) on; a time a script counts for itself is reached only by adding up these steps")


def words(p: Params, v: Any) -> ModeWords:
    """The exploration in words: a headline with the outcome, the world and the search as facts, and the
    static line; every number read from `v`."""
    world = (f"{plural(p.workers, 'worker')}, {plural(p.jobs, 'job')}, lease {seconds(p.lease)}, "
             f"a freeze {seconds(p.pause)}" + (f", a hard deadline {seconds(p.max_runtime)} after each claim"
                                                if p.max_runtime else ""))
    searched = (f"{v.states:,} states and {v.transitions:,} steps tried, to depth {v.depth_reached} "
                f"of {p.depth}, in {v.seconds:.1f} s")
    key = f"states compared {differs(p.abstract, p.symmetric)}"
    checked = [n for n in p.invariants if n != PROGRESS]
    progress = (f"progress: a fair schedule of up to {p.progress_steps} steps run from each of "
                f"{v.progress_checked:,} states" if PROGRESS in p.invariants else "progress: not checked")
    if v.invariant is not None:  # a progress failure at the start has a counterexample of no steps
        n = len(v.counterexample or ())
        if v.invariant == PROGRESS:
            where = f"after {plural(n, 'step')}" if n else "from the start"
            headline = f"{label(p)}: {where}, {v.broken}."
            static = f"progress breaks after {n} steps"
        elif n:
            headline = f"{label(p)}: the shortest break takes {plural(n, 'step')}: {v.broken}."
            static = f"{v.invariant} breaks in {n} steps · {v.violations:,} violations"
        else:  # the start itself broke (a session opened short of its lease)
            headline = f"{label(p)}: it breaks at the start, before any step: {v.broken}."
            static = f"{v.invariant} breaks at the start"
        if headline_words(headline) > HEADLINE_WORDS:
            headline = (f"{label(p)}: {v.invariant} breaks in {plural(n, 'step')} at the shortest." if n else
                        f"{label(p)}: {v.invariant} breaks at the start, before any step.")
        facts = (world, f"it breaks {v.invariant}: {v.broken}", searched, key, time_points(p))
    elif v.complete:
        headline = (f"{label(p)}: every schedule of up to {p.depth} steps keeps every invariant checked: "
                    f"{v.states:,} states, 0 violations.")
        facts = (world, searched, f"checked on every step: {', '.join(checked)}", progress, key, time_points(p),
                 "a bounded search of a small world, at the time points it tried: it proves nothing about longer "
                 "schedules, other worlds or other times")
        static = f"complete · {v.states:,} states · 0 violations"
    else:
        headline = (f"{label(p)}: no violation in the first {v.states:,} states, but the budget ended the search "
                    f"before depth {p.depth}.")
        facts = (world, searched, key, "an incomplete search proves nothing about the states it did not reach")
        static = f"incomplete · {v.states:,} states · 0 violations so far"
    return ModeWords(label(p), headline, static, facts)


def replay_words(p: Params, v: ReplayVerdict) -> ModeWords:
    """A replay in words: did the same invariant break at the same step, on which store."""
    where = f"live {v.store}" if v.store != "fake" else "fakeredis"
    name = f"replayed on {where}"
    if v.same:
        headline = f"{name}: the same {v.steps} steps broke {v.invariant} at step {v.broke_at}: {v.broken}."
        if headline_words(headline) > HEADLINE_WORDS:
            headline = f"{name}: the same {v.steps} steps broke {v.invariant} at step {v.broke_at}."
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

growth_words = mode_words(
    "How many distinct states the search met at each depth (bars), and in all (the line): each step "
    "multiplies the orders, and counting states with one canonical form once keeps the count in check.",
    "Point at a run to read its counts.")


# -- the state space, walkable -------------------------------------------------------------------------------
SPACE_CAPTION = ("Every state the search reached (a grey dot), a column per number of steps from the start; each step "
                 "tried a grey line to the state it leads to (curved back to a state met before); a step that breaks an "
                 "invariant ends in a vermillion square; the shortest counterexample is the orange dashed line.")
SPACE_PROMPT = "Point at a state to read its keys, what each worker believes, and where each step from it leads."
ACTED = {"claim": "claims", "extend": "extends", "effect": "writes its effect", "complete": "completes",
         "freeze": "freezes", "crash": "crashes"}
LEASED = {"active": "lease to", "sessions": "session to", "schedule": "due at"}  # a deadline-scored set's times


def _acted(step: dict) -> str:
    """A step as a sentence says it: "worker-1 claims", "the reaper beats"."""
    if step["actor"] == "reaper":
        return "the reaper beats"
    return f"{step['actor']} {ACTED.get(step['action'], step['action'])}"


def _leads(space: Any, here: int, edge: dict) -> str:
    """Where one step tried from state `here` leads, in words."""
    to = edge["to"]
    if to is None:
        return "an invariant breaks (the search stops there)"
    if to == here:
        return "this same state"
    return f"an invariant breaks: state {to}" if space.states[to].get("broken") else f"state {to}"


def _key_words(name: str, value: Any) -> str:
    """One key of a state as a reader reads it: times in model seconds from the start."""
    def at(v: Any) -> str:
        return v if isinstance(v, str) else seconds(v)

    if isinstance(value, dict) and name in LEASED:
        parts = (f"{m}: no deadline of its own" if v == "never" else f"{m}: {LEASED[name]} {at(v)}" for m, v in value.items())
        return f"{name} {{" + ", ".join(parts) + "}"
    if isinstance(value, dict):
        return f"{name} {{" + ", ".join(f"{f} {at(v) if f == 'hard' else v}" for f, v in value.items()) + "}"
    if isinstance(value, list):
        return f"{name} [" + ", ".join(map(str, value)) + "]"
    return f"{name} {value}"


def _worker_words(name: str, w: dict) -> str:
    """What one worker believes, in a state."""
    if not w.get("alive", True):
        if w.get("lease_to") is None:
            return f"{name} crashed"
        return f"{name} crashed (the store still owes it {w['job']}'s lease to {seconds(w['lease_to'])})"
    if w.get("job") is None:
        said = f"{name} holds nothing"
    else:
        said = f"{name} believes it holds {w['job']} (attempts {w['attempts']}), lease to {seconds(w.get('lease_to'))}"
        if w.get("effect_written"):
            said += ", its effect written"
    if w.get("frozen_until") is not None:
        said += f", frozen until {seconds(w['frozen_until'])}"
    if w.get("session"):
        said += f", its session {w['session']}"
    return said


def _jobs_words(keys: dict) -> str:
    """Where each job stands in a state: "J1 active, attempts 2"."""
    rows = [(k[len("job:"):], v) for k, v in keys.items() if k.startswith("job:") and isinstance(v, dict)]
    said = [f"{job} {row.get('state', '?')}, attempts {row.get('attempts', '?')}" for job, row in sorted(rows)]
    return "; ".join(said) or "no job"


def space_words(space: Any, mode: Callable[[int], str]) -> FigureWords:
    """The state-space figure's words (`state_space`): each state a mode (named by `mode`, the drawing's), its
    text the state's keys, what each worker believes and where each step tried from it leads; every time in
    model seconds from the start (`World.describe`), never a raw score."""
    modes = {}
    depth = space.timeline.params.depth
    for s in space.states:
        st, i = s["state"], s["id"]
        how = "the start" if s["step"] is None else _acted(s["step"])
        broken = s.get("broken")
        head = (f"State {i}, {plural(s['depth'], 'step')} in, first met at {seconds(st['t'])}: "
                + (f"{how}, and {broken['invariant']} breaks." if broken else f"{how}."))
        facts = []
        if broken:
            facts.append(f"{broken['invariant']}: {broken['what']}")
        facts.append("the store: " + "; ".join(_key_words(k, v) for k, v in st["keys"].items()))
        facts += [_worker_words(name, w) for name, w in st["workers"].items()]
        if s["next"]:
            facts.append("next: " + "; ".join(f"{_acted(e['step'])} → {_leads(space, i, e)}" for e in s["next"]))
        elif broken:
            facts.append("next: none tried: the search does not go on from a broken state")
        else:
            facts.append(f"next: none tried: the search stops at depth {depth}")
        static = f"{plural(s['depth'], 'step')} · {seconds(st['t'])} · " + (
            f"{broken['invariant']} breaks" if broken else _jobs_words(st["keys"]))
        modes[mode(i)] = ModeWords(f"state {i}", head, static, tuple(facts))
    v = space.timeline.verdict
    path = " → ".join(str(i) for i in space.path)
    notes = (v.headline, f"the shortest counterexample's states: {path}") if path else (v.headline,)
    return FigureWords(SPACE_CAPTION, SPACE_PROMPT, modes, notes)
