"""`emqlab failover --guard none|wait|fence|fence-wait`: a lease lost in a server failover, run for
real on a primary and a replica the run starts itself (`emqlab.scenarios.failover`)."""

from __future__ import annotations

from ..core.errors import BadParameter
from ..store.backend import store_spec
from ..store.clock import DEFAULT_SCALE
from .options import emit, help_text, number, run_limits

GUARD_HELP = ("none: the lease alone; wait: WAIT 1 after the acquire, start only if a replica acknowledged; "
              "fence: also a fencing token (INCR); fence-wait: the token confirmed by WAIT 1")


def cmd_failover(args) -> None:
    from ..scenarios.failover import SCALE, failover

    if (args.backend or store_spec(None)).source == "fake":  # no --backend: the environment's, as any verb reads it
        raise BadParameter("a failover needs two real servers, a primary to kill and a replica to promote, and "
                           "fakeredis is neither: pass --backend valkey (the run starts its own pair)")
    if args.clock == "virtual":
        raise BadParameter("a failover runs on real servers in real time: drop --clock virtual")
    scale = SCALE if args.scale == DEFAULT_SCALE else args.scale  # the common default is too fast for its lag
    timeline = failover(guard=args.guard, lease=args.lease, job=args.job, scale=scale)
    emit(args, timeline.to_dict(), timeline.text)


def add_verbs(sub, common) -> None:
    from ..scenarios.failover import GUARDS, SCALE

    p = sub.add_parser("failover", parents=[common],
                       help="live only: a holder's lease lost when its primary dies and the replica is promoted",
                       epilog=f"Runs on a primary and a replica of its own (embedded valkey-servers), whatever "
                              f"--backend names, as long as it is not fake; at the common --scale default it "
                              f"runs at {SCALE:g} real seconds per model second. {run_limits()}")
    p.add_argument("--guard", choices=GUARDS, default="none", help=GUARD_HELP + " (default none)")
    p.add_argument("--lease", type=number("lease"), default=30.0, help=help_text("lease", "lease in model seconds (default 30)"))
    p.add_argument("--job", type=number("job"), default=12.0,
                   help=help_text("job", "each worker's job, written in three parts, model seconds (default 12)"))
    p.set_defaults(func=cmd_failover)
