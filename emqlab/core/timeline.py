"""What happened in a run, as plain data: events, intervals, its parameters and verdict. JSON in and out.

Times are model seconds from the start of the run. Nothing here draws or talks to a store.

A run's parameters and its verdict are typed: each scenario declares a frozen `Params` and a
`Verdict` (subclasses of `Record`, fields named once, read as attributes); `Record.to_dict` writes
them to the JSON keys the command line has always printed, in one place.

Every run writes through one protocol, `Recorder`: `t` (model seconds since the run began),
`event(actor, kind, **data)` and `open(actor, kind, **data)` (an interval opened now). What
differs is only where `t` comes from: `ClockRecorder` reads a SimPy clock (in-process runs),
`WallRecorder` the wall clock (the parent side of OS-process runs). `Filtered` wraps any of them
for a run that drops routine events.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any, TypeVar

from .words import ModeWords, as_text

R = TypeVar("R", bound="Record")


def json_name(name: str, *, omit_default: bool = False, load: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """A field's metadata: it is written to JSON as `name`; `omit_default`: left out while it holds its
    default (a key the JSON has only when it means something); `load`: how to read it back."""
    return {"json": name, "omit_default": omit_default, "load": load}


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True, kw_only=True)
class Record:
    """Named facts, frozen. `to_dict` writes each field under its name (or the name its metadata
    gives, `field(metadata=json_name("latency"))`); `from_dict` reads them back."""

    LAST = ()  # fields written after the others (a verdict's words come last, after its facts)

    def to_dict(self) -> dict[str, Any]:
        out, last = {}, {}
        for f in fields(self):
            value = getattr(self, f.name)
            meta = f.metadata
            if meta.get("omit_default") and f.default is not MISSING and value == f.default:
                continue
            (last if f.name in self.LAST else out)[f.name] = (meta.get("json") or f.name, _plain(value))
        return {key: value for key, value in [*out.values(), *(last[n] for n in self.LAST if n in last)]}

    @classmethod
    def from_dict(cls: type[R], data: dict[str, Any]) -> R:
        kw = {}
        for f in fields(cls):
            key = f.metadata.get("json") or f.name
            if key in data:
                load = f.metadata.get("load")
                kw[f.name] = load(data[key]) if load is not None and data[key] is not None else data[key]
        return cls(**kw)

    def but(self: R, **changes: Any) -> R:
        """A copy with `changes` (the record itself never changes)."""
        return replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class Verdict(Record):
    """A run's verdict: the facts read off its events (a scenario's subclass names them), then its
    words, written by the scenario's one words function: `label` (the mode's name in words),
    `headline` (one sentence with the outcome; JSON key `summary`), `facts` (the rest, one short
    fact each), `static` (the short verdict line the course page prints); `text` joins them."""

    LAST = ("label", "headline", "facts", "static")
    label: str = ""
    headline: str = field(default="", metadata=json_name("summary"))
    facts: tuple[str, ...] = field(default=(), metadata=json_name("facts", omit_default=True, load=tuple))
    static: str = ""

    @property
    def text(self) -> str:
        """The full text: the headline, then one line per fact."""
        return as_text(self.headline, self.facts)

    def worded(self: R, words: ModeWords) -> R:
        """This verdict with the words its scenario's words function wrote for it."""
        return self.but(label=words.label, headline=words.headline, facts=words.facts, static=words.static)


def minus(start: float, end: float, holes: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of [start, end) outside every hole (e.g. work outside a stop-the-world pause)."""
    parts, at = [], start
    for a, b in sorted(holes):
        if b <= at or a >= end:
            continue
        if a > at:
            parts.append((at, a))
        at = max(at, b)
    if end > at:
        parts.append((at, end))
    return parts


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most spans that cover one moment (a span ending when another starts does not overlap it)."""
    edges = sorted([(a, 1) for a, b in spans if b > a] + [(b, -1) for a, b in spans if b > a])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


@dataclass
class Event:
    t: float
    actor: str
    kind: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"t": self.t, "actor": self.actor, "kind": self.kind, **self.data}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Event":
        d = dict(d)
        return cls(t=d.pop("t"), actor=d.pop("actor"), kind=d.pop("kind"), data=d)


@dataclass
class Interval:
    """A span on one actor's lane: a lease band (`lease`), work (`run`), a stop-the-world pause (`pause`)."""

    actor: str
    kind: str
    start: float
    end: float | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def overlaps(self, other: "Interval") -> bool:
        end_a = self.end if self.end is not None else float("inf")
        end_b = other.end if other.end is not None else float("inf")
        return self.start < end_b and other.start < end_a


@dataclass
class Timeline:
    scenario: str
    params: Any  # the scenario's Params record (a plain dict for a timeline read back untyped)
    backend: str = "fake"
    clock: str = "virtual"
    events: list[Event] = field(default_factory=list)
    intervals: list[Interval] = field(default_factory=list)
    verdict: Any = field(default_factory=dict)  # the scenario's Verdict once the run is read
    counts: dict[str, Any] = field(default_factory=dict)

    # -- recording ---------------------------------------------------------------------------
    def add(self, t: float, actor: str, kind: str, **data: Any) -> Event:
        event = Event(round(t, 3), actor, kind, data)
        self.events.append(event)
        return event

    def open(self, t: float, actor: str, kind: str, **data: Any) -> Interval:
        interval = Interval(actor, kind, round(t, 3), None, data)
        self.intervals.append(interval)
        return interval

    def finish(self) -> None:
        """Order events by time (stable: same-time events keep the order they happened in)."""
        self.events.sort(key=lambda e: e.t)

    # -- reading -----------------------------------------------------------------------------
    def of(self, kind: str, actor: str | None = None) -> list[Event]:
        return [e for e in self.events if e.kind == kind and (actor is None or e.actor == actor)]

    def first(self, kind: str, actor: str | None = None,
              where: Callable[[Event], Any] | None = None) -> Event | None:
        """The earliest recorded event of `kind` (on `actor`'s lane, and for which `where(event)` holds, if given);
        None if there is none. One pass that stops at the first hit."""
        for e in self.events:
            if e.kind == kind and (actor is None or e.actor == actor) and (where is None or where(e)):
                return e
        return None

    def last(self, kind: str, actor: str | None = None,
             where: Callable[[Event], Any] | None = None) -> Event | None:
        """The latest recorded event of `kind` (as `first`, from the end)."""
        for e in reversed(self.events):
            if e.kind == kind and (actor is None or e.actor == actor) and (where is None or where(e)):
                return e
        return None

    def spans(self, kind: str, actor: str | None = None) -> list[Interval]:
        return [i for i in self.intervals if i.kind == kind and (actor is None or i.actor == actor)]

    @property
    def actors(self) -> list[str]:
        seen: dict[str, None] = {}
        for item in [*self.intervals, *self.events]:
            seen.setdefault(item.actor, None)
        return list(seen)

    @property
    def text(self) -> str:
        """The run's full text, as the command line prints it: the headline, then its facts."""
        if isinstance(self.verdict, Verdict):
            return self.verdict.text
        return as_text(self.verdict.get("summary", ""), self.verdict.get("facts", ()))

    # -- JSON --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "params": _plain(self.params),
            "backend": self.backend,
            "clock": self.clock,
            "events": [e.to_dict() for e in self.events],
            "intervals": [asdict(i) for i in self.intervals],
            "verdict": _plain(self.verdict),
            **self.counts,
        }

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any], params: type[Record] | None = None,
                  verdict: type[Verdict] | None = None) -> "Timeline":
        """A timeline read back; its params and verdict typed as `params` and `verdict` (a scenario's own
        records: `emqlab.scenarios.load` picks them by the scenario's name), else left as plain dicts."""
        known = {"scenario", "params", "backend", "clock", "events", "intervals", "verdict"}
        p, v = d.get("params", {}), d.get("verdict", {})
        return cls(
            scenario=d["scenario"],
            params=params.from_dict(p) if params is not None else p,
            backend=d.get("backend", "fake"),
            clock=d.get("clock", "virtual"),
            events=[Event.from_dict(e) for e in d.get("events", [])],
            intervals=[Interval(**i) for i in d.get("intervals", [])],
            verdict=verdict.from_dict(v) if verdict is not None and v else v,
            counts={k: v for k, v in d.items() if k not in known},
        )

    @classmethod
    def from_json(cls, text: str, params: type[Record] | None = None,
                  verdict: type[Verdict] | None = None) -> "Timeline":
        return cls.from_dict(json.loads(text), params, verdict)


# -- the one recorder protocol --------------------------------------------------------------------
class Recorder:
    """Where a run writes what happened: events and intervals on one Timeline, stamped `t`."""

    def __init__(self, timeline: Timeline):
        self.timeline = timeline

    @property
    def t(self) -> float:
        """Model seconds since the run began."""
        raise NotImplementedError

    def event(self, actor: str, kind: str, **data: Any) -> Event | None:
        return self.timeline.add(self.t, actor, kind, **data)

    def open(self, actor: str, kind: str, **data: Any) -> Interval:
        """An interval on `actor`'s lane, opened now; the caller sets its `end`."""
        return self.timeline.open(self.t, actor, kind, **data)


class ClockRecorder(Recorder):
    """In-process runs: `t` is the SimPy clock's model time since the recorder was made. `clock` is one of
    emqlab.store.clock's (its `now_ms` and `to_s`)."""

    def __init__(self, timeline: Timeline, clock: Any):
        super().__init__(timeline)
        self.clock, self.t0_ms = clock, clock.now_ms

    @property
    def t(self) -> float:
        return self.clock.to_s(self.clock.now_ms - self.t0_ms)

    def ms_to_t(self, model_ms: float) -> float:
        """A clock reading (model ms) on this run's time base (model seconds)."""
        return self.clock.to_s(model_ms - self.t0_ms)


class WallRecorder(Recorder):
    """The parent side of an OS-process run: `t` is the model time since `t0_wall` (wall time) as `clock`, a
    real clock, converts it: the time base the child processes stamp their events on."""

    def __init__(self, timeline: Timeline, t0_wall: float, clock: Any):
        super().__init__(timeline)
        self.t0_wall, self.clock = t0_wall, clock

    @property
    def t(self) -> float:
        return self.clock.model_s(time.time() - self.t0_wall)

    def sleep_until(self, t: float) -> None:
        time.sleep(self.clock.real_s(max(0.0, t - self.t)))

    @contextmanager
    def off_the_clock(self):
        """A step whose real duration is no part of the story (a server starting up): model time stands
        still while it runs, so what follows is timed as if it took none."""
        started = time.time()
        try:
            yield
        finally:
            self.t0_wall += time.time() - started


Keep = Callable[[str, dict[str, Any]], bool]


class Filtered(Recorder):
    """A recorder that keeps only what its predicates accept, `keep(kind, data) -> bool`.

    A dropped event returns None; a dropped interval is still returned (its owner may close it),
    but it is detached: it never reaches the timeline."""

    def __init__(self, inner: Recorder, keep_event: Keep | None = None, keep_interval: Keep | None = None):
        super().__init__(inner.timeline)
        self.inner, self.keep_event, self.keep_interval = inner, keep_event, keep_interval

    @property
    def t(self) -> float:
        return self.inner.t

    def event(self, actor: str, kind: str, **data: Any) -> Event | None:
        if self.keep_event is not None and not self.keep_event(kind, data):
            return None
        return self.inner.event(actor, kind, **data)

    def open(self, actor: str, kind: str, **data: Any) -> Interval:
        if self.keep_interval is not None and not self.keep_interval(kind, data):
            return Interval(actor, kind, round(self.t, 3), None, data)
        return self.inner.open(actor, kind, **data)
