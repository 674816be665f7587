"""Renewal cost against K, on a live Valkey this script starts (and stops) itself.

    .venv/bin/python benchmarks/renewal_cost.py              # the full run (about 8 minutes)
    .venv/bin/python benchmarks/renewal_cost.py --quick      # K up to 1000, no capacity search (about 2 minutes)
    .venv/bin/python benchmarks/renewal_cost.py --capacity   # also the per-job and sweep tick-time capacity
                                                             # search (sweep's reaches 8,000,000 leases: long)

Designs, side by side, each holding K leases for a few renewal ticks:
  emqlab <design>    every design in emqlab.lease.designs.DESIGNS, on one connection:
                     per-job (K SimPy timers, one extend_lease EVALSHA each per tick),
                     sweep (one timer, extend_leases in bounded batches, one pipeline per tick) and
                     session (one lease on the worker; each tick extends it alone, whatever K is)
  python-redis-lock  Lock(auto_renewal=True): one renewal thread per lock, at 2/3 of the expiry
  redis-py Lock   Lock.extend(replace_ttl=True) from a threading.Timer per lock, at TTL/2
The peers run on a plain redis-py client as a user would make it (its pool holds at most 100
connections), and again with a pool of 20 000 ("big pool") so the pool is not what stops them.

Per design and K: round trips and commands per tick (client side), wall ms per tick (time the
renewal layer was busy in a tick), server µs per tick (INFO commandstats), the longest single
script call (slow log) and how many took longer than the 5 ms bound (MAX_CALL_MS), threads used,
whether every lease was held to the end, and where/why a design broke. K runs to 1,000,000 for
sweep and session; per-job stops at PER_JOB_MAX_K (its tick is K round trips: see the table's
reason) and the big-pool peers at BIG_POOL_MAX_K (one thread per lock). At K = 1,000,000 the lease
is LEASE_1M real seconds, because acquiring a million leases takes tens of seconds and that time
counts against them.
Then the capacity searches: session's limit is memory (bytes per job, and the K a 64 MB maxmemory
holds); with --capacity also per-job's and sweep's (the largest K whose tick fits the 15 s cadence
of a 30 s lease at TTL/2). Without --capacity their last measured search is kept from the JSON,
with the date it was measured.

Writes emqlab/data/renewal_cost.json (shipped with the package: the scaling and capacity figures read it),
and benchmarks/results/renewal_cost.md, renewal_cost_scaling.png, renewal_cost_capacity.png.
This is a benchmark, not a test: nothing here asserts speed; it prints the issue-13 checks it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # _peers.py, beside this file

from emqlab.store.backend import connect  # noqa: E402
from emqlab.store.commandstats import slow_calls  # noqa: E402
from emqlab.store.embedded import EmbeddedValkey  # noqa: E402
from emqlab.lease.designs import design_names  # noqa: E402
from emqlab.lease.planes import MAX_CALL_MS  # noqa: E402
from emqlab.scenarios.renewal_cost import capacity_words, renewal_cost, scaling_words  # noqa: E402
from _capacity import capacity, session_memory  # noqa: E402  (beside this file)
from _peers import run_peer  # noqa: E402  (beside this file: the peer libraries' lock holders)

KS = (1, 6, 100, 1000, 10_000, 100_000, 1_000_000)
PER_JOB_MAX_K = 100_000  # per-job is K round trips per tick: at 100,000 a tick already outlasts the cadence
BIG_POOL_MAX_K = 1000  # a big-pool peer at 10,000 locks ran 490 s (10,000 threads; the 2026-11-30 run)
LEASE_1M = 40.0  # real seconds at K >= 1,000,000: acquiring them takes ~25 s, which counts against the lease
MAXMEMORY_MB = 64  # session's capacity search: the server's memory cap it fills
QUICK_KS = (1, 6, 100, 1000)
PEERS = ("python-redis-lock", "redis-py Lock + timer", "python-redis-lock, big pool", "redis-py Lock + timer, big pool")
DESIGNS = (*(f"emqlab {name}" for name in design_names(renewing=True)), *PEERS)
CAPACITY_START = {"per-job": 10_000, "sweep": 250_000}  # where each design's doubling starts (default 10,000)
BIG_POOL = 20_000  # the "big pool" rows: enough connections that redis-py's default cap of 100 is not the limit
OUT = ROOT / "benchmarks" / "results"
DATA = ROOT / "emqlab" / "data"  # the measured table ships as package data
SLOW_US = 1000  # calls longer than this land in the slow log, so the longest one is known
CADENCE_S = 15.0  # the capacity search's cadence: a 30 s lease renewed at TTL/2


def run_emqlab(url: str, design: str, k: int, lease_real: float, ticks: int) -> dict:
    lease = max(30.0, lease_real)  # model seconds: a 30 s lease lasts lease_real seconds (scale <= 1)
    be = connect(url, clock="real", scale=lease_real / lease)  # a fresh clock per run
    try:
        with slow_calls(be.client, SLOW_US) as slow:
            t = renewal_cost(jobs=k, design=design, ticks=ticks, lease=lease, backend=be, bounded=False)
    finally:
        be.close()
    c = t.counts
    walls = [e.data["wall_ms"] for e in t.of("tick")]
    row = {"rt_per_tick": c["round_trips_per_tick"], "commands_per_tick": c["commands_per_tick"],
           "server_calls_per_tick": c["server_calls_per_tick"], "wall_ms_per_tick": c["wall_ms_per_tick"],  # the median tick
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


# -- output ----------------------------------------------------------------------------------------
def fmt(value, spec=",.3g"):
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "—" if value is None else format(value, spec) if isinstance(value, (int, float)) else str(value)


def markdown(rows: list[dict], caps: list[dict], meta: dict) -> str:
    lines = [f"# Renewal cost against K ({meta['when']})", "",
             f"Live Valkey {meta['server']} on loopback, {meta['cores']} cores; lease {meta['lease_real']:g} s real "
             f"({LEASE_1M:g} s at K = 1,000,000), {meta['ticks']} ticks (2 at K = 1,000,000). Wall = time the renewal "
             "layer was busy in a tick (median over ticks); server µs = INFO commandstats over the ticks.", "",
             f"Bound: no single emqlab script call over {MAX_CALL_MS:g} ms (server time, slow log).", "",
             "| design | K | cadence s | round trips / tick | commands / tick | wall ms / tick | server µs / tick "
             f"| server µs / lease | longest call ms | calls over {MAX_CALL_MS:g} ms | threads | all held "
             "| where / why it broke |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        us = r.get("server_us_per_tick")
        lines.append(f"| {r['design']} | {r['k']:,} | {fmt(r.get('cadence_s'))} | {fmt(r.get('rt_per_tick'), ',')} "
                     f"| {fmt(r.get('commands_per_tick'), ',')} | {fmt(r.get('wall_ms_per_tick'))} | {fmt(us, ',.0f')} "
                     f"| {fmt(None if us is None else us / r['k'])} | {fmt(r.get('longest_call_ms'))} "
                     f"| {fmt(r.get('calls_over_bound'), ',')} "
                     f"| {fmt(r.get('threads'), ',')} | {fmt(r.get('all_held'))} | {r.get('broke', '')} |")
    if meta.get("checks"):
        lines += ["", "## Issue 13's must-holds, measured in this run", ""] + [f"- {c}" for c in meta["checks"]]
    if caps:
        lines += ["", "## Capacity, one connection", "",
                  "What limits each design: per-job and sweep, the 15 s cadence of a 30 s lease at TTL/2 (the "
                  "largest K whose tick still fits, doubling then bisection); session, the server's memory.", "",
                  "| design | limit | largest K kept alive | first K over | measured points (K: tick s) | measured |",
                  "|---|---|---:|---:|---|---|"]
        for c in caps:
            pts = ", ".join(f"{int(k):,}: {s:.4g}" for k, s in sorted(c["points"].items(), key=lambda kv: int(kv[0])))
            lines.append(f"| {c['design']} | {c.get('limit', 'renewal')} | {fmt(c.get('capacity_k'), ',')} "
                         f"| {fmt(c.get('first_over'), ',')} | {pts} | {c.get('when', meta['when'])} |")
            if c.get("note"):
                lines.append(f"| | {c['note']} | | | | |")
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


def checks(rows: list[dict]) -> list[str]:
    """Issue 13's must-holds on the server time per tick, as this run measured them (said, not asserted)."""
    us = {(r["design"].split()[-1], r["k"]): r for r in rows if r["design"].startswith("emqlab")}

    def ratio(design: str, k: int, base: int, want: str, ok) -> str | None:
        a, b = us.get((design, k), {}), us.get((design, base), {})
        if a.get("server_us_per_tick") is None or b.get("server_us_per_tick") is None:
            return None
        r = a["server_us_per_tick"] / b["server_us_per_tick"]
        held = "" if a.get("all_held") and b.get("all_held") else " (not every lease held: see the table)"
        return (f"{'holds' if ok(r) else 'FAILS'}: {design} server µs per tick at K = {k:,} is "
                f"{a['server_us_per_tick']:,.1f}, at K = {base:,} {b['server_us_per_tick']:,.1f}: {r:,.2f}× "
                f"({want}){held}")

    out = [ratio("session", 100_000, 6, "within 2×", lambda r: r <= 2),
           ratio("session", 1_000_000, 1, "within 2×", lambda r: r <= 2),
           ratio("sweep", 1_000_000, 1, "at least 100×", lambda r: r >= 100)]
    for k in (6, 1000, 100_000):
        r = us.get(("session", k))
        if r:
            ok = r["rt_per_tick"] == 1 and r.get("server_calls_per_tick") == 1 and r["all_held"] is True
            out.append(f"{'holds' if ok else 'FAILS'}: session at K = {k:,}: round_trips_per_tick {r['rt_per_tick']}, "
                       f"server_calls_per_tick {r.get('server_calls_per_tick')}, all_held {r['all_held']}")
    return [line for line in out if line]


def skipped(design: str, k: int, rows: list[dict]) -> dict | None:
    """A row for a design not run at this K, with the reason (None: run it)."""
    if design == "emqlab per-job" and k > PER_JOB_MAX_K:
        last = next((r for r in reversed(rows) if r["design"] == design and r.get("wall_ms_per_tick")), None)
        seen = f" (at K = {last['k']:,} a tick took {last['wall_ms_per_tick'] / 1000:.1f} s)" if last else ""
        return {"rt_per_tick": None, "all_held": None,
                "broke": f"not run: per-job renewal is K = {k:,} round trips per tick, one EVALSHA per lease "
                         f"(pipelining them would make it a sweep); capped at {PER_JOB_MAX_K:,}{seen}"}
    if design.endswith("big pool") and k > BIG_POOL_MAX_K:
        return {"rt_per_tick": None, "all_held": None, "threads": k,
                "broke": f"not run: {k:,} renewal threads on a 20,000-connection pool ran for minutes (490 s at "
                         f"10,000 on 2026-11-30); capped at {BIG_POOL_MAX_K:,}"}
    return None


def kept_capacity(design: str) -> dict | None:
    """A tick-time capacity search measured by an earlier run (kept when --capacity is not given)."""
    try:
        old = json.loads((DATA / "renewal_cost.json").read_text())
    except (OSError, ValueError):
        return None
    for c in old.get("capacity", []):
        if c.get("design") == design:
            return {**c, "when": c.get("when") or old.get("meta", {}).get("when"), "limit": "renewal"}
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="K up to 1000, fewer ticks, no capacity search; writes benchmarks/results/quick/, "
                         "not the shipped table")
    ap.add_argument("--ks", default=None, help="comma-separated K values (default 1,6,100,1000,10000,100000,1000000)")
    ap.add_argument("--lease", type=float, default=None,
                    help=f"real lease seconds (default 4; quick 2; {LEASE_1M:g} at K >= 1,000,000)")
    ap.add_argument("--ticks", type=int, default=None, help="renewal ticks per run (default 3; quick 2; 2 at 1,000,000)")
    ap.add_argument("--max-threads", type=int, default=10_000, help="thread-per-lock designs run up to this K")
    ap.add_argument("--peer-pool", type=int, default=None,
                    help="peers' redis-py max_connections (default: redis-py's own default, 100)")
    ap.add_argument("--capacity", action="store_true",
                    help="also search per-job's and sweep's tick-time capacity (sweep's reaches 8,000,000 leases)")
    ap.add_argument("--capacity-max-k", type=int, default=8_000_000)
    ap.add_argument("--no-capacity", action="store_true", help="no capacity search at all")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    ks = tuple(int(k) for k in args.ks.split(",")) if args.ks else (QUICK_KS if args.quick else KS)
    lease_real = args.lease or (2.0 if args.quick else 4.0)
    ticks = args.ticks or (2 if args.quick else 3)
    out = Path(args.out) if args.out else (OUT / "quick" if args.quick else OUT)
    out.mkdir(parents=True, exist_ok=True)
    kept = {d: kept_capacity(f"emqlab {d}") for d in ("per-job", "sweep")}  # read before the table is rewritten

    rows, caps = [], []
    started_all = time.perf_counter()
    with EmbeddedValkey() as server:
        url = server.url
        with connect(url, clock="real") as probe:
            version = probe.client.info("server").get("valkey_version") or probe.client.info("server").get("redis_version")
        with tqdm(total=len(ks) * len(DESIGNS), desc="renewal cost", unit="run") as bar:
            for k in ks:
                for design in DESIGNS:
                    bar.set_postfix_str(f"{design} K={k:,}")
                    started = time.perf_counter()
                    row = skipped(design, k, rows)
                    if row is not None:
                        pass
                    elif design.startswith("emqlab"):
                        big = k >= 1_000_000
                        row = run_emqlab(url, design.split()[-1], k, max(lease_real, LEASE_1M) if big else lease_real,
                                         min(ticks, 2) if big else ticks)
                    else:
                        pool = BIG_POOL if design.endswith("big pool") else args.peer_pool
                        row = run_peer(url, design, k, lease_real, ticks, args.max_threads, pool)
                    row.update(design=design, k=k, run_s=round(time.perf_counter() - started, 2))
                    rows.append(row)
                    bar.update(1)
        meta = {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "server": f"valkey {version}",
                "cores": os.cpu_count(), "lease_real": lease_real, "ticks": ticks, "ks": list(ks),
                "max_threads": args.max_threads, "per_job_max_k": PER_JOB_MAX_K, "big_pool_max_k": BIG_POOL_MAX_K}
        write(out, rows, caps, meta, final=False)  # a failure in the long capacity search keeps the table
        if not (args.quick or args.no_capacity):
            with tqdm(desc="capacity", unit="point") as bar:
                for design in ("per-job", "sweep"):
                    if args.capacity:
                        cap = capacity(url, design, CADENCE_S, CAPACITY_START.get(design, 10_000),
                                       args.capacity_max_k, bar)
                        cap.update(design="emqlab " + design, when=meta["when"])
                    else:
                        cap = kept[design]
                    if cap:
                        caps.append(cap)
                cap = session_memory(url, MAXMEMORY_MB, bar)
                cap.update(design="emqlab session", when=meta["when"])
                caps.append(cap)
    meta["run_s"] = round(time.perf_counter() - started_all, 1)
    write(out, rows, caps, meta, final=True)
    return 0


def write(out: Path, rows: list[dict], caps: list[dict], meta: dict, final: bool) -> None:
    """The JSON and the markdown table (every time); on the final call also the printout and figures."""
    meta = {**meta, "ratios": ratios(rows), "checks": checks(rows)}
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
