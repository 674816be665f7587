"""The reaper on its own: bounded slices of expired leases back to pending, on the server clock.

The consumer runs one `Queue.reap` slice per beat. When a backlog of expired leases is large
(a fleet died at once), `reap_in_slices` drains it in bounded calls, so no single script holds
the server for long, and reports how long each call took.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .jobs import REAP_LIMIT, Queue
from ..store.clock import wall_ms_since


@dataclass
class ReapReport:
    """What a sliced reap did: leases returned, calls made, and wall time per call (ms, client side)."""

    returned: int = 0
    calls: int = 0
    call_ms: list[float] = field(default_factory=list)

    @property
    def total_ms(self) -> float:
        return sum(self.call_ms)

    @property
    def longest_ms(self) -> float:
        return max(self.call_ms, default=0.0)


def reap_in_slices(queue: Queue, limit: int = REAP_LIMIT, max_calls: int | None = None) -> ReapReport:
    """Reap `limit` leases per call until a call returns fewer (none expired is left) or
    `max_calls` calls were made. Each call is one atomic script; between calls the server serves others."""
    report = ReapReport()
    while max_calls is None or report.calls < max_calls:
        started = time.perf_counter()
        ids = queue.reap(limit)
        report.call_ms.append(wall_ms_since(started))
        report.calls += 1
        report.returned += len(ids)
        if len(ids) < limit:
            break
    return report

