"""What every scenario run shares: a backend (opened here if none is given), a fresh key prefix
that is deleted when the run ends however it ends, a timeline, and the run's round-trip count."""

from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Any, Iterator

from ..backend import Backend, connect
from ..errors import BadParameter
from ..timeline import Timeline


def positive(name: str, value: Any, unit: str = "model seconds") -> float:
    """Validate a duration or count that must be > 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise BadParameter(f"{name} must be a number > 0 ({unit}), got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise BadParameter(f"{name} must be a number > 0 ({unit}), got {value!r}")
    return number


class Run:
    """One scenario run on one backend."""

    def __init__(self, backend: Backend, scenario: str, params: dict[str, Any]):
        self.backend = backend
        self.clock = backend.clock
        self.prefix = backend.run_prefix(scenario)
        self.t0_ms = self.clock.now_ms
        self.timeline = Timeline(scenario, params, backend=backend.name, clock=self.clock.name)
        self._counter_start = backend.counter.snapshot()

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    @property
    def t(self) -> float:
        """Model seconds since the run began."""
        return (self.clock.now_ms - self.t0_ms) / 1000.0

    def ms_to_t(self, model_ms: float) -> float:
        return (model_ms - self.t0_ms) / 1000.0

    def event(self, actor: str, kind: str, **data: Any):
        return self.timeline.add(self.t, actor, kind, **data)

    def round_trips(self) -> tuple[int, int]:
        rt, cmds = self.backend.counter.snapshot()
        return rt - self._counter_start[0], cmds - self._counter_start[1]

    def close(self) -> None:
        rt, cmds = self.round_trips()
        self.timeline.counts.update(round_trips=rt, commands=cmds)
        self.timeline.finish()


@contextmanager
def run_on(backend: Backend | str | None, scenario: str, params: dict[str, Any], **connect_kw: Any) -> Iterator[Run]:
    """Open (or reuse) a backend, give the run its own prefix, and always delete the run's keys."""
    owned = not isinstance(backend, Backend)
    be = connect(backend, **connect_kw) if owned else backend
    try:
        run = Run(be, scenario, params)
        try:
            yield run
            run.close()  # count before the clean-up's own round trips
        finally:
            be.delete_prefix(run.prefix)
    finally:
        if owned:
            be.close()
