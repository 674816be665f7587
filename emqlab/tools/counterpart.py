"""emqlab's own design facing each library's story: the run the lesson draws beside the library's.

Each library's failure has a counterpart among the course's own runs, made on the lab's store (fakeredis on
its virtual clock, or live Valkey), with the course's numbers (a 30 s lease, model seconds):

- Celery (a long task delivered again) and RQ (a killed worker's job abandoned): `reaper` with one session
  per worker: the session keeps every job of a live worker held however long it runs, and a worker that
  dies is found on the server's clock within one lease and a beat, its job re-claimed with attempts 2;
- BullMQ (a blocked loop's lock runs out) and python-redis-lock (a frozen holder told only at its release): `fencing`,
  the attempts fence: a worker stopped past its lease is overtaken, and its late write is refused by the
  store, so the effect lands once;
- redis-py's Lock (an extend that adds): `heartbeat` at TTL/2 with a pause past the lease: the token-checked
  extend sets the TTL to the lease (PEXPIRE), never adds to it, and its 0 reply tells the holder at that extend.
"""

from __future__ import annotations

from typing import Any


def ours(library: str, backend: Any = None):
    """emqlab's own run facing `library`'s story (its record's `counterpart`), on `backend` (a Backend, or
    fake / valkey / a URL)."""
    from ..scenarios.fencing import fencing
    from ..scenarios.heartbeat import heartbeat
    from ..scenarios.reaper import reaper
    from . import entry

    scenario, options = entry(library).counterpart
    run = {"reaper": reaper, "fencing": fencing, "heartbeat": heartbeat}[scenario]
    return run(**options, backend=backend)
