"""The processes emqlab starts, and how none is ever left behind.

A child (a valkey-server, a consumer, a library's worker) is started with `child_setup` between fork and
exec: the kernel kills it if emqlab dies (PR_SET_PDEATHSIG), and a Ctrl-C meant for emqlab never reaches
it (emqlab decides what its children do). Each kind of child keeps its running ones in a `Children`, which
ends them, the kind's own way, at interpreter exit: the exit hook goes in with the first child, never at
import. `descendants(pid)` reads a process's tree from /proc (a pool child, a work horse and what they
forked); `signal_each` signals a list of pids, passing over the ones already gone.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child, between fork and exec: the kernel sends SIGKILL when the parent dies. (Linux ties
    this to the thread that forked: start children from a thread that lives as long as they do.)"""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the atexit and signal paths still stop it
        pass


def child_setup() -> None:
    """In a child, between fork and exec: it dies with its parent and ignores SIGINT (a Ctrl-C is the
    parent's to handle, even one sent to the child by hand)."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Children:
    """The running children of one kind, each ended by `end(proc)` at interpreter exit if nothing has ended
    it by then. `end` must leave the process reaped; the kind's own code calls `discard` once it has."""

    def __init__(self, end: Callable[[subprocess.Popen], None]):
        self._end = end
        self._live: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._hooked = False

    def add(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._live.add(proc)
            if not self._hooked:  # with the first child: importing emqlab registers nothing
                self._hooked = True
                atexit.register(self.end_all)

    def discard(self, proc: subprocess.Popen) -> None:
        with self._lock:
            self._live.discard(proc)

    def __contains__(self, proc: subprocess.Popen) -> bool:
        with self._lock:
            return proc in self._live

    def end_all(self) -> None:
        with self._lock:
            procs = list(self._live)
        for proc in procs:
            self._end(proc)


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for kid in children.get(todo.pop(), []):
            found.append(kid)
            todo.append(kid)
    return found


def signal_each(pids: Iterable[int], sig: int) -> None:
    """Send `sig` to every pid; one already gone (or not ours) is passed over."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
