"""Renewal cost against K, on a live Valkey this script starts (and stops) itself.

    .venv/bin/python benchmarks/renewal_cost.py            # the full run (several minutes)
    .venv/bin/python benchmarks/renewal_cost.py --quick    # K up to 1000, no capacity search

Designs, side by side, each holding K leases for a few renewal ticks:
  emqlab <design>    every design in emqlab.renewal_plane.DESIGNS, on one connection:
                     per-job (K SimPy timers, one extend_lease EVALSHA each per tick) and
                     sweep (one timer, extend_leases in bounded batches, one pipeline per tick)
  python-redis-lock  Lock(auto_renewal=True): one renewal thread per lock, at 2/3 of the expiry
  redis-py Lock   Lock.extend(replace_ttl=True) from a threading.Timer per lock, at TTL/2
The peers run on a plain redis-py client as a user would make it (its pool holds at most 100
connections), and again with a pool of 20 000 ("big pool") so the pool is not what stops them.

Per design and K: round trips per tick (client side), wall ms per tick (time the renewal layer
was busy in a tick), server µs per tick (INFO commandstats), the longest single script call (slow
log) and how many calls took longer than the 5 ms bound (MAX_CALL_MS), threads used, whether
every lease was held to the end, and where/why a design broke.
Then the capacity search: for a 30 s lease renewed at TTL/2 on one connection, the largest K whose
tick still fits in the 15 s cadence, found by timing real ticks (doubling, then bisection).

Writes emqlab/data/renewal_cost.json (shipped with the package: the scaling and capacity figures read it),
and benchmarks/results/renewal_cost.md, renewal_cost_scaling.png, renewal_cost_capacity.png.
This is a benchmark, not a test: nothing here asserts speed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # _peers.py, beside this file

from emqlab.backend import connect  # noqa: E402
from emqlab.commandstats import slow_calls  # noqa: E402
from emqlab.embedded import EmbeddedValkey  # noqa: E402
from emqlab.lease import new_token  # noqa: E402
from emqlab.renewal_plane import DESIGNS as EMQLAB_DESIGNS, MAX_CALL_MS, make_plane  # noqa: E402
from emqlab.scenarios.renewal_cost import capacity_words, renewal_cost, scaling_words  # noqa: E402
from _peers import run_peer  # noqa: E402  (beside this file: the peer libraries' lock holders)

KS = (1, 6, 100, 1000, 10_000, 100_000)
QUICK_KS = (1, 6, 100, 1000)
PEERS = ("python-redis-lock", "redis-py Lock + timer", "python-redis-lock, big pool", "redis-py Lock + timer, big pool")
DESIGNS = (*(f"emqlab {name}" for name in EMQLAB_DESIGNS), *PEERS)
CAPACITY_START = {"per-job": 10_000, "sweep": 250_000}  # where each design's doubling starts (default 10,000)
BIG_POOL = 20_000  # the "big pool" rows: enough connections that redis-py's default cap of 100 is not the limit
OUT = ROOT / "benchmarks" / "results"
DATA = ROOT / "emqlab" / "data"  # the measured table ships as package data
SLOW_US = 1000  # calls longer than this land in the slow log, so the longest one is known
CADENCE_S = 15.0  # the capacity search's cadence: a 30 s lease renewed at TTL/2


def run_emqlab(url: str, design: str, k: int, lease_real: float, ticks: int) -> dict:
    scale = lease_real / 30.0  # a 30 s model lease lasts lease_real seconds
    be = connect(url, clock="real", scale=scale)  # a fresh clock per run
    try:
        with slow_calls(be.client, SLOW_US) as slow:
            t = renewal_cost(jobs=k, design=design, ticks=ticks, lease=30, backend=be)
    finally:
        be.close()
    c = t.counts
    walls = [e.data["wall_ms"] for e in t.of("tick")]
    row = {"rt_per_tick": c["round_trips_per_tick"], "wall_ms_per_tick": statistics.median(walls),
           "wall_ms_ticks": walls, "server_us_per_tick": c["server_us_per_tick"],
           "longest_call_ms": max((s["us"] for s in slow if s["command"] == "evalsha"), default=None),
           "calls_over_bound": sum(1 for s in slow if s["command"] == "evalsha" and s["us"] > MAX_CALL_MS * 1000),
           "threads": 1, "all_held": c["all_held"], "cadence_s": lease_real / 2, "connections": 1}
    if row["longest_call_ms"] is not None:
        row["longest_call_ms"] /= 1000
    if max(walls) > lease_real / 2 * 1000:
        row["broke"] = f"a tick took {max(walls) / 1000:.1f} s, longer than the {lease_real / 2:g} s cadence"
    if not c["all_held"]:
        lapsed = f"{k - c['held_at_end']:,} of {k:,} leases lapsed before their renewal (each holder was told)"
        row["broke"] = f"{row['broke']}; {lapsed}" if "broke" in row else lapsed
    return row


# -- capacity: the K whose tick reaches the cadence of a 30 s lease at TTL/2 -----------------------
def tick_seconds(url: str, design: str, k: int, ticks: int = 3) -> float:
    """Time real renewal ticks of K leases back to back (a 30 s lease, so nothing lapses while we
    time them); the median tick, in seconds."""
    be = connect(url, clock="real", scale=1.0)
    try:
        keys = [f"emqlab:cap:{{w}}:{i}" for i in range(k)]
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
        be.delete_prefix("emqlab:cap:")
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
    return {"design": design, "capacity_k": below, "first_over": above, "points": points}


# -- output ----------------------------------------------------------------------------------------
def fmt(value, spec=",.3g"):
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "—" if value is None else format(value, spec) if isinstance(value, (int, float)) else str(value)


def markdown(rows: list[dict], caps: list[dict], meta: dict) -> str:
    lines = [f"# Renewal cost against K ({meta['when']})", "",
             f"Live Valkey {meta['server']} on loopback, {meta['cores']} cores; lease {meta['lease_real']:g} s real, "
             f"{meta['ticks']} ticks. Wall = time the renewal layer was busy in a tick (median over ticks).", "",
             f"Bound: no single emqlab script call over {MAX_CALL_MS:g} ms (server time, slow log).", "",
             "| design | K | cadence s | round trips / tick | wall ms / tick | µs / lease | server µs / tick "
             f"| longest call ms | calls over {MAX_CALL_MS:g} ms | threads | all held | where / why it broke |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        per_lease = None if r.get("wall_ms_per_tick") is None else r["wall_ms_per_tick"] * 1000 / r["k"]
        lines.append(f"| {r['design']} | {r['k']:,} | {fmt(r.get('cadence_s'))} | {fmt(r.get('rt_per_tick'), ',')} | {fmt(r.get('wall_ms_per_tick'))} "
                     f"| {fmt(per_lease)} | {fmt(r.get('server_us_per_tick'), ',.0f')} | {fmt(r.get('longest_call_ms'))} "
                     f"| {fmt(r.get('calls_over_bound'), ',')} "
                     f"| {fmt(r.get('threads'), ',')} | {fmt(r.get('all_held'))} | {r.get('broke', '')} |")
    if caps:
        lines += ["", "## Capacity: 30 s lease renewed at TTL/2 (15 s cadence), one connection", "",
                  "| design | largest K kept alive | first K over the cadence | measured points (K: tick s) |",
                  "|---|---:|---:|---|"]
        for c in caps:
            pts = ", ".join(f"{k:,}: {s:.2f}" for k, s in sorted(c["points"].items()))
            lines.append(f"| {c['design']} | {fmt(c.get('capacity_k'), ',')} | {fmt(c.get('first_over'), ',')} | {pts} |")
            if c.get("note"):
                lines.append(f"| | {c['note']} | | |")
    if meta.get("ratios"):
        lines += ["", "## Ratios at K = 1000 (median wall per lease)", ""]
        lines += [f"- {line}" for line in meta["ratios"]]
    return "\n".join(lines) + "\n"


def ratios(rows: list[dict]) -> list[str]:
    at = {r["design"]: r for r in rows if r["k"] == 1000 and r.get("wall_ms_per_tick")}
    sweep = at.get("emqlab sweep")
    if not sweep:
        return []
    s = sweep["wall_ms_per_tick"] / 1000 * 1000  # µs per lease at K = 1000
    out = [f"emqlab sweep: {s:.2f} µs per lease"]
    for name in (d for d in DESIGNS if d != "emqlab sweep"):
        if name in at:
            other = at[name]["wall_ms_per_tick"]
            broke = f" (it broke there: {at[name]['broke']})" if at[name].get("broke") else ""
            out.append(f"{name}: {other:.2f} µs per lease, {other / s:.1f}× the sweep's{broke}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="K up to 1000, fewer ticks, no capacity search")
    ap.add_argument("--ks", default=None, help="comma-separated K values (default 1,6,100,1000,10000,100000)")
    ap.add_argument("--lease", type=float, default=None, help="real lease seconds (default 4; quick 2)")
    ap.add_argument("--ticks", type=int, default=None, help="renewal ticks per run (default 3; quick 2)")
    ap.add_argument("--max-threads", type=int, default=10_000, help="thread-per-lock designs run up to this K")
    ap.add_argument("--peer-pool", type=int, default=None,
                    help="peers' redis-py max_connections (default: redis-py's own default, 100)")
    ap.add_argument("--capacity-max-k", type=int, default=8_000_000)
    ap.add_argument("--no-capacity", action="store_true")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    ks = tuple(int(k) for k in args.ks.split(",")) if args.ks else (QUICK_KS if args.quick else KS)
    lease_real = args.lease or (2.0 if args.quick else 4.0)
    ticks = args.ticks or (2 if args.quick else 3)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    rows, caps = [], []
    with EmbeddedValkey() as server:
        url = server.url
        with connect(url, clock="real") as probe:
            version = probe.client.info("server").get("valkey_version") or probe.client.info("server").get("redis_version")
        with tqdm(total=len(ks) * len(DESIGNS), desc="renewal cost", unit="run") as bar:
            for k in ks:
                for design in DESIGNS:
                    bar.set_postfix_str(f"{design} K={k:,}")
                    started = time.perf_counter()
                    if design.startswith("emqlab"):
                        row = run_emqlab(url, design.split()[-1], k, lease_real, ticks)
                    else:
                        pool = BIG_POOL if design.endswith("big pool") else args.peer_pool
                        row = run_peer(url, design, k, lease_real, ticks, args.max_threads, pool)
                    row.update(design=design, k=k, run_s=round(time.perf_counter() - started, 2))
                    rows.append(row)
                    bar.update(1)
        meta = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "server": f"valkey {version}",
                "cores": os.cpu_count(), "lease_real": lease_real, "ticks": ticks, "ks": list(ks),
                "max_threads": args.max_threads}
        write(out, rows, caps, meta, final=False)  # a failure in the long capacity search keeps the table
        if not (args.quick or args.no_capacity):
            with tqdm(desc="capacity", unit="tick") as bar:
                for design in EMQLAB_DESIGNS:
                    start = CAPACITY_START.get(design, 10_000)
                    cap = capacity(url, design, CADENCE_S, start, args.capacity_max_k, bar)
                    cap["design"] = "emqlab " + design
                    caps.append(cap)
                    write(out, rows, caps, meta, final=False)
    write(out, rows, caps, meta, final=True)
    return 0


def write(out: Path, rows: list[dict], caps: list[dict], meta: dict, final: bool) -> None:
    """The JSON and the markdown table (every time); on the final call also the printout and figures."""
    meta = {**meta, "ratios": ratios(rows)}
    ((DATA if out == OUT else out) / "renewal_cost.json").write_text(json.dumps({"meta": meta, "rows": rows, "capacity": caps}, indent=1))
    table = markdown(rows, caps, meta)
    (out / "renewal_cost.md").write_text(table)
    if not final:
        return
    print(table)
    from emqlab.plot.renewal import draw_capacity, draw_scaling

    where = f"measured on live Valkey by benchmarks/renewal_cost.py ({meta['when']})"
    draw_scaling(rows, scaling_words(rows, where)).figure.savefig(out / "renewal_cost_scaling.png", dpi=120)
    if caps:
        draw_capacity(caps, capacity_words(caps, CADENCE_S), cadence_s=CADENCE_S).figure.savefig(
            out / "renewal_cost_capacity.png", dpi=120)
    print(f"wrote {(DATA if out == OUT else out)}/renewal_cost.json, {out}/renewal_cost.md and the figures")


if __name__ == "__main__":
    sys.exit(main())
