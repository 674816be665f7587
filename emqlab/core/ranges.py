"""Every number emqlab takes, with its finite range, in one table.

`RANGES` names each numeric flag and parameter once: its lowest and highest allowed value, its
unit, whether it is whole, and what the range protects. The library checks each number
once, where it is taken (`within`: the scenarios' public functions, `Leases`, `Queue`, the store, the
class), so a number is refused the same way everywhere: one sentence naming the range, raised as
`BadParameter` (CLI: one line, exit 2) before anything starts. The CLI only parses (`parse`) and
shows each range in its `--help`.

Ranges alone cannot bound a run (a 3600 s job renewed every 0.05 × 0.1 s is in range, part by
part), so `check_run` also bounds what a whole run costs before it starts: at most
`REAL_SECONDS_LIMIT` of wall-clock time on a real clock (the model span × scale), and at most
`STEP_LIMIT` store steps (one step ≈ one round trip, at most ≈ 0.3 ms here on fakeredis and on
a local Valkey). What a run costs is its scenario's to say (what a renewal design costs per lease
held is its entry's in `emqlab.lease.designs`). Measured on this 2-core machine, the costliest runs
the limits allow finish in about a minute (see RUN_BOUND); anything costlier is refused in well
under a second.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from .errors import BadParameter

REAL_SECONDS_LIMIT = 60.0  # a run on a real clock lasts at most this many real seconds (model span × scale)
STEP_LIMIT = 150_000  # a run takes at most this many store steps (round trips, weighted: see check_run)
# Measured on this project's 2-core machine, loaded, at the limits (2026-12-01): chaos --jobs 22000 on
# fakeredis 52 s; renewal-cost --design sweep --jobs 100000 --ticks 4 31 s; --design per-job --jobs 74000
# 27 s; heartbeat on live Valkey near the 60 s real-time limit 30 s. The bound keeps a margin over them.
RUN_BOUND = "about 90 s"
# A library's run (emqlab tools) keeps the library's own clock, which no scale can speed up, and RQ alone
# waits a fixed 60 s past a killed worker's last heartbeat before it calls the job abandoned: such a run
# may last this long (real seconds, its story; the workers' boot is on top, ~5 s here).
TOOLS_SECONDS_LIMIT = 80.0


@dataclass(frozen=True)
class Range:
    """One number's allowed values: `low` to `high` inclusive, in `unit`; `whole`: an integer."""

    name: str
    low: float
    high: float
    unit: str
    whole: bool = False
    bounds: str = ""  # what the range protects (why these ends)
    template: str = "{}"  # how the CLI flag carries the number ("10:{}" for --pause AT:SECONDS)

    def text(self) -> str:
        lo, hi = (f"{int(v)}" if float(v).is_integer() else f"{v:g}" for v in (self.low, self.high))
        return f"{lo} to {hi}" + (f" {self.unit}" if self.unit else "")

    def rule(self) -> str:
        kind = "a whole number" if self.whole else "a number"
        return f"{self.name} must be {kind} from {self.text()}"


def _r(name, low, high, unit, whole=False, bounds="", template="{}") -> tuple[str, Range]:
    return name, Range(name, low, high, unit, whole, bounds, template)


MODEL_S = "model seconds"
RANGES: dict[str, Range] = dict([
    # durations, model seconds
    _r("lease", 0.1, 3600, MODEL_S, bounds="a lease the store can set (PX >= 1 ms) and a run can wait out"),
    _r("job", 0.1, 3600, MODEL_S, bounds="how long one job works"),
    _r("beat", 0.1, 600, MODEL_S, bounds="a consumer's beat: how often it reaps and claims"),
    _r("crash_at", 0.1, 3600, MODEL_S, bounds="when worker-1 dies (inside the job)"),
    _r("late_at", 0.1, 10800, MODEL_S, bounds="when the stale completion arrives"),
    _r("poll", 0.1, 600, MODEL_S, bounds="how often the contender tries the lock"),
    _r("pause", 0.1, 3600, MODEL_S, bounds="a stop-the-world pause's length (--pause AT:SECONDS)", template="10:{}"),
    _r("pause_at", 0, 3600, MODEL_S, bounds="when a stop-the-world pause starts", template="{}:10"),
    _r("clock_jump", -3600, 3600, MODEL_S, bounds="a step of the server's clock, back when negative "
       "(--clock-jump AT:SECONDS); never 0", template="20:{}"),
    _r("clock_jump_at", 0, 3600, MODEL_S, bounds="when the server's clock steps", template="{}:60"),
    _r("latency", 0, 600, MODEL_S, bounds="the one-way delay of the holder's link (heartbeat --latency)"),
    _r("max_runtime", 1, 3600, MODEL_S, bounds="a job's hard deadline, set once at claim (stuck and explore --max-runtime); "
       "the run watches it + 2 leases"),
    _r("cadence", 0.05, 2, "× the lease", bounds="time between renewals (half = 0.5)"),
    _r("scale", 0.0001, 1, "real seconds per model second", bounds="real clock speed (1e-4: a 30 s lease is 3 ms)"),
    # counts
    _r("ticks", 1, 10_000, "ticks", True, "renewal ticks a renewal-cost run measures"),
    _r("jobs", 1, 10_000_000, "jobs", True, "jobs enqueued (chaos) or leases held (renewal-cost K); what a run "
       "costs bounds it further (renewal-cost: per design, a session's tick is one call at any K)"),
    _r("burst", 1, 100_000, "jobs", True, "jobs one burst enqueues on a class queue (emqlab class enqueue N)"),
    _r("steal_at", 0, 3600, MODEL_S, bounds="when another token takes a job's key (renewal-cost --steal AT:JOB)"),
    _r("batch", 1, 2_000, "leases per call", True, "leases one sweep script call carries (keeps a call ~ms)"),
    _r("workers", 1, 64, "consumers", True, "consumers (threads of one process, or OS processes)"),
    _r("kills", 0, 1_000, "crashes", True, "consumer crashes chaos inflicts"),
    _r("pauses", 0, 1_000, "pauses", True, "stop-the-world pauses chaos inflicts"),
    _r("seed", 0, 2**32 - 1, "", True, "the fault plan's random seed"),
    _r("port", 1, 65535, "", True, "a TCP port"),
    _r("learners", 1, 200, "learners", True, "seats of a class (emqlab class serve): one ACL user each"),
    _r("line", 1, 200, "", True, "which line of a join file (emqlab class join --line)"),
    _r("work", 0.01, 60, "seconds", bounds="how long a class worker works each job (emqlab class join --work)"),
    # a library's run (emqlab tools): real seconds, on the library's own clock
    _r("task", 0.5, 20, "seconds", bounds="how long the task body of a library's run works (emqlab tools --task)"),
    _r("timeout", 0.2, 60, "seconds", bounds="a library's own timeout (emqlab tools --timeout): Celery's "
       "visibility_timeout, BullMQ's lockDuration, RQ's job_monitoring_interval, a lock's timeout or expire"),
    _r("tools_pause_at", 0.1, 60, "seconds", bounds="when a library's holder is frozen, seconds into its job "
       "(emqlab tools python-redis-lock --pause-at)"),
    # the explorer's small world (emqlab explore): every order of every step, so the world stays small
    _r("explore_workers", 1, 3, "workers", True, "workers in the explorer's world: each one multiplies the orders"),
    _r("explore_jobs", 1, 2, "jobs", True, "jobs in the explorer's world"),
    _r("reap_limit", 1, 1000, "jobs", True, "the most jobs one reap call takes back (explore --reap-limit; the "
       "course's LIMIT is 100)"),
    _r("depth", 1, 24, "steps", True, "the longest schedule the explorer tries (every shorter one too)"),
    _r("states", 1, 40_000, "states", True, "the explorer's state budget: it stops (incomplete) at this many "
       "distinct states; the largest budget runs in about 90 s on fakeredis here (benchmarks/explore.py)"),
    # the library's own numbers (no flag)
    _r("ttl_ms", 1, 86_400_000, "model milliseconds", bounds="a lease's time to live in the library API"),
    _r("delay_ms", 0, 86_400_000, "model milliseconds", bounds="a retry or enqueue delay"),
    _r("attempts", 1, 2**63 - 1, "", True, "a job's fencing token (the store's 64-bit counter)"),
    _r("max_attempts", 1, 1_000, "attempts", True, "attempts a job gets before a failure sends it to the dead set"),
])
ALIASES = {"renew": "cadence", "crash-at": "crash_at", "late-at": "late_at", "max-runtime": "max_runtime"}  # flag names read as table names


def get(name: str) -> Range:
    """The range of `name` (a table name or a flag alias). A number without one is a bug: add it above."""
    key = ALIASES.get(name, name)
    if key not in RANGES:
        raise LookupError(f"emqlab/core/ranges.py has no range for {name!r}: every number needs one")
    return RANGES[key]


def within(name: str, value: Any) -> float | int:
    """`value` if it is a finite number inside `name`'s range (an int for whole ones), else BadParameter.
    A bool is not a number here; a whole number may be given as an integral float (3.0)."""
    rng = get(name)
    number = value  # a string is not a number here: the CLI parses text (`arg`), the library takes numbers
    ok = isinstance(number, (int, float)) and not isinstance(number, bool) and math.isfinite(number)
    if ok and rng.whole:
        ok = float(number).is_integer()
    if not ok or not rng.low <= number <= rng.high:
        raise BadParameter(f"{rng.rule()}, got {value!r}")
    return int(number) if rng.whole else float(number)


_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", re.ASCII)


def parse(text: str, *, whole: bool = False) -> float | int | None:
    """Text as a number, or None when it is none here: nan, inf, 1_0 and 0x10 are not numbers to emqlab.
    A whole number stays an int (a float for a number with a point or an exponent)."""
    text = text.strip()
    if whole and re.fullmatch(r"[+-]?\d+", text, re.ASCII):
        return int(text)
    return float(text) if _NUMBER.fullmatch(text) else None


# -- whole runs ------------------------------------------------------------------------------
def check_run(what: str, span_s: float, steps: float, *, clock: Any) -> None:
    """Refuse a run that would last over REAL_SECONDS_LIMIT real seconds on a real clock (its model span, as
    the `clock` the run will have converts it), or whose store steps exceed STEP_LIMIT: each part may be in
    range while the whole would run for hours. Each scenario states what its run costs (its Params'
    `cost()`); `run_on` asks this before a store opens."""
    if clock.real and (real_s := clock.real_s(span_s)) > REAL_SECONDS_LIMIT:
        raise BadParameter(
            f"{what} would run about {span_s:,.0f} model seconds = {real_s:,.0f} real seconds at scale "
            f"{clock.scale:g}; a run may last at most {REAL_SECONDS_LIMIT:g} real seconds: shorten it or lower --scale")
    if steps > STEP_LIMIT:
        raise BadParameter(
            f"{what} would take about {steps:,.0f} store steps; a run may take at most {STEP_LIMIT:,}: "
            "use fewer jobs or ticks, a longer beat, poll or cadence, or a shorter job")


def table_lines() -> list[str]:
    """The table as text (for a README or a report)."""
    return [f"{r.name:10} {r.text():45} {r.bounds}" for r in RANGES.values()]
