"""The `emqlab` command. A contract: tests and users script against it (see DESIGN.md).

Bad input: one line `emqlab: error: …` on stderr, exit 2. A runtime failure (server unreachable,
…): one line, exit 1. `--json` prints one JSON object on stdout. The verbs live in one module per
family, each adding its own (`add_verbs(sub, common)`): `lease` (heartbeat, renewal-cost), `queue`
(reaper, chaos, stuck), `faults` (failover), `course` (figures, lab, present), `store` (valkey,
clean), `classroom` (class …), `tools` (the libraries learners ship), `verify` (explore, check: every
interleaving searched, any history judged). A verb may return an exit code: `check` returns 1 when a history
broke an invariant.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from contextlib import contextmanager

import redis

from ..core.errors import EmqlabError
from ..store.backend import redact
from . import classroom, course, faults, lease, queue, store, tools, verify
from .options import Parser, common_options

FAMILIES = (lease, queue, course, store, faults, classroom, tools, verify)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="emqlab", description="Run, record and draw how a distributed-lock lease is kept fresh.")
    sub = parser.add_subparsers(dest="verb", required=True, parser_class=Parser)
    common = common_options()
    for family in FAMILIES:
        family.add_verbs(sub, common)
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
            course.cmd_lab(argparse.Namespace(extra=argv[1:]))
            return 0
        args = build_parser().parse_args(argv)
        with _endings_unwind(args.verb):
            code = args.func(args)
        return code if isinstance(code, int) else 0
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
