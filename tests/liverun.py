"""Helpers for tests that run `emqlab` as a process against a live server: start it in a session of
its own (so a test can signal its whole group), find its run's keys and its descendants, poll with
deadlines. Not a test module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import redis

EMQLAB = [sys.executable, "-m", "emqlab.cli"]
ROOT = Path(__file__).resolve().parents[1]


def env(**extra: str) -> dict[str, str]:
    """The test's environment without a backend choice, plus `extra`."""
    run_env = {k: v for k, v in os.environ.items() if k not in ("EMQLAB_BACKEND", "EMQLAB_URL")}
    run_env.update(extra)
    return run_env


def start(*args: str, **extra_env: str) -> subprocess.Popen:
    """`emqlab ARGS` in a session (and process group) of its own, as a terminal would start it."""
    return subprocess.Popen([*EMQLAB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=env(**extra_env), start_new_session=True)


def run(*args: str, timeout: float = 300, **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run([*EMQLAB, *args], capture_output=True, text=True, cwd=ROOT, env=env(**extra_env),
                          timeout=timeout)


def run_json(*args: str, timeout: float = 300, **extra_env: str) -> dict:
    done = run(*args, "--json", timeout=timeout, **extra_env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_for(what: str, check, timeout: float = 60.0, every: float = 0.05):
    """Poll `check()` until it returns something truthy; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, read from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for kid in children.get(todo.pop(), []):
            found.append(kid)
            todo.append(kid)
    return found


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def consumers(pids: list[int]) -> list[int]:
    return [p for p in pids if b"emqlab.queue.procs\0consumer" in cmdline(p)]


def servers(pids: list[int]) -> list[int]:
    return [p for p in pids if b"valkey-server" in cmdline(p)]


def run_leases(url: str) -> set[str]:
    """The run prefixes that hold a run-lease on the server at `url`."""
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        return {k[: -len("run-lease")] for k in client.scan_iter(match="emqlab:*:run-lease", count=1000)}
    finally:
        client.close()


def keys_under(url: str, prefix: str = "emqlab:") -> list[str]:
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        return list(client.scan_iter(match=prefix + "*", count=1000))
    finally:
        client.close()


def gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    """Wait (with a deadline) for every pid to end; the ones still running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def cmdlines() -> str:
    """Every process's command line on this machine, one a line (to look for a leaked secret)."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out.append(f.read().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass
    return "\n".join(out)
