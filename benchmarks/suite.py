"""How long the project's own checks take on a clean checkout: `.ci/run` on a fresh clone of HEAD, N times,
with the wall time of its first pass (`./run test`) and of the whole run, pytest's counts, and the machine's
speed just before (a fixed loop), and the CPU the run used. Prints a table and writes
benchmarks/results/suite.md.

    .venv/bin/python benchmarks/suite.py               # 3 runs, about 25 minutes on the 2-core machine
    .venv/bin/python benchmarks/suite.py --n 1 --load 2   # 1 run with two CPU-bound loops beside it
    .venv/bin/python benchmarks/suite.py --slow           # 3 runs in the slow-host mode (about 75 minutes)

Each run starts from a new `git clone` of the committed HEAD (what is not committed is not measured) into
one folder, and its virtual environment sits beside the clone: the first run installs it (`./run install`,
not timed), the later ones find it current, as `./run` does. The clone is made again for every run, so no
run reads a file an earlier run wrote. `--load K` starts K `python3 -c 'while True: pass'` loops before
the runs and stops them after. A run that fails is a row too (its exit code and the line pytest ended with).

CPU s is the user + system time of `.ci/run` and of every process under it that its parent waited for
(`os.wait4`: pytest and its workers, kernels, servers, chromium); a process left to init would not be
counted, so it is a lower bound. Machine busy is the share of every core's time that was not idle
(/proc/stat), in the first pass and over the whole run: it counts every process, the --load loops and
anything else running too. A run that keeps the machine near 100 % busy is bound by CPU, and its wall
time follows the host's speed (the probe).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from realtime import speed_probe  # noqa: E402 - the one speed probe, shared with ./run test and the tests
RESULTS = ROOT / "benchmarks" / "results" / "suite.md"
SECOND_PASS = "second pass:"  # the line .ci/run prints between `./run test` and the lessons on live Valkey
CORES = os.cpu_count() or 1
ENDED = re.compile(r"=+ (.*\d+ (?:passed|failed|error).*) in ([\d.]+)s")
INSIDE = re.compile(r"^emqlab: slow-host mode: .* speed probe ([\d.]+) s there")  # tests/suite_run.py's line


def machine_ticks() -> tuple[int, int] | None:
    """(busy, all) clock ticks of every core since boot, from /proc/stat (Linux); None elsewhere."""
    try:
        ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)  # all but idle and iowait (guest is inside user)


def share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of all cores' time between two readings of machine_ticks() that was not idle."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def fresh_clone(folder: Path) -> Path:
    clone = folder / "clone"
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    return clone


def one_run(folder: Path, env: dict[str, str]) -> dict:
    """A fresh clone, then its `.ci/run`, each line's arrival timed."""
    clone = fresh_clone(folder)
    with open(folder / "install.log", "a", encoding="utf-8") as out:  # pip's own notices stay out of the table
        if subprocess.run([str(clone / "run"), "install"], cwd=clone, env=env, stdout=out, stderr=out).returncode:
            sys.exit(f"suite.py: ./run install failed in {clone}; its output is in {folder / 'install.log'}")
    probe = speed_probe()
    ticks = machine_ticks()
    started = time.monotonic()
    first_pass = at_second = None
    ended: list[str] = []
    slowed: list[float] = []  # the probe inside the slow-host mode, each pass
    log = folder / "ci.log"
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen([str(clone / ".ci" / "run")], cwd=clone, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
        for line in proc.stdout:
            out.write(line)
            if line.startswith(SECOND_PASS) and first_pass is None:
                first_pass, at_second = time.monotonic() - started, machine_ticks()
            found = ENDED.search(line)
            if found:
                ended.append(f"{found.group(1)} in {float(found.group(2)):.1f} s")
            inside = INSIDE.search(line)
            if inside:
                slowed.append(float(inside.group(1)))
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = code = os.waitstatus_to_exitcode(status)
    total = time.monotonic() - started
    busy = (share(ticks, at_second), share(ticks, machine_ticks()))
    if code != 0:
        shutil.copy(log, folder / f"failed-{datetime.now(timezone.utc):%H%M%S}.log")
    return {"probe": probe, "test": first_pass, "total": total, "code": code, "ended": ended,
            "cpu": usage.ru_utime + usage.ru_stime, "busy": busy, "slowed": slowed}


def table(runs: list[dict]) -> str:
    def mmss(s):
        return "–" if s is None else f"{int(s // 60)}:{int(s % 60):02d} ({s:.1f} s)"

    def cpu(r):
        return f"{r['cpu']:.0f} ({r['cpu'] / (r['total'] * CORES):.0%} of {CORES} cores)"

    def busy(r):
        return " · ".join("–" if b is None else f"{b:.0%}" for b in r["busy"])

    def probe(r):
        inside = " · ".join(f"{p:.3f}" for p in r["slowed"])
        return f"{r['probe']:.3f}" + (f" → {inside}" if inside else "")

    head = ("run", "speed probe s", "`./run test`", "`.ci/run`", "CPU s", "machine busy: first pass · run", "exit",
            "pytest: first pass; lessons on live Valkey")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, r in enumerate(runs, 1):
        lines.append(f"| {i} | {probe(r)} | {mmss(r['test'])} | {mmss(r['total'])} | {cpu(r)} | {busy(r)} "
                     f"| {r['code']} | " + "; ".join(r["ended"]) + " |")
    done = [r for r in runs if r["code"] == 0]
    if done:
        lines.append(f"| median of {len(done)} passed | {statistics.median(r['probe'] for r in done):.3f} | "
                     f"{mmss(statistics.median(r['test'] for r in done))} | "
                     f"{mmss(statistics.median(r['total'] for r in done))} | "
                     f"{statistics.median(r['cpu'] for r in done):.0f} | | | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3, help="runs, each on a fresh clone (default 3)")
    parser.add_argument("--load", type=int, default=0, help="CPU-bound loops beside the runs (default 0)")
    parser.add_argument("--slow", action="store_true", help="in the slow-host mode (EMQLAB_SLOW_HOST=1: one core, "
                        "loops beside it until the probe is 2.5 times the host's); writes results/suite_slow.md")
    parser.add_argument("--results", type=Path, default=None,
                        help="where to write the table (default: results/suite.md, suite_load<K>.md or suite_slow.md)")
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "emqlab-suite-bench",
                        help="where the clone and its environment live (default: a folder under the temp dir)")
    a = parser.parse_args()
    if a.n < 1 or a.load < 0:
        parser.error("--n must be 1 or more and --load 0 or more")
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    a.folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "EMQLAB_VENV": str(a.folder / "venv")}
    if a.slow:
        env["EMQLAB_SLOW_HOST"] = "1"
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.load)]
    runs = []
    try:
        for i in range(a.n):
            runs.append(one_run(a.folder, env))
            print(f"run {i + 1}/{a.n}: exit {runs[-1]['code']}, {runs[-1]['total']:.0f} s", file=sys.stderr)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    shown = table(runs)
    print(shown)
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    about = (f"# The project's checks on a fresh clone\n\n"
             f"Made {when} on {platform.node() or 'this machine'} ({CORES} cores) at commit {head}: "
             f"{a.n} fresh clone{'s' if a.n > 1 else ''}, each running `.ci/run`"
             + (f", with {a.load} CPU-bound loop{'s' if a.load > 1 else ''} beside them" if a.load else "")
             + (", in the slow-host mode (EMQLAB_SLOW_HOST=1: each pass pinned to one core with CPU-bound loops "
                "beside it until the probe there is at least 2.5 times the host's; the probe column gives the "
                "host's, then → each pass's inside the mode)" if a.slow else "")
             + ". `./run test` is the first pass (its wall time ends when `.ci/run` starts the second); the speed "
             "probe is ten million turns of an empty Python loop just before the run (lower is faster); CPU s is "
             "the user + system time of `.ci/run` and the processes it waited for; machine busy is the share of "
             "all cores' time that was not idle in the first pass and in the whole run, whoever used it.\n\n")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    name = RESULTS if not a.load else RESULTS.with_name(f"suite_load{a.load}.md")
    if a.slow:
        name = RESULTS.with_name("suite_slow.md")
    name = (a.results or name).resolve()
    name.write_text(about + shown + "\n", encoding="utf-8")
    print(f"wrote {name}", file=sys.stderr)


if __name__ == "__main__":
    main()
