"""`emqlab valkey` and `emqlab clean`: an embedded server for the lessons and the tests, and the clean-up
of runs that died (their keys, and only theirs)."""

from __future__ import annotations

import sys
import time

from .options import emit, store_of


def cmd_valkey(args) -> None:
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
    from ..store.backend import connect

    with connect(store_of(args)) as backend:
        result = clean(backend)
    emit(args, result.to_dict(), result.text)


def add_verbs(sub, common) -> None:
    p = sub.add_parser("valkey", help="start an embedded valkey-server and print its URL until stopped")
    p.set_defaults(func=cmd_valkey)

    p = sub.add_parser("clean", parents=[common],
                       help="delete the keys of runs that died (their own run-lease lapsed); never a live run's, "
                            "never a key outside emqlab:")
    p.set_defaults(func=cmd_clean)
