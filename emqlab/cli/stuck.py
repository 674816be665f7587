"""`emqlab stuck`: a worker stays alive while one of its jobs hangs; when does the job go back to pending?

Every option becomes a keyword argument of `emqlab.scenarios.stuck.stuck`. JSON: the run's timeline,
with `verdict.reclaimed_at` (model seconds from the claim; null if never within `verdict.horizon`).
"""

from __future__ import annotations

from .options import emit, open_store, scenario_kwargs
from ..queue.holder import queue_designs
from ..core.ranges import arg, help_text, run_limits


def cmd_stuck(args) -> None:
    from ..scenarios.stuck import stuck

    with open_store(args) as backend:
        timeline = stuck(**scenario_kwargs(args), backend=backend)
    emit(args, timeline.to_dict(), timeline.summary)


def add_verbs(sub, common) -> None:
    p = sub.add_parser("stuck", parents=[common],
                       help="a worker stays alive while one of its jobs hangs: none, sweep, session, and a hard deadline")
    p.add_argument("--design", choices=queue_designs(), default="none",
                   help="how the worker holds its jobs: none (EchoMQ: no renewal, the reaper after the lease; "
                        "default), per-job, sweep or session (renewed at TTL/2)")
    p.add_argument("--max-runtime", dest="max_runtime", type=arg("max_runtime"), default=None,
                   help=help_text("max_runtime", "a hard deadline this many model seconds after the claim, set once, "
                                  "checked by the reaper's same slice (default: none)"))
    p.add_argument("--lease", type=arg("lease"), default=30.0,
                   help=help_text("lease", "the lease (or the session's lease), model seconds (default 30)"))
    p.add_argument("--beat", type=arg("beat"), default=5.0, help=help_text("beat", "consumer beat, model seconds (default 5)"))
    p.add_argument("--queue", default="orders", help="queue name (default orders)")
    p.set_defaults(func=cmd_stuck)
    p.epilog = run_limits()
