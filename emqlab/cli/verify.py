"""`emqlab explore` and `emqlab check`: every interleaving of a small world searched on the real scripts
(`emqlab.scenarios.explore`), and the queue's invariants judged on any history (`emqlab.scenarios.history`).
The CLI parses; the library checks every value (one line, exit 2) before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import BadParameter
from ..lease.designs import NONE, design_names
from ..queue.invariants import INVARIANTS
from ..queue.jobs import REAP_LIMIT
from ..scenarios.explore.world import CHECKS, PROGRESS, PROGRESS_RULE
from ..scenarios.explore.search import DEFAULT_STATES
from ..store.backend import store_spec
from .options import help_text, number, output_file

INVARIANT_HELP = "; ".join(f"{i.name}: {i.rule}" for i in INVARIANTS.values())


def _scripts(pairs: list[str] | None) -> dict[str, Path]:
    out = {}
    for pair in pairs or []:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise BadParameter(f"--script takes NAME=FILE (e.g. extend_active=model.lua), got {pair!r}")
        out[name] = Path(path)
    return out


def cmd_explore(args) -> None:
    from ..scenarios.explore import explore, replay, steps_text

    found = explore(workers=args.explore_workers, jobs=args.explore_jobs, depth=args.depth, states=args.states, lease=args.lease,
                    beat=args.beat, design=args.design, fencing=args.fencing, scripts=_scripts(args.script),
                    invariants=args.invariant or None, scale=args.scale, exact=args.exact,
                    symmetry=not args.no_symmetry, sleep=not args.no_sleep, max_runtime=args.max_runtime,
                    reap_limit=args.reap_limit)
    replayed = None
    if args.replay and found.verdict.invariant not in (None, PROGRESS):
        spec = args.backend or store_spec(None)
        replayed = replay(found, backend=spec if spec.source != "fake" else "valkey")
    if args.plot:  # drawn here, after the runs: the scenarios never import plotting
        from ..view.figures import explore_figure

        runs = {"search": found, **({"replay": replayed} if replayed is not None else {})}
        explore_figure(runs).fit((12, 7.2 if replayed is not None else 5.0), 120).figure.savefig(args.plot, dpi=120)
    if args.json:
        v = found.verdict
        payload = {**v.to_dict(), "params": found.params.to_dict()}
        payload["replay"] = replayed.verdict.to_dict() if replayed is not None else None
        if replayed is not None:
            payload["replay"]["events"] = [e.to_dict() for e in replayed.events]
        print(json.dumps(payload))
    else:
        print(found.text)
        if found.verdict.invariant is not None:
            print("the shortest schedule:\n" + steps_text(found.verdict))
        if replayed is not None:
            print(replayed.text)
        elif args.replay and found.verdict.invariant == PROGRESS:
            print("(a progress counterexample is a state no fair schedule settles, not a break: nothing to replay)")
        elif args.replay:
            print("(no counterexample: nothing to replay)")


def cmd_check(args) -> int:
    """Exit 1 if an invariant broke; 0 if at least one was evaluated and none broke; a history on which
    none could be evaluated is refused in one line (exit 2), before anything is printed or drawn."""
    from ..scenarios.history import check

    checked = check(args.file, invariants=args.invariant or None)
    if not checked.evaluated:
        raise BadParameter(checked.nothing_checkable())
    if args.plot and checked.found:
        from ..view.figures import check_figure

        size = (12, max(4.0, 3.2 * len(checked.found) + 1.5))
        check_figure(checked).fit(size, 120).figure.savefig(args.plot, dpi=120)
    if args.json:
        print(json.dumps(checked.to_dict()))
    else:
        print(checked.verdict.text)
        for f in checked.found:
            print(f"\n{f.broken.invariant}, events {f.first}–{f.last}:")
            for i, e in enumerate(checked.window_events(f), start=f.first):
                fields = " ".join(f"{k}={v}" for k, v in e.data.items())
                print(f"  [{i}] t={e.t:g} {e.actor} {e.kind} {fields}".rstrip())
    return 1 if checked.found else 0


def add_verbs(sub, common) -> None:
    p = sub.add_parser("explore", parents=[common],
                       help="every order of a small world's steps on the real scripts (fakeredis, virtual clock): "
                            "the shortest way to break an invariant",
                       epilog="The search always runs on fakeredis on the virtual clock; --replay plays its "
                              "counterexample on --backend when it names a live store, else on an embedded Valkey, "
                              "in real time at --scale or slower (every race with the server's clock decided by 0.5 s "
                              "of real time or more). A bounded search proves nothing beyond its bound.")
    # dest names the range: the explorer's world has its own (a small one), not chaos's workers and jobs
    p.add_argument("--workers", dest="explore_workers", type=number("explore_workers"), default=2,
                   help=help_text("explore_workers", "workers (default 2)"))
    p.add_argument("--jobs", dest="explore_jobs", type=number("explore_jobs"), default=1,
                   help=help_text("explore_jobs", "jobs (default 1)"))
    p.add_argument("--depth", type=number("depth"), default=12,
                   help=help_text("depth", "the longest schedule tried, in steps (default 12)"))
    p.add_argument("--states", type=number("states"), default=DEFAULT_STATES,
                   help=help_text("states", f"the state budget: the search stops there, incomplete (default {DEFAULT_STATES})"))
    p.add_argument("--lease", type=number("lease"), default=30.0, help=help_text("lease", "lease, model seconds (default 30)"))
    p.add_argument("--beat", type=number("beat"), default=20.0,
                   help=help_text("beat", "how far the clock moves at a reaper's beat, model seconds (default 20)"))
    p.add_argument("--design", choices=design_names(), default=NONE,
                   help="how workers keep their jobs: none (default), per-job, sweep or session")
    p.add_argument("--fencing", choices=["on", "off"], default="on",
                   help="on: each effect is one fenced write that settles the job (default); off: unchecked, "
                        "then a completion")
    p.add_argument("--script", action="append", metavar="NAME=FILE",
                   help="run FILE (Lua) instead of the package's script NAME, e.g. extend_active=model.lua (repeat)")
    p.add_argument("--invariant", action="append", choices=list(CHECKS), metavar="NAME",
                   help=f"check only this invariant (repeat; default all, and progress): {INVARIANT_HELP}; "
                        f"progress: {PROGRESS_RULE}")
    p.add_argument("--max-runtime", dest="max_runtime", type=number("max_runtime"), default=0.0,
                   help=help_text("max_runtime", "a hard deadline this long after each claim, model seconds: a hung "
                                                 "job's limit, which no renewal passes (default: none)"))
    p.add_argument("--reap-limit", dest="reap_limit", type=number("reap_limit"), default=REAP_LIMIT,
                   help=help_text("reap_limit", f"the most jobs one reap call takes back (default {REAP_LIMIT}, the "
                                                "course's LIMIT; 1 makes the slices bind in a small world)"))
    p.add_argument("--exact", action="store_true",
                   help="compare states exactly (absolute times, raw values), not on the canonical form; always so "
                        "when --script replaces a script")
    p.add_argument("--no-symmetry", action="store_true",
                   help="count two states that differ only by which worker is which as two (the full search)")
    p.add_argument("--no-sleep", action="store_true",
                   help="try independent steps in every order (no sleep sets: the full search)")
    p.add_argument("--replay", action="store_true", help="play the counterexample on a live server and say whether "
                                                          "it breaks the same invariant")
    p.add_argument("--plot", default=None, metavar="FILE", type=output_file(("png", "svg")),
                   help="also draw the counterexample (and its replay) step by step (png or svg)")
    p.set_defaults(func=cmd_explore)

    p = sub.add_parser("check", parents=[common],
                       help="the queue's invariants over any history (a Timeline JSON): each held, broken or not "
                            "evaluated; exit 1 if one broke, 2 if the history gives none anything to judge",
                       epilog="The history format is in docs/explore-and-check.md (a history any system can write). "
                              "Each invariant is reported held, broken, or not evaluated with what the history "
                              "lacks (no snapshot events, no fencing values, ...); each violation is printed with "
                              "the smallest window of events that shows it. Exit 0 only when at least one "
                              "invariant was evaluated and none broke.")
    p.add_argument("file", metavar="FILE.json", help="a history: a run's JSON (emqlab … --json), or any system's")
    p.add_argument("--invariant", action="append", choices=list(INVARIANTS), metavar="NAME",
                   help=f"check only this invariant (repeat; default all): {INVARIANT_HELP}")
    p.add_argument("--plot", default=None, metavar="FILE", type=output_file(("png", "svg")),
                   help="also draw each violation's window of events (png or svg)")
    p.set_defaults(func=cmd_check)
