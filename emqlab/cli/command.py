"""The `emqlab` command. A contract: tests and users script against it (see DESIGN.md).

Bad input: one line `emqlab: error: …` on stderr, exit 2. A runtime failure (server unreachable,
…): one line, exit 1. `--json` prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from contextlib import contextmanager

import redis

from ..store.backend import redact
from .options import Parser, common_options, emit, open_store, scenario_kwargs
from ..core.errors import EmqlabError
from ..faults.pauses import Pause
from ..core.ranges import arg, get, run_limits, help_text, output_dir, output_file, spec_arg
from ..lease.cadence import cadence_help, parse_cadence
from ..lease.designs import design_help, design_names
from ..queue.holder import queue_designs


# -- verbs ---------------------------------------------------------------------------------------
def cmd_heartbeat(args) -> None:
    from ..scenarios.heartbeat import heartbeat

    with open_store(args) as backend:
        timeline = heartbeat(lease=args.lease, job=args.job, renew=args.renew, pause=args.pause,
                             latency=args.latency, backend=backend)
    emit(args, timeline.to_dict(), timeline.summary)


def cmd_renewal_cost(args) -> None:
    from ..scenarios.renewal_cost import renewal_cost

    with open_store(args) as backend:
        result = renewal_cost(jobs=args.jobs, design=args.design, ticks=args.ticks, batch=args.batch,
                              lease=args.lease, cadence=args.cadence, steal=args.steal, backend=backend)
    emit(args, result.to_dict(), result.summary)


def cmd_reaper(args) -> None:
    from ..scenarios.reaper import reaper

    with open_store(args) as backend:
        timeline = reaper(**scenario_kwargs(args), backend=backend)
    emit(args, timeline.to_dict(), timeline.summary)


def cmd_chaos(args) -> None:
    from ..scenarios.chaos import chaos

    kwargs = scenario_kwargs(args)
    plot = kwargs.pop("plot")
    with open_store(args) as backend:
        result = chaos(**kwargs, backend=backend)
    if plot:  # drawn here, after the run: the scenario never imports plotting
        from ..view.figures import chaos_figure

        chaos_figure(result).figure.savefig(plot, dpi=120)
    emit(args, result.to_dict(), result.summary)


def cmd_figures(args) -> None:
    from ..view.export import export_all

    written = export_all(args.out, fmt=args.format, backend=args.backend, clock=args.clock, scale=args.scale)
    emit(args, {"out": str(args.out), "files": [str(p) for p in written]},
          "\n".join(str(p) for p in written))


def cmd_lab(args) -> None:
    from ..course.lab import open_lab

    open_lab(args.extra)


def cmd_present(args) -> None:
    from ..course.present import present

    env = None
    if args.join_file:  # the class dashboard's address: read here, handed to Voila in its environment
        from .classroom import URL_ENV, read_address

        env = {URL_ENV: read_address(args.join_file + ".instructor")}
    present(args.name, port=args.port, open_browser=not args.no_browser, env=env)


def cmd_valkey(args) -> None:
    import time

    from ..store.embedded import EmbeddedValkey

    with EmbeddedValkey() as server:
        print(server.url, flush=True)
        print(f"emqlab: embedded valkey-server pid {server.pid}; Ctrl-C stops it", file=sys.stderr, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


def cmd_clean(args) -> None:
    from ..lease.runs import clean

    with open_store(args) as backend:
        result = clean(backend)
    emit(args, result.to_dict(), result.summary)


DESIGN_HELP = ("how consumers hold their jobs: none (EchoMQ: no renewal, the reaper after the lease; default), "
               "per-job, sweep or session (renewed at TTL/2)")


def _applied_verbs(sub, common) -> None:
    """`emqlab reaper` and `emqlab chaos`: every option becomes a keyword argument of
    `emqlab.scenarios.reaper.reaper` / `emqlab.scenarios.chaos.chaos` (chaos's --plot excepted)."""
    p = sub.add_parser("reaper", parents=[common],
                       help="a consumer dies mid-job; the reaper returns its lease on the server clock")
    p.add_argument("--lease", type=arg("lease"), default=30.0, help=help_text("lease", "lease per claim, model seconds (default 30)"))
    p.add_argument("--beat", type=arg("beat"), default=5.0, help=help_text("beat", "consumer beat, model seconds (default 5)"))
    p.add_argument("--job", type=arg("job"), default=20.0, help=help_text("job", "job length, model seconds (default 20)"))
    p.add_argument("--crash-at", dest="crash_at", type=arg("crash_at"), default=10.0,
                   help=help_text("crash_at", "when worker-1 dies mid-job, model seconds (default 10)"))
    p.add_argument("--late-at", dest="late_at", type=arg("late_at"), default=None,
                   help=help_text("late_at", "when worker-1's stale completion arrives (default lease + 3 beats)"))
    p.add_argument("--queue", default="orders", help="queue name (default orders)")
    p.add_argument("--procs", action="store_true",
                   help="live Valkey only: run the consumers as OS processes; the crash is a SIGKILL")
    p.add_argument("--design", choices=queue_designs(), default="none", help=DESIGN_HELP)
    p.set_defaults(func=cmd_reaper)

    p = sub.add_parser("chaos", parents=[common],
                       help="many consumers, many jobs, random kills and pauses; count lost and duplicate effects")
    p.add_argument("--workers", type=arg("workers"), default=4, help=help_text("workers", "consumers (default 4)"))
    p.add_argument("--jobs", type=arg("jobs"), default=1000, help=help_text("jobs", "jobs to enqueue (default 1000)"))
    p.add_argument("--fencing", choices=["on", "off"], default="on",
                   help="on: each effect is written by a script that checks attempts (default); off: unchecked")
    p.add_argument("--kills", type=arg("kills"), default=None, help=help_text("kills", "consumer crashes to inflict (default: workers)"))
    p.add_argument("--pauses", type=arg("pauses"), default=None,
                   help=help_text("pauses", "stop-the-world pauses of 2 × lease to inflict (default: 2 × workers)"))
    p.add_argument("--lease", type=arg("lease"), default=None, help=help_text("lease", "lease per claim, model seconds (default 10)"))
    p.add_argument("--beat", type=arg("beat"), default=None, help=help_text("beat", "consumer beat, model seconds (default 1)"))
    p.add_argument("--job", type=arg("job"), default=None, help=help_text("job", "job length, model seconds (default 0.5)"))
    p.add_argument("--seed", type=arg("seed"), default=1, help=help_text("seed", "random seed for the faults (default 1)"))
    p.add_argument("--procs", choices=["auto", "on", "off"], default="auto",
                   help="consumers as OS processes: auto (= on for live Valkey, off on fake)")
    p.add_argument("--plot", default=None, metavar="FILE", type=output_file(("png", "svg")),
                   help="also write a plot of the run (png or svg; its folder must exist)")
    p.add_argument("--progress", choices=["auto", "on", "off"], default="auto",
                   help="progress bar on stderr (auto: when stderr is a terminal)")
    p.add_argument("--queue", default="orders", help="queue name (default orders)")
    p.add_argument("--design", choices=queue_designs(), default="none", help=DESIGN_HELP)
    p.set_defaults(func=cmd_chaos)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="emqlab", description="Run, record and draw how a distributed-lock lease is kept fresh.")
    sub = parser.add_subparsers(dest="verb", required=True, parser_class=Parser)
    common = common_options()

    p = sub.add_parser("heartbeat", parents=[common], help="a job longer than its lease, with or without renewal")
    p.add_argument("--lease", type=arg("lease"), default=30.0, help=help_text("lease", "lease (TTL) in model seconds (default 30)"))
    p.add_argument("--job", type=arg("job"), default=75.0, help=help_text("job", "job length in model seconds (default 75)"))
    p.add_argument("--renew", default="none", type=spec_arg(parse_cadence, "cadence"),
                   help=help_text("cadence", f"{cadence_help()} (default none)"))
    p.add_argument("--pause", default=None, metavar="AT:SECONDS", type=spec_arg(Pause.parse, "pause"),
                   help=f"stop the holder's world at AT [{get('pause_at').text()}] for SECONDS [{get('pause').text()}]")
    p.add_argument("--latency", type=arg("latency"), default=0.0, metavar="SECONDS",
                   help=help_text("latency", "one-way delay of the holder's link to the store, model seconds; "
                                  "the contender sits beside the server (default 0)"))
    p.set_defaults(func=cmd_heartbeat)

    p = sub.add_parser("renewal-cost", parents=[common], help="what renewing K leases costs: per-job timers, one sweep or one session")
    p.add_argument("--jobs", type=arg("jobs"), default=6, help=help_text("jobs", "K, the leases the worker holds (default 6)"))
    p.add_argument("--design", choices=design_names(), default="sweep", help=design_help("sweep"))
    p.add_argument("--ticks", type=arg("ticks"), default=4, help=help_text("ticks", "renewal ticks to run (default 4)"))
    p.add_argument("--batch", type=arg("batch"), default=None,
                   help=help_text("batch", "sweep: leases per script call (default 500, which keeps a call well under 5 ms)"))
    p.add_argument("--lease", type=arg("lease"), default=30.0, help=help_text("lease", "lease in model seconds (default 30)"))
    p.add_argument("--cadence", default="half", type=spec_arg(parse_cadence, "cadence"),
                   help=help_text("cadence", f"{cadence_help(renewing=True)} (default half)"))
    p.add_argument("--steal", default=None, metavar="AT:JOB[,AT:JOB]",
                   help="another token takes job JOB's key at model second AT (session: the worker's session, so every job); the next renewal reports it lost")
    p.set_defaults(func=cmd_renewal_cost)

    _applied_verbs(sub, common)

    p = sub.add_parser("figures", parents=[common], help="write every course figure to a folder")
    p.add_argument("--out", required=True, type=output_dir, help="folder to write into (created if missing)")
    p.add_argument("--format", choices=["png", "svg"], default="png")
    p.set_defaults(func=cmd_figures)

    p = sub.add_parser("lab", help="open the course in JupyterLab")
    p.add_argument("extra", nargs=argparse.REMAINDER, help="arguments passed on to jupyter lab")
    p.set_defaults(func=cmd_lab)

    p = sub.add_parser("present", help="serve a lesson's figures as a dashboard (Voila)")
    from ..course.present import DASHBOARDS

    p.add_argument("name", help="which dashboard: " + "; ".join(f"{k} ({v})" for k, v in DASHBOARDS.items()))
    p.add_argument("--port", type=arg("port"), default=8866, help=help_text("port", "where the dashboard serves (default 8866)"))
    p.add_argument("--no-browser", action="store_true")
    p.add_argument("--join-file", default=None, help="class: the join file `emqlab class serve` wrote (reads "
                                                     "FILE.instructor; default $EMQLAB_CLASS_URL)")
    p.set_defaults(func=cmd_present)

    p = sub.add_parser("valkey", help="start an embedded valkey-server and print its URL until stopped")
    p.set_defaults(func=cmd_valkey)

    p = sub.add_parser("clean", parents=[common],
                       help="delete the keys of runs that died (their own run-lease lapsed); never a live run's, "
                            "never a key outside emqlab:")
    p.set_defaults(func=cmd_clean)
    # Verbs that live in modules of their own (`emqlab/cli_*.py`, each with `add_verbs(sub, common)`):
    # one import and one call per module, here.
    from .failover import add_verbs as failover_verbs
    failover_verbs(sub, common)
    from .stuck import add_verbs as stuck_verbs
    stuck_verbs(sub, common)
    from .classroom import add_verbs as class_verbs
    class_verbs(sub, common)

    for verb in ("heartbeat", "renewal-cost", "reaper", "chaos"):
        sub.choices[verb].epilog = run_limits()
    return parser


ENDINGS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Ended(BaseException):
    """A signal ended the run. Not an Exception: no `except Exception` on the way up can swallow it,
    and every `finally` (the run's keys, its workers, its server) runs as it unwinds."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum, frame):
    for sig in ENDINGS:  # the clean-up runs once, to its end: a second Ctrl-C must not cut it short
        signal.signal(sig, signal.SIG_IGN)
    raise Ended(signum)


@contextmanager
def _endings_unwind(verb: str):
    """Ctrl-C (to the process or its whole group), SIGTERM and SIGHUP all unwind the same way.
    The embedded server and consumer processes run in sessions of their own, so a terminal's
    signal reaches emqlab alone, which stops them after deleting its run's keys. (`present` keeps
    its own Ctrl-C handling; the previous handlers come back afterwards, for callers in-process.)"""
    if verb == "present" or threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.signal(sig, _on_signal) for sig in ENDINGS}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _fail(message: str, code: int) -> int:
    print(f"emqlab: {redact(message)}", file=sys.stderr)  # one line, never a password
    return code


def main(argv: list[str] | None = None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        if argv[:1] == ["lab"]:  # everything after `lab` is Jupyter's, as given: `emqlab lab --no-browser`
            cmd_lab(argparse.Namespace(extra=argv[1:]))
            return 0
        args = build_parser().parse_args(argv)
        with _endings_unwind(args.verb):
            args.func(args)
        return 0
    except EmqlabError as exc:
        return _fail(f"error: {exc}", exc.exit_code)
    except redis.RedisError as exc:
        return _fail(f"error: the store failed: {exc}", 1)
    except KeyboardInterrupt:
        return _fail("interrupted (SIGINT)", 130)
    except Ended as end:
        return _fail(f"interrupted ({signal.Signals(end.signum).name}); cleaned up", 128 + end.signum)


if __name__ == "__main__":
    sys.exit(main())
