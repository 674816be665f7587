"""A chaos run delivers the faults it plans, on a slow host: `emqlab chaos --workers 4 --jobs 1000 --json` N
times on each store, in the slow-host mode of `./run test` (one core, CPU-bound loops beside it until the
speed probe takes at least 2.5 times the host's own: tests/suite_run.py). Prints a table and writes
benchmarks/results/chaos_repeat.md.

    .venv/bin/python benchmarks/chaos_repeat.py            # N = 10 on each store (a few minutes)
    .venv/bin/python benchmarks/chaos_repeat.py --n 3 --host   # the host as it is

A run holds when nothing was lost and `undelivered` is empty and the crashes and pauses that landed equal
`planned`. On live Valkey each run starts its own embedded server and one OS process per consumer.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "chaos_repeat.md"
sys.path.insert(0, str(ROOT / "tests"))

import suite_run  # noqa: E402 - the slow-host mode, shared with ./run test


def one(backend: str) -> dict:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "emqlab.cli", "chaos", "--workers", "4", "--jobs", "1000",
                           "--backend", backend, "--progress", "off", "--json"], capture_output=True, text=True,
                          cwd=ROOT, timeout=900)
    took = time.monotonic() - started
    if done.returncode:
        return {"ok": False, "took": took, "why": (done.stderr.strip().splitlines() or ["?"])[-1]}
    d = json.loads(done.stdout)
    planned = d["planned"]
    ok = (d["undelivered"] == [] and (d["kills"], d["pauses"]) == (planned["kills"], planned["pauses"])
          and d["lost"] == 0 and d["completed"] == d["jobs"])
    return {"ok": ok, "took": took, "kills": d["kills"], "pauses": d["pauses"], "planned": planned,
            "undelivered": len(d["undelivered"]), "duplicates": d["duplicate_effects"], "why": ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="runs on each store (default 10)")
    parser.add_argument("--host", action="store_true", help="the host as it is, not the slow-host mode")
    a = parser.parse_args()
    if a.n < 1:
        parser.error("--n must be 1 or more")
    loops, said = ([], f"the host as it is (speed probe {suite_run.realtime.speed_probe():.2f} s)") if a.host \
        else suite_run.slow_down()
    print(said, file=sys.stderr)
    rows = []
    try:
        for backend in ("fake", "valkey"):
            runs = []
            for i in range(a.n):
                runs.append(one(backend))
                r = runs[-1]
                print(f"{backend} {i + 1}/{a.n}: {'held' if r['ok'] else 'FAILED'} in {r['took']:.1f} s {r['why']}",
                      file=sys.stderr)
            rows.append((backend, runs))
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    head = ("store", "runs held", "kills landed / planned", "pauses landed / planned", "undelivered",
            "duplicate effects", "median s a run")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for backend, runs in rows:
        good = [r for r in runs if "kills" in r]
        lines.append(f"| {backend} | {sum(r['ok'] for r in runs)} of {len(runs)} | "
                     + ", ".join(f"{r['kills']}/{r['planned']['kills']}" for r in good) + " | "
                     + ", ".join(f"{r['pauses']}/{r['planned']['pauses']}" for r in good) + " | "
                     + ", ".join(str(r["undelivered"]) for r in good) + " | "
                     + ", ".join(str(r["duplicates"]) for r in good) + " | "
                     + f"{statistics.median(r['took'] for r in runs):.1f} |")
    table = "\n".join(lines)
    print(table)
    head_commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.strip()
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    RESULTS.write_text(f"# A chaos run delivers the faults it plans\n\nMade {when} on {platform.node()} at commit "
                       f"{head_commit}: `emqlab chaos --workers 4 --jobs 1000 --json`, {a.n} runs on each store, in "
                       f"{said}. Fencing on (the default): duplicate effects must be 0.\n\n{table}\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
