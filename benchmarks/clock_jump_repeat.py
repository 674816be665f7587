"""A step of the server's clock, N times on live Valkey through the command line, beside one run on fakeredis:
how often each outcome lesson 18 states held, and whether the live verdict says what the fake one says.
Prints a table and writes benchmarks/results/clock_jump_repeat.md.

    .venv/bin/python benchmarks/clock_jump_repeat.py            # N = 10 (about a minute)
    .venv/bin/python benchmarks/clock_jump_repeat.py --n 3

Each live run starts an embedded `valkey-server` of its own under libfaketime (Debian's `faketime`) and steps
its clock; the run's times are model seconds at the default scale, so a live verdict's times differ from the
fake one's by the machine's lateness: they are compared to a tenth of a second, the course's precision.
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
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "clock_jump_repeat.md"


def _near(a, b, within: float = 0.6) -> bool:
    return a is not None and b is not None and abs(a - b) <= within


# (verb, flags, the claim in words, the check on a live verdict against the fake one, what to tally)
CASES = [
    ("heartbeat", ["--renew", "half", "--clock-jump", "20:60"],
     "lease gone at the step (20 s), contender takes it, runs twice, holder told at its next extend (30 s)",
     lambda v, f: (v["lost_at_jump"] and v["double_run"] and _near(v["lapsed_at"], f["lapsed_at"])
                   and _near(v["renew_lost_at"], f["renew_lost_at"]) and v["finished_by"] == f["finished_by"]),
     ("lost_at_jump", "double_run", "finished_by")),
    ("heartbeat", ["--renew", "half", "--pause", "16:120", "--clock-jump", "20:-60"],
     "a frozen holder's lease outlives the deadline it was given by the step (60 s)",
     lambda v, f: _near(v["lapse_moved_s"], f["lapse_moved_s"]) and _near(v["lapsed_at"], f["lapsed_at"]),
     ("lapse_moved_s",)),
    ("reaper", ["--job", "25", "--no-crash", "--clock-jump", "20:60"],
     "the reaper takes the live worker's job after the step; the fence refuses its completion",
     lambda v, f: (v["reaped_while_working"] and v["stale_complete_refused"] and v["lost"] == 0
                   and _near(v["reaped_at"], f["reaped_at"], 2.6)),
     ("reaped_while_working", "stale_complete_refused", "lost")),
    ("reaper", ["--clock-jump", "15:-60"],
     "a crashed worker's lease outlives its TTL by the step: reaped after 90 s, not 32.5 s",
     lambda v, f: _near(v["lease_ended_at"], f["lease_ended_at"]) and v["reaped_at"] >= 90 and v["lost"] == 0,
     ("stale_complete_refused", "lost")),
]


def one(verb: str, flags: list[str], backend: str) -> tuple[dict | None, float, str]:
    """One run through the command line: (its verdict, or None if it failed; real seconds; its error line)."""
    started = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k not in ("EMQLAB_BACKEND", "EMQLAB_URL")}
    done = subprocess.run([sys.executable, "-m", "emqlab.cli", verb, *flags, "--backend", backend, "--json"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    took = time.monotonic() - started
    if done.returncode != 0:
        return None, took, (done.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(done.stdout)["verdict"], took, ""


def tally(verdicts: list[dict | None], keys: tuple[str, ...]) -> str:
    seen = Counter("error" if v is None else ", ".join(f"{k} {json.dumps(v[k])}" for k in keys) for v in verdicts)
    return "; ".join(f"{what} ×{n}" for what, n in seen.most_common())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="live runs of each case (default 10)")
    a = parser.parse_args()
    started, rows, runs = time.monotonic(), [], 0
    for verb, flags, claim, check, keys in CASES:
        fake, _, error = one(verb, flags, "fake")
        if fake is None:
            raise SystemExit(f"the fake run of {verb} {' '.join(flags)} failed: {error}")
        got = []
        for i in range(a.n):
            got.append(one(verb, flags, "valkey"))
            print(f"{verb} {' '.join(flags)}: {i + 1}/{a.n}", file=sys.stderr)
        runs += a.n + 1
        held = sum(1 for v, _, _ in got if v is not None and check(v, fake))
        errors = sorted({e for _, _, e in got if e})
        rows.append((f"`{verb} {' '.join(flags)}`", claim, f"{held}/{len(got)}", tally([v for v, _, _ in got], keys),
                     f"{statistics.median(t for _, t, _ in got):.1f}", "; ".join(errors)))
    head = ("run", "claim (live as on fakeredis)", "held", "outcomes", "median s", "errors")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]
    table = "\n".join(lines)
    print(table)
    when = datetime.now(timezone.utc).isoformat(timespec="seconds")
    about = (f"# A step of the server's clock: {a.n} live runs of each case\n\n"
             f"Made {when} on {platform.node() or 'this machine'} ({os.cpu_count()} cores), {runs} runs in "
             f"{time.monotonic() - started:.0f} s. Each live run is `emqlab VERB FLAGS --backend valkey --json` (a "
             "server of its own under libfaketime); `held` counts the live verdicts that say what the run on "
             "fakeredis says, times to a tenth of a second (a reap to one beat).\n\n")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(about + table + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
