"""The queue's invariants, stated once: what must hold of the store in every order of every step.

Twelve of them, each one function over `Facts` (what is known at one point of a run):

- `one_place`: no job is in two of pending, active, schedule, done and dead at once, and a job in
  one of them has that place's state in its row (a row gone is allowed only in done: EchoMQ retires
  a finished job's row);
- `never_lost`: every job is in one of them (a job in none is lost: nothing will ever run it);
- `attempts_grow`: a job's attempts (its fencing token) never goes down, and no claim hands out a
  value already handed out (a fencing value issued twice fences nothing);
- `one_effect`: each job's effect is accepted at most once (the fence exists to keep this; with
  fencing off it is the double effect a lesson shows);
- `no_resurrection`: once the store refused a holder (job, attempts), the job never stands in active
  under those attempts again, and no later operation by that holder is accepted;
- `done_has_effect`: a job settled in done had its effect applied (done without it: the work was dropped);
- `lease_kept`: no job is taken from its holder before the deadline the store granted that holder
  (the deadline from the holder's own reply, not from any score a script wrote);
- `current_fence`: the store accepts an operation (an effect, a completion, an extend) only from the
  holder of the job's current fencing value: never a value below the highest handed out;
- `sessions_agree`: each worker's session keys agree with the active set (`held:<w>`, the rows'
  `worker` and `session` fields, the `sessions` entries);
- `lease_granted`: a claim, a renewal or a session's opening grants exactly the lease asked for: not
  shorter, and not past the job's hard deadline;
- `reap_told`: a reap call's reply names exactly the jobs it took back and the sessions it ended, its
  `reaped` count grows by as many jobs, and it stays within its limit;
- `limit_kept`: a job past its hard deadline (a hung job's limit) leaves its holder at the first reap
  after it that does not fill its limit.

Not every point can judge every invariant: each `Invariant` says when it is `evaluable` on given
Facts and, in words, what it `needs` when it is not (no snapshot, no fencing values, ...). A checker
reports an invariant it could not evaluate as such, never as held. (`PROGRESS` names the explorer's
bounded progress, a property of the explored graph, not of one point: it is not in `INVARIANTS`.)

`Facts` come from two places, so the same functions judge both:

- the store (`read`: one pipeline per job; `from_contents`: a snapshot of every key, as
  `emqlab.store.snapshot` reads it), plus what the run has seen that the store no longer shows: the
  highest attempts handed out per job, the holders refused, the holders accepted at this step, the
  holders' granted deadlines and the store's time;
- a history (`judge_history`, and `found_in_history`: its violations alone): the events of any Timeline JSON, by the rules in
  docs/explore-and-check.md ("A history any system can write"). A history that carries `snapshot`
  events is checked on those too.

Each violation is a `Broken`: the invariant, the job, a plain sentence, and (in a history) the index
of the first event of its evidence, so a checker can show the smallest window of events that shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.kinds import Kind
from ..core.words import seconds, times
from .jobs import PLACES, STATE_OF_PLACE

SETTLED = "done"  # the one place a job's row may be gone from (retired, as EchoMQ does)
THE_JOB = "the job"  # the job of a history whose events name none (a bare lease's one job)


@dataclass(frozen=True)
class Row:
    """One job as the store holds it: which places hold its id, its row's state and attempts (both
    None when the row is gone), and who holds it: the row's `worker` and `session` fields (None when
    the row has none, or was not read)."""

    places: tuple[str, ...]
    state: str | None
    attempts: int | None
    worker: str | None = None
    session: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"places": list(self.places), "state": self.state, "attempts": self.attempts}
        out.update({k: v for k, v in (("worker", self.worker), ("session", self.session)) if v is not None})
        return out

    @classmethod
    def from_dict(cls, r: Mapping[str, Any]) -> "Row":
        def text(key: str) -> str | None:
            return None if r.get(key) is None else str(r[key])

        return cls(tuple(str(p) for p in r.get("places", ())), text("state"),
                   None if r.get("attempts") is None else int(r["attempts"]), text("worker"), text("session"))


@dataclass(frozen=True)
class Snapshot:
    """Every job's `Row`; the results store: how many times each job's effect was applied (None: not
    tracked here); each worker's session index, `held` (worker -> the ids its `held:<w>` key holds,
    only the non-empty ones), and the workers with a `sessions` entry (both None: not read)."""

    jobs: Mapping[str, Row]
    effects: Mapping[str, int] | None = field(default_factory=dict)
    held: Mapping[str, tuple[str, ...]] | None = None
    sessions: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `snapshot` event's fields (the history format): `jobs`, and `effects`, `held` and `sessions`
        when this snapshot has them."""
        out: dict[str, Any] = {"jobs": {j: r.to_dict() for j, r in self.jobs.items()}}
        if self.effects is not None:
            out["effects"] = dict(self.effects)
        if self.held is not None:
            out["held"] = {w: list(ids) for w, ids in self.held.items()}
        if self.sessions is not None:
            out["sessions"] = list(self.sessions)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Snapshot":
        """A `snapshot` event's fields; a key it lacks (`effects`, `held`, `sessions`) is None: not tracked."""
        jobs = {str(j): Row.from_dict(r) for j, r in data.get("jobs", {}).items()}
        effects, held, sessions = data.get("effects"), data.get("held"), data.get("sessions")
        return cls(jobs, None if effects is None else {str(j): int(n) for j, n in effects.items()},
                   None if held is None else {str(w): tuple(str(j) for j in ids) for w, ids in held.items()},
                   None if sessions is None else tuple(str(w) for w in sessions))


@dataclass(frozen=True)
class Holder:
    """A holder the store granted a job: the worker, the job, its fencing value (attempts), and the
    deadline the store granted it in its reply (None: not known) and the job's hard deadline the claim's reply
    named (None: none), in the unit of `Facts.now` (model seconds from the run's start, so a sentence can
    quote them)."""

    worker: str
    job: str
    attempts: int
    deadline: float | None = None
    hard: float | None = None


@dataclass(frozen=True)
class Grant:
    """A lease the store granted a holder on a claim or a renewal: what the holder asked for (its lease from the
    store's now, or the job's hard deadline if that comes first) and what the reply granted, in the unit of
    `Facts.now`; `what` names it ("job J1's lease", "its session")."""

    worker: str
    what: str
    asked: float
    granted: float


@dataclass(frozen=True)
class Reaped:
    """One reap call, as its reply told it and as the store shows it: the ids the reply returned (`replied`) and
    the sessions it said it ended (`replied_ended`); the jobs that left active in the call (`moved`) and the
    workers whose `sessions` entry went (`ended`); how much the `reaped` count grew (`counted`); the call's
    `limit`."""

    replied: tuple[str, ...]
    replied_ended: tuple[str, ...]
    moved: tuple[str, ...]
    ended: tuple[str, ...]
    counted: int
    limit: int


@dataclass(frozen=True)
class Facts:
    """What is known at one point of a run. `snapshot`: the store, if it was read here. `effects`:
    accepted effects so far per effect (a job, or a (job, part) when the work writes in parts).
    `issued`: the highest fencing value handed out per job *before* this point; `claimed`: the
    (job, attempts) handed out here. `refused`: every (job, attempts) the store has refused;
    `accepted`: the (job, attempts) whose operation the store accepted here. `now`: the store's time
    at this point and `holders`: every holder still holding by its own account, with the deadline the
    store granted it (same unit as `now`; both for `lease_kept`). `origin`: for a history, the index of
    the event each piece of evidence came from (keys: ("effect", key), ("issued", job),
    ("refused", job, attempts), ("granted", job, attempts))."""

    snapshot: Snapshot | None = None
    effects: Mapping[Any, int] = field(default_factory=dict)
    issued: Mapping[str, int] = field(default_factory=dict)
    claimed: tuple[tuple[str, int], ...] = ()
    refused: frozenset[tuple[str, int]] = frozenset()
    accepted: tuple[tuple[str, int], ...] = ()
    origin: Mapping[Any, int] = field(default_factory=dict)
    effect_by: Mapping[Any, tuple[str, ...]] = field(default_factory=dict)  # who applied each effect, in order
    finished: bool = False  # a history whose effects are its job's finishes (a bare lease): "ran twice"
    now: float | None = None
    holders: tuple[Holder, ...] = ()
    grants: tuple[Grant, ...] = ()  # the leases granted at this point (a claim, a renewal) and what was asked
    reaps: tuple[Reaped, ...] = ()  # the reap calls made at this point, replied and seen


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
    if f.snapshot is not None and f.snapshot.effects is not None:
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


def _whose(job: str) -> str:
    return "the job's" if job == THE_JOB else f"job {job}'s"


def done_has_effect(f: Facts) -> list[Broken]:
    """A job settled in done had its effect applied (judged where the snapshot tracks effects)."""
    s = f.snapshot
    if s is None or s.effects is None:
        return []
    return [Broken("done_has_effect", job, f"job {job} is done but its effect was never applied: the work was dropped")
            for job, row in s.jobs.items() if SETTLED in row.places and s.effects.get(job, 0) < 1]


def lease_granted(f: Facts) -> list[Broken]:
    """A claim, renewal or session opening the store accepts grants exactly the lease asked for (to the job's
    hard deadline, if earlier): a shorter lease is taken back early, a longer one keeps a hung job past its
    limit."""
    out = []
    for g in f.grants:
        if abs(g.granted - g.asked) <= 0.0005:
            continue
        how = "short" if g.granted < g.asked else "too long"
        out.append(Broken("lease_granted", g.what, f"{g.worker} asked for {g.what} to {seconds(g.asked)} and the "
                                                   f"store granted it to {seconds(g.granted)}: "
                                                   f"{seconds(abs(g.asked - g.granted))} {how}"))
    return out


def reap_told(f: Facts) -> list[Broken]:
    """A reap call's reply names exactly the jobs that left active in it and the sessions it ended, its
    `reaped` count grows by as many jobs, and it takes back no more jobs, and ends no more sessions, than its
    limit."""
    out = []
    for r in f.reaps:
        unsaid = sorted(set(r.moved) - set(r.replied))
        untrue = sorted(set(r.replied) - set(r.moved))
        if unsaid:
            out.append(Broken("reap_told", unsaid[0], f"the reaper took {', '.join(unsaid)} out of active and its "
                                                      "reply did not name it"))
        if untrue:
            out.append(Broken("reap_told", untrue[0], f"the reaper's reply named {', '.join(untrue)}, which it "
                                                      "did not take out of active"))
        if sorted(r.ended) != sorted(r.replied_ended):
            said = ", ".join(r.replied_ended) or "none"
            out.append(Broken("reap_told", (r.ended or r.replied_ended)[0], f"the reaper ended the sessions of "
                                                                         f"{', '.join(r.ended) or 'none'} and its "
                                                                         f"reply named {said}"))
        if r.counted != len(r.moved):
            out.append(Broken("reap_told", (r.moved or ("reaped",))[0], f"the reaper took back {len(r.moved)} "
                                                                        f"and its reaped count grew by {r.counted}"))
        if len(r.moved) > r.limit or len(r.ended) > r.limit:
            out.append(Broken("reap_told", (r.moved or r.ended)[0], f"one reap call with a limit of {r.limit} took "
                                                                    f"back {len(r.moved)} and ended "
                                                                    f"{len(r.ended)} sessions: past its limit"))
    return out


def _reaps(f: Facts) -> bool:
    return bool(f.reaps)


def limit_kept(f: Facts) -> list[Broken]:
    """A job past its hard deadline (a hung job's limit) leaves its holder at the first reap call at or after
    that deadline: after a reap at a point past a holder's hard deadline, the job is no longer active under the
    holder's attempts."""
    if not f.reaps or f.now is None or f.snapshot is None:
        return []
    if any(len(r.moved) >= r.limit for r in f.reaps):  # a full slice may leave the rest to the next call
        return []
    out = []
    for h in f.holders:
        row = f.snapshot.jobs.get(h.job)
        if h.hard is None or f.now < h.hard or row is None:
            continue
        if "active" in row.places and row.attempts == h.attempts:
            out.append(Broken("limit_kept", h.job, f"job {h.job} is still active under {h.worker}'s attempts "
                                                   f"{h.attempts} after a reap {seconds(f.now - h.hard)} past its "
                                                   "hard deadline: a hung job kept past its limit"))
    return out


def _reaped_past_limit(f: Facts) -> bool:
    return (bool(f.reaps) and f.now is not None and f.snapshot is not None
            and all(len(r.moved) < r.limit for r in f.reaps)
            and any(h.hard is not None and f.now >= h.hard for h in f.holders))


def _grants(f: Facts) -> bool:
    return bool(f.grants)


def lease_kept(f: Facts) -> list[Broken]:
    """No job taken from a holder before the deadline the store granted that holder: while `now` is before
    a holder's deadline, the job stands in active, state active, under the holder's attempts."""
    if f.now is None or f.snapshot is None:
        return []
    out = []
    for h in f.holders:
        row = f.snapshot.jobs.get(h.job)
        if h.deadline is None or not f.now < h.deadline or row is None:
            continue
        if "active" in row.places and row.state == "active" and row.attempts == h.attempts:
            continue
        if "active" not in row.places:
            where = f"it is in {' and '.join(row.places)}" if row.places else "it is in no place"
        elif row.attempts != h.attempts:
            where = f"it is active under attempts {row.attempts}"
        else:
            where = f"its state says {row.state}"
        out.append(Broken("lease_kept", h.job, f"job {h.job} was taken from {h.worker} (attempts {h.attempts}) "
                                               f"{seconds(h.deadline - f.now)} before the deadline the store granted "
                                               f"it: {where}",
                          f.origin.get(("granted", h.job, h.attempts))))
    return out


def _top_issued(f: Facts, job: str) -> int | None:
    """The highest fencing value handed out for `job` up to this point (None: none known)."""
    values = [a for j, a in f.claimed if j == job] + ([f.issued[job]] if job in f.issued else [])
    return max(values) if values else None


def current_fence(f: Facts) -> list[Broken]:
    """The store accepts an operation only under the job's current fencing value: an accepted value below
    the highest handed out is a stale one."""
    out = []
    for job, attempts in f.accepted:
        top = _top_issued(f, job)
        if top is not None and attempts < top:
            out.append(Broken("current_fence", job, f"the store accepted {_whose(job)} holder of attempts {attempts} "
                                                    f"after attempts {top} was handed out: a stale fencing value",
                              f.origin.get(("issued", job))))
    return out


def sessions_agree(f: Facts) -> list[Broken]:
    """Each worker's session keys agree with the active set: a job in `held:<w>` is active under w's
    session (in active, state active, worker w, session 1); an active job marked session 1 is in its
    worker's `held:` index; a worker whose index holds jobs has a `sessions` entry."""
    s = f.snapshot
    if s is None or s.held is None or s.sessions is None:
        return []
    out = []
    gone = Row((), None, None)
    for worker, ids in s.held.items():
        if ids and worker not in s.sessions:
            out.append(Broken("sessions_agree", ids[0], f"worker {worker}'s session index holds {', '.join(ids)} "
                                                        f"but {worker} has no session"))
        for job in ids:
            row = s.jobs.get(job, gone)
            if "active" not in row.places:
                why = f"it is in {' and '.join(row.places)}" if row.places else "it is in no place"
            elif row.state != "active":
                why = f"its state says {row.state}"
            elif row.worker != worker:
                why = f"its row names worker {row.worker}"
            elif row.session != "1":
                why = "its row has no session mark"
            else:
                continue
            out.append(Broken("sessions_agree", job, f"job {job} is in worker {worker}'s session index but {why}"))
    for job, row in s.jobs.items():
        if "active" in row.places and row.session == "1" and job not in s.held.get(row.worker or "", ()):
            out.append(Broken("sessions_agree", job, f"job {job} is active under worker {row.worker}'s session but "
                                                    "not in its session index: a lapsed session would never return it"))
    return out


# -- when each can be judged ----------------------------------------------------------------------------
def _snapshot(f: Facts) -> bool:
    return f.snapshot is not None


def _fencing_values(f: Facts) -> bool:
    return bool(f.claimed) or (f.snapshot is not None and bool(f.issued))


def _effects(f: Facts) -> bool:
    return bool(f.effects) or (f.snapshot is not None and f.snapshot.effects is not None)


def _refusals(f: Facts) -> bool:
    return bool(f.refused)


def _snapshot_effects(f: Facts) -> bool:
    return f.snapshot is not None and f.snapshot.effects is not None


def _granted(f: Facts) -> bool:
    return f.now is not None and f.snapshot is not None and any(h.deadline is not None for h in f.holders)


def _accepted_values(f: Facts) -> bool:
    return any(_top_issued(f, job) is not None for job, _ in f.accepted)


def _session_keys(f: Facts) -> bool:
    return f.snapshot is not None and f.snapshot.held is not None and f.snapshot.sessions is not None


@dataclass(frozen=True)
class Invariant:
    """An invariant's name, its rule in words, its function, when Facts can judge it (`evaluable`) and,
    in words, what is missing when they cannot (`needs`: "no snapshot events", ...)."""

    name: str
    rule: str
    judge: Callable[[Facts], list[Broken]]
    evaluable: Callable[[Facts], bool] = _snapshot
    needs: str = "no snapshot events"


INVARIANTS: dict[str, Invariant] = {i.name: i for i in (
    Invariant("one_place", "each job in at most one of pending, active, schedule, done and dead, its state "
              "field matching", one_place, _snapshot, "no snapshot events"),
    Invariant("never_lost", "each job in one of pending, active, schedule, done and dead: never lost", never_lost,
              _snapshot, "no snapshot events"),
    Invariant("attempts_grow", "attempts never go down, and no fencing value is handed out twice", attempts_grow,
              _fencing_values, "no fencing values handed out"),
    Invariant("one_effect", "each job's effect accepted at most once", one_effect, _effects, "no effects recorded"),
    Invariant("no_resurrection", "a holder the store refused never holds the job again", no_resurrection,
              _refusals, "no refusals"),
    Invariant("done_has_effect", "a job settled in done had its effect applied", done_has_effect,
              _snapshot_effects, "no snapshot events with effects"),
    Invariant("lease_kept", "no job is taken from its holder before the deadline the store granted that holder",
              lease_kept, _granted, "no snapshot events while a holder had a granted deadline"),
    Invariant("current_fence", "the store accepts an effect, a completion or an extend only under the job's "
              "current fencing value", current_fence, _accepted_values,
              "no fencing values accepted after one was handed out"),
    Invariant("sessions_agree", "each worker's session keys agree with the active set", sessions_agree,
              _session_keys, "no snapshot events with held and sessions"),
    Invariant("lease_granted", "a claim, a renewal or a session's opening grants exactly the lease asked for (to "
              "the job's hard deadline, if that comes first)", lease_granted, _grants, "no lease asked for and granted"),
    Invariant("reap_told", "a reap call's reply names exactly the jobs it took back and the sessions it ended, its "
              "reaped count grows by as many, and it stays within its limit", reap_told, _reaps,
              "no reap call with the store read before and after"),
    Invariant("limit_kept", "a job past its hard deadline (a hung job's limit) leaves its holder at the first reap "
              "after it with room to spare", limit_kept, _reaped_past_limit,
              "no reap call with room to spare past a holder's hard deadline"),
)}

# the explorer's bounded progress: a property of the explored graph (its search judges it), not of one point
PROGRESS = ("progress", "from every reachable state, a state with every job settled (done or dead) is reachable "
                        "within a bounded number of further steps by workers that do not fail")


def evaluable(facts: Facts, names: Iterable[str] | None = None) -> tuple[str, ...]:
    """The invariants `names` (default: all) these facts can judge, in the table's order."""
    chosen = set(INVARIANTS) if names is None else set(names)
    return tuple(name for name, inv in INVARIANTS.items() if name in chosen and inv.evaluable(facts))


def judge(facts: Facts, names: Iterable[str] | None = None) -> list[Broken]:
    """Every violation of the invariants `names` (default: all) at this point, in the table's order."""
    chosen = set(INVARIANTS) if names is None else set(names)
    return [b for name, inv in INVARIANTS.items() if name in chosen for b in inv.judge(facts)]


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
    """The jobs `ids` of `queue` (an `emqlab.queue.Queue`), its results store (effects: tracked) and its
    session keys, in two pipelines: the rows, places, effects and `sessions` first, then the `held:`
    index of every worker the store names (a `sessions` entry, or a row's `worker`). No SCAN (the
    class's instructor may not): an index under a name the store names nowhere else is not seen."""
    pipe = queue.backend.client.pipeline(transaction=False)
    for job in ids:
        pipe.hmget(queue.job_key(job), "state", "attempts", "worker", "session")
        pipe.zscore(queue.pending, job)
        pipe.zscore(queue.active, job)
        pipe.zscore(queue.schedule, job)
        pipe.sismember(queue.done, job)
        pipe.zscore(queue.dead, job)
    pipe.hgetall(queue.effects)
    pipe.zrange(queue.sessions, 0, -1)
    got = pipe.execute()
    jobs = {}
    for i, job in enumerate(ids):
        (state, attempts, worker, session), *where = got[6 * i: 6 * i + 6]
        # a reaped job sits in pending at score 0: a score's presence, not its truth
        found = [where[0] is not None, where[1] is not None, where[2] is not None, bool(where[3]), where[4] is not None]
        jobs[job] = Row(tuple(p for p, there in zip(PLACES, found) if there), state,
                        None if attempts is None else int(attempts), worker, session)
    sessions = tuple(got[-1])
    workers = sorted(set(sessions) | {row.worker for row in jobs.values() if row.worker})
    pipe = queue.backend.client.pipeline(transaction=False)
    for worker in workers:
        pipe.zrange(queue.held_key(worker), 0, -1)
    held = {w: tuple(members) for w, members in zip(workers, pipe.execute() if workers else []) if members}
    return Snapshot(jobs, {k: int(v) for k, v in got[-2].items()}, held, sessions)


def from_contents(queue: Any, ids: Sequence[str], contents: Mapping[str, Any]) -> Snapshot:
    """The same Snapshot from every key of the queue as `emqlab.store.snapshot.read` returns them; ids
    found in a place but not in `ids` are jobs too (a script may have made one up). Every `held:` key
    and the `sessions` key are read here (absent: no index, no session)."""
    def members(key: str) -> set[str]:
        entry = contents.get(key)
        if entry is None:
            return set()
        return {m for m, _ in entry.value} if entry.type == "zset" else set(entry.value)

    def ordered(entry: Any) -> tuple[str, ...]:
        return tuple(m for m, _ in entry.value) if entry.type == "zset" else tuple(entry.value)

    held = {place: members(key) for place, key in zip(PLACES, (queue.pending, queue.active, queue.schedule,
                                                               queue.done, queue.dead))}
    everyone = list(ids) + sorted(set().union(*held.values()) - set(ids))
    jobs = {}
    for job in everyone:
        entry = contents.get(queue.job_key(job))
        row = dict(entry.value) if entry is not None and entry.type == "hash" else {}
        attempts = row.get("attempts")
        jobs[job] = Row(tuple(p for p in PLACES if job in held[p]), row.get("state") if row else None,
                        int(attempts) if attempts is not None else (0 if row else None), row.get("worker"),
                        row.get("session"))
    effects = contents.get(queue.effects)
    index = queue.held_key("")
    by_worker = {key[len(index):]: ordered(entry) for key, entry in sorted(contents.items())
                 if key.startswith(index) and entry.type in ("zset", "set")}
    sessions = contents.get(queue.sessions)
    return Snapshot(jobs, {k: int(v) for k, v in (effects.value if effects is not None else ())},
                    {w: ids for w, ids in by_worker.items() if ids},
                    ordered(sessions) if sessions is not None else ())


# -- a history, read -------------------------------------------------------------------------------
# a holder's operation the store turned away
REFUSALS = (Kind.COMPLETE_REFUSED, Kind.EFFECT_REFUSED, Kind.CLAIM_REFUSED)
ACCEPTED = (Kind.COMPLETE, Kind.EFFECT)  # a holder's operation the store took
GIVEN_BACK = (Kind.RETRY, Kind.RELEASE)  # a holder handing its job back: it holds nothing after
STORE_ACTORS = ("store", "storage")  # the store's own events (what it answered each writer)


def _value(data: Mapping[str, Any]) -> int | None:
    """An event's fencing value: `attempts`, or a numeric `token`."""
    for key in ("attempts", "token"):
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _deadline(data: Mapping[str, Any]) -> float | None:
    """An event's granted deadline (model seconds from the run's start, like t), if it carries one."""
    value = data.get("deadline")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def history_facts(events: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, Facts]]:
    """Each event of a history (dicts with t, actor, kind and the event's fields) and the Facts known
    right after it, by the history format's rules: which events hand out a fencing value (and grant a
    deadline), which the store accepted or refused, which apply an effect, which carry a snapshot.
    `now` is each event's t; a holder is granted by its `claim` (or `token`) and its accepted `extend`
    (with `deadline`), and holds no more once its own effect or completion is accepted or refused, once
    it is refused anything, or once it hands the job back (`retry`, `release`)."""
    store_writes = any(e.get("actor") in STORE_ACTORS and e.get("kind") == Kind.WRITE for e in events)
    effect_events = any(e.get("kind") == Kind.EFFECT for e in events)
    # a history with no claim, write or effect of any kind is a bare lease's: its effect is its job finishing
    finishes = not store_writes and not effect_events and not any(
        e.get("kind") in (Kind.CLAIM, Kind.COMPLETE, Kind.TOKEN, Kind.WRITE) for e in events)
    issued: dict[str, int] = {}
    refused: set[tuple[str, int]] = set()
    effects: dict[Any, int] = {}
    effect_by: dict[Any, tuple[str, ...]] = {}
    origin: dict[Any, int] = {}
    holders: dict[tuple[str, int], Holder] = {}  # (job, attempts) -> its holder, while it holds

    def applied(key: Any, who: str, i: int, count: int | None = None) -> None:
        effects[key] = max(effects.get(key, 0) + 1, count or 0)
        effect_by[key] = (*effect_by.get(key, ()), who)
        origin.setdefault(("effect", key), i)

    def granted(who: str, job: str, value: int, deadline: float | None, i: int) -> None:
        before = holders.get((job, value))
        if deadline is None and before is not None:
            return
        holders[(job, value)] = Holder(before.worker if before else who, job, value, deadline)
        if deadline is not None:
            origin[("granted", job, value)] = i

    for i, e in enumerate(events):
        kind, actor = e.get("kind"), str(e.get("actor", ""))
        job = str(e.get("job", THE_JOB))
        value = _value(e)
        claimed: tuple[tuple[str, int], ...] = ()
        accepted: list[tuple[str, int]] = []
        snapshot = None
        if kind in (Kind.CLAIM, Kind.TOKEN) and value is not None:
            claimed = ((job, value),)
            if actor not in STORE_ACTORS:
                granted(actor, job, value, _deadline(e), i)
        elif kind == Kind.SNAPSHOT:
            snapshot = Snapshot.from_dict(e)
        elif actor in STORE_ACTORS and kind in (Kind.WRITE, Kind.COMPLETION):
            writer = str(e.get("writer", actor))
            if value is not None:
                holders.pop((job, value), None)
            if e.get("accepted"):
                if value is not None:
                    accepted.append((job, value))
                if kind == Kind.WRITE:
                    applied((job, e.get("part")), writer, i, e.get("applied"))
            elif value is not None:
                refused.add((job, value))
                origin.setdefault(("refused", job, value), i)
        elif actor not in STORE_ACTORS:
            if kind in REFUSALS or (kind in (Kind.LATE_EXTEND, Kind.EXTEND) and e.get("held") is False):
                if value is not None:
                    refused.add((job, value))
                    origin.setdefault(("refused", job, value), i)
                    holders.pop((job, value), None)
            elif kind in ACCEPTED or (kind in (Kind.LATE_EXTEND, Kind.EXTEND) and e.get("held") is True):
                if value is not None and not store_writes:
                    accepted.append((job, value))
                if value is not None:
                    if kind in ACCEPTED:
                        holders.pop((job, value), None)
                    else:
                        granted(actor, job, value, _deadline(e), i)
                if kind == Kind.EFFECT and not store_writes:
                    applied((job, e.get("part")), actor, i, e.get("applied"))
            elif kind in GIVEN_BACK and value is not None:
                holders.pop((job, value), None)
            elif kind == Kind.WORK_DONE and finishes:
                applied((job, None), actor, i)
        t = e.get("t")
        yield i, Facts(snapshot=snapshot, effects=dict(effects), issued=dict(issued), claimed=claimed,
                       refused=frozenset(refused), accepted=tuple(accepted), origin=dict(origin),
                       effect_by=dict(effect_by), finished=finishes,
                       now=float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None,
                       holders=tuple(holders.values()))
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


@dataclass(frozen=True)
class Judged:
    """A history judged: each violation once with its window (`found`), and the invariants some point of
    the history could judge (`evaluated`, in the table's order); the others were not evaluated."""

    found: tuple[Found, ...]
    evaluated: tuple[str, ...]


ONCE_A_JOB = ("one_effect", "lease_kept")  # one violation per job: its sentence grows (a count, a time) as it goes on


def judge_history(events: Sequence[Mapping[str, Any]], names: Iterable[str] | None = None) -> Judged:
    """Every invariant `names` (default: all) over a history, each violation once (its first appearance),
    with the window from the first event of its evidence to the event that broke it; and which invariants
    any point of the history could judge."""
    chosen = tuple(INVARIANTS) if names is None else tuple(names)
    found: dict[tuple[str, str, str], Found] = {}
    judged: set[str] = set()
    for i, facts in history_facts(events):
        here = evaluable(facts, chosen)
        judged.update(here)
        for b in judge(facts, here):
            key = (b.invariant, b.job, "" if b.invariant in ONCE_A_JOB else b.what)
            if key in found:
                continue
            first = i if b.since is None else min(b.since, i)
            if b.since is None and events[i].get("kind") == Kind.SNAPSHOT and i > 0:
                first = i - 1  # the step the store's snapshot followed
            found[key] = Found(b, first, i)
    return Judged(tuple(sorted(found.values(), key=lambda f: (f.last, f.first))),
                  tuple(name for name in INVARIANTS if name in judged))


def found_in_history(events: Sequence[Mapping[str, Any]], names: Iterable[str] | None = None) -> list[Found]:
    """Every invariant `names` (default: all) over a history, each violation once (its first appearance),
    with the window from the first event of its evidence to the event that broke it."""
    return list(judge_history(events, names).found)
