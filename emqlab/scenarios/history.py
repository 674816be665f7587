"""Check any history: the queue's invariants (`emqlab.queue.invariants`) over the events of a Timeline
JSON, whichever system wrote it: an emqlab run, a history written by hand, one exported from another
queue in the format README describes ("A history any system can write").

`check(history)` returns a `Checked`: the history read back as a Timeline, what broke (each violation
with the smallest window of events that shows it), each invariant's status (held, broken, or not
evaluated and why: a history without snapshot events cannot show where each job is) and the verdict
in words. `Checked.windows()` gives each violation's window as a Timeline of its own, which
`emqlab.view.figures.check_figure` draws. A history on which no invariant could be evaluated is still
a `Checked` here (`evaluated` empty); `emqlab check` refuses it in one line, exit 2.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import BadParameter
from ..core.kinds import Kind
from ..core.timeline import Timeline, Verdict
from ..core.words import HEADLINE_WORDS, ModeWords, headline_words, plural, seconds
from ..queue import invariants as inv
from .run_harness import mode_words

MAX_BYTES = 50_000_000  # a history file larger than this is refused before it is read


@dataclass(frozen=True, kw_only=True)
class CheckVerdict(Verdict):
    """What the check found: the history's own scenario name, how many events it read, each violation
    ({invariant, job, what, first, last, t_first, t_last}: the window's event indices and times), the
    invariants asked for (`checked`), and each one's status (`statuses`: {name: {"status": "held",
    "broken" or "not evaluated", "why": what the history lacks, or None}})."""

    scenario: str
    events: int
    violations: list
    checked: list
    statuses: dict = field(default_factory=dict)

    def named(self, status: str) -> list[str]:
        """The invariants with this status, in the table's order."""
        return [name for name, s in self.statuses.items() if s["status"] == status]


@dataclass(frozen=True)
class Checked:
    """A history, checked: the Timeline, the verdict, and each violation with its window."""

    history: Timeline
    verdict: CheckVerdict
    found: tuple[inv.Found, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """Nothing broke (see `evaluated`: whether anything could)."""
        return not self.found

    @property
    def evaluated(self) -> list[str]:
        """The invariants the history let the check judge (held or broken)."""
        return [n for n, s in self.verdict.statuses.items() if s["status"] != NOT_EVALUATED]

    def nothing_checkable(self) -> str:
        """One sentence on why no invariant could be evaluated (what the history lacks)."""
        lacks = list(dict.fromkeys(s["why"] for s in self.verdict.statuses.values()))
        return (f"{history_name(self.verdict.scenario)} ({plural(self.verdict.events, 'event')}) gives no invariant "
                f"anything to judge: {'; '.join(lacks)} (the history format: docs/explore-and-check.md)")

    def window_events(self, found: inv.Found) -> list:
        return self.history.events[found.first: found.last + 1]

    def windows(self) -> dict[str, Timeline]:
        """{a name per violation: a Timeline of its window's events}, each with a verdict in words."""
        out: dict[str, Timeline] = {}
        for k, f in enumerate(self.found, start=1):
            name = f"{k}. {f.broken.invariant}"
            tl = Timeline("check-window", {"invariant": f.broken.invariant, "first": f.first, "last": f.last},
                          backend=self.history.backend, clock=self.history.clock,
                          events=self.window_events(f))
            w = window_words(f, self.history)
            tl.verdict = Verdict().worded(w)
            out[name] = tl
        return out

    def to_dict(self) -> dict[str, Any]:
        """What `emqlab check --json` prints: the verdict's fields, and each violation's window of events."""
        out = self.verdict.to_dict()
        out["windows"] = [[e.to_dict() for e in self.window_events(f)] for f in self.found]
        return out


def read_history(source: Any) -> dict[str, Any]:
    """A history as plain data: a Timeline, a dict, or a path to a JSON file; BadParameter (one sentence)
    for a file that is not there, not JSON, or not a history."""
    if isinstance(source, Timeline):
        return source.to_dict()
    if isinstance(source, Mapping):
        data = dict(source)
    else:
        path = Path(source)
        if not path.is_file():
            raise BadParameter(f"no history file at {str(path)!r}")
        if path.stat().st_size > MAX_BYTES:
            raise BadParameter(f"the history file {str(path)!r} is larger than {MAX_BYTES // 1_000_000} MB")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadParameter(f"the history file {str(path)!r} is not JSON ({exc.__class__.__name__}: "
                               f"{str(exc).splitlines()[0]})") from None
        if not isinstance(data, dict):
            raise BadParameter(f"the history file {str(path)!r} is not a JSON object with an `events` list")
    return _valid(data)


def _valid(data: dict[str, Any]) -> dict[str, Any]:
    events = data.get("events")
    if not isinstance(events, list):
        raise BadParameter("a history is a JSON object with an `events` list (see README: a history any system "
                           "can write)")
    for k, e in enumerate(events):
        if not isinstance(e, dict):
            raise BadParameter(f"event {k} of the history is not an object")
        for key in ("t", "actor", "kind"):
            if key not in e:
                raise BadParameter(f"event {k} of the history has no {key!r} (each event has t, actor and kind)")
        if isinstance(e["t"], bool) or not isinstance(e["t"], (int, float)):
            raise BadParameter(f"event {k} of the history has t = {e['t']!r}; t is a number of seconds")
        if not isinstance(e["actor"], str) or not isinstance(e["kind"], str):
            raise BadParameter(f"event {k} of the history has a non-text actor or kind")
        if e["kind"] == Kind.SNAPSHOT:
            try:
                inv.Snapshot.from_dict(e)
            except (AttributeError, TypeError, ValueError) as exc:
                raise BadParameter(f"snapshot event {k} of the history is not a snapshot ({exc.__class__.__name__}: "
                                   f"{str(exc).splitlines()[0] if str(exc) else 'bad field'}; see the history "
                                   "format: docs/explore-and-check.md)") from None
    return {"scenario": str(data.get("scenario") or "history"), "params": data.get("params") or {},
            "backend": str(data.get("backend", "")), "clock": str(data.get("clock", "")),
            "events": sorted(events, key=lambda e: e["t"]), "intervals": []}


def check(history: Any, invariants: Any = None) -> Checked:
    """The queue's invariants (`invariants`: names, default all) over `history` (a Timeline, a dict, or a
    path to a Timeline JSON file). Every violation comes with the smallest window of events that shows it."""
    try:
        names = inv.check_names(invariants)
    except ValueError as exc:
        raise BadParameter(str(exc)) from None
    data = read_history(history)
    tl = Timeline.from_dict(data)
    judged = inv.judge_history(data["events"], names)
    found = judged.found
    events = tl.events
    violations = [{**f.to_dict(), "t_first": events[f.first].t, "t_last": events[f.last].t} for f in found]
    v = CheckVerdict(scenario=tl.scenario, events=len(events), violations=violations, checked=list(names),
                     statuses=statuses(names, judged, snapshots=any(e.kind == Kind.SNAPSHOT for e in events)))
    return Checked(tl, v.worded(words(v)), found)


HELD, BROKEN, NOT_EVALUATED = "held", "broken", "not evaluated"  # an invariant's status in a checked history
NO_SNAPSHOTS = "no snapshot events"


def statuses(names: tuple[str, ...], judged: inv.Judged, snapshots: bool = True) -> dict[str, dict[str, Any]]:
    """{name: {"status": held | broken | not evaluated, "why": what the history lacks (None unless not
    evaluated)}} for each invariant asked for, in the table's order. `snapshots`: whether the history has
    any snapshot event (without one, what a snapshot lacked is simply "no snapshot events")."""
    broke = {f.broken.invariant for f in judged.found}
    out = {}
    for name in (n for n in inv.INVARIANTS if n in names):
        if name in broke:
            out[name] = {"status": BROKEN, "why": None}
        elif name in judged.evaluated:
            out[name] = {"status": HELD, "why": None}
        else:
            why = inv.INVARIANTS[name].needs
            out[name] = {"status": NOT_EVALUATED,
                         "why": NO_SNAPSHOTS if not snapshots and why.startswith(NO_SNAPSHOTS) else why}
    return out


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def history_name(scenario: str) -> str:
    """A history by its scenario's name ("the reaper history"), or "the history" when it names none."""
    return "the history" if scenario == "history" else f"the {scenario} history"


def words(v: CheckVerdict) -> ModeWords:
    """A check in words: the headline says whether anything broke and, if nothing did, which invariants
    held and which could not be evaluated; the facts give each violation, what held, and each invariant
    not evaluated with what the history lacks. Every name and number is read from `v.statuses`."""
    label = history_name(v.scenario)
    held, unjudged = v.named(HELD), v.named(NOT_EVALUATED)
    facts: list[str] = []
    if v.violations:
        broke = v.named(BROKEN)
        first = v.violations[0]
        more = f"; and {plural(len(v.violations) - 1, 'more violation')}" if len(v.violations) > 1 else ""
        headline = f"{label}: {first['invariant']} broke: {first['what']}{more}."
        if headline_words(headline) > HEADLINE_WORDS:  # the sentence is in the facts, whole
            headline = f"{label}: {first['invariant']} broke, for job {first['job']}{more}."
        facts += [f"{x['invariant']}: {x['what']} (events {x['first']}–{x['last']}, {seconds(x['t_first'])} to "
                  f"{seconds(x['t_last'])})" for x in v.violations]
        static = f"{len(v.violations)} broken: {', '.join(broke)}"
    else:
        events = plural(v.events, "event")
        if not held:
            headline = (f"{label} ({events}): nothing could be checked; "
                        f"{plural(len(unjudged), 'invariant')} not evaluated.")
        elif not unjudged:
            headline = (f"{label} ({events}): {_and(held)} held." if len(held) <= 3 else
                        f"{label} ({events}): all {len(held)} invariants checked held.")
        else:
            headline = f"{label} ({events}): {_and(held)} held; {_and(unjudged)} not evaluated."
            if headline_words(headline) > HEADLINE_WORDS:
                headline = (f"{label} ({events}): {plural(len(held), 'invariant')} held; "
                            f"{len(unjudged)} not evaluated.")
        static = f"{len(held)} held, {len(unjudged)} not evaluated"
    if held:
        facts.append(f"held: {', '.join(held)}")
    whys: dict[str, list[str]] = {}
    for name in unjudged:
        whys.setdefault(v.statuses[name]["why"], []).append(name)
    facts += [f"not evaluated ({why}): {', '.join(names)}" for why, names in whys.items()]
    return ModeWords(label, headline, static, tuple(facts))


def window_words(found: inv.Found, history: Timeline) -> ModeWords:
    """One violation's window in words."""
    events = history.events
    return ModeWords(found.broken.invariant, f"{found.broken.invariant}: {found.broken.what}.",
                     f"events {found.first}–{found.last}",
                     (f"from {seconds(events[found.first].t)} to {seconds(events[found.last].t)}: "
                      f"{plural(found.last - found.first + 1, 'event')}",
                      inv.INVARIANTS[found.broken.invariant].rule))


figure_words = mode_words(
    "Each broken invariant over the smallest window of events that shows it: each actor's lane, each event "
    "in the order it happened, and the event where the invariant broke.",
    "Point at a violation to read it.")
