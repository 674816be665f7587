"""What happened in a run, as plain data: events, intervals, a verdict. JSON in and out.

Times are model seconds from the start of the run. Nothing here draws or talks to a store.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


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
    params: dict[str, Any]
    backend: str = "fake"
    clock: str = "virtual"
    events: list[Event] = field(default_factory=list)
    intervals: list[Interval] = field(default_factory=list)
    verdict: dict[str, Any] = field(default_factory=dict)
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

    def spans(self, kind: str, actor: str | None = None) -> list[Interval]:
        return [i for i in self.intervals if i.kind == kind and (actor is None or i.actor == actor)]

    @property
    def actors(self) -> list[str]:
        seen: dict[str, None] = {}
        for item in [*self.intervals, *self.events]:
            seen.setdefault(item.actor, None)
        return list(seen)

    @property
    def summary(self) -> str:
        return self.verdict.get("summary", "")

    # -- JSON --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "params": self.params,
            "backend": self.backend,
            "clock": self.clock,
            "events": [e.to_dict() for e in self.events],
            "intervals": [asdict(i) for i in self.intervals],
            "verdict": self.verdict,
            **self.counts,
        }

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Timeline":
        known = {"scenario", "params", "backend", "clock", "events", "intervals", "verdict"}
        return cls(
            scenario=d["scenario"],
            params=d.get("params", {}),
            backend=d.get("backend", "fake"),
            clock=d.get("clock", "virtual"),
            events=[Event.from_dict(e) for e in d.get("events", [])],
            intervals=[Interval(**i) for i in d.get("intervals", [])],
            verdict=d.get("verdict", {}),
            counts={k: v for k, v in d.items() if k not in known},
        )

    @classmethod
    def from_json(cls, text: str) -> "Timeline":
        return cls.from_dict(json.loads(text))
