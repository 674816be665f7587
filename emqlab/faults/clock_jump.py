"""A step of the server's clock: an NTP step, a resumed VM, an operator's `date -s`.

Valkey keeps a key's expiry as an absolute time on its own wall clock and the reaper reads the server's
`TIME`, so a step of that clock moves every deadline the server holds at once: forward, every lease
whose end the new time has passed is gone and every active job whose score it passed is due; back, a
lease outlives its TTL by the step. The workers' clocks do not move.

`ClockJump` is the fault (`AT:SECONDS`, model seconds; SECONDS < 0 steps back); `jumping` is the
process that makes it on the run's store (`Backend.jump_server_clock`) and records it as the server's
`clock_jump` event. `server_time` and `expires_at` read a run's jumps back: where the server's clock
stood at a model time, and when a deadline the server set is reached on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import BadParameter
from ..core.kinds import Kind
from ..core.timeline import Timeline
from ..store.clock import to_ms
from .pauses import at_seconds

SERVER = "server"  # the actor of a clock jump's event: neither worker's clock moves


@dataclass(frozen=True)
class ClockJump:
    """Step the server's clock by `seconds` (model seconds; back when negative) at model time `at`."""

    at: float
    seconds: float

    @classmethod
    def parse(cls, spec: "str | ClockJump | tuple | None") -> "ClockJump | None":
        if spec is None or isinstance(spec, ClockJump):
            return spec
        at, seconds = at_seconds(spec, "clock jump", ("clock_jump_at", "clock_jump"), "20:60 or 20:-60 (back)")
        if seconds == 0:
            raise BadParameter("a clock jump of 0 s moves nothing: give a step from -3600 to 3600 model seconds, not 0")
        return cls(float(at), float(seconds))

    @classmethod
    def from_dict(cls, d: dict) -> "ClockJump":
        """A jump as a run's JSON carries it: {"at": …, "seconds": …}."""
        return cls(float(d["at"]), float(d["seconds"]))


def jumping(run: Any, jump: ClockJump):
    """A process: at `jump.at`, step the run's store clock by `jump.seconds` and record it."""
    clock = run.clock
    yield clock.timeout(max(0.0, to_ms(jump.at) - (clock.now_ms - run.t0_ms)))
    run.backend.jump_server_clock(to_ms(jump.seconds))
    run.event(SERVER, Kind.CLOCK_JUMP, seconds=jump.seconds)


def jumps(timeline: Timeline) -> list[tuple[float, float]]:
    """(model time, step in seconds) of each clock jump the run made, in order."""
    return [(e.t, float(e.data["seconds"])) for e in timeline.of(Kind.CLOCK_JUMP, SERVER)]


def server_time(steps: list[tuple[float, float]], t: float) -> float:
    """Where the server's clock stood at model time `t`, in model seconds since the run began."""
    return t + sum(s for at, s in steps if at <= t)


def expires_at(steps: list[tuple[float, float]], set_at: float, deadline: float) -> float:
    """The model time at which a deadline the server set at `set_at` (to `deadline`, on the clock as it stood
    then) is reached on the server's clock: `deadline` itself with no jump between, the jump's moment for a
    forward step past it, later by the step for a backward one."""
    target = server_time(steps, set_at) + (deadline - set_at)
    t = set_at
    for at, s in [(at, s) for at, s in steps if at > set_at] + [(float("inf"), 0.0)]:
        reached = t + (target - server_time(steps, t))  # before the next step, the clock runs with the model's
        if reached <= at:
            return round(max(reached, t), 3)
        t = at
        if server_time(steps, t) >= target:  # the step itself carried the clock past the deadline
            return round(t, 3)
    return round(deadline, 3)


__all__ = ["ClockJump", "SERVER", "expires_at", "jumping", "jumps", "server_time"]
