"""`emqlab heartbeat` and `emqlab renewal-cost`: one lease kept fresh (or not), and what keeping K of
them costs, per renewal design (`emqlab.scenarios.heartbeat`, `emqlab.scenarios.renewal_cost`)."""

from __future__ import annotations

from ..core.ranges import get
from ..lease.cadence import cadence_help
from ..lease.designs import SWEEP, design_help, design_names
from .options import emit, help_text, number, run_limits, store_of, verb_kwargs


def cmd_heartbeat(args) -> None:
    from ..scenarios.heartbeat import heartbeat

    timeline = heartbeat(**verb_kwargs(args), backend=store_of(args))
    emit(args, timeline.to_dict(), timeline.text)


def cmd_renewal_cost(args) -> None:
    from ..scenarios.renewal_cost import renewal_cost

    result = renewal_cost(**verb_kwargs(args), backend=store_of(args))
    emit(args, result.to_dict(), result.text)


def add_verbs(sub, common) -> None:
    p = sub.add_parser("heartbeat", parents=[common], help="a job longer than its lease, with or without renewal",
                       epilog=run_limits())
    p.add_argument("--lease", type=number("lease"), default=30.0,
                   help=help_text("lease", "lease (TTL) in model seconds (default 30)"))
    p.add_argument("--job", type=number("job"), default=75.0, help=help_text("job", "job length in model seconds (default 75)"))
    p.add_argument("--renew", default="none", help=help_text("cadence", f"{cadence_help()} (default none)"))
    p.add_argument("--pause", default=None, metavar="AT:SECONDS",
                   help=f"stop the holder's world at AT [{get('pause_at').text()}] for SECONDS [{get('pause').text()}]")
    p.add_argument("--latency", type=number("latency"), default=0.0, metavar="SECONDS",
                   help=help_text("latency", "one-way delay of the holder's link to the store, model seconds; "
                                  "the contender sits beside the server (default 0)"))
    p.add_argument("--clock-jump", default=None, metavar="AT:SECONDS",
                   help=f"step the server's clock at AT [{get('clock_jump_at').text()}, inside the job] by SECONDS "
                        f"[{get('clock_jump').text()}, not 0; negative steps back]; on --backend valkey the run "
                        "starts a server of its own under libfaketime")
    p.set_defaults(func=cmd_heartbeat)

    p = sub.add_parser("renewal-cost", parents=[common], epilog=run_limits(),
                       help="what renewing K leases costs: per-job timers, one sweep or one session")
    p.add_argument("--jobs", type=number("jobs"), default=6,
                   help=help_text("jobs", "K, the leases the worker holds (default 6); each design's cost per "
                                  "lease bounds it further"))
    p.add_argument("--design", choices=design_names(renewing=True), default=SWEEP, help=design_help(SWEEP))
    p.add_argument("--ticks", type=number("ticks"), default=4, help=help_text("ticks", "renewal ticks to run (default 4)"))
    p.add_argument("--batch", type=number("batch"), default=None,
                   help=help_text("batch", "sweep: leases per script call (default 500, which keeps a call well under 5 ms)"))
    p.add_argument("--lease", type=number("lease"), default=30.0, help=help_text("lease", "lease in model seconds (default 30)"))
    p.add_argument("--cadence", default="half",
                   help=help_text("cadence", f"{cadence_help(renewing=True)} (default half)"))
    p.add_argument("--steal", default=None, metavar="AT:JOB[,AT:JOB]",
                   help=f"another token takes job JOB's key at model second AT [{get('steal_at').text()}] (session: "
                        "the worker's session, so every job); the next renewal reports it lost")
    p.set_defaults(func=cmd_renewal_cost)
