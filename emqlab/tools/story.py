"""Reading a library's run: what every library's verdict counts, and the lanes every figure draws.

A library's Timeline holds three kinds of events: the sampler's `state` events on the `server` lane (what the
library's own keys said, at each change), the reports of the task bodies and holders (`start`, `effect`,
`end`, `acquire`, …, on each worker's lane), and the run's own events (`crash`, `freeze`, `thaw`, `send`).
From them, `lanes(tl)` adds the intervals the course's figures draw, in the vocabulary every scenario uses:
`run` (a task body working, from its start report to its end, or to the crash that cut it), `pause` (a
process frozen), `lease` (the lock or the visibility a worker had on the server: its end is the deadline the
server reported), `holds` (a lock holder's belief that it holds the lock). And `counts(tl)` reads what every
library's verdict has: how many times the body ran to its end, the effects, who ran it, the most at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..core.kinds import Kind
from ..core.timeline import Interval, Record, Timeline, Verdict, json_name, most_at_once  # noqa: F401 - the runs take it from here
from ..core.words import FigureWords, words_of_modes

EMQLAB = "emqlab"  # the mode of emqlab's own design facing a library's story, in a figure beside the library's runs


@dataclass(frozen=True, kw_only=True)
class ToolParams(Record):
    """What every library's run takes: whether the library's fix is on, and how long the task works
    (seconds: a library's run keeps the library's clock)."""

    fix: bool = False
    task: float = 3.0

    @property
    def mode(self) -> str:
        return "fix" if self.fix else "failure"


@dataclass(frozen=True, kw_only=True)
class ToolVerdict(Verdict):
    """What every library's run is judged by (read off its events):

    runs: how many times the task body ran to its end; started: how many times it began (a body cut short by
    a crash began but never ended); effects: what the job's effect counter holds on the server; pids, workers:
    the processes a body began in, and their lanes; finished_in: the lanes of the bodies that ended; lost: the job ended with no effect; holders_at_once: the most bodies (or lock
    holders) that believed they had the job at one moment; told: whether the first holder learned, while it
    still worked, that it had lost the job (None: it never lost it); JSON `told` (`Verdict.text` is the run's full text)."""

    library: str
    version: str
    runs: int
    started: int
    effects: int
    pids: list = field(default_factory=list)
    workers: list = field(default_factory=list)
    finished_in: list = field(default_factory=list)
    lost: bool = False
    holders_at_once: int = 0
    holder_told: bool | None = field(default=None, metadata=json_name("told"))


# -- reading the reports ---------------------------------------------------------------------------
@dataclass
class Body:
    """One run of the task body: where it ran, when it began, ended (None: it never did) and wrote its effect."""

    actor: str
    pid: int
    start: float
    end: float | None = None
    effect: float | None = None
    cut: float | None = None  # a crash ended it here, or the holder stopped (it learned it had lost the lock)


def bodies(tl: Timeline) -> list[Body]:
    """Every run of the body, from its own reports (and the crash that cut one short)."""
    found: list[Body] = []
    open_: dict[tuple[str, int], Body] = {}
    for e in tl.events:
        key = (e.actor, e.data.get("pid"))
        if e.kind == Kind.START:
            open_[key] = Body(e.actor, e.data.get("pid"), e.t)
            found.append(open_[key])
        elif e.kind == Kind.EFFECT and key in open_:
            open_[key].effect = e.t
        elif e.kind == Kind.END and key in open_:
            open_.pop(key).end = e.t
        elif e.kind == Kind.STOP and key in open_:  # a holder that learned it lost the lock stops mid-body
            open_.pop(key).cut = e.t
        elif e.kind == Kind.CRASH:
            for (actor, pid), body in list(open_.items()):
                if actor == e.actor:
                    body.cut = e.t
                    del open_[(actor, pid)]
    return found


def end_of(tl: Timeline) -> float:
    return max([e.t for e in tl.events] + [0.0])


def body_spans(tl: Timeline) -> list[tuple[float, float]]:
    """When each body was under way (from its start to its end, its crash, or the end of the story)."""
    last = end_of(tl)
    return [(b.start, b.end if b.end is not None else b.cut if b.cut is not None else last) for b in bodies(tl)]


def counts(tl: Timeline) -> dict[str, Any]:
    """What every library's verdict counts, read off the events."""
    found = bodies(tl)
    done = [b for b in found if b.end is not None]
    return {
        "library": tl.counts.get("library", tl.scenario.removeprefix("tools-")),
        "version": tl.counts.get("version", ""),
        "runs": len(done),
        "started": len(found),
        "effects": int(tl.counts.get("effects_counted", sum(1 for b in found if b.effect is not None))),
        "pids": [b.pid for b in found],
        "workers": [b.actor for b in found],
        "finished_in": [b.actor for b in done],
        "holders_at_once": most_at_once(body_spans(tl)),
    }


WORKER = re.compile(r"worker-(\d+)")  # a library's worker process, as a run names it


def by_first_take(tl: Timeline) -> None:
    """Name a run's workers in the order they took the job (their bodies' first start): `worker-1` is the worker
    that took it first, whichever process the library handed it to, so the lanes of a figure and its words
    ("the first worker") agree. A worker that never took it but left an event comes after them."""
    names = sorted({e.actor for e in tl.events if WORKER.fullmatch(e.actor)},
                   key=lambda a: int(WORKER.fullmatch(a).group(1)))
    took = list(dict.fromkeys(e.actor for e in tl.events if e.kind == Kind.START and e.actor in names))
    renamed = {a: f"worker-{k}" for k, a in enumerate(took + [a for a in names if a not in took], 1)}
    for e in tl.events:
        e.actor = renamed.get(e.actor, e.actor)


def judged(tl: Timeline, lanes, verdict) -> Timeline:
    """A library's run, finished: its workers named in the order they took the job (`by_first_take`),
    `lanes(tl)` draws its intervals in, `verdict(tl)` (with its words) is read off them."""
    by_first_take(tl)
    lanes(tl)
    tl.verdict = verdict(tl)
    return tl


def states(tl: Timeline) -> list[tuple[float, dict[str, Any]]]:
    """The sampler's readings: (t, what the library's keys said), at each change."""
    return [(e.t, e.data) for e in tl.events if e.actor == "server" and e.kind == Kind.STATE]


# -- the lanes a figure draws ----------------------------------------------------------------------------
def add_work_lanes(tl: Timeline) -> None:
    """`run` intervals from the bodies' reports, `pause` intervals from freezes and thaws."""
    last = end_of(tl)
    for b in bodies(tl):
        end = b.end if b.end is not None else b.cut if b.cut is not None else last
        stopped = any(e.kind == Kind.STOP and e.actor == b.actor and e.t == b.cut for e in tl.events)
        ended = ("done" if b.end is not None else "stopped" if stopped else "killed" if b.cut is not None
                 else "still running")
        tl.intervals.append(Interval(b.actor, "run", b.start, end, {"pid": b.pid, "ended": ended}))
    frozen: dict[str, float] = {}
    for e in tl.events:
        if e.kind == Kind.FREEZE:
            frozen[e.actor] = e.t
        elif e.kind == Kind.THAW and e.actor in frozen:
            tl.intervals.append(Interval(e.actor, "pause", frozen.pop(e.actor), e.t, {"signal": "SIGSTOP"}))
    for actor, start in frozen.items():
        tl.intervals.append(Interval(actor, "pause", start, last, {"signal": "SIGSTOP"}))


def lease(tl: Timeline, actor: str, start: float, deadline: float, ended: str, end: float | None = None,
          **data: Any) -> Interval:
    """A band on `actor`'s lane: what the server granted it from `start`; it lasted to `end` (released,
    acked) or, if the server let it run out, to `deadline` (the server's own figure)."""
    stop = end if end is not None and end < deadline else deadline
    band = Interval(actor, "lease", round(start, 3), round(stop, 3),
                    {"deadline": round(deadline, 3), "ended": ended, **data})
    tl.intervals.append(band)
    return band


def lock_bands(tl: Timeline, owners: dict[str, str], moves: str = "extends") -> None:
    """The lock the sampler read as `lock_owner` (a token) and `lock_deadline`: on its owner's lane (`owners`:
    {token: lane}) a band while the server held that token, from the first reading that showed it to the last
    deadline the server gave it, or to the reading that showed it gone (released). A lock left to run out
    ends at its deadline, marked by a `lock_lapsed` event there. `moves`: the name under which a band counts
    how often its deadline moved (a library's extends, renewals)."""
    held: dict[str, Any] = {}

    def close(t: float) -> None:
        if held:
            deadline, owner = held["deadline"], owners.get(held["token"])
            lapsed = t >= deadline - 0.06
            lease(tl, owner or "server", held["start"], deadline, "lapsed" if lapsed else "released",
                  None if lapsed else t, **{moves: held["moves"]})
            if lapsed:
                tl.add(deadline, "server", Kind.LOCK_LAPSED, holder=owner or "?")
            held.clear()

    for t, s in states(tl):
        token, deadline = s.get("lock_owner"), s.get("lock_deadline")
        if held and token != held["token"]:
            close(t)
        if token is not None and deadline is not None:
            if not held:
                held.update(token=token, start=t, deadline=deadline, moves=0)
            elif abs(deadline - held["deadline"]) > 0.05:
                held["deadline"], held["moves"] = deadline, held["moves"] + 1
    if held:
        close(end_of(tl))


def holds(tl: Timeline) -> None:
    """`holds` intervals: when each process believed it held the lock (its acquire to its stop or release)."""
    for e in tl.of(Kind.ACQUIRE):
        end = next((x.t for x in tl.events if x.actor == e.actor and x.t >= e.t
                    and x.kind in (Kind.TOLD, Kind.RELEASE, Kind.RELEASE_REFUSED)), end_of(tl))
        tl.open(e.t, e.actor, "holds").end = end


def lock_lanes(tl: Timeline) -> None:
    """A lock holders' story drawn: the work, the lock on the lane of the process whose acquire reported its
    token, and when each process believed it held it."""
    add_work_lanes(tl)
    lock_bands(tl, {e.data["token"]: e.actor for e in tl.of(Kind.ACQUIRE) if e.data.get("token")})
    holds(tl)
    tl.finish()


def mode_of(tl: Timeline) -> str:
    """A run's mode in a figure: a library's run by its params (failure, fix, …), any other run is emqlab's."""
    return tl.params.mode if tl.scenario.startswith("tools-") else EMQLAB


PROMPT = "Point at a run to light it and read what the server recorded."  # every library's figure asks the same


def words_of(caption: str, ours: str = "", prompt: str = PROMPT):
    """A library's `figure_words(modes, labels=None)`: the figure's caption and prompt, and each run's own
    words (a list of runs is named by `mode_of`); emqlab's own run is labelled "emqlab: <its label>". `ours`:
    the caption's words for emqlab's own run, left out of a figure that draws the library's runs alone."""
    if ours and ours not in caption:
        raise ValueError(f"the caption does not name emqlab's run as {ours!r}: {caption!r}")

    def figure_words_of(modes, labels=None) -> FigureWords:
        named = dict(modes) if isinstance(modes, dict) else {mode_of(tl): tl for tl in ([modes] if isinstance(modes, Timeline) else modes)}
        given = dict(labels or {})
        for name, tl in named.items():
            if name == EMQLAB and name not in given:
                given[name] = f"emqlab: {tl.verdict.label}"
        said = caption if EMQLAB in named or not ours else caption.replace(ours, "")
        return words_of_modes(named, said, prompt, given)

    figure_words_of.__doc__ = f"The figure's words: {caption}"
    return figure_words_of
