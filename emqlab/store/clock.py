"""Clocks: SimPy environments measured in integer model milliseconds.

`VirtualClock` is instant and deterministic: the store (fakeredis) reads the same clock, so a 30 s
lease expires at exactly t = 30 000 ms. `RealClock` is SimPy's real-time environment with
1 model second = `scale` real seconds; every duration sent to a live server is scaled by the same
factor, so the store's own clock keeps the model's time.

Model code is identical in both: it asks the clock for timeouts and converts durations for the
server with `to_server_ms` / `from_server_ms`. What must happen in real time (a process's boot allowance,
a relay's delay, a wait outside SimPy) is converted by the real clock alone, `real_s` / `model_s`: the
scale is the clock's, and no code outside `emqlab.store` does arithmetic with it (a test walks the AST).
The scale is range-checked once, where a store's specification is made (`emqlab.store.backend.store_spec`).
"""

from __future__ import annotations

import time

import simpy
import simpy.rt

from ..core.errors import BadParameter

DEFAULT_SCALE = 0.01
MS_PER_S = 1000.0  # model milliseconds in a model second: what a scenario's seconds become at the clock's API


# -- the two units of model time ----------------------------------------------------------------
# A duration is in model milliseconds (`*_ms`) wherever the clock, a lease or the queue takes one: the clock's
# timeouts, a lease's TTL, a queue's lease and delays, a link's latency. It is in model seconds (`*_s`, or a
# scenario's flag-named parameter: `lease`, `job`, `beat`, `latency`) wherever a person reads it: the CLI's flags,
# a scenario's parameters, the timeline's `t`, the words. What the store is sent and reports (PX, a PTTL, a lease's
# score, TIME) is in server milliseconds, which `to_server_ms`/`from_server_ms` turn to and from model ones.
# Outside emqlab.store the seconds and the milliseconds meet only here: `to_ms`/`to_s`, `wall_ms_since` for what
# a call cost on this machine, `time_reply_ms`/`time_reply_s` for the server's TIME (tests/store/test_units.py
# walks the package's AST for any other; the store's own modules convert where they read the store).


def to_ms(model_s: float) -> float:
    """Seconds in milliseconds: a scenario's parameter or a timeline's `t` as the clock's and the store's APIs take
    it (model time; where nothing is scaled, a class or a library's run, the same holds of real time)."""
    return model_s * MS_PER_S


def to_s(model_ms: float) -> float:
    """Milliseconds in seconds: the clock's reading or a grant's TTL as a person reads it (model time; unscaled,
    real time alike)."""
    return model_ms / MS_PER_S


def wall_ms_since(started: float) -> float:
    """Real milliseconds since a `time.perf_counter()` reading: what a call cost on this machine."""
    return to_ms(time.perf_counter() - started)


def time_reply_ms(reply) -> int:
    """The store's TIME reply (seconds, microseconds) as whole server milliseconds."""
    seconds, micros = reply
    return int(seconds) * 1000 + int(micros) // 1000


def time_reply_s(reply) -> float:
    """The store's TIME reply (seconds, microseconds) as server seconds."""
    seconds, micros = reply
    return seconds + micros / 1e6


class VirtualClock:
    """Deterministic model time; nothing waits."""

    real = False
    name = "virtual"
    scale = 1.0

    def __init__(self) -> None:
        self.env = self._make_env()
        self.server_offset_ms = 0.0  # how far a jump moved the fake store's clock from this one (model ms)

    to_ms = staticmethod(to_ms)  # for code that holds a clock and sits below emqlab.store (core.timeline)
    to_s = staticmethod(to_s)

    def _make_env(self) -> simpy.Environment:
        return simpy.Environment()

    @property
    def now_ms(self) -> int:
        return int(self.env.now)

    @property
    def now(self) -> float:
        """Model seconds."""
        return self.env.now / 1000.0

    def timeout(self, ms: float) -> simpy.events.Timeout:
        return self.env.timeout(ms)

    def process(self, generator):
        return self.env.process(generator)

    def event(self) -> simpy.events.Event:
        return self.env.event()

    def run(self, until=None) -> None:
        self.env.run(until=until)

    def rewind(self, at_ms: int) -> None:
        """Start the clock afresh at model time `at_ms`, earlier or later, with nothing scheduled: what
        lets a search put the store back into a state it saw *and* the clock back to when it saw it
        (`emqlab.scenarios.explore`). Only a virtual clock moves so; real time does not go back."""
        if self.real:
            raise BadParameter("a real clock cannot be rewound: only the virtual clock's time is the model's to set")
        self.env = simpy.Environment(initial_time=int(at_ms))

    def to_server_ms(self, model_ms: float) -> int:
        """A model duration as the milliseconds to send to the store (PX, PEXPIRE, lease scores)."""
        return int(round(model_ms))

    def from_server_ms(self, server_ms: float) -> float:
        """A duration the store reported, back in model milliseconds."""
        return float(server_ms)


class RealClock(VirtualClock):
    """Scaled real time: 1 model second lasts `scale` real seconds. Only how a step waits changes.
    `scale` comes checked from a store's specification (`store_spec`), or is one of emqlab's constants."""

    real = True
    name = "real"

    def __init__(self, scale: float = DEFAULT_SCALE, strict: bool = False) -> None:
        self.scale = float(scale)
        # lax by default: a late wake-up on a loaded machine shifts the run instead of aborting it;
        # what the store saw is still what the timeline records.
        self.strict = strict
        super().__init__()

    def _make_env(self) -> simpy.Environment:
        self._running = False
        return simpy.rt.RealtimeEnvironment(factor=self.scale / 1000.0, strict=self.strict)

    @property
    def now_ms(self) -> float:
        """While running: the model time the wall clock says it is now. A process that woke late
        (a loaded machine) records when it really acted, not when it was due."""
        env = self.env
        if not self._running:
            return env.now
        wall = env.env_start + (time.monotonic() - env.real_start) / env.factor
        return max(env.now, wall)

    def timeout(self, ms: float) -> simpy.events.Timeout:
        """`ms` from the moment the caller really is at, as a real program's sleep would be:
        a late wake-up delays what follows instead of being made up for."""
        return self.env.timeout(max(0.0, self.now_ms + ms - self.env.now))

    def run(self, until=None) -> None:
        # The wall clock restarts at the model's present: SimPy's sync() resets only the real side,
        # so a clock reused across runs would otherwise wait out every earlier run again.
        self.env.env_start = self.env.now
        self.env.sync()
        self._running = True
        try:
            self.env.run(until=until)
        finally:
            self._running = False

    def to_server_ms(self, model_ms: float) -> int:
        return max(1, int(round(model_ms * self.scale)))

    def from_server_ms(self, server_ms: float) -> float:
        return float(server_ms) / self.scale

    def real_s(self, model_s: float) -> float:
        """How long `model_s` model seconds last in real seconds (a boot allowance, a relay's delay)."""
        return float(model_s) * self.scale

    def model_s(self, real_s: float) -> float:
        """How many model seconds `real_s` real seconds are (time spent outside SimPy, a wall-clock reading)."""
        return float(real_s) / self.scale


def make_clock(clock: str, scale: float = DEFAULT_SCALE):
    if clock == "virtual":
        return VirtualClock()
    if clock == "real":
        return RealClock(scale)
    raise BadParameter(f"unknown clock {clock!r}; allowed: virtual, real")
