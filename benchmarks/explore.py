"""The explorer (`emqlab explore`): how fast it searches, how its space grows, and whether its
counterexample breaks the same invariant on a live server, run after run.

    .venv/bin/python benchmarks/explore.py [--replays 10] [--quick]

Measures, on fakeredis on the virtual clock: the fencing-on space of 2 workers × 1 job to depth 12 for
every design (states, steps tried, seconds, states per second: the goal is the whole space in 60 s or
less on this 2-core machine); the two ways back to a parent state (write its keys back and rewind the
clock, or replay its schedule from an empty store); how the state count grows with depth, with a third
worker and with a second job. Then replays the fencing-off counterexample `--replays` times on an
embedded Valkey (the real clock, scaled so every race with the server's clock is decided by 0.5 s of real
time or more) and counts how often it broke the same invariant at the same, last step.

Prints the tables and writes them to benchmarks/results/explore.md. A benchmark, not a test: it measures,
it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

from emqlab.lease.designs import design_names
from emqlab.scenarios.explore import explore, replay

OUT = Path(__file__).resolve().parent / "results"


def row_of(name: str, tl) -> dict:
    v = tl.verdict
    return {"case": name, "states": v.states, "transitions": v.transitions, "depth": v.depth_reached,
            "complete": v.complete, "violations": v.violations, "seconds": v.seconds,
            "states_per_s": v.states / v.seconds if v.seconds else float("inf"),
            "steps_per_s": v.transitions / v.seconds if v.seconds else float("inf")}


def table(title: str, rows: list[dict]) -> str:
    head = ("| case | states | steps tried | depth | complete | violations | seconds | states/s | steps/s |\n"
            "|---|---:|---:|---:|:-:|---:|---:|---:|---:|\n")
    body = "".join(f"| {r['case']} | {r['states']:,} | {r['transitions']:,} | {r['depth']} | "
                   f"{'yes' if r['complete'] else 'no (budget)'} | {r['violations']:,} | {r['seconds']:.2f} | "
                   f"{r['states_per_s']:,.0f} | {r['steps_per_s']:,.0f} |\n" for r in rows)
    return f"### {title}\n\n{head}{body}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="smaller depths (a smoke run)")
    args, _ = parser.parse_known_args()
    deep = 8 if args.quick else 12
    explore(depth=2)  # the first Lua calls compile the scripts
    sections = []

    designs = [row_of(f"design {d}, fencing on, 2 workers × 1 job, depth {deep}", explore(depth=deep, design=d))
               for d in design_names()]
    sections.append(table(f"The fencing-on space, explored whole (goal: ≤ 60 s each)", designs))

    ways = []
    for d, depth in (("none", deep), ("session", 6 if args.quick else 8)):
        for method in ("restore", "rerun"):
            ways.append(row_of(f"design {d}, depth {depth}: {method}", explore(depth=depth, design=d, method=method)))
    sections.append(table("Back to a parent state: write its keys back and rewind (restore), or replay its "
                          "schedule from an empty store (rerun)", ways))

    growth = []
    for depth in range(4, (12 if args.quick else 20) + 1, 2):
        growth.append(row_of(f"design none, 2 workers × 1 job, depth {depth}", explore(depth=depth)))
    for depth in range(4, (8 if args.quick else 12) + 1, 2):
        growth.append(row_of(f"design session, 2 workers × 1 job, depth {depth}", explore(depth=depth, design="session")))
    sections.append(table("Growth with depth", growth))

    wider = []
    for workers, jobs in ((2, 1), (3, 1), (2, 2), (3, 2)):
        for d in ("none", "session"):
            tl = explore(workers=workers, jobs=jobs, depth=deep, design=d)
            wider.append(row_of(f"design {d}, {workers} workers × {jobs} job{'s' if jobs > 1 else ''}, depth {deep}", tl))
    sections.append(table("A third worker, a second job (the budget is the range's largest, 8,000 states)", wider))

    found = explore(depth=8, fencing="off")
    replays = []
    for _ in range(args.replays):
        started = time.perf_counter()
        r = replay(found, backend="valkey").verdict
        replays.append((r.same, r.broke_at, r.invariant, r.scale, time.perf_counter() - started, r.why))
    same = sum(1 for s, *_ in replays if s)
    lines = [f"### The fencing-off counterexample replayed on an embedded Valkey\n",
             f"Schedule ({len(found.verdict.counterexample)} steps): "
             + "; ".join(f"{s['actor']} {s['action']}" for s in found.verdict.counterexample) + "\n",
             f"**{same} of {len(replays)} replays broke {found.verdict.invariant} at the last step**, as the search "
             f"did on fakeredis (scale {replays[0][3]:g} real s per model s: every race with the server's clock "
             f"decided by ≥ 0.5 s of real time).\n",
             "| replay | same break | broke at | invariant | wall s (server start included) |",
             "|---:|:-:|---:|---|---:|"]
    lines += [f"| {k} | {'yes' if s else 'no'} | {b} | {i} | {w:.2f} |" for k, (s, b, i, _, w, _) in
              enumerate(replays, start=1)]
    lines += [f"\nwhy not, replay {k}: {why}" for k, (s, *_, why) in enumerate(replays, start=1) if not s]
    sections.append("\n".join(lines) + "\n")

    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = (f"# benchmarks/explore.py\n\nMeasured {when} on {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}; fakeredis on the virtual clock for every search (lease 30 s, "
            f"beat 20 s, a freeze 50 s).\n\n")
    text = head + "\n".join(sections)
    print(text)
    OUT.mkdir(exist_ok=True)
    (OUT / "explore.md").write_text(text)


if __name__ == "__main__":
    main()
