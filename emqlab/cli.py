"""The `emqlab` command. A contract: tests and users script against it (see DESIGN.md).

Bad input: one line `emqlab: error: …` on stderr, exit 2. A runtime failure (server unreachable,
…): one line, exit 1. `--json` prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import redis

from .backend import BACKEND_HELP, connect
from .clock import DEFAULT_SCALE
from .errors import BadParameter, EmqlabError
from .renewal import cadence_help
from .renewal_plane import design_help, design_names


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, no usage dump
        raise BadParameter(f"{message} (see `{self.prog} --help`)")


def _scale(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"scale must be a number > 0, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"scale must be a number > 0, got {text!r}")
    return value


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--backend", default=None, help=f"{BACKEND_HELP} (default: $EMQLAB_URL, $EMQLAB_BACKEND, fake)")
    common.add_argument("--clock", choices=["virtual", "real"], default=None,
                        help="virtual (default on fake) or real (default, and required, on a live server)")
    common.add_argument("--scale", type=_scale, default=DEFAULT_SCALE,
                        help=f"real clock: real seconds per model second (default {DEFAULT_SCALE})")
    common.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return common


def _open(args):
    return connect(args.backend, clock=args.clock, scale=args.scale)


def _emit(args, payload: dict[str, Any], text: str) -> None:
    if args.json:
        print(json.dumps(payload))
    else:
        print(text)


# -- verbs ---------------------------------------------------------------------------------------
def cmd_heartbeat(args) -> None:
    from .scenarios.heartbeat import heartbeat

    with _open(args) as backend:
        timeline = heartbeat(lease=args.lease, job=args.job, renew=args.renew, pause=args.pause, backend=backend)
    _emit(args, timeline.to_dict(), timeline.summary)


def cmd_renewal_cost(args) -> None:
    from .scenarios.renewal_cost import renewal_cost

    with _open(args) as backend:
        result = renewal_cost(jobs=args.jobs, design=args.design, ticks=args.ticks, batch=args.batch,
                              lease=args.lease, cadence=args.cadence, steal=args.steal, backend=backend)
    _emit(args, result.to_dict(), result.summary)


def cmd_reaper(args) -> None:
    from .scenarios.reaper import reaper

    with _open(args) as backend:
        timeline = reaper(**_scenario_kwargs(args), backend=backend)
    _emit(args, timeline.to_dict(), timeline.summary)


def cmd_chaos(args) -> None:
    from .scenarios.chaos import chaos

    kwargs = _scenario_kwargs(args)
    plot = kwargs.pop("plot")
    with _open(args) as backend:
        result = chaos(**kwargs, backend=backend)
    if plot:  # drawn here, after the run: the scenario never imports plotting
        from .figures import chaos_figure

        chaos_figure(result).figure.savefig(plot, dpi=120)
    _emit(args, result.to_dict(), result.summary)


def cmd_figures(args) -> None:
    from .export import export_all

    written = export_all(args.out, fmt=args.format, backend=args.backend, clock=args.clock, scale=args.scale)
    _emit(args, {"out": str(args.out), "files": [str(p) for p in written]},
          "\n".join(str(p) for p in written))


def cmd_lab(args) -> None:
    from .lab import open_lab

    open_lab(args.extra)


def cmd_present(args) -> None:
    from .present import present

    present(args.name, port=args.port, open_browser=not args.no_browser)


def cmd_valkey(args) -> None:
    import time

    from .embedded import EmbeddedValkey

    with EmbeddedValkey() as server:
        print(server.url, flush=True)
        print(f"emqlab: embedded valkey-server pid {server.pid}; Ctrl-C stops it", file=sys.stderr, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


def _scenario_kwargs(args) -> dict[str, Any]:
    """The verb's own options, as keyword arguments (everything but the common ones)."""
    skip = {"backend", "clock", "scale", "json", "func", "verb"}
    return {k: v for k, v in vars(args).items() if k not in skip}


def _applied_verbs(sub, common) -> None:
    """`emqlab reaper` and `emqlab chaos`: every option becomes a keyword argument of
    `emqlab.scenarios.reaper.reaper` / `emqlab.scenarios.chaos.chaos` (chaos's --plot excepted)."""
    p = sub.add_parser("reaper", parents=[common],
                       help="a consumer dies mid-job; the reaper returns its lease on the server clock")
    p.add_argument("--lease", type=float, default=30.0, help="lease per claim, model seconds (default 30)")
    p.add_argument("--beat", type=float, default=5.0, help="consumer beat, model seconds (default 5)")
    p.add_argument("--job", type=float, default=20.0, help="job length, model seconds (default 20)")
    p.add_argument("--crash-at", dest="crash_at", type=float, default=10.0,
                   help="when worker-1 dies mid-job, model seconds (default 10)")
    p.add_argument("--late-at", dest="late_at", type=float, default=None,
                   help="when worker-1's stale completion arrives (default lease + 3 beats)")
    p.add_argument("--queue", default="orders", help="queue name (default orders)")
    p.add_argument("--procs", action="store_true",
                   help="live Valkey only: run the consumers as OS processes; the crash is a SIGKILL")
    p.set_defaults(func=cmd_reaper)

    p = sub.add_parser("chaos", parents=[common],
                       help="many consumers, many jobs, random kills and pauses; count lost and duplicate effects")
    p.add_argument("--workers", type=int, default=4, help="consumers (default 4)")
    p.add_argument("--jobs", type=int, default=1000, help="jobs to enqueue (default 1000)")
    p.add_argument("--fencing", choices=["on", "off"], default="on",
                   help="on: each effect is written by a script that checks attempts (default); off: unchecked")
    p.add_argument("--kills", type=int, default=None, help="consumer crashes to inflict (default: workers)")
    p.add_argument("--pauses", type=int, default=None,
                   help="stop-the-world pauses of 2 × lease to inflict (default: 2 × workers)")
    p.add_argument("--lease", type=float, default=None, help="lease per claim, model seconds (default 10)")
    p.add_argument("--beat", type=float, default=None, help="consumer beat, model seconds (default 1)")
    p.add_argument("--job", type=float, default=None, help="job length, model seconds (default 0.5)")
    p.add_argument("--seed", type=int, default=1, help="random seed for the faults (default 1)")
    p.add_argument("--procs", choices=["auto", "on", "off"], default="auto",
                   help="consumers as OS processes: auto (= on for live Valkey, off on fake)")
    p.add_argument("--plot", default=None, metavar="FILE", help="also write a plot of the run (png or svg)")
    p.add_argument("--progress", choices=["auto", "on", "off"], default="auto",
                   help="progress bar on stderr (auto: when stderr is a terminal)")
    p.add_argument("--queue", default="orders", help="queue name (default orders)")
    p.set_defaults(func=cmd_chaos)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="emqlab", description="Run, record and draw how a distributed-lock lease is kept fresh.")
    sub = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)
    common = _common()

    p = sub.add_parser("heartbeat", parents=[common], help="a job longer than its lease, with or without renewal")
    p.add_argument("--lease", type=float, default=30.0, help="lease (TTL) in model seconds (default 30)")
    p.add_argument("--job", type=float, default=75.0, help="job length in model seconds (default 75)")
    p.add_argument("--renew", default="none", help=f"{cadence_help()} (default none)")
    p.add_argument("--pause", default=None, metavar="AT:SECONDS", help="stop the holder's world at AT for SECONDS")
    p.set_defaults(func=cmd_heartbeat)

    p = sub.add_parser("renewal-cost", parents=[common], help="K per-job timers against one sweep")
    p.add_argument("--jobs", type=int, default=6, help="K, the leases the worker holds (default 6)")
    p.add_argument("--design", choices=design_names(), default="sweep", help=design_help("sweep"))
    p.add_argument("--ticks", type=int, default=4, help="renewal ticks to run (default 4)")
    p.add_argument("--batch", type=int, default=None,
                   help="sweep: leases per script call (default 500, which keeps a call well under 5 ms)")
    p.add_argument("--lease", type=float, default=30.0, help="lease in model seconds (default 30)")
    p.add_argument("--cadence", default="half", help=f"{cadence_help(renewing=True)} (default half)")
    p.add_argument("--steal", default=None, metavar="AT:JOB[,AT:JOB]",
                   help="another token takes job JOB's key at model second AT (the next renewal reports it lost)")
    p.set_defaults(func=cmd_renewal_cost)

    _applied_verbs(sub, common)

    p = sub.add_parser("figures", parents=[common], help="write every course figure to a folder")
    p.add_argument("--out", required=True, help="folder to write into (created if missing)")
    p.add_argument("--format", choices=["png", "svg"], default="png")
    p.set_defaults(func=cmd_figures)

    p = sub.add_parser("lab", help="open the course in JupyterLab")
    p.add_argument("extra", nargs=argparse.REMAINDER, help="arguments passed on to jupyter lab")
    p.set_defaults(func=cmd_lab)

    p = sub.add_parser("present", help="serve a lesson's figures as a dashboard (Voila)")
    from .present import DASHBOARDS

    p.add_argument("name", help="which dashboard: " + "; ".join(f"{k} ({v})" for k, v in DASHBOARDS.items()))
    p.add_argument("--port", type=int, default=8866)
    p.add_argument("--no-browser", action="store_true")
    p.set_defaults(func=cmd_present)

    p = sub.add_parser("valkey", help="start an embedded valkey-server and print its URL until stopped")
    p.set_defaults(func=cmd_valkey)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        if argv[:1] == ["lab"]:  # everything after `lab` is Jupyter's, as given: `emqlab lab --no-browser`
            cmd_lab(argparse.Namespace(extra=argv[1:]))
            return 0
        args = build_parser().parse_args(argv)
        args.func(args)
        return 0
    except EmqlabError as exc:
        print(f"emqlab: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except redis.RedisError as exc:
        print(f"emqlab: error: the store failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("emqlab: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
