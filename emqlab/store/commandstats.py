"""What a live server says it did: INFO commandstats deltas (calls and microseconds per command)
and, on a server emqlab started itself, the slow log (the longest single calls).

fakeredis has no INFO commandstats; on it the client-side counter is the only count. On Valkey the
two counts are independent, so a run can check that they agree: every EVALSHA the client sent is
one `evalsha` call on the server, and the inner GET/PEXPIRE of a script are counted on their own.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

from ..core.errors import EmqlabError

# The probes themselves show up in commandstats; a delta leaves them out.
PROBES = frozenset({"info", "slowlog", "config", "hello", "ping", "client"})


@dataclass(frozen=True)
class Stat:
    """One command's totals on the server: how many calls, how many microseconds inside them."""

    calls: int = 0
    usec: int = 0

    def __sub__(self, other: "Stat") -> "Stat":
        return Stat(self.calls - other.calls, self.usec - other.usec)


def snapshot(client: Any) -> dict[str, Stat]:
    """Every command's totals, keyed by lower-case command name (e.g. "evalsha", "get")."""
    info = client.info("commandstats")
    stats = {}
    for name, row in info.items():
        if not name.startswith("cmdstat_"):
            continue
        stats[name[len("cmdstat_"):].lower()] = Stat(int(row.get("calls", 0)), int(row.get("usec", 0)))
    return stats


def delta(before: dict[str, Stat], after: dict[str, Stat]) -> dict[str, Stat]:
    """What ran between two snapshots (commands that did not run, and the probes, left out)."""
    out = {}
    for name, now in after.items():
        if name in PROBES or "|" in name and name.split("|", 1)[0] in PROBES:
            continue
        diff = now - before.get(name, Stat())
        if diff.calls:
            out[name] = diff
    return out


class ServerCounter:
    """Commandstats over a window: `start()`, run, `stop()`; then `.delta`, `.calls(cmd)`, `.usec(cmd)`.

    Call start/stop outside any window the client counts itself: INFO is a round trip too.
    """

    def __init__(self, client: Any):
        self.client = client
        self._before: dict[str, Stat] | None = None
        self.delta: dict[str, Stat] = {}

    def start(self) -> "ServerCounter":
        self._before = snapshot(self.client)
        return self

    def stop(self) -> dict[str, Stat]:
        if self._before is None:
            raise EmqlabError("ServerCounter.stop() was called before start(): there is no window to count")
        self.delta = delta(self._before, snapshot(self.client))
        return self.delta

    def calls(self, command: str) -> int:
        return self.delta.get(command, Stat()).calls

    def usec(self, command: str) -> int:
        return self.delta.get(command, Stat()).usec


@contextmanager
def slow_calls(client: Any, slower_than_us: int, max_len: int = 1024) -> Iterator[list[dict[str, Any]]]:
    """Record every call slower than `slower_than_us` while the block runs; the yielded list is
    filled at exit with {"command", "us"} entries, longest first.

    This reconfigures the slow log and restores it after: use it only on a server emqlab (or the
    test) started itself, never on a user's URL.
    """
    old = client.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"]
    old_len = client.config_get("slowlog-max-len")["slowlog-max-len"]
    client.config_set("slowlog-log-slower-than", int(slower_than_us))
    client.config_set("slowlog-max-len", int(max_len))
    client.slowlog_reset()
    found: list[dict[str, Any]] = []
    try:
        yield found
        for entry in client.slowlog_get(max_len):
            command = entry.get("command", "")
            if isinstance(command, bytes):
                command = command.decode(errors="replace")
            found.append({"command": str(command).split(" ", 1)[0].lower(), "us": int(entry["duration"])})
        found.sort(key=lambda e: -e["us"])
    finally:
        client.config_set("slowlog-log-slower-than", old)
        client.config_set("slowlog-max-len", old_len)
        client.slowlog_reset()
