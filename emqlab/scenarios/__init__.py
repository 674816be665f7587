"""The course's runs: each module runs one story on a backend and returns a Timeline, with the one
function that puts the run into words. Import the one you use (`from emqlab.scenarios.heartbeat
import heartbeat`): nothing here loads a scenario before it is asked for."""

from __future__ import annotations

from importlib import import_module
from typing import Any

# each scenario's name (as its Timeline carries it) -> (its module, its Params, its Verdict)
RECORDS = {
    "heartbeat": ("heartbeat", "Params", "HeartbeatVerdict"),
    "renewal_cost": ("renewal_cost", "Params", "CostVerdict"),
    "reaper": ("reaper", "Params", "ReaperVerdict"),
    "queue-heartbeat": ("queue_heartbeat", "QueueHeartbeatParams", "QueueHeartbeatVerdict"),
    "fencing": ("fencing", "Params", "FencingVerdict"),
    "chaos": ("chaos", "Params", "ChaosVerdict"),
    "stuck": ("stuck", "Params", "StuckVerdict"),
    "cluster": ("cluster", "Params", "PlacementVerdict"),
    "failover": ("failover", "Params", "FailoverVerdict"),
    "explore": ("explore", "Params", "ExploreVerdict"),
    "explore-replay": ("explore", "Params", "ReplayVerdict"),
}


def load(data: dict[str, Any]):
    """A run's Timeline read back from its JSON (`Timeline.to_dict`), its params and verdict typed as its
    scenario declares them (the scenario's module is imported here, when a run of it is read)."""
    from ..core.timeline import Timeline

    name = data.get("scenario")
    if name not in RECORDS:
        from ..core.errors import BadParameter

        raise BadParameter(f"no scenario named {name!r}; known: {', '.join(RECORDS)}")
    module, params, verdict = RECORDS[name]
    mod = import_module(f"{__name__}.{module}")
    return Timeline.from_dict(data, getattr(mod, params), getattr(mod, verdict))
