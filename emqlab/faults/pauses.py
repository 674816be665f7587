"""Faults a run can suffer. A stop-the-world pause halts every process of one worker at once.

`World` groups a worker's SimPy processes (its work and its renewer). `World.sleep` is how those
processes wait: in *work* mode paused time does not count (the job makes no progress while the
world is stopped); in *deadline* mode a wait for an absolute time that passes during a pause
returns at the moment the world resumes (an overdue timer fires late, it is not skipped).
"""

from __future__ import annotations

from dataclasses import dataclass

import simpy

from ..core.errors import BadParameter
from ..core.ranges import within

PAUSE = "pause"


def at_seconds(spec: "str | tuple | list", what: str, ranges: tuple[str, str], example: str) -> tuple[float, float]:
    """A fault's `AT:SECONDS` (or an (at, seconds) pair), each checked against its range in the one table
    (`ranges`: the names of AT's and SECONDS's) before anything runs; `what` and `example` word the refusal."""
    if isinstance(spec, (tuple, list)):
        at, seconds = spec
    else:
        try:
            at_text, seconds_text = str(spec).split(":")
            at, seconds = float(at_text), float(seconds_text)
        except ValueError:
            raise BadParameter(f"{what} {spec!r} must be AT:SECONDS, e.g. {example} (model seconds)") from None
    return float(within(ranges[0], at)), float(within(ranges[1], seconds))  # finite and in range


@dataclass(frozen=True)
class Pause:
    """Stop the world at `at` for `seconds` (model seconds)."""

    at: float
    seconds: float

    @classmethod
    def parse(cls, spec: "str | Pause | tuple | None") -> "Pause | None":
        if spec is None or isinstance(spec, Pause):
            return spec
        return cls(*at_seconds(spec, "pause", ("pause_at", "pause"), "20:40"))

    @classmethod
    def from_dict(cls, d: dict) -> "Pause":
        """A pause as a run's JSON carries it: {"at": …, "seconds": …}."""
        return cls(float(d["at"]), float(d["seconds"]))


class World:
    """The processes of one worker, which a pause stops together."""

    def __init__(self, clock):
        self.clock = clock
        self.members: list[simpy.Process] = []
        self.paused = False
        self._resumed: simpy.Event | None = None

    def join(self, process: simpy.Process) -> simpy.Process:
        self.members.append(process)
        return process

    def stop_the_world(self, ms: float):
        """A process: freeze every member for `ms` model milliseconds."""
        self.paused = True
        self._resumed = self.clock.event()
        for proc in self.members:
            if proc.is_alive and proc is not self.clock.env.active_process:
                proc.interrupt(PAUSE)
        yield self.clock.timeout(ms)
        self.paused = False
        self._resumed.succeed()

    def sleep(self, ms: float, *, work: bool):
        """Wait `ms` of this worker's time (see module doc). Other interrupts propagate to the caller."""
        clock = self.clock
        target = clock.now_ms + ms
        remaining = ms
        while True:
            if self.paused:
                yield self._resumed
            left = remaining if work else target - clock.now_ms
            if left <= 0:
                return
            started = clock.now_ms
            try:
                yield clock.timeout(left)
                return
            except simpy.Interrupt as interrupt:
                if interrupt.cause != PAUSE:
                    raise
                remaining -= clock.now_ms - started

    def wait(self, event: simpy.Event):
        """Wait for `event` (a reply on the wire, a timeout) as this worker: a pause does not stop the
        event, but a worker frozen when it fires sees it only when the world resumes. Other interrupts
        propagate to the caller."""
        while True:
            try:
                if self.paused:
                    yield self._resumed
                return (yield event)
            except simpy.Interrupt as interrupt:
                if interrupt.cause != PAUSE:
                    raise
