"""emqlab: run, record and draw how a distributed-lock lease is kept fresh.

The folders are the layers, each importing only from the ones before it:

    core/        errors, the number table, the timeline (plain data), words, measured tables
    store/       where the scripts run, on which clock: fakeredis, an embedded Valkey, a URL, a cluster
    faults/      what a run can suffer: stop-the-world pauses, a slow or cut link, a replica and failover
    lease/       one lock and keeping it fresh: acquire, extend, release; cadences; renewal designs
    queue/       the EchoMQ applied form: the queue's scripts, the consumer and its beat, the reaper
    scenarios/   runs of the above, each returning a Timeline with its one words function
    plot/        Timelines drawn (matplotlib); never runs a scenario
    view/        drawings paired with their words: figures, the explorer widgets, the slide export
    classroom/   a class on one server: its own small stack, from the server's users to the dashboard
    course/      the lessons' helpers, the exercises, the saved notebooks, the Voila dashboards
    cli/         the `emqlab` command (also `python -m emqlab`)

The model (core … scenarios) never imports matplotlib or ipywidgets. Importing emqlab does nothing:
no server starts, nothing is patched; the names below load on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_FACE = {
    "Backend": "emqlab.store.backend", "connect": "emqlab.store.backend",
    "EmqlabError": "emqlab.core.errors", "BadParameter": "emqlab.core.errors",
    "BackendUnavailable": "emqlab.core.errors", "LeaseLost": "emqlab.core.errors", "StaleToken": "emqlab.core.errors",
}
__all__ = list(_FACE)


def __getattr__(name: str) -> Any:
    if name in _FACE:
        return getattr(import_module(_FACE[name]), name)
    raise AttributeError(f"module 'emqlab' has no attribute {name!r}")
