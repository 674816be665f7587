"""`emqlab class …`: a class on one server (see emqlab.classroom and emqlab.classroom.board).

An address carries a password, so no address is ever taken on a command line (any local user can
read those): `class join` reads its line from the join file (`--line N`), from stdin (`-`) or from
$EMQLAB_CLASS_URL; the instructor's verbs read FILE.instructor (`--join-file FILE`, or
`--backend FILE.instructor`) or $EMQLAB_CLASS_URL.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from ..core.environment import CLASS_URL_ENV
from ..store.backend import connect
from ..classroom.server import Classroom, embedded_server, is_loopback
from ..core.errors import BadParameter
from ..core.ranges import within
from .options import help_text, number

ADDRESS_RULE = ("an address carries a password: give a file holding it (a join file, FILE.instructor), '-' to read "
                f"it from stdin, or set ${CLASS_URL_ENV}; never the URL itself on a command line")


def read_address(source: str | None, line: int = 1) -> str:
    """The `line`-th address of a file, a line of stdin ('-'), or $EMQLAB_CLASS_URL (no source)."""
    line = int(within("line", line))
    if source is None:
        text = os.environ.get(CLASS_URL_ENV, "")
        if not text:
            raise BadParameter(f"no class address: {ADDRESS_RULE}")
        return text.strip()
    if "://" in source:
        raise BadParameter(f"refusing an address on the command line; {ADDRESS_RULE}")
    if source == "-":
        lines = [sys.stdin.readline()]
    else:
        try:
            with open(source, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError as exc:
            raise BadParameter(f"cannot read the address file {source!r}: {exc.strerror}") from None
    lines = [x.strip() for x in lines if x.strip()]
    if not 1 <= line <= len(lines):
        raise BadParameter(f"{source!r} holds {len(lines)} address(es); there is no line {line}")
    return lines[line - 1]


def _instructor(args):
    from ..classroom.board import Board

    source = args.backend or (args.join_file + ".instructor" if args.join_file else None)
    return Board.connect(read_address(source))


# -- serve ---------------------------------------------------------------------------------------

def _credentials_on(backend) -> bool:
    flags = backend.client.acl_getuser("default") or {}
    return not ("on" in flags.get("flags", []) and "nopass" in flags.get("flags", []))


def cmd_serve(args) -> None:
    from ..classroom.server import slots

    host = args.host
    if host in ("0.0.0.0", "::"):
        raise BadParameter("--host must be the address learners reach (e.g. 192.168.1.20), not a wildcard")
    slots(args.learners)  # the seats, and the dashboard's command, refused before any server starts
    dash_argv = None if args.no_dashboard else _dashboard_argv(args.dashboard_port)
    server = None
    if args.backend in (None, "valkey"):
        server, backend, port = embedded_server(host, args.port)
    else:
        if "://" not in args.backend:
            raise BadParameter("--backend is valkey (an embedded server) or the URL of a server you administer")
        backend = connect(args.backend, clock="real", scale=1.0)
        if int(backend.client.connection_pool.connection_kwargs.get("db") or 0) != 0:
            backend.close()
            raise BadParameter("a class lives in database 0 (its learners may not SELECT): give a URL ending /0")
        port = args.port or backend.client.connection_pool.connection_kwargs.get("port", 6379)
        if not is_loopback(host) and not _credentials_on(backend):
            backend.close()
            raise BadParameter("refusing a non-loopback class on a server whose default user needs no password: "
                               "switch credentials on (ACL SETUSER default off) first")
    room = dash = None
    try:
        room = Classroom(backend, args.learners, host, port).open()
        learners_file, instructor_file = room.write_join_file(args.join_file)
        print(f"class {room.keys.hexid}: {args.learners} seat(s) on {host}:{port}; learner addresses in "
              f"{learners_file}, the instructor's in {instructor_file} (mode 0600). Ctrl-C ends the class.", flush=True)
        if dash_argv is not None:
            dash = _dashboard(dash_argv, room.address("instructor"), args.dashboard_port)
        while True:
            time.sleep(1)
            if dash is not None and dash.poll() is not None:
                print(f"emqlab: the dashboard stopped (exit {dash.returncode}; is port {args.dashboard_port} free?); "
                      "the class goes on", file=sys.stderr, flush=True)
                _stop_dashboard(dash)  # reaped and released
                dash = None
    finally:
        try:
            _stop_dashboard(dash)
            if room is not None:
                done = room.close()
                for path in (args.join_file, args.join_file + ".instructor"):
                    if os.path.exists(path):
                        os.unlink(path)
                print(f"class ended: {done['users_removed']} user(s) and {done['keys_removed']} key(s) removed",
                      file=sys.stderr, flush=True)
        finally:
            backend.close()
            if server is not None:
                server.stop()


def _dashboard_argv(port: int) -> list[str]:
    """The command that serves the class dashboard (`emqlab present class`) on 127.0.0.1:`port`."""
    from ..course.present import voila_command

    return voila_command("class", port=port, open_browser=False, extra=["--Voila.port_retries=0"])


def _dashboard(argv: list[str], instructor_url: str, port: int):
    """Serve the class dashboard: Voila, in a session of its own (a terminal's Ctrl-C reaches serve,
    which stops it), the instructor's address in its environment only (never on a command line)."""
    import subprocess

    from ..core.children import TRACKER
    from ..course.present import voila_env

    dash = TRACKER.spawn(argv, setup=None, end=_stop_dashboard, env={**voila_env(), CLASS_URL_ENV: instructor_url},
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"the instructor's dashboard: http://127.0.0.1:{port}/ (this machine only; it stops with the class)",
          flush=True)
    return dash


def _stop_dashboard(dash) -> None:
    """Voila shuts its kernels down on SIGTERM; a Voila that hangs is killed with its process group."""
    import subprocess

    from ..core.children import TRACKER

    if dash is None:
        return
    try:
        if dash.poll() is None:
            dash.terminate()
            try:
                dash.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(dash.pid, signal.SIGKILL)
                dash.wait()
    finally:
        TRACKER.release(dash)


# -- join ----------------------------------------------------------------------------------------
def cmd_join(args) -> None:
    from ..classroom.learner import Learner

    learner = Learner(read_address(args.address, args.line), args.name, lease_s=args.lease, beat_s=args.beat,
                      work_s=args.work)
    before = {sig: signal.signal(sig, lambda *_: learner.stop()) for sig in (signal.SIGINT, signal.SIGTERM)}
    print(f"joined as {learner.name} (seat {learner.slot}); Ctrl-C leaves", flush=True)
    try:
        tally = learner.run()
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    why = "the class ended" if tally["class_ended"] else "left"
    text = f"{why}: {tally['completed']} job(s) completed, {tally['refused']} stale write(s) refused"
    print(json.dumps(tally) if args.json else text)


# -- the instructor's verbs -------------------------------------------------------------------------
def _board_verb(action):
    def run(args) -> None:
        board = _instructor(args)
        try:
            payload, text = action(board, args)
        finally:
            board.close()
        print(json.dumps(payload) if args.json else text)
    return run


def _status(board, args):
    totals = board.totals()
    return totals, "  ".join(f"{k} {v}" for k, v in totals.items())


def _enqueue(board, args):
    ids = board.enqueue(args.n)
    return {"enqueued": len(ids), "first": ids[0], "last": ids[-1]}, f"enqueued {len(ids)} job(s): {ids[0]}…{ids[-1]}"


def _crash(board, args):
    order = board.crash(args.name)
    return ({"crash": order.slot, "taken": order.taken, "why": order.why},
            order.said(args.name, "crash"))


def _pause(board, args):
    order = board.pause(args.name, args.seconds)
    return ({"pause": order.slot, "seconds": args.seconds, "taken": order.taken, "why": order.why},
            order.said(args.name, f"pause {args.seconds:g} s"))


def _fence(board, args):
    board.fencing(args.state == "on")
    return {"fencing": board.fenced()}, f"fencing {args.state}"


def add_verbs(sub, common) -> None:
    p = sub.add_parser("class", help="a class on one server: serve it, join it, steer it")
    verbs = p.add_subparsers(dest="class_verb", required=True, parser_class=type(p))

    q = verbs.add_parser("serve", help="start (or use) a Valkey, make the class queue and one user per learner, "
                                       "write the join file, run until Ctrl-C, then remove it all")
    q.add_argument("--learners", type=number("learners"), default=30, help=help_text("learners", "seats (default 30)"))
    q.add_argument("--backend", default=None, help="valkey (default: an embedded server started here) or the URL "
                                                   "of a server you administer (ACL, FUNCTION)")
    q.add_argument("--host", default="127.0.0.1", help="the address learners reach (default 127.0.0.1); a "
                                                        "non-loopback one needs credentials on")
    q.add_argument("--port", type=number("port"), default=None, help=help_text("port", "embedded server's port (default: free)"))
    q.add_argument("--join-file", required=True, help="where to write the learners' addresses (FILE.instructor: "
                                                       "the instructor's), mode 0600")
    q.add_argument("--dashboard-port", type=number("port"), default=8866,
                   help=help_text("port", "where the instructor's dashboard serves, on 127.0.0.1 (default 8866)"))
    q.add_argument("--no-dashboard", action="store_true", help="serve no dashboard (`emqlab present class "
                                                               "--join-file FILE` serves it apart)")
    q.set_defaults(func=cmd_serve)

    q = verbs.add_parser("join", help="work the class queue as one learner (the consumer of the reaper lesson)")
    q.add_argument("address", nargs="?", default=None,
                   help=f"a join file (its --line), '-' for stdin, or nothing for ${CLASS_URL_ENV}; never a URL")
    q.add_argument("--line", type=number("line"), default=1, help=help_text("line", "which line of the file (default 1)"))
    q.add_argument("--name", default=None, help="the name your lane shows (default: your seat, l07)")
    q.add_argument("--lease", type=number("lease"), default=2.0, help=help_text("lease", "lease, real seconds (default 2)"))
    q.add_argument("--beat", type=number("beat"), default=0.5, help=help_text("beat", "beat, real seconds (default 0.5)"))
    q.add_argument("--work", type=number("work"), default=0.2, help=help_text("work", "work per job, real seconds (default 0.2)"))
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_join)

    where = dict(help=f"the instructor's address file (FILE.instructor); default: --join-file's, or ${CLASS_URL_ENV}")
    for name, action, text in (("status", _status, "totals and invariants of the class"),
                               ("enqueue", _enqueue, "enqueue a burst of N jobs"),
                               ("crash", _crash, "crash a learner's worker (SIGKILL, once it holds a job)"),
                               ("pause", _pause, "stop a learner's worker's world for SECONDS"),
                               ("fence", _fence, "fencing on or off for the whole class")):
        q = verbs.add_parser(name, help=text)
        if name == "enqueue":
            q.add_argument("n", type=number("burst"), metavar="N")
        if name in ("crash", "pause"):
            q.add_argument("name", metavar="NAME", help="a seat (l07) or the name a learner joined under")
        if name == "pause":
            q.add_argument("seconds", type=number("pause"), metavar="SECONDS")
        if name == "fence":
            q.add_argument("state", choices=["on", "off"])
        q.add_argument("--backend", default=None, **where)
        q.add_argument("--join-file", default=None, help="the join file `class serve` wrote (reads FILE.instructor)")
        q.add_argument("--json", action="store_true")
        q.set_defaults(func=_board_verb(action))
