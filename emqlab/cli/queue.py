"""`emqlab reaper`, `emqlab chaos` and `emqlab stuck`: the EchoMQ applied form run for real — a crashed
consumer's lease reaped on the server clock, many consumers under random faults, a job that hangs while
its worker lives. Every option becomes a keyword argument of the scenario of the same name
(`emqlab.scenarios.reaper.reaper`, `…chaos.chaos`, `…stuck.stuck`; chaos's --plot excepted)."""

from __future__ import annotations

from ..core.ranges import get

from ..lease.designs import NONE, design_names
from .options import emit, help_text, number, output_file, run_limits, store_of, verb_kwargs

DESIGN_HELP = ("how consumers hold their jobs: none (EchoMQ: no renewal, the reaper after the lease; default), "
               "per-job, sweep or session (renewed at TTL/2)")


def cmd_reaper(args) -> None:
    from ..scenarios.reaper import reaper

    kwargs = verb_kwargs(args, "no_crash")
    if args.no_crash:
        kwargs["crash_at"] = None
    timeline = reaper(**kwargs, backend=store_of(args))
    emit(args, timeline.to_dict(), timeline.text)


def cmd_chaos(args) -> None:
    from ..scenarios.chaos import chaos

    result = chaos(**verb_kwargs(args, "plot"), backend=store_of(args))
    if args.plot:  # drawn here, after the run: the scenario never imports plotting
        from ..view.figures import chaos_figure

        chaos_figure(result).figure.savefig(args.plot, dpi=120)
    emit(args, result.to_dict(), result.text)


def cmd_stuck(args) -> None:
    from ..scenarios.stuck import stuck

    timeline = stuck(**verb_kwargs(args), backend=store_of(args))
    emit(args, timeline.to_dict(), timeline.text)


def add_verbs(sub, common) -> None:
    p = sub.add_parser("reaper", parents=[common], epilog=run_limits(),
                       help="a consumer dies mid-job; the reaper returns its lease on the server clock")
    p.add_argument("--lease", type=number("lease"), default=30.0,
                   help=help_text("lease", "lease per claim, model seconds (default 30)"))
    p.add_argument("--beat", type=number("beat"), default=5.0, help=help_text("beat", "consumer beat, model seconds (default 5)"))
    p.add_argument("--job", type=number("job"), default=20.0, help=help_text("job", "job length, model seconds (default 20)"))
    p.add_argument("--crash-at", dest="crash_at", type=number("crash_at"), default=10.0,
                   help=help_text("crash_at", "when worker-1 dies mid-job, model seconds (default 10)"))
    p.add_argument("--late-at", dest="late_at", type=number("late_at"), default=None,
                   help=help_text("late_at", "when worker-1's stale completion arrives (default lease + 3 beats)"))
    p.add_argument("--queue", default="orders", help="queue name (default orders)")
    p.add_argument("--procs", action="store_true",
                   help="live Valkey only: run the consumers as OS processes; the crash is a SIGKILL")
    p.add_argument("--design", choices=design_names(), default=NONE, help=DESIGN_HELP)
    p.add_argument("--no-crash", action="store_true",
                   help="worker-1 never dies (with --clock-jump: its job is taken back while it works)")
    p.add_argument("--clock-jump", default=None, metavar="AT:SECONDS",
                   help=f"step the server's clock at AT [{get('clock_jump_at').text()}, inside the job] by SECONDS "
                        f"[{get('clock_jump').text()}, not 0; negative steps back]; on --backend valkey the run "
                        "starts a server of its own under libfaketime")
    p.set_defaults(func=cmd_reaper)

    p = sub.add_parser("chaos", parents=[common], epilog=run_limits(),
                       help="many consumers, many jobs, random kills and pauses; count lost and duplicate effects")
    p.add_argument("--workers", type=number("workers"), default=4, help=help_text("workers", "consumers (default 4)"))
    p.add_argument("--jobs", type=number("jobs"), default=1000, help=help_text("jobs", "jobs to enqueue (default 1000)"))
    p.add_argument("--fencing", choices=["on", "off"], default="on",
                   help="on: each effect is written by a script that checks attempts (default); off: unchecked")
    p.add_argument("--kills", type=number("kills"), default=None,
                   help=help_text("kills", "consumer crashes to inflict (default: workers)"))
    p.add_argument("--pauses", type=number("pauses"), default=None,
                   help=help_text("pauses", "stop-the-world pauses of 2 × lease to inflict (default: 2 × workers)"))
    p.add_argument("--lease", type=number("lease"), default=None,
                   help=help_text("lease", "lease per claim, model seconds (default 10)"))
    p.add_argument("--beat", type=number("beat"), default=None, help=help_text("beat", "consumer beat, model seconds (default 1)"))
    p.add_argument("--job", type=number("job"), default=None, help=help_text("job", "job length, model seconds (default 0.5)"))
    p.add_argument("--seed", type=number("seed"), default=1, help=help_text("seed", "random seed for the faults (default 1)"))
    p.add_argument("--procs", choices=["auto", "on", "off"], default="auto",
                   help="consumers as OS processes: auto (= on for live Valkey, off on fake)")
    p.add_argument("--plot", default=None, metavar="FILE", type=output_file(("png", "svg")),
                   help="also write a plot of the run (png or svg; its folder must exist)")
    p.add_argument("--progress", choices=["auto", "on", "off"], default="auto",
                   help="progress bar on stderr (auto: when stderr is a terminal)")
    p.add_argument("--queue", default="orders", help="queue name (default orders)")
    p.add_argument("--design", choices=design_names(), default=NONE, help=DESIGN_HELP)
    p.set_defaults(func=cmd_chaos)

    p = sub.add_parser("stuck", parents=[common], epilog=run_limits(),
                       help="a worker stays alive while one of its jobs hangs: none, sweep, session, and a hard deadline")
    p.add_argument("--design", choices=design_names(), default=NONE,
                   help="how the worker holds its jobs: none (EchoMQ: no renewal, the reaper after the lease; "
                        "default), per-job, sweep or session (renewed at TTL/2)")
    p.add_argument("--max-runtime", dest="max_runtime", type=number("max_runtime"), default=None,
                   help=help_text("max_runtime", "a hard deadline this many model seconds after the claim, set once, "
                                  "checked by the reaper's same slice (default: none)"))
    p.add_argument("--lease", type=number("lease"), default=30.0,
                   help=help_text("lease", "the lease (or the session's lease), model seconds (default 30)"))
    p.add_argument("--beat", type=number("beat"), default=5.0, help=help_text("beat", "consumer beat, model seconds (default 5)"))
    p.add_argument("--queue", default="orders", help="queue name (default orders)")
    p.set_defaults(func=cmd_stuck)
