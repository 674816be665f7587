"""How long `emqlab site` takes to write the course as a static site, and how large the site is.

    .venv/bin/python benchmarks/site.py [--runs 3] [--lessons DIR]

Runs the command as a user does (a fresh process each time, imports included) into a new temporary
folder `runs` times, from the checkout's saved lessons (or `--lessons`). Prints a table — median and
maximum seconds, pages, interactive figures, the site's size and its largest page — and writes it to
benchmarks/results/site.md. A benchmark, not a test: it measures, it asserts nothing (the issue asks
for at most 60 s on this project's 2-core machine, 3 MB a page and 25 MB a site).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results"
MB = 1_000_000


def measure(runs: int, lessons: str | None) -> dict:
    seconds, made = [], None
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            argv = [sys.executable, "-m", "emqlab.cli", "site", "--out", tmp, "--json"]
            if lessons:
                argv += ["--lessons", lessons]
            t0 = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, check=True)
            seconds.append(time.perf_counter() - t0)
            made = json.loads(done.stdout)
            made["largest"] = max(Path(p).stat().st_size for p in made["pages"])
    return {"runs": runs, "median_s": statistics.median(seconds), "max_s": max(seconds),
            "pages": len(made["pages"]), "figures": made["figures"], "site_mb": made["bytes"] / MB,
            "largest_mb": made["largest"] / MB}


def table(row: dict) -> str:
    lines = ["| runs | median s | max s | pages | interactive figures | site MB | largest page MB |",
             "|---:|---:|---:|---:|---:|---:|---:|",
             f"| {row['runs']} | {row['median_s']:.2f} | {row['max_s']:.2f} | {row['pages']} | {row['figures']} | "
             f"{row['site_mb']:.2f} | {row['largest_mb']:.2f} |"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lessons", default=None, help="folder of saved lessons (default: the checkout's notebooks/)")
    args = parser.parse_args()
    out = table(measure(args.runs, args.lessons))
    print(out)
    OUT.mkdir(exist_ok=True)
    (OUT / "site.md").write_text("# `emqlab site`: the course as a static site\n\n" + out + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
