"""The explorer (`emqlab explore`): whether it kills mutants of the shipped scripts, what its reductions save,
and whether its counterexample breaks the same invariant on a live server, run after run.

    taskset -c 1 .venv/bin/python benchmarks/explore.py [--replays 10] [--full] [--only SECTION,...]

Sections (all by default; `--only` picks some: designs, mutants, reductions, replays, ways, growth):

- designs: the fencing-on space of 2 workers × 1 job to depth 12, every design (states, steps tried, seconds);
- mutants: every mutant of the shipped scripts (benchmarks/mutants.py: flipped comparisons, dropped writes,
  shifted constants, lease math, removed checks), each on the worlds that run its line (2 workers × 1 job,
  fencing on, each design that calls the script, and for claim, reap and extend_active the same with a hard
  deadline 45 s after each claim; complete with fencing off), to depth 6 (`--full`: then to depth 12): killed
  (the invariant that broke, in how many steps) or survived, the share killed, and for every survivor why
  (`SURVIVORS`): equivalent in this world, or a gap the explorer does not see;
- reductions: 3 workers × 2 jobs, depth 12, fencing on, the state budget lifted (`search` with the
  parameters replaced, as the range stops at 40,000): every design with both reductions on (symmetry, sleep
  sets), and design none with each off; `--full` adds every design with each and both off (an hour or more);
- replays: the fencing-off counterexample replayed `--replays` times on an embedded Valkey (the real clock,
  scaled so every race with the server's clock is decided by 0.5 s of real time or more), counting the
  replays that broke the same invariant at the same, last step;
- ways, growth (`--full`, or named): the two ways back to a parent state (restore its keys, or rerun its
  schedule), and the growth of the space with depth.

Prints the tables and writes them to benchmarks/results/explore.md; with `--only`, the sections named replace
theirs in that file and the others are kept (each section says when it was measured, and how long it took).
A benchmark, not a test: it measures,
it asserts nothing. The default sections run in about 15 minutes on this 2-core machine, pinned to one core.
"""

from __future__ import annotations

import argparse
import re
import os
import platform
import signal
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from emqlab.core.words import plural  # noqa: E402
from emqlab.lease.designs import design_names  # noqa: E402
from emqlab.scenarios.run_harness import run_on  # noqa: E402
from emqlab.scenarios.explore import explore, explore_params, replay, search  # noqa: E402
from emqlab.store.backend import connect  # noqa: E402

import mutants as mut  # noqa: E402

OUT = HERE / "results"
DEFAULT = ("designs", "mutants", "reductions", "replays")
SECTIONS = (*DEFAULT, "ways", "growth")
MARK = "<!-- section: {} -->"  # where each section starts in results/explore.md (what `--only` replaces)
LIFTED = 1_000_000  # the reductions' state budget: far above any space measured here

# Why each survivor survives, by (script, the line before, the line after), in one of three classes:
# "equivalent": no world of the lab can tell it from the shipped script (the values the line sees, or how its
# caller reads its reply, make the change invisible); "unreached": a behaviour changes, in a world larger than the
# ones searched (named), never in these; "gap": a behaviour these worlds reach changes, and no invariant sees it.
ROOM = "the slice's room"
SURVIVORS: dict[tuple[str, str, str], str] = {
    ('claim', 'if max_ms > 0 then',
     'if max_ms > 1 then'):
        'equivalent: `max_ms` is 0 or at least 1,000 (a hard deadline is at least 1 s): `> 1` and `> 0` '
        'agree on both',
    ('claim', 'return {now, -1, hard}',
     'return {now, -2, hard}'):
        'equivalent: the caller reads any negative deadline as the session gone',
    ('claim', 'if hard > 0 then',
     'if hard > 1 then'):
        'equivalent: `hard` is 0, or a server time in ms: `> 1` and `> 0` agree on both',
    ('claim', 'elseif hard > 0 and hard < deadline then',
     'elseif hard > 0 and hard <= deadline then'):
        "equivalent: when the hard deadline equals the lease's, both branches give the same deadline",
    ('claim', 'elseif hard > 0 and hard < deadline then',
     'elseif hard > 1 and hard < deadline then'):
        'equivalent: `hard` is 0, or a server time in ms',
    ('claim', 'for i = 1, #popped, 2 do',
     'for i = 1, #popped, 3 do'):
        'unreached: every claim of the world takes one job, so the loop runs once either way; a claim of '
        'two jobs at once (a consumer\'s batch) would lose the second',
    ('claim', "if redis.call('EXISTS', job_key) == 1 then",
     'if true then'):
        "equivalent: no script of the lab deletes a pending job's row, so every popped id has one",
    ('claim', "local attempts = redis.call('HINCRBY', job_key, 'attempts', 1)",
     "local attempts = redis.call('HINCRBY', job_key, 'attempts', 2)"):
        'gap: fencing values 2, 4, … still grow and are never handed out twice, so every fence holds; '
        'attempts no longer counts the claims, which no invariant says (a history from another system may '
        'number its fencing tokens any way that grows, so attempts_grow asks only that)',
    ('claim', 'if hard > 0 then',
     'if hard > 1 then'):
        'equivalent: `hard` is 0, or a server time in ms',
    ('claim', "redis.call('HDEL', job_key, 'hard')",
     'do end  -- mutant: HDEL dropped'):
        'unreached: every worker of a world has the same hung-job limit, so a claim without one never '
        'follows a claim with one; with mixed limits a stale `hard` would cut the next lease short',
    ('claim', "redis.call('HDEL', job_key, 'session')",
     'do end  -- mutant: HDEL dropped'):
        "equivalent: a job a lease worker claims carries no session mark, or the reaper's `session 0`, "
        "which nothing reads differently from none (the scripts and sessions_agree look for '1')",
    ('reap', 'scored[#scored + 1] = 0',
     'scored[#scored + 1] = 1'):
        "equivalent: a reaped job's pending score 1 still puts it ahead of every arrival (scored by "
        'server ms), and reaped jobs tie among themselves either way',
    ('reap', 'if held then',
     'if true then'):
        'equivalent: a lease-held job reaped gets `session 0`, which nothing reads differently from '
        "no field (sessions_agree and the scripts look for '1'; the next claim rewrites it)",
    ('reap', "if session == '1' then  -- a session holder's job past its hard deadline leaves the worker's index",
     "if true then  -- a session holder's job past its hard deadline leaves the worker's index"):
        'equivalent: a lease-held job is in no `held:` index, so the ZREM is a no-op; a session-held '
        'job leaves the index as before',
    ('reap', "back_to_pending(id, job_key, session == '1')",
     "back_to_pending(id, job_key, session ~= '1')"):
        'equivalent: a lease-held job gets `session 0` (as above) and a session-held one reaped at '
        'its hard deadline keeps `session 1` while pending; nothing reads the mark of a job that is '
        'not active, and the next claim rewrites it',
    ('reap', 'while left > 0 and turns > 0 do',
     'while left >= 0 and turns > 0 do'):
        'unreached: it takes a lapsed session into a call whose slice expired leases already filled; in '
        'these worlds (reap limit 1 with 2 jobs included) no lapsed session holding a job meets a full '
        'slice in one call: a session renewed at the time points tried never lapses at a job\'s hard deadline',
    ('reap', 'turns = turns - 1',
     'turns = turns - 2'):
        'unreached: a call ends at most half its limit of idle lapsed sessions; these worlds never hold '
        'more lapsed sessions than one call ends either way (it slows the reaper, and never breaks a rule)',
    ('reap', "local lapsed = redis.call('ZRANGEBYSCORE', sessions_key, '-inf', now, 'LIMIT', 0, 1)",
     "local lapsed = redis.call('ZRANGEBYSCORE', sessions_key, '-inf', now, 'LIMIT', 0, 2)"):
        'equivalent: two lapsed sessions are read where one was, and only the first is used',
    ('reap', "local held = redis.call('ZRANGE', held_key, 0, left - 1)",
     "local held = redis.call('ZRANGE', held_key, 0, left - 2)"):
        f'unreached: a worker holds one job in these worlds, so its index never exceeds {ROOM}; a '
        'session holding two jobs, with one place left in the slice, would have both taken (or none)',
    ('reap', "if state == 'active' and holder == worker then",
     'if true and holder == worker then'):
        'equivalent: every id in `held:<w>` is an active job held by w in the shipped scripts (claim '
        'adds it so; every settle and reap removes it; sessions_agree holds), so the check never fails',
    ('reap', "if state == 'active' and holder == worker then",
     "if state == 'active' and true then"):
        "equivalent: as above: the index and the job's worker always agree",
    ('reap', "if redis.call('EXISTS', held_key) == 0 then",
     'if true then'):
        f'unreached: a worker holds one job in these worlds, so a lapsed session\'s index always fits {ROOM} '
        'and is emptied in one call; with two held and a limit of 1 the session would end with a job '
        'still in its index',
    ('record_effect', "if base and redis.call('HGET', job_key, 'session') == '1' then",
     'if base and true then'):
        'equivalent: for a lease-held job the ZREM from `held:<worker>` and the HDEL of `session` are'
        ' no-ops',
    ('record_effect', "redis.call('HDEL', job_key, 'session')",
     'do end  -- mutant: HDEL dropped'):
        'equivalent: a settled session job keeps `session 1` in its row, but it is done and never '
        "active again, and sessions_agree asks only active jobs' rows",
    ('record_effect', 'if fenced then',
     'if true then'):
        'unreached: every effect in a fencing-on world is fenced already; with fencing off (a world '
        'record_effect is not judged in) it would fence the write: safer, not a defect',
    ('record_effect', 'return -1',
     'return -2'):
        'equivalent: the caller reads any negative reply as refused',
    ('complete', "if base and redis.call('HGET', job_key, 'session') == '1' then",
     'if base and true then'):
        'equivalent: as record_effect:49',
    ('complete', "redis.call('HDEL', job_key, 'session')",
     'do end  -- mutant: HDEL dropped'):
        'equivalent: as record_effect:51',
    ('extend_active', 'for i = 3, #ARGV, 2 do',
     'for i = 3, #ARGV, 3 do'):
        'unreached: a worker holds one job in these worlds, so each extend carries one pair and the '
        'loop runs once either way; a batch of two would renew only the first',
    ('extend_active', "if state == 'active' and current == attempts and redis.call('ZSCORE', active_key, id) then",
     "if true and current == attempts and redis.call('ZSCORE', active_key, id) then"):
        "equivalent: a job still in active under the caller's attempt is always state active (every "
        'script that changes the state takes the job out of active in the same call), so the ZSCORE '
        'check covers it',
    ('session_open', 'return {now, 0}',
     'return {now, 1}'):
        'unreached: the line never runs here: a lapsed session whose index one call empties loses its '
        'token and its entry together, before its worker can learn it is gone; a session holding more '
        'jobs than a slice takes keeps its entry a while, and its worker would open over it',
}


def reason(m: mut.Mutant) -> str:
    return SURVIVORS.get((m.script, m.before, m.after), "(no reason written yet: look at it)")


# -- the tables ---------------------------------------------------------------------------------------------------
def row_of(name: str, v) -> dict:
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


def designs_section(deep: int) -> str:
    rows = [row_of(f"design {d}, fencing on, 2 workers × 1 job, depth {deep}", explore(depth=deep, design=d).verdict)
            for d in design_names()]
    return table("The fencing-on space, explored whole", rows)


def ways_section(deep: int) -> str:
    rows = []
    for d, depth in (("none", deep), ("session", 8)):
        for method in ("restore", "rerun"):
            rows.append(row_of(f"design {d}, depth {depth}: {method}",
                               explore(depth=depth, design=d, method=method).verdict))
    return table("Back to a parent state: write its keys back and rewind (restore), or replay its schedule from "
                 "an empty store (rerun)", rows)


def growth_section() -> str:
    rows = [row_of(f"design none, 2 workers × 1 job, depth {depth}", explore(depth=depth).verdict)
            for depth in range(4, 21, 4)]
    rows += [row_of(f"design session, 2 workers × 1 job, depth {depth}", explore(depth=depth, design="session").verdict)
             for depth in range(4, 13, 4)]
    return table("Growth with depth", rows)


# -- mutants -------------------------------------------------------------------------------------------------------
def mutants_section(full: bool, log) -> tuple[str, list[dict]]:
    started = time.perf_counter()
    cov = mut.coverage()
    cov_s = time.perf_counter() - started
    ms = mut.all_mutants()
    depths = (6, 12) if full else (6,)

    def progress(i: int, r: dict) -> None:
        log(f"  mutant {i + 1}/{len(ms)} {r['mutant'].name}: {r['killed'] or 'survived'} ({r['wall']:.1f} s)")

    results = mut.judge_all(ms, timeout=1800 if full else 120, cov=cov, depths=depths, progress=progress)
    seconds = time.perf_counter() - started
    n = len(results)
    by_invariant = [r for r in results if r["killed"] and r["killed"] != "script error"]
    by_error = [r for r in results if r["killed"] == "script error"]
    survivors = [r for r in results if not r["killed"]]
    equivalent = [r for r in survivors if reason(r["mutant"]).startswith("equivalent")]
    unreached = [r for r in survivors if reason(r["mutant"]).startswith("unreached")]
    killed = len(by_invariant) + len(by_error)
    share = killed / n
    share_ne = killed / (n - len(equivalent)) if n > len(equivalent) else 1.0
    operators = sorted({m.operator for m in ms})
    counts = ", ".join(f"{sum(1 for m in ms if m.operator == k)} {k}" for k in operators)
    scripts = ", ".join(f"{s} {sum(1 for m in ms if m.script == s)}" for s in mut.SCRIPTS)
    lines = [
        "### Mutants of the shipped scripts\n",
        f"{n} mutants ({counts}; by script: {scripts}), made mechanically by benchmarks/mutants.py, each run on the "
        f"worlds whose search runs its line (2 workers × 1 job, fencing on, each design that calls the script, "
        f"and for claim, reap and extend_active the same with a hard deadline {mut.HARD:g} s after each claim; for "
        f"reap also 2 jobs with a reap limit of {mut.SLICE}, so its slices fill; "
        f"complete with fencing off, judged by every invariant the shipped scripts keep there), "
        f"{' then '.join(f'to depth {d}' for d in depths)}, states compared exactly (a script is replaced). "
        f"Which lines each world runs was found by one search per world with every script instrumented "
        f"({cov_s:.0f} s). Wall time {seconds:.0f} s.\n",
        f"**Killed: {killed} of {n} ({share:.0%})**: {len(by_invariant)} by an invariant, {len(by_error)} by the "
        f"call itself failing (a Lua error, or a reply the caller cannot read: the search stops there). "
        f"Survived: {len(survivors)}: {len(equivalent)} equivalent (no world of the lab can tell them from the "
        f"shipped script), {len(unreached)} unreached (they change what a larger world than these would do) and "
        f"{plural(len(survivors) - len(equivalent) - len(unreached), 'gap')} (a change these worlds reach that no "
        f"invariant sees). **Killed among the {n - len(equivalent)} mutants not equivalent: {killed} "
        f"({share_ne:.0%})**; the unreached and the gaps count as not killed.\n",
        "| # | script | line | kind | change | verdict | world | steps | seconds |",
        "|---:|---|---:|---|---|---|---|---:|---:|",
    ]
    for k, r in enumerate(results, start=1):
        m = r["mutant"]
        change = m.change.replace("|", "\\|")
        if r["killed"]:
            verdict = f"killed: {r['killed']}" if r["killed"] != "script error" else \
                f"killed: script error ({r['error'].split(':')[0]})"
            world, steps = r["world"], "" if r["steps"] is None else str(r["steps"])
        elif r.get("hung"):
            verdict, world, steps = "hung (stopped)", "", ""
        elif not r["reached"]:
            verdict, world, steps = "survived: line never runs", "", ""
        else:
            verdict = f"survived (depth {r['depth']}{'' if r['complete'] else ', budget cut'})"
            deepest = {}
            for x in r["runs"]:
                deepest[x["world"]] = max(deepest.get(x["world"], 0), x["depth"])
            world = ", ".join(w.short + ("" if d == r["depth"] else f" to depth {d}") for w, d in deepest.items())
            steps = ""
        lines.append(f"| {k} | {m.script} | {m.line} | {m.operator} | {change} | {verdict} | {world} | {steps} | "
                     f"{r['wall']:.1f} |")
    lines.append("\n#### Every survivor, and why\n")
    for r in survivors:
        m = r["mutant"]
        lines.append(f"- {m.name.replace('|', '/')}: {reason(m)}")
    by = {}
    for r in by_invariant:
        by[r["killed"]] = by.get(r["killed"], 0) + 1
    lines.append("\nKilled by: " + ", ".join(f"{k} {v}" for k, v in sorted(by.items(), key=lambda kv: -kv[1]))
                 + f", script error {len(by_error)}.\n")
    return "\n".join(lines) + "\n", results


# -- reductions ----------------------------------------------------------------------------------------------------
def reduced(design: str, symmetry: bool, sleep: bool, workers: int = 3, jobs: int = 2, depth: int = 12) -> dict:
    p = replace(explore_params(workers=workers, jobs=jobs, depth=depth, design=design, symmetry=symmetry, sleep=sleep),
                states=LIFTED)
    with connect("fake") as backend:
        with run_on(backend, "explore", p, cost=p.cost()) as run:
            return search(backend, run.prefix, p, "restore")


def reductions_section(full: bool, log) -> str:
    combos = [(True, True), (False, True), (True, False), (False, False)]
    plan = [(d, True, True) for d in design_names()]
    plan += [("none", False, True), ("none", True, False)]
    if full:
        plan += [(d, s, z) for d in design_names() for s, z in combos if (d, s, z) not in plan]
    rows = []
    for d, sym, slp in plan:
        f = reduced(d, sym, slp)
        log(f"  reductions {d} symmetry {sym} sleep {slp}: {f['states']:,} states, {f['seconds']:.1f} s")
        rows.append((d, sym, slp, f))
    on = {d: f for d, s, z, f in rows if s and z}
    lines = ["### Reductions: 3 workers × 2 jobs, depth 12, fencing on (state budget lifted)\n",
             "Symmetry: states that differ only by which worker is which are one. Sleep sets: of two independent "
             "steps, one order tried. Each row a whole search (`complete`), progress judged from every state.\n",
             "| design | symmetry | sleep sets | states | steps tried | complete | violations | progress checked | "
             "seconds | states vs both on | steps vs both on |",
             "|---|:-:|:-:|---:|---:|:-:|---:|---:|---:|---:|---:|"]
    order = {d: i for i, d in enumerate(design_names())}
    for d, sym, slp, f in sorted(rows, key=lambda x: (order[x[0]], not x[1], not x[2])):
        base = on[d]
        lines.append(f"| {d} | {'on' if sym else 'off'} | {'on' if slp else 'off'} | {f['states']:,} | "
                     f"{f['transitions']:,} | {'yes' if f['complete'] else 'no'} | {f['violations']} | "
                     f"{f['progress_checked']:,} | {f['seconds']:.1f} | {f['states'] / base['states']:.2f}× | "
                     f"{f['transitions'] / base['transitions']:.2f}× |")
    if not full:
        lines.append("\nOnly design none is searched with a reduction off here (per-job, sweep and session with "
                     "symmetry off take several minutes each): `--full` adds them.")
    return "\n".join(lines) + "\n"


# -- replays -------------------------------------------------------------------------------------------------------
def replays_section(n: int) -> str:
    found = explore(depth=8, fencing="off")
    replays = []
    for _ in range(n):
        started = time.perf_counter()
        r = replay(found, backend="valkey").verdict
        replays.append((r.same, r.broke_at, r.invariant, r.scale, time.perf_counter() - started, r.why))
    same = sum(1 for s, *_ in replays if s)
    lines = ["### The fencing-off counterexample replayed on an embedded Valkey\n",
             f"Schedule ({len(found.verdict.counterexample)} steps): "
             + "; ".join(f"{s['actor']} {s['action']}" for s in found.verdict.counterexample) + "\n",
             f"**{same} of {len(replays)} replays broke {found.verdict.invariant} at the last step**, as the search "
             f"did on fakeredis (scale {replays[0][3]:g} real s per model s: every race with the server's clock "
             f"decided by ≥ 0.5 s of real time).\n" if replays else "No replays asked for.\n",
             "| replay | same break | broke at | invariant | wall s (server start included) |",
             "|---:|:-:|---:|---|---:|"]
    lines += [f"| {k} | {'yes' if s else 'no'} | {b} | {i} | {w:.2f} |" for k, (s, b, i, _, w, _) in
              enumerate(replays, start=1)]
    lines += [f"\nwhy not, replay {k}: {why}" for k, (s, *_, why) in enumerate(replays, start=1) if not s]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=10)
    parser.add_argument("--full", action="store_true", help="mutants to depth 12, every reduction off for every "
                        "design, the ways back and the growth tables (an hour or more)")
    parser.add_argument("--only", default=None, help=f"comma-separated sections: {', '.join(SECTIONS)}")
    args = parser.parse_args()
    chosen = tuple(SECTIONS if args.full else DEFAULT) if args.only is None else tuple(args.only.split(","))
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section {', '.join(unknown)}; known: {', '.join(SECTIONS)}")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    # stopped: exit through the interpreter, so multiprocessing stops a mutant's process too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    started = time.perf_counter()
    explore(depth=2)  # the first Lua calls compile the scripts
    sections, took = {}, {}
    for name in SECTIONS:
        if name not in chosen:
            continue
        t = time.perf_counter()
        log(f"{name} …")
        if name == "designs":
            sections[name] = designs_section(12)
        elif name == "mutants":
            sections[name] = mutants_section(args.full, log)[0]
        elif name == "reductions":
            sections[name] = reductions_section(args.full, log)
        elif name == "replays":
            sections[name] = replays_section(args.replays)
        elif name == "ways":
            sections[name] = ways_section(12)
        elif name == "growth":
            sections[name] = growth_section()
        took[name] = time.perf_counter() - t
        log(f"{name}: {took[name]:.0f} s")
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    pinned = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    command = f"benchmarks/explore.py{' --full' if args.full else ''}{' --only ' + args.only if args.only else ''}"
    for name in sections:  # each section says when and how it was measured
        sections[name] = (f"{MARK.format(name)}\n*Measured {when}, `{command}`, {took[name]:.0f} s, {pinned} of "
                          f"{os.cpu_count()} cores allowed to the run.*\n\n{sections[name]}")
    path = OUT / "explore.md"
    if args.only is not None and path.exists():  # keep the sections not measured now
        kept = dict(re.findall(r"(?ms)^<!-- section: (\w+) -->\n(.*?)(?=^<!-- section: |\Z)", path.read_text()))
        kept = {k: MARK.format(k) + "\n" + v.rstrip("\n") + "\n" for k, v in kept.items()}
        sections = {k: sections.get(k, kept.get(k)) for k in SECTIONS if k in sections or k in kept}
    head = (f"# benchmarks/explore.py\n\nOn {platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}; fakeredis on the virtual clock for every search (lease 30 s, beat 20 s, a "
            f"freeze 50 s). Command: `benchmarks/explore.py` (all the default sections; `--only` remeasures some).\n\n")
    text = head + "\n".join(sections.values())
    print(text)
    OUT.mkdir(exist_ok=True)
    path.write_text(text)


if __name__ == "__main__":
    main()
