"""Each library's failure and its fix, N times through the command line (`emqlab tools … --backend valkey
--json`): how often each outcome the lesson states held. Prints a table and writes
benchmarks/results/tools_repeat.md.

    .venv/bin/python benchmarks/tools_repeat.py                 # N = 10 (about 10 minutes)
    .venv/bin/python benchmarks/tools_repeat.py --n 3 --only celery,bullmq

The cases are the libraries' records' (`emqlab.tools.declaration.Repeat`). RQ's runs wait a fixed minute each
(RQ's heartbeat expiry; its record's `fixed_wait_s`), so they go `--parallel` at a time, each on a server of its own, beside the others (which run one at a time: their margins are the claims under test, and
the RQ runs beside them load the machine the way a busy one is loaded).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "tools_repeat.md"


def cases() -> list[tuple[str, tuple[str, ...], str, object, tuple[str, ...]]]:
    """(library, flags, the claim in words, the check on the verdict, what to tally): every library record's
    repeats (emqlab.tools.declaration), in the lessons' order."""
    from emqlab.tools import libraries

    return [(lib.name, case.flags, case.claim, case.holds, case.tally)
            for lib in libraries().values() for case in lib.repeats]


def waits(library: str) -> bool:
    """Whether the library always waits a fixed while before it gives up on a worker (RQ's minute): its runs go
    side by side."""
    from emqlab.tools import entry

    return entry(library).fixed_wait_s > 0


def one(library: str, flags: tuple[str, ...]) -> tuple[dict | None, float, str]:
    """One run through the command line: (its verdict, or None if it failed; real seconds; its error line)."""
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k not in ("EMQLAB_BACKEND", "EMQLAB_URL")}
    done = subprocess.run([sys.executable, "-m", "emqlab.cli", "tools", library, *flags, "--backend", "valkey",
                           "--json"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    took = time.monotonic() - started
    if done.returncode != 0:
        return None, took, (done.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(done.stdout)["verdict"], took, ""


def tally(verdicts: list[dict | None], keys: tuple[str, ...]) -> str:
    seen = Counter("error" if v is None else ", ".join(f"{k} {_show(v[k])}" for k in keys) for v in verdicts)
    return "; ".join(f"{what} ×{n}" for what, n in seen.most_common())


def _show(x) -> str:
    if isinstance(x, float):
        return f"{x:g}"
    if x is None:
        return "null"
    if isinstance(x, bool):
        return str(x).lower()
    return str(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="runs of each case (default 10)")
    parser.add_argument("--only", default="", help="comma-separated libraries (default: all)")
    parser.add_argument("--parallel", type=int, default=5, help="RQ runs at once (default 5)")
    a = parser.parse_args()
    chosen = [c for c in cases() if not a.only or c[0] in a.only.split(",")]
    results: dict[int, list] = {k: [] for k in range(len(chosen))}
    started = time.monotonic()
    slow = [k for k, c in enumerate(chosen) if waits(c[0])]
    with ThreadPoolExecutor(max(1, a.parallel)) as pool:
        futures = [(k, pool.submit(one, chosen[k][0], chosen[k][1])) for k in slow for _ in range(a.n)]
        for k, case in enumerate(chosen):  # the others, one at a time, while RQ's minutes pass
            if k in slow:
                continue
            for i in range(a.n):
                results[k].append(one(case[0], case[1]))
                print(f"{case[0]} {' '.join(case[1]) or '(failure)'}: {i + 1}/{a.n}", file=sys.stderr)
        for k, future in futures:
            results[k].append(future.result())
    rows = []
    for k, (library, flags, claim, check, keys) in enumerate(chosen):
        got = results[k]
        verdicts = [v for v, _, _ in got]
        held = sum(1 for v in verdicts if v is not None and check(v))
        errors = sorted({e for _, _, e in got if e})
        rows.append((library, " ".join(flags) or "(failure)", claim, f"{held}/{len(got)}", tally(verdicts, keys),
                     f"{statistics.median(t for _, t, _ in got):.1f}", "; ".join(errors)))
    head = ("library", "flags", "claim", "held", "outcomes", "median s", "errors")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    table = "\n".join(lines)
    print(table)
    from emqlab.tools import versions

    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    about = (f"# `emqlab tools`: each failure and fix, {a.n} runs each\n\n"
             f"Made {when} on {platform.node() or 'this machine'} ({os.cpu_count()} cores), "
             f"{sum(len(r) for r in results.values())} runs in {time.monotonic() - started:.0f} s, with "
             + ", ".join(f"{k} {v}" for k, v in versions().items()) + ". Each run is "
             "`emqlab tools LIBRARY [FLAGS] --backend valkey --json` as a user runs it (workers and server started "
             f"and stopped by the run); RQ's runs {a.parallel} at a time beside the others, which run one at a time. "
             "`median s` includes the workers' boot.\n\n")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(about + table + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
