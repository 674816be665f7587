"""Runs that cannot meet, and the clean-up of runs that died.

Every run's keys live under a prefix of its own, `emqlab:<scenario>-<16 random hex digits>:`
(`Backend.run_prefix`), so thirty learners pointing at one server never share a key. Each run also
holds a lease of its own under that prefix, `<prefix>run-lease`, in the course's own pattern: SET NX
PX with a random token, extended (token-checked) on a cadence while the run lives, released
(token-checked) when it ends. A run killed outright (SIGKILL, a laptop lid, a lost network) stops
renewing; its lease lapses on the server's clock, and `clean()` — `emqlab clean --backend URL` —
deletes the keys of exactly such runs: never a key outside `emqlab:`, never a live run's.

What renewing means depends on the store:
- live server (embedded or URL): the lease lasts `lease_seconds()` of real time (30 s; the
  environment variable EMQLAB_RUN_LEASE changes it) and a small daemon thread with a connection of
  its own extends it every third of that. It renews on real time whatever the run's clock or scale,
  because what it tells others is "this process is still here".
- fakeredis: the store lives inside this one process and dies with it; no other process can see
  it, let alone clean it. The virtual clock also jumps: a 75 s heartbeat takes no real time, and a
  lease on it would lapse mid-run for no reason. So the run-lease is taken without an expiry and
  never renewed; it marks the run's keys the same way, and the run's ending deletes it.

A renewal that replies 0 (the lease lapsed: the process was stopped longer than the lease, and a
`clean` may have removed the run's keys) is remembered; `lost` says so, and the run then reports a
failure instead of counts it can no longer vouch for.
"""

from __future__ import annotations

import math
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import redis

from ..core.environment import RUN_LEASE_ENV
from ..core.errors import BadParameter, StoreError
from .leases import new_token
from ..store.scripts import source
from ..store.clock import to_ms

LEASE_SUFFIX = "run-lease"
DEFAULT_LEASE_S = 30.0
LEASE_RANGE_S = (2.0, 3600.0)
SCAN_COUNT = 1000  # keys per SCAN step: each call stays short however large the keyspace


def lease_seconds() -> float:
    """How long a run's lease lasts (real seconds): $EMQLAB_RUN_LEASE, default 30, from 2 to 3600."""
    text = os.environ.get(RUN_LEASE_ENV, "").strip()
    if not text:
        return DEFAULT_LEASE_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    low, high = LEASE_RANGE_S
    if not (math.isfinite(value) and low <= value <= high):
        raise BadParameter(f"${RUN_LEASE_ENV} must be a number of seconds from {low:g} to {high:g}, got {text!r}")
    return value


class RunLease:
    """One run's own lease: taken before the run writes any key, kept while it lives, released at its end."""

    def __init__(self, backend, prefix: str):
        self.backend, self.prefix = backend, prefix
        self.key = prefix + LEASE_SUFFIX
        self.token = new_token()
        self.ttl_s = lease_seconds()
        self.lost_at: float | None = None  # wall time a renewal replied 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def renewed(self) -> bool:
        """Whether a thread renews this lease (live servers) or it is held without expiry (fakeredis)."""
        return self.backend.live

    @property
    def lost(self) -> bool:
        return self.lost_at is not None

    def take(self) -> "RunLease":
        client = self.backend.client
        if self.renewed:
            taken = client.set(self.key, self.token, nx=True, px=int(to_ms(self.ttl_s)))
        else:
            taken = client.set(self.key, self.token, nx=True)
        if not taken:  # 64 random bits make this a broken random source, not bad luck
            raise StoreError(f"the run prefix {self.prefix!r} is already held by another run")
        if self.renewed:
            self._thread = threading.Thread(target=self._renew, name=f"run-lease {self.prefix}", daemon=True)
            self._thread.start()
        return self

    def _renew(self) -> None:
        try:
            self._renew_until_stopped()
        except Exception:  # noqa: BLE001 - never a thread traceback on the user's terminal: the run
            pass           # meets the same failure on its own connection and reports it in one line

    def _renew_until_stopped(self) -> None:
        client = self.backend.fresh_client()
        extend = source("extend_lease")
        every, ttl_ms = self.ttl_s / 3, int(to_ms(self.ttl_s))
        try:
            while not self._stop.wait(every):
                try:
                    # EVAL, not EVALSHA: what a run measures on the server (INFO commandstats counts its
                    # evalsha calls) must not include the run's own bookkeeping
                    if not client.eval(extend, 1, self.key, self.token, ttl_ms):
                        self.lost_at = time.time()
                        return
                except redis.RedisError:
                    continue  # unreachable this tick; the lease has two more ticks before it lapses
        finally:
            client.close()

    def release(self) -> None:
        """Stop renewing and delete the lease if it is still ours (token-checked)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
            self._thread = None
        self.backend.scripts("release_lease", [self.key], [self.token])


@contextmanager
def held_prefix(backend, name: str) -> Iterator[str]:
    """A run prefix of one's own, under a run-lease, for code that writes keys outside a scenario
    (a notebook cell, a lesson helper): `with held_prefix(be, "reaper") as prefix: …`. The lease is
    released and every key under the prefix deleted when the block ends, however it ends."""
    lease = RunLease(backend, backend.run_prefix(name))
    try:
        lease.take()
        yield lease.prefix
    finally:
        try:
            lease.release()
        finally:
            backend.delete_prefix(lease.prefix)


@dataclass
class Cleaned:
    runs_removed: int
    keys_removed: int
    live_runs: int

    def to_dict(self) -> dict[str, int]:
        return {"runs_removed": self.runs_removed, "keys_removed": self.keys_removed, "live_runs": self.live_runs}

    @property
    def text(self) -> str:
        return (f"removed {self.keys_removed} key(s) of {self.runs_removed} run(s) whose lease had lapsed; "
                f"{self.live_runs} live run(s) left alone")


def run_prefixes(backend) -> set[str]:
    """Every run prefix (`emqlab:<run>:`) that has at least one key, found by a bounded SCAN."""
    found: set[str] = set()
    root = backend.prefix
    for key in backend.client.scan_iter(match=root + "*", count=SCAN_COUNT):
        rest = key[len(root):]
        if ":" in rest:  # a key right under `emqlab:` belongs to no run
            found.add(root + rest.split(":", 1)[0] + ":")
    return found


def _alive(client, prefixes: list[str]) -> list[bool]:
    pipe = client.pipeline(transaction=False)
    for prefix in prefixes:
        pipe.exists(prefix + LEASE_SUFFIX)
    return [bool(n) for n in pipe.execute()]


def clean(backend) -> Cleaned:
    """Delete the keys of every run whose run-lease has lapsed. A run takes its lease before it
    writes a key, so a prefix with keys and no lease is a run that ended without cleaning up. Each
    dead prefix is checked again right before its keys go (UNLINK in batches, under `emqlab:` only)."""
    prefixes = sorted(run_prefixes(backend))
    alive = dict(zip(prefixes, _alive(backend.client, prefixes))) if prefixes else {}
    runs = keys = 0
    for prefix in (p for p, live in alive.items() if not live):
        if _alive(backend.client, [prefix])[0]:
            alive[prefix] = True
            continue
        removed = backend.delete_prefix(prefix)
        runs, keys = runs + (removed > 0), keys + removed
    return Cleaned(runs, keys, sum(alive.values()))
