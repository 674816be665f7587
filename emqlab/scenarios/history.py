"""Check any history: the queue's invariants (`emqlab.queue.invariants`) over the events of a Timeline
JSON, whichever system wrote it: an emqlab run, a history written by hand, one exported from another
queue in the format README describes ("A history any system can write").

`check(history)` returns a `Checked`: the history read back as a Timeline, what broke (each violation
with the smallest window of events that shows it) and the verdict in words. `Checked.windows()` gives
each violation's window as a Timeline of its own, which `emqlab.view.figures.check_figure` draws.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import BadParameter
from ..core.timeline import Timeline, Verdict
from ..core.words import ModeWords, plural, seconds
from ..queue import invariants as inv
from .base import mode_words

MAX_BYTES = 50_000_000  # a history file larger than this is refused before it is read


@dataclass(frozen=True, kw_only=True)
class CheckVerdict(Verdict):
    """What the check found: the history's own scenario name, how many events it read, each violation
    ({invariant, job, what, first, last, t_first, t_last}: the window's event indices and times), and
    the invariants checked."""

    scenario: str
    events: int
    violations: list
    checked: list


@dataclass(frozen=True)
class Checked:
    """A history, checked: the Timeline, the verdict, and each violation with its window."""

    history: Timeline
    verdict: CheckVerdict
    found: tuple[inv.Found, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.found

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
    found = tuple(inv.check_history(data["events"], names))
    events = tl.events
    violations = [{**f.to_dict(), "t_first": events[f.first].t, "t_last": events[f.last].t} for f in found]
    v = CheckVerdict(scenario=tl.scenario, events=len(events), violations=violations, checked=list(names))
    return Checked(tl, v.worded(words(v)), found)


def words(v: CheckVerdict) -> ModeWords:
    """A check in words: the headline says whether anything broke; each violation a fact."""
    label = f"the {v.scenario} history"
    if not v.violations:
        return ModeWords(label, f"{label} ({plural(v.events, 'event')}): every invariant checked held.",
                         f"{len(v.checked)} invariants held", (f"checked: {', '.join(v.checked)}",))
    broke = sorted({x["invariant"] for x in v.violations}, key=[*inv.INVARIANTS].index)
    first = v.violations[0]
    more = f"; and {plural(len(v.violations) - 1, 'more violation')}" if len(v.violations) > 1 else ""
    headline = f"{label}: {first['invariant']} broke: {first['what']}{more}."
    facts = tuple(f"{x['invariant']}: {x['what']} (events {x['first']}–{x['last']}, {seconds(x['t_first'])} to "
                  f"{seconds(x['t_last'])})" for x in v.violations)
    return ModeWords(label, headline, f"{len(v.violations)} broken: {', '.join(broke)}", facts)


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
