"""`emqlab tools celery|bullmq|rq|redis-lock|python-redis-lock [--fix]`: the lapse the course teaches, in the
tools learners ship, run for real with the library's own package on a server the run starts itself
(`emqlab.tools`). Live only: the libraries talk to a real server. The choices, the help and each library's own
flags are read from the libraries' records (`emqlab.tools.declaration`)."""

from __future__ import annotations

from ..core.errors import BadParameter
from .options import emit, help_text, number


def _own_dest(option) -> str:  # a library's own option lives apart from the verbs' common ones
    return f"tools_{option.name}"


def _own_options(libraries) -> dict:
    """{name: option} over every library; one name declared two ways is a programming error."""
    found: dict = {}
    for lib in libraries.values():
        for option in lib.options:
            if found.setdefault(option.name, option) != option:
                raise TypeError(f"option {option.flag} is declared two ways (by {lib.name} and another library)")
    return found


def cmd_tools(args) -> None:
    from ..store.backend import store_spec
    from ..tools import libraries, run

    if (args.backend or store_spec(None)).source == "fake":
        raise BadParameter(f"`emqlab tools {args.library}` runs the real {args.library} against a real server, which "
                           "fakeredis is not: pass --backend valkey (the run starts a server of its own)")
    if args.clock == "virtual":
        raise BadParameter("a library's run keeps the library's own clock, the real one: drop --clock virtual")
    own = {name: getattr(args, _own_dest(option)) for name, option in _own_options(libraries()).items()}
    timeline = run(args.library, fix=args.fix, task=args.task, timeout=args.timeout, **own)
    emit(args, timeline.to_dict(), timeline.text)


def add_verbs(sub, common) -> None:
    from ..core.ranges import TOOLS_SECONDS_LIMIT
    from ..tools import libraries
    from ..tools.harness import EXTRA

    known = libraries()
    titles = ", ".join(lib.title for lib in known.values())
    task_help = ("how long the task body works, seconds (default: "
                 + "; ".join(f"{lib.name} {lib.task}" for lib in known.values()) + ")")
    timeout_help = ("the library's own timeout, seconds: "
                    + ", ".join(f"{lib.name}'s {lib.timeout}" for lib in known.values()))
    p = sub.add_parser("tools", parents=[common], help=f"live only: the same lapse in {titles}",
                       epilog=f"Runs the real library (pip install 'emqlab[{EXTRA}]') and its workers as OS "
                              "processes, on an embedded valkey-server of the run's own, whatever --backend names, as "
                              "long as it is not fake; --scale does not apply (a library keeps its own clock). A run "
                              f"lasts at most {TOOLS_SECONDS_LIMIT:g} s of its story (RQ needs 60 s before it calls a "
                              "job abandoned), plus its workers' boot.")
    p.add_argument("library", choices=list(known), help="which library's story to run")
    p.add_argument("--fix", action="store_true", help="the library's own fix or knob (see the lesson)")
    p.add_argument("--task", type=number("task"), default=None, help=help_text("task", task_help))
    p.add_argument("--timeout", type=number("timeout"), default=None, help=help_text("timeout", timeout_help))
    for option in _own_options(known).values():
        if option.seconds:
            p.add_argument(option.flag, dest=_own_dest(option), metavar="S", type=number(option.range_name),
                           default=None, help=help_text(option.range_name, option.help))
        elif option.choices:
            p.add_argument(option.flag, dest=_own_dest(option), choices=option.choices, default=None, help=option.help)
        else:
            p.add_argument(option.flag, dest=_own_dest(option), action="store_true", help=option.help)
    p.set_defaults(func=cmd_tools)
