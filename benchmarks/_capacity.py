"""Capacity searches for benchmarks/renewal_cost.py: how many leases one worker keeps alive.

- `capacity` (per-job, sweep): the largest K whose renewal tick still fits the cadence, found by
  timing real ticks (doubling, then bisection). Renewal is what limits these designs.
- `session_memory` (session): its tick costs one key whatever K is, so no cadence ever limits it;
  what does is the server's memory, one holder record per job. Under a `maxmemory` cap (noeviction),
  it measures bytes per job, then the K that fits and the K that does not (the server refuses with
  OOM), and times the session's tick at the K that fits.
Not a test: nothing here asserts speed.
"""

from __future__ import annotations

import gc
import statistics
from collections import defaultdict
from itertools import repeat

import redis

from emqlab.store.backend import connect
from emqlab.store.commandstats import ServerCounter
from emqlab.lease.leases import new_token
from emqlab.lease.designs import make_plane

PREFIX = "emqlab:cap:"


def tick_seconds(url: str, design: str, k: int, ticks: int = 3) -> float:
    """Time real renewal ticks of K leases back to back (a 30 s lease, so nothing lapses while we
    time them); the median tick, in seconds."""
    be = connect(url, clock="real", scale=1.0)
    try:
        keys = [f"{PREFIX}{{w}}:{i}" for i in range(k)]
        tokens = [new_token() for _ in keys]
        for i in range(0, k, 10_000):
            pipe = be.client.pipeline(transaction=False)
            for key, token in zip(keys[i:i + 10_000], tokens[i:i + 10_000]):
                pipe.set(key, token, px=600_000)  # acquiring millions takes a while: none may lapse first
            pipe.execute()
        plane = make_plane(design, be, 30_000, 1, ticks=ticks)  # ticks 1 ms apart: only their cost is timed
        plane.hold_all(zip(keys, tokens))
        plane.start()
        be.clock.run()
        if plane.lost:  # a tick so long that leases lapsed between renewals: over any cadence
            return float("inf")
        per_tick = defaultdict(float)
        for call in plane.calls:
            per_tick[call.tick] += call.wall_ms
        return statistics.median(per_tick.values()) / 1000
    finally:
        be.delete_prefix(PREFIX)
        be.close()
        gc.collect()


def capacity(url: str, design: str, cadence_s: float, start_k: int, max_k: int, bar) -> dict:
    """Double K until a tick takes the cadence, then bisect to within 10 %: every point is measured."""
    points: dict[int, float] = {}

    def measure(k):
        bar.set_postfix_str(f"{design} K={k:,}")
        points[k] = tick_seconds(url, design, k)
        bar.update(1)
        return points[k]

    k, below, above = start_k, None, None
    while k <= max_k:
        if measure(k) < cadence_s:
            below, k = k, k * 2
        else:
            above = k
            break
    if above is None:
        note = (f"every measured K up to {below:,} fit in the cadence (search capped at {max_k:,})"
                if below else f"not searched: the start K {start_k:,} is over the cap {max_k:,}")
        return {"design": design, "capacity_k": None, "at_least": below, "points": points, "note": note}
    while below is not None and above - below > max(1, below // 10):
        mid = (below + above) // 2
        if measure(mid) < cadence_s:
            below = mid
        else:
            above = mid
    return {"design": design, "capacity_k": below, "first_over": above, "points": points, "limit": "renewal"}


def _session_at(be, k: int, ticks: int = 3) -> dict | None:
    """Open a session holding K jobs (records first, then the session key), measure the server's
    memory for them and time `ticks` renewal ticks back to back; None if the server refused (OOM)."""
    client = be.client
    be.delete_prefix(PREFIX)
    gc.collect()
    before = client.info("memory")["used_memory"]
    plane = make_plane("session", be, 600_000, 1, ticks=ticks, session=f"{PREFIX}{{w}}:session", worker="w1")
    plane.hold_all(zip((f"{PREFIX}{{w}}:job:{i}" for i in range(k)), repeat("t")))  # a record names the worker
    try:
        plane.acquire()
    except redis.exceptions.OutOfMemoryError:  # the server refused a write: maxmemory is full
        return None
    used = client.info("memory")["used_memory"] - before
    server = ServerCounter(client).start()
    plane.start()
    be.clock.run()
    server.stop()
    walls = [c.wall_ms for c in plane.calls]
    return {"k": k, "bytes_per_job": used / k, "tick_s": statistics.median(walls) / 1000,
            "server_us_per_tick": server.usec("evalsha") / max(1, server.calls("evalsha")),
            "all_held": not plane.lost and len(plane.still_held()) == k}


def session_memory(url: str, maxmemory_mb: int, bar) -> dict:
    """The session design's capacity: K jobs until the server's memory (maxmemory, noeviction) is
    full. Bytes per job measured at K = 100,000 with no cap; then K at 90 % and 110 % of what
    the cap should hold, capped; the tick is timed at every K that fit."""
    be = connect(url, clock="real", scale=1.0)
    client = be.client
    old = {name: client.config_get(name)[name] for name in ("maxmemory", "maxmemory-policy")}
    points: dict[int, float] = {}
    try:
        bar.set_postfix_str("session K=100,000 (bytes per job)")
        probe = _session_at(be, 100_000)
        points[probe["k"]] = probe["tick_s"]
        bar.update(1)
        be.delete_prefix(PREFIX)
        base = client.info("memory")["used_memory"]
        cap = maxmemory_mb * 1024 * 1024
        client.config_set("maxmemory-policy", "noeviction")
        client.config_set("maxmemory", cap)
        predicted = int((cap - base) / probe["bytes_per_job"])
        fit = over = None
        for share in (0.9, 0.8, 0.7):  # the first K that fits under the cap
            bar.set_postfix_str(f"session K={int(predicted * share):,} under {maxmemory_mb} MB")
            fit = _session_at(be, int(predicted * share))
            bar.update(1)
            if fit:
                points[fit["k"]] = fit["tick_s"]
                break
        bar.set_postfix_str(f"session K={int(predicted * 1.1):,} under {maxmemory_mb} MB")
        over_k = int(predicted * 1.1)
        over = _session_at(be, over_k)
        bar.update(1)
        if over:
            points[over["k"]] = over["tick_s"]
        note = (f"memory, not renewal: {probe['bytes_per_job']:.0f} bytes of server memory per job (its holder "
                f"record); under maxmemory {maxmemory_mb} MB K = {fit['k']:,} fit and its tick took "
                f"{fit['tick_s'] * 1000:.2f} ms ({fit['server_us_per_tick']:.0f} µs of server time), while "
                f"K = {over_k:,} was refused (OOM)" if fit and not over else
                f"the search did not bracket the cap (fit: {fit and fit['k']}, over: {over and over['k']})")
        return {"design": "session", "limit": "memory", "maxmemory_mb": maxmemory_mb, "points": points,
                "bytes_per_job": round(probe["bytes_per_job"], 1), "probe": probe, "fit": fit,
                "capacity_k": fit["k"] if fit else None, "first_over": None if over else over_k,
                "jobs_per_gb": int(1024 ** 3 / probe["bytes_per_job"]), "note": note}
    finally:
        for name, value in old.items():
            client.config_set(name, value)
        be.delete_prefix(PREFIX)
        be.close()
        gc.collect()
