"""How long one virtual-clock heartbeat run takes (the course's first figure, fakeredis).

    .venv/bin/python benchmarks/heartbeat.py [--runs 50]

Prints a table of medians and writes it to benchmarks/results/heartbeat.md. A benchmark, not a
test: it measures, it asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from emqlab import connect
from emqlab.scenarios.heartbeat import heartbeat

OUT = Path(__file__).resolve().parent / "results"


def measure(runs: int) -> list[dict]:
    rows = []
    cases = [("none", None), ("half", None), ("half", "20:40")]
    warm = connect("fake")
    try:
        for renew, pause in cases:
            heartbeat(renew=renew, pause=pause, backend=warm)  # first Lua call compiles the scripts
            samples = []
            for _ in range(runs):
                start = time.perf_counter()
                tl = heartbeat(renew=renew, pause=pause, backend=warm)
                samples.append((time.perf_counter() - start) * 1000)
            cold = []
            for _ in range(max(3, runs // 10)):
                start = time.perf_counter()
                with connect("fake") as fresh:
                    heartbeat(renew=renew, pause=pause, backend=fresh)
                cold.append((time.perf_counter() - start) * 1000)
            q = statistics.quantiles(samples, n=10)
            rows.append({
                "case": f"renew={renew}" + (f" pause={pause}" if pause else ""),
                "events": len(tl.events), "round_trips": tl.counts["round_trips"],
                "median_ms": statistics.median(samples), "p10_ms": q[0], "p90_ms": q[-1],
                "cold_median_ms": statistics.median(cold),
            })
    finally:
        warm.close()
    return rows


def table(rows: list[dict], runs: int) -> str:
    head = ("| case | events | round trips | median ms | p10 ms | p90 ms | cold (new backend) median ms |\n"
            "|---|---:|---:|---:|---:|---:|---:|\n")
    body = "".join(
        f"| {r['case']} | {r['events']} | {r['round_trips']} | {r['median_ms']:.2f} | {r['p10_ms']:.2f} | "
        f"{r['p90_ms']:.2f} | {r['cold_median_ms']:.2f} |\n" for r in rows)
    return f"Virtual-clock heartbeat on fakeredis, {runs} warm runs per case (lease 30 s, job 75 s)\n\n" + head + body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args, _ = parser.parse_known_args()
    text = table(measure(args.runs), args.runs)
    print(text)
    OUT.mkdir(exist_ok=True)
    (OUT / "heartbeat.md").write_text(text)


if __name__ == "__main__":
    main()
