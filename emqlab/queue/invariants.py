"""The queue's invariants, stated once: what must hold of the store in every order of every step.

Five of them, each one function over `Facts` (what is known at one point of a run):

- `one_place`: no job is in two of pending, active, schedule, done and dead at once, and a job in
  one of them has that place's state in its row (a row gone is allowed only in done: EchoMQ retires
  a finished job's row);
- `never_lost`: every job is in one of them (a job in none is lost: nothing will ever run it);
- `attempts_grow`: a job's attempts (its fencing token) never goes down, and no claim hands out a
  value already handed out (a fencing value issued twice fences nothing);
- `one_effect`: each job's effect is accepted at most once (the fence exists to keep this; with
  fencing off it is the double effect a lesson shows);
- `no_resurrection`: once the store refused a holder (job, attempts), the job never stands in active
  under those attempts again, and no later operation by that holder is accepted.

`Facts` come from two places, so the same functions judge both:

- the store (`read`: one pipeline per job; `from_contents`: a snapshot of every key, as
  `emqlab.store.snapshot` reads it), plus what the run has seen that the store no longer shows: the
  highest attempts handed out per job, the holders refused, the holders accepted at this step;
- a history (`check_history`): the events of any Timeline JSON, by the rules in README ("A history
  any system can write"). A history that carries `snapshot` events is checked on those too.

Each violation is a `Broken`: the invariant, the job, a plain sentence, and (in a history) the index
of the first event of its evidence, so a checker can show the smallest window of events that shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.words import times
from .jobs import PLACES, STATE_OF_PLACE

SETTLED = "done"  # the one place a job's row may be gone from (retired, as EchoMQ does)
THE_JOB = "the job"  # the job of a history whose events name none (a bare lease's one job)


@dataclass(frozen=True)
class Row:
    """One job as the store holds it: which places hold its id, its row's state and attempts (both
    None when the row is gone)."""

    places: tuple[str, ...]
    state: str | None
    attempts: int | None


@dataclass(frozen=True)
class Snapshot:
    """Every job's `Row`, and the results store: how many times each job's effect was applied."""

    jobs: Mapping[str, Row]
    effects: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The `snapshot` event's fields (README's history format)."""
        return {"jobs": {j: {"places": list(r.places), "state": r.state, "attempts": r.attempts}
                         for j, r in self.jobs.items()}, "effects": dict(self.effects)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Snapshot":
        jobs = {str(j): Row(tuple(r.get("places", ())), r.get("state"),
                            None if r.get("attempts") is None else int(r["attempts"]))
                for j, r in data.get("jobs", {}).items()}
        return cls(jobs, {str(j): int(n) for j, n in data.get("effects", {}).items()})


@dataclass(frozen=True)
class Facts:
    """What is known at one point of a run. `snapshot`: the store, if it was read here. `effects`:
    accepted effects so far per effect (a job, or a (job, part) when the work writes in parts).
    `issued`: the highest fencing value handed out per job *before* this point; `claimed`: the
    (job, attempts) handed out here. `refused`: every (job, attempts) the store has refused;
    `accepted`: the (job, attempts) whose operation the store accepted here. `origin`: for a history,
    the index of the event each piece of evidence came from (keys: ("effect", key), ("issued", job),
    ("refused", job, attempts))."""

    snapshot: Snapshot | None = None
    effects: Mapping[Any, int] = field(default_factory=dict)
    issued: Mapping[str, int] = field(default_factory=dict)
    claimed: tuple[tuple[str, int], ...] = ()
    refused: frozenset[tuple[str, int]] = frozenset()
    accepted: tuple[tuple[str, int], ...] = ()
    origin: Mapping[Any, int] = field(default_factory=dict)
    effect_by: Mapping[Any, tuple[str, ...]] = field(default_factory=dict)  # who applied each effect, in order
    finished: bool = False  # a history whose effects are its job's finishes (a bare lease): "ran twice"


@dataclass(frozen=True)
class Broken:
    """One violation: which invariant, of which job, in a plain sentence; `since`: the index of the first
    event of its evidence in a history (None: the point itself is all the evidence)."""

    invariant: str
    job: str
    what: str
    since: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "job": self.job, "what": self.what}


def _effect_job(key: Any) -> str:
    return key[0] if isinstance(key, tuple) else key


def _effect_name(key: Any) -> str:
    if isinstance(key, tuple) and key[1] is not None:
        return f"job {key[0]}'s effect (part {key[1]})"
    job = _effect_job(key)
    return "the job's effect" if job == THE_JOB else f"job {job}'s effect"


# -- the invariants: one function each ---------------------------------------------------------------
def one_place(f: Facts) -> list[Broken]:
    """No job in two places at once; a job in one place has that place's state (a gone row: done only)."""
    out = []
    for job, row in (f.snapshot.jobs.items() if f.snapshot else ()):
        if len(row.places) > 1:
            out.append(Broken("one_place", job, f"job {job} is in {' and '.join(row.places)} at once"))
        elif len(row.places) == 1:
            place = row.places[0]
            if row.state is None and place != SETTLED:
                out.append(Broken("one_place", job, f"job {job} is in {place} but its row is gone"))
            elif row.state is not None and row.state != STATE_OF_PLACE[place]:
                out.append(Broken("one_place", job, f"job {job} is in {place} but its state says {row.state}"))
    return out


def never_lost(f: Facts) -> list[Broken]:
    """Every job is in one of the places: a job in none is lost."""
    return [Broken("never_lost", job, f"job {job} is in none of {', '.join(PLACES)}: it is lost")
            for job, row in (f.snapshot.jobs.items() if f.snapshot else ()) if not row.places]


def attempts_grow(f: Facts) -> list[Broken]:
    """No claim hands out a fencing value already handed out, and no row's attempts falls below one."""
    out = []
    for job, attempts in f.claimed:
        before = f.issued.get(job, 0)
        if attempts <= before:
            again = "issued twice" if attempts == before else f"below the {before} already issued"
            out.append(Broken("attempts_grow", job, f"a claim handed out attempts {attempts} for job {job}: "
                                                    f"a fencing value {again}", f.origin.get(("issued", job))))
    for job, row in (f.snapshot.jobs.items() if f.snapshot else ()):
        before = f.issued.get(job, 0)
        if row.attempts is not None and row.attempts < before:
            out.append(Broken("attempts_grow", job, f"job {job}'s attempts went down from {before} to {row.attempts}",
                              f.origin.get(("issued", job))))
    return out


def one_effect(f: Facts) -> list[Broken]:
    """Each job's effect accepted at most once."""
    counts = dict(f.effects)
    if f.snapshot is not None:
        for job, n in f.snapshot.effects.items():
            counts[job] = max(n, counts.get(job, 0))
    out = []
    for key, n in counts.items():
        if n > 1:
            by = f.effect_by.get(key, ())
            whom = f" (by {', then '.join(by)})" if len(by) > 1 else ""
            what = (f"the job ran to its end {times(n)}{whom}: a double run" if f.finished
                    else f"{_effect_name(key)} was applied {times(n)}{whom}")
            out.append(Broken("one_effect", _effect_job(key), what, f.origin.get(("effect", key))))
    return out


def no_resurrection(f: Facts) -> list[Broken]:
    """A holder the store refused is never the job's active holder again."""
    out = []
    for job, row in (f.snapshot.jobs.items() if f.snapshot else ()):
        if "active" in row.places and row.state == "active" and (job, row.attempts) in f.refused:
            out.append(Broken("no_resurrection", job, f"job {job} is active again under attempts {row.attempts}, "
                                                      "which the store had refused", f.origin.get(("refused", job, row.attempts))))
    for job, attempts in f.accepted:
        if (job, attempts) in f.refused:
            out.append(Broken("no_resurrection", job, f"the store accepted job {job}'s holder of attempts {attempts} "
                                                      "after it had refused it", f.origin.get(("refused", job, attempts))))
    return out


@dataclass(frozen=True)
class Invariant:
    """An invariant's name, its rule in words, and its function."""

    name: str
    rule: str
    check: Callable[[Facts], list[Broken]]


INVARIANTS: dict[str, Invariant] = {i.name: i for i in (
    Invariant("one_place", "each job in at most one of pending, active, schedule, done and dead, its state "
              "field matching", one_place),
    Invariant("never_lost", "each job in one of pending, active, schedule, done and dead: never lost", never_lost),
    Invariant("attempts_grow", "attempts never go down, and no fencing value is handed out twice", attempts_grow),
    Invariant("one_effect", "each job's effect accepted at most once", one_effect),
    Invariant("no_resurrection", "a holder the store refused never holds the job again", no_resurrection),
)}


def check(facts: Facts, names: Iterable[str] | None = None) -> list[Broken]:
    """Every violation of the invariants `names` (default: all) at this point, in the table's order."""
    chosen = set(INVARIANTS) if names is None else set(names)
    return [b for name, inv in INVARIANTS.items() if name in chosen for b in inv.check(facts)]


def check_names(names: Any) -> tuple[str, ...]:
    """`names` (None: all) as a tuple of known invariant names, else a ValueError naming them."""
    if names is None:
        return tuple(INVARIANTS)
    if isinstance(names, str):
        names = (names,)
    names = tuple(names)
    unknown = [n for n in names if n not in INVARIANTS]
    if unknown or not names:
        raise ValueError(f"unknown invariant {', '.join(map(repr, unknown)) or '(none named)'}; "
                         f"known: {', '.join(INVARIANTS)}")
    return names


# -- the store, read -----------------------------------------------------------------------------
def read(queue: Any, ids: Sequence[str]) -> Snapshot:
    """The jobs `ids` of `queue` (an `emqlab.queue.Queue`) and its results store, in one pipeline."""
    pipe = queue.backend.client.pipeline(transaction=False)
    for job in ids:
        pipe.hmget(queue.job_key(job), "state", "attempts")
        pipe.zscore(queue.pending, job)
        pipe.zscore(queue.active, job)
        pipe.zscore(queue.schedule, job)
        pipe.sismember(queue.done, job)
        pipe.zscore(queue.dead, job)
    pipe.hgetall(queue.effects)
    got = pipe.execute()
    jobs = {}
    for i, job in enumerate(ids):
        (state, attempts), *where = got[6 * i: 6 * i + 6]
        # a reaped job sits in pending at score 0: a score's presence, not its truth
        found = [where[0] is not None, where[1] is not None, where[2] is not None, bool(where[3]), where[4] is not None]
        jobs[job] = Row(tuple(p for p, there in zip(PLACES, found) if there), state,
                        None if attempts is None else int(attempts))
    return Snapshot(jobs, {k: int(v) for k, v in got[-1].items()})


def from_contents(queue: Any, ids: Sequence[str], contents: Mapping[str, Any]) -> Snapshot:
    """The same Snapshot from every key of the queue as `emqlab.store.snapshot.read` returns them; ids
    found in a place but not in `ids` are jobs too (a script may have made one up)."""
    def members(key: str) -> set[str]:
        entry = contents.get(key)
        if entry is None:
            return set()
        return {m for m, _ in entry.value} if entry.type == "zset" else set(entry.value)

    held = {place: members(key) for place, key in zip(PLACES, (queue.pending, queue.active, queue.schedule,
                                                               queue.done, queue.dead))}
    everyone = list(ids) + sorted(set().union(*held.values()) - set(ids))
    jobs = {}
    for job in everyone:
        entry = contents.get(queue.job_key(job))
        row = dict(entry.value) if entry is not None and entry.type == "hash" else {}
        attempts = row.get("attempts")
        jobs[job] = Row(tuple(p for p in PLACES if job in held[p]), row.get("state") if row else None,
                        int(attempts) if attempts is not None else (0 if row else None))
    effects = contents.get(queue.effects)
    return Snapshot(jobs, {k: int(v) for k, v in (effects.value if effects is not None else ())})


# -- a history, read -------------------------------------------------------------------------------
REFUSALS = ("complete_refused", "effect_refused", "claim_refused")  # a holder's operation the store turned away
ACCEPTED = ("complete", "effect")  # a holder's operation the store took
STORE_ACTORS = ("store", "storage")  # the store's own events (what it answered each writer)


def _value(data: Mapping[str, Any]) -> int | None:
    """An event's fencing value: `attempts`, or a numeric `token`."""
    for key in ("attempts", "token"):
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def history_facts(events: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, Facts]]:
    """Each event of a history (dicts with t, actor, kind and the event's fields) and the Facts known
    right after it, by README's rules: which events hand out a fencing value, which the store accepted
    or refused, which apply an effect, which carry a snapshot."""
    store_writes = any(e.get("actor") in STORE_ACTORS and e.get("kind") == "write" for e in events)
    effect_events = any(e.get("kind") == "effect" for e in events)
    # a history with no claim, write or effect of any kind is a bare lease's: its effect is its job finishing
    finishes = not store_writes and not effect_events and not any(
        e.get("kind") in ("claim", "complete", "token", "write") for e in events)
    issued: dict[str, int] = {}
    refused: set[tuple[str, int]] = set()
    effects: dict[Any, int] = {}
    effect_by: dict[Any, tuple[str, ...]] = {}
    origin: dict[Any, int] = {}

    def applied(key: Any, who: str, i: int, count: int | None = None) -> None:
        effects[key] = max(effects.get(key, 0) + 1, count or 0)
        effect_by[key] = (*effect_by.get(key, ()), who)
        origin.setdefault(("effect", key), i)

    for i, e in enumerate(events):
        kind, actor = e.get("kind"), str(e.get("actor", ""))
        job = str(e.get("job", THE_JOB))
        value = _value(e)
        claimed: tuple[tuple[str, int], ...] = ()
        accepted: list[tuple[str, int]] = []
        snapshot = None
        if kind in ("claim", "token") and value is not None:
            claimed = ((job, value),)
        elif kind == "snapshot":
            snapshot = Snapshot.from_dict(e)
        elif actor in STORE_ACTORS and kind in ("write", "completion"):
            writer = str(e.get("writer", actor))
            if e.get("accepted"):
                if value is not None:
                    accepted.append((job, value))
                if kind == "write":
                    applied((job, e.get("part")), writer, i, e.get("applied"))
            elif value is not None:
                refused.add((job, value))
                origin.setdefault(("refused", job, value), i)
        elif actor not in STORE_ACTORS:
            if kind in REFUSALS or (kind in ("late_extend", "extend") and e.get("held") is False):
                if value is not None:
                    refused.add((job, value))
                    origin.setdefault(("refused", job, value), i)
            elif kind in ACCEPTED or (kind in ("late_extend", "extend") and e.get("held") is True):
                if value is not None and not store_writes:
                    accepted.append((job, value))
                if kind == "effect" and not store_writes:
                    applied((job, e.get("part")), actor, i, e.get("applied"))
            elif kind == "work_done" and finishes:
                applied((job, None), actor, i)
        yield i, Facts(snapshot=snapshot, effects=dict(effects), issued=dict(issued), claimed=claimed,
                       refused=frozenset(refused), accepted=tuple(accepted), origin=dict(origin),
                       effect_by=dict(effect_by), finished=finishes)
        for j, a in claimed:
            if a > issued.get(j, 0):
                issued[j] = a
                origin[("issued", j)] = i
            else:
                origin.setdefault(("issued", j), i)
        if snapshot is not None:
            for j, row in snapshot.jobs.items():
                if row.attempts is not None and row.attempts > issued.get(j, 0):
                    issued[j] = row.attempts
                    origin[("issued", j)] = i


@dataclass(frozen=True)
class Found:
    """A violation in a history: what broke, and the smallest window of events that shows it
    (indices `first`..`last`, both included)."""

    broken: Broken
    first: int
    last: int

    def to_dict(self) -> dict[str, Any]:
        return {**self.broken.to_dict(), "first": self.first, "last": self.last}


def check_history(events: Sequence[Mapping[str, Any]], names: Iterable[str] | None = None) -> list[Found]:
    """Every invariant `names` (default: all) over a history, each violation once (its first appearance),
    with the window from the first event of its evidence to the event that broke it."""
    found: dict[tuple[str, str, str], Found] = {}
    for i, facts in history_facts(events):
        for b in check(facts, names):
            # an effect applied twice, then three times, is one violation; others, one per distinct sentence
            key = (b.invariant, b.job, "" if b.invariant == "one_effect" else b.what)
            if key in found:
                continue
            first = i if b.since is None else min(b.since, i)
            if b.since is None and events[i].get("kind") == "snapshot" and i > 0:
                first = i - 1  # the step the store's snapshot followed
            found[key] = Found(b, first, i)
    return sorted(found.values(), key=lambda f: (f.last, f.first))
