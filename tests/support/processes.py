"""OS processes and the CLI: `emqlab` run as a process against a live server, its keys, its descendants,
polls with deadlines (`start`, `run_json`, `wait_for`, `keys_under`, `gone`, …), and a lesson's kernel
started again only when a port it was given was taken first (notebooks/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import redis

import realtime
from emqlab.core.children import descendants  # noqa: F401 - the tests read process trees with it


# -- live runs -------------------------------------------------------------------------------------
EMQLAB = [sys.executable, "-m", "emqlab.cli"]


ROOT = Path(__file__).resolve().parents[2]  # the checkout


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
    """`emqlab ARGS` to its end; `timeout` is stretched on a slower host (`realtime.timeout_s`)."""
    return subprocess.run([*EMQLAB, *args], capture_output=True, text=True, cwd=ROOT, env=env(**extra_env),
                          timeout=realtime.timeout_s(timeout))


def run_json(*args: str, timeout: float = 300, **extra_env: str) -> dict:
    done = run(*args, "--json", timeout=timeout, **extra_env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_for(what: str, check, timeout: float = 60.0, every: float = 0.05):
    """Poll `check()` until it returns something truthy; fail naming `what` at the deadline (`timeout`
    seconds, stretched on a slower host: `realtime.timeout_s`)."""
    timeout = realtime.timeout_s(timeout)
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
    """Wait (with a deadline, stretched on a slower host) for every pid to end; the ones still running."""
    deadline = time.monotonic() + realtime.timeout_s(timeout)
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


# -- a lesson's kernel: started again only when a port it was given was taken ------------------------
PORT_TAKEN = "Address already in use"


def kernel_start_retried_on_a_taken_port(start):
    """`start` (nbval's `start_new_kernel`) with the kernel's stderr kept, not thrown away. jupyter_client
    gives a kernel five ports that it found free by binding port 0 and letting go; the kernel binds them
    a moment later, and on a busy machine another process can take one in between (a lesson's client
    connections to Valkey each take such a port): the kernel dies with "Address already in use" before it
    answers (jupyter/jupyter_client#487). That death alone is tried once more, on new ports; any other
    raises with what the kernel printed."""
    import tempfile

    def started(*args, **kwargs):
        for attempt in (1, 2):
            with tempfile.TemporaryFile("w+") as err:
                kwargs["stderr"] = err  # the kernel keeps its own handle on the file after this one closes
                try:
                    return start(*args, **kwargs)
                except RuntimeError as died:
                    err.seek(0)
                    said = err.read()
                    if attempt == 1 and PORT_TAKEN in said:
                        print(f"a kernel lost a port before it bound it ({PORT_TAKEN}): starting it again",
                              file=sys.stderr)
                        continue
                    raise RuntimeError(f"{died}; the kernel printed:\n{said[-3000:]}") from died
    return started
