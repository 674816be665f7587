"""A chaos run's faults: the plan (when each crash and pause falls due, and on which consumer slot), how long a
fault that finds no consumer to strike waits for one, and the record of a fault that could not land.

Shared by the in-process run (`emqlab.scenarios.chaos`) and the one with OS processes
(`emqlab.scenarios.os_processes`); `params` is a chaos run's `Params`.
"""

from __future__ import annotations

import random

from ..core.kinds import Kind


# a fault due while no consumer is in, awake and alive waits for one, and is looked for again every beat;
# on the virtual clock a free consumer comes back within a pause plus a supervisor's restart (a beat), so
# the wait is bounded by that (OS processes add the boot bound: `emqlab.scenarios.os_processes.fault_wait`)
def fault_wait(params) -> float:
    """Model seconds a due fault waits for a free consumer before it is reported undelivered."""
    return params.pause_seconds + 2 * params.beat


def undelivered(recorder, at: float, fault: str, why: str) -> None:
    """A planned fault (crash | pause, due `at` model seconds after the faults began) that could not land:
    an event the verdict lists and the words name."""
    recorder.event("supervisor", Kind.FAULT_UNDELIVERED, at=round(at, 3), fault=fault, why=why)


def fault_plan(params, rng: random.Random) -> list[tuple[float, str, int]]:
    """(model second, crash|pause, which consumer slot), spread over the run's expected length."""
    expected = params.jobs * params.job / params.workers
    plan = [(rng.uniform(0.05, 0.8) * expected, "crash", rng.randrange(params.workers))
            for _ in range(params.kills)]
    plan += [(rng.uniform(0.05, 0.8) * expected, "pause", rng.randrange(params.workers))
             for _ in range(params.pauses)]
    return sorted(plan)
