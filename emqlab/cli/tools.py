"""`emqlab tools celery|bullmq|rq|redis-lock|python-redis-lock [--fix]`: the lapse the course teaches, in the
tools learners ship, run for real with the library's own package on a server the run starts itself
(`emqlab.tools`). Live only: the libraries talk to a real server."""

from __future__ import annotations

from ..core.errors import BadParameter
from .options import emit, help_text, number

TIMEOUT_HELP = ("the library's own timeout, seconds: celery's visibility_timeout (default 2/3 of the task; with "
                "--fix the task + 2), bullmq's lockDuration (default half the task), rq's job_monitoring_interval "
                "(whole seconds, default 1: RQ adds 60), redis-lock's lock timeout (default 1), python-redis-lock's "
                "expire (whole seconds, default 1; with --fix 11: three times the 3 s freeze, plus 2 s)")
TASK_HELP = ("how long the task body works, seconds (default 3; rq 2; python-redis-lock 5, or longer when the pause "
             "needs it; redis-lock: the stretch between two extends, default 2)")
PAUSE_AT_HELP = ("python-redis-lock only: when the holder is frozen for 3 s, seconds into its job (default: 0.3 s "
                 "before its renewal thread's first extend, due at 2/3 of expire: a worst moment, with a third of "
                 "expire left)")


def cmd_tools(args) -> None:
    from ..store.backend import store_spec
    from ..tools import run

    if (args.backend or store_spec(None)).source == "fake":
        raise BadParameter(f"`emqlab tools {args.library}` runs the real {args.library} against a real server, which "
                           "fakeredis is not: pass --backend valkey (the run starts a server of its own)")
    if args.clock == "virtual":
        raise BadParameter("a library's run keeps the library's own clock, the real one: drop --clock virtual")
    timeline = run(args.library, fix=args.fix, task=args.task, timeout=args.timeout, crash=args.crash,
                   fate=args.fate, pause_at=args.tools_pause_at)
    emit(args, timeline.to_dict(), timeline.text)


def add_verbs(sub, common) -> None:
    from ..core.ranges import TOOLS_SECONDS_LIMIT
    from ..tools import LIBRARIES
    from ..tools.harness import EXTRA

    p = sub.add_parser("tools", parents=[common],
                       help="live only: the same lapse in Celery, BullMQ, RQ, redis-py's Lock, python-redis-lock",
                       epilog=f"Runs the real library (pip install 'emqlab[{EXTRA}]') and its workers as OS "
                              "processes, on an embedded valkey-server of the run's own, whatever --backend names, as "
                              "long as it is not fake; --scale does not apply (a library keeps its own clock). A run "
                              f"lasts at most {TOOLS_SECONDS_LIMIT:g} s of its story (RQ needs 60 s before it calls a "
                              "job abandoned), plus its workers' boot.")
    p.add_argument("library", choices=list(LIBRARIES), help="which library's story to run")
    p.add_argument("--fix", action="store_true", help="the library's own fix or knob (see the lesson)")
    p.add_argument("--task", type=number("task"), default=None, help=help_text("task", TASK_HELP))
    p.add_argument("--timeout", type=number("timeout"), default=None, help=help_text("timeout", TIMEOUT_HELP))
    p.add_argument("--crash", action="store_true",
                   help="celery only: kill the first worker 1 s into the task (with --fix: what the fix costs)")
    p.add_argument("--pause-at", dest="tools_pause_at", metavar="S", type=number("tools_pause_at"), default=None,
                   help=help_text("tools_pause_at", PAUSE_AT_HELP))
    p.add_argument("--fate", choices=("killed", "slow"), default=None,
                   help="rq only: the first worker is killed (SIGKILL, default) or only slow (SIGSTOP until RQ gives up)")
    p.set_defaults(func=cmd_tools)
