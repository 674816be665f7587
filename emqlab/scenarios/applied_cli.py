"""The applied form's verbs: `emqlab reaper` and `emqlab chaos`. Every option here becomes a keyword
argument of `emqlab.scenarios.reaper.reaper` / `emqlab.scenarios.chaos.chaos`."""

from __future__ import annotations


def add_verbs(sub, common, cmd_reaper, cmd_chaos) -> None:
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
    p.add_argument("--pauses", type=int, default=None, help="stop-the-world pauses of 2 × lease to inflict (default: 2 × workers)")
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
