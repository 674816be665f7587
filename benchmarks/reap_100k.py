"""Benchmark: reap 100,000 expired leases in bounded slices. Not a test: prints a table.

    .venv/bin/python benchmarks/reap_100k.py [--backend valkey|fake|URL] [--leases N] [--slice N]

Fills one queue with N jobs, claims them all under a short lease, lets the lease pass on the
server clock, then returns them to pending with `reap_in_slices`: one atomic script per slice.
Reports the total time, the number of calls and the longest single call (client wall time,
round trip included); the brief asks that no call exceed 5 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from emqlab.backend import connect
from emqlab.queue import Queue
from emqlab.reaper import reap_in_slices

BUDGET_MS = 5.0


def fill(q: Queue, n: int, lease_ms: float) -> None:
    ids = [f"J{i:07d}" for i in range(n)]
    for start in range(0, n, 2000):
        q.enqueue_many(ids[start:start + 2000])
    claimed = 0
    while claimed < n:
        claimed += len(q.claim(lease_ms, 1000))


def _server_timing_start(backend):
    """On the embedded server (ours alone), log every command's own execution time."""
    if backend.kind != "valkey":
        return None
    backend.client.config_set("slowlog-log-slower-than", 0)
    backend.client.config_set("slowlog-max-len", 100_000)
    backend.client.slowlog_reset()
    return backend.scripts.sha("reap")


def _server_timing(backend, sha):
    if sha is None:
        return []
    entries = backend.client.slowlog_get(100_000)
    backend.client.config_set("slowlog-log-slower-than", 10_000)
    return [e["duration"] / 1000 for e in entries
            if "evalsha" in str(e.get("command", "")).lower() and sha in str(e.get("command", ""))]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="valkey")
    p.add_argument("--leases", type=int, default=100_000)
    p.add_argument("--slice", type=int, default=100, help="leases per reap call (default 100: the course's LIMIT)")
    a = p.parse_args(argv)
    with connect(a.backend) as backend:
        prefix = backend.run_prefix("bench-reap")
        try:
            q = Queue(backend, "orders", prefix=prefix)
            t = time.perf_counter()
            fill(q, a.leases, 1_000)  # 1 model s: 10 ms on the server at scale 0.01
            fill_s = time.perf_counter() - t
            if backend.clock.real:
                time.sleep(backend.clock.to_server_ms(1_000) / 1000 + 0.05)
            else:
                backend.clock.run(until=backend.clock.now_ms + 1_500)
            sizes = q.sizes()
            assert sizes["active"] == a.leases, sizes
            server_us = _server_timing_start(backend)
            report = reap_in_slices(q, a.slice)
            after = q.sizes()
            server_us = _server_timing(backend, server_us)
        finally:
            backend.delete_prefix(prefix)
    over = sum(1 for ms in report.call_ms if ms > BUDGET_MS)
    rows = [
        ("backend", backend.name),
        ("expired leases", f"{a.leases:,}"),
        ("slice (LIMIT)", a.slice),
        ("setup (enqueue + claim)", f"{fill_s:.2f} s"),
        ("returned to pending", f"{report.returned:,}  (pending now {after['pending']:,}, active {after['active']})"),
        ("calls", report.calls),
        ("total reap time", f"{report.total_ms:.1f} ms"),
        ("per call: median / p99 / longest", f"{statistics.median(report.call_ms):.2f} / "
         f"{sorted(report.call_ms)[int(0.99 * (len(report.call_ms) - 1))]:.2f} / {report.longest_ms:.2f} ms"),
        (f"calls over {BUDGET_MS:g} ms (client)", over),
    ]
    if server_us:
        rows += [("server time per call: median / longest", f"{statistics.median(server_us):.2f} / "
                  f"{max(server_us):.2f} ms  ({len(server_us)} calls, SLOWLOG)"),
                 (f"calls over {BUDGET_MS:g} ms (server)", sum(1 for ms in server_us if ms > BUDGET_MS))]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0 if report.returned == a.leases and after["active"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
