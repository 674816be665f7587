"""What every library's run shares (`emqlab tools`): its own server, its processes, and the sampler that
records what the server says.

`LibraryRun(library, params, probe)` is used as a context manager; for its whole life it owns:

- an embedded valkey-server of its own (`emqlab.store.embedded`), started for the run and stopped when it
  ends, however it ends: no library's key ever lands on a server emqlab does not own;
- the library's workers and holders, as OS processes (`spawn`): each in a session of its own, its
  stderr in a file the run reads, killed with the run (SIGSTOP on its whole process tree first, so a
  pool cannot fork a replacement, then SIGKILL), at interpreter exit, and by the kernel if emqlab itself
  dies (PR_SET_PDEATHSIG). A crash is SIGKILL on the process and everything it forked (a Celery pool
  child, an RQ work horse), a pause SIGSTOP on the same tree and a resume SIGCONT (`pause`, `resume`; recorded as the `freeze` and `thaw` events);
- the sampler: a thread that reads, every `SAMPLE_S`, in one pipeline, the server's TIME and the library's
  own keys (its `Probe` says which), and records every change of what they say as a `state` event on the
  `server` lane, on the server's clock;
- the reports its task bodies and holders push from inside the library's processes
  (`emqlab.tools.report`), stamped with the same server TIME.

Times in the Timeline are seconds of the server's clock since the story began (`begin()`): a library's
run keeps its own clock, so model seconds are real seconds here (scale 1). Nothing in the library is
patched or wrapped: emqlab starts its processes with the library's own entry points and options, and
watches the server.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from importlib import metadata
from typing import Any

from ..core.environment import TOOLS_PREFIX_ENV, TOOLS_URL_ENV
from ..core.errors import BadParameter, StoreError
from ..core.kinds import Kind
from ..core.ranges import TOOLS_SECONDS_LIMIT
from ..core.timeline import Timeline
from ..core.children import TRACKER, pause_tree, kill_tree, resume_tree
from ..store.embedded import EmbeddedValkey
from ..store.clock import time_reply_s
from .report import keys

SAMPLE_S = 0.05  # how often the sampler reads the server (real seconds)
LAST_READING_S = 0.3  # after a story's end, the sampler's last reading (real seconds)
BOOT_S = 90.0  # how long the workers may take to boot and connect on a loaded machine (real seconds)
EXTRA = "tools"  # pip install 'emqlab[tools]'


# -- the optional libraries ------------------------------------------------------------------------
def require(library) -> str:
    """The installed version of `library`'s package (a `declaration.Library`), or BadParameter (one line,
    exit 2) naming the extra."""
    try:
        importlib.import_module(library.imports)
        return metadata.version(library.distribution)
    except (ImportError, metadata.PackageNotFoundError):
        raise BadParameter(f"`emqlab tools {library.name}` runs the real {library.distribution} package, which is not "
                           f"installed: pip install 'emqlab[{EXTRA}]'") from None


def check_budget(library: str, span_s: float, shorten: str = "--task") -> None:
    """Refuse a story longer than a library's run may last (real seconds), before anything starts;
    `shorten`: the options that make it shorter, as the refusal names them."""
    if span_s > TOOLS_SECONDS_LIMIT:
        raise BadParameter(f"this {library} run would last about {span_s:.0f} real seconds; a library's run may "
                           f"last at most {TOOLS_SECONDS_LIMIT:g}: shorten {shorten}")


# -- processes -------------------------------------------------------------------------------------
class Child:
    """One of a run's processes: its name (its lane), the process, its stderr file."""

    def __init__(self, name: str, proc: subprocess.Popen, stderr: Any):
        self.name, self.proc, self.stderr = name, proc, stderr
        self.tree: list[int] = []  # the processes a crash or a pause reached

    @property
    def pid(self) -> int:
        return self.proc.pid

    def last_line(self) -> str:
        self.stderr.seek(0)
        lines = [ln for ln in self.stderr.read().decode(errors="replace").splitlines() if ln.strip()]
        return lines[-1] if lines else f"exit {self.proc.returncode}"


# -- the sampler -------------------------------------------------------------------------------------
class Probe:
    """What a library's sampler reads: `commands(pipe)` queues the reads, `state(replies, now)` turns their
    replies into a plain dict. A value under a key ending in `deadline` is a server time (seconds) compared
    with a tolerance: a PTTL read a few ms later is the same deadline."""

    def commands(self, pipe) -> None:
        raise NotImplementedError

    def state(self, replies: list[Any], now: float) -> dict[str, Any]:
        raise NotImplementedError


DEADLINE_TOLERANCE_S = 0.03


def same(a: Any, b: Any, key: str = "") -> bool:
    """Two states say the same, deadlines within `DEADLINE_TOLERANCE_S`."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], str(k)) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, key) for x, y in zip(a, b))
    if key.endswith("deadline") and isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= DEADLINE_TOLERANCE_S
    return a == b


class Sampler(threading.Thread):
    """Reads the server every `SAMPLE_S`; keeps (server time, state) at every change."""

    def __init__(self, client, probe: Probe, every: float = SAMPLE_S):
        super().__init__(name="emqlab-tools-sampler", daemon=True)
        self.client, self.probe, self.every = client, probe, every
        self.samples: list[tuple[float, dict[str, Any]]] = []
        self.reads = 0
        self.failure: BaseException | None = None
        self._stop_event = threading.Event()

    def read(self) -> tuple[float, dict[str, Any]]:
        pipe = self.client.pipeline(transaction=False)
        pipe.time()
        self.probe.commands(pipe)
        replies = pipe.execute()
        now = time_reply_s(replies[0])
        return now, self.probe.state(replies[1:], now)

    def run(self) -> None:
        try:
            while not self._stop_event.is_set():
                now, state = self.read()
                self.reads += 1
                if not self.samples or not same(self.samples[-1][1], state):
                    self.samples.append((now, state))
                self._stop_event.wait(self.every)
        except BaseException as exc:  # noqa: BLE001 - reported by stop(), in the run's thread
            self.failure = exc

    @property
    def last(self) -> dict[str, Any]:
        return self.samples[-1][1] if self.samples else {}

    def stop(self) -> None:
        self._stop_event.set()
        if self.is_alive():
            self.join(timeout=5)


# -- a run -----------------------------------------------------------------------------------------------
class LibraryRun:
    """One library's run on a server of its own. See the module's docstring."""

    def __init__(self, library: str, params: Any, probe: Callable[[str], Probe], version: str):
        """`probe(prefix)`: what the sampler reads, given the run's key prefix (the library's keys live under it)."""
        self.library, self.params, self.version = library, params, version
        self.server: EmbeddedValkey | None = None
        self.client = None
        self.children: dict[str, Child] = {}
        self.sampler: Sampler | None = None
        self.t0: float | None = None
        self.prefix = f"emqlab:tools-{library}-{os.urandom(8).hex()}:"
        self.keys = keys(self.prefix)
        self.probe = probe(self.prefix)
        self.own_events: list[dict[str, Any]] = []

    # -- life ----------------------------------------------------------------------------------------
    def __enter__(self) -> "LibraryRun":
        try:
            import redis

            self.server = EmbeddedValkey().start()
            self.client = redis.Redis(**self.server.connection_kwargs, decode_responses=True, socket_timeout=30)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the sampler, end every process (and what each forked), stop the server."""
        try:
            if self.sampler is not None:
                self.sampler.stop()
            for child in self.children.values():
                kill_tree(child.proc)
                child.stderr.close()
        finally:
            client, self.client = self.client, None
            if client is not None:
                try:
                    client.close()
                except Exception:  # noqa: BLE001 - the server is going anyway
                    pass
            server, self.server = self.server, None
            if server is not None:
                server.stop()

    @property
    def url(self) -> str:
        return self.server.url

    def env(self, **extra: str) -> dict[str, str]:
        """A child's environment: the server's address and the run's prefix travel here, never on argv."""
        return {**os.environ, TOOLS_URL_ENV: self.url, TOOLS_PREFIX_ENV: self.prefix, "PYTHONUNBUFFERED": "1", **extra}

    # -- processes -----------------------------------------------------------------------------------
    def spawn(self, name: str, argv: list[str], **env: str) -> Child:
        """Start one of the library's processes (`argv[0]` is run with this Python when it is a module path
        `-m …`); stdout and stderr go to a file the run reads."""
        err = tempfile.TemporaryFile()
        proc = TRACKER.spawn([sys.executable, *argv],
                                env=self.env(**env), stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        child = self.children[name] = Child(name, proc, err)
        return child

    def failed(self) -> dict[str, str]:
        """{name: its last stderr line} for every process that failed (exited non-zero by itself)."""
        return {name: c.last_line() for name, c in self.children.items()
                if c.proc.poll() not in (None, 0) and not c.tree}

    def check_children(self) -> None:
        failed = self.failed()
        if failed:
            name, line = sorted(failed.items())[0]
            raise StoreError(f"{self.library}'s {name} exited early: {line}")

    def crash(self, name: str) -> list[int]:
        """SIGKILL the process and every process it forked (a machine or container dying): nothing of it
        runs on. Returns the pids killed."""
        child = self.children[name]
        tree = child.tree = kill_tree(child.proc) or [child.pid]  # one that had ended by itself: its pid
        self.record(name, Kind.CRASH, signal="SIGKILL", pids=tree)
        return tree

    def pause(self, name: str) -> None:
        """SIGSTOP the process tree: a stop-the-world pause (GC, VM migration, a laptop lid)."""
        child = self.children[name]
        child.tree = pause_tree(child.pid)
        self.record(name, Kind.FREEZE, signal="SIGSTOP")

    def resume(self, name: str) -> None:
        """SIGCONT the tree, stamped with the server's TIME read just before: a resumed process runs at once,
        and its first report must not come before the resume (its `thaw` event) that let it run."""
        child = self.children[name]
        ts = self.server_now()
        resume_tree(child.tree)
        self.record(name, Kind.THAW, ts=ts, signal="SIGCONT")

    # -- waiting on the server ------------------------------------------------------------------------
    def wait_until(self, what: str, check: Callable[[], Any], timeout: float, every: float = 0.02) -> Any:
        """Poll `check()` until it returns something truthy (a process that dies meanwhile ends the run)."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            self.check_children()
            if self.sampler is not None and self.sampler.failure is not None:
                raise StoreError(f"the sampler failed: {self.sampler.failure}")
            if time.monotonic() > deadline:
                raise StoreError(f"{self.library}: {what} did not happen within {timeout:g} s (real time)")
            time.sleep(every)

    def bodies_ended(self, cut: int = 0) -> bool:
        """Whether every task body that reported its start has reported its end (`cut`: how many of them the
        story itself cut short, with a crash)."""
        kinds = [r["kind"] for r in self.reports()]
        return kinds.count(Kind.START) == kinds.count(Kind.END) + cut

    def exited(self) -> bool:
        """Whether every one of the run's processes has exited (a holder's story ends with its process)."""
        return all(c.proc.poll() is not None for c in self.children.values())

    def blocked_on(self, commands: tuple[str, ...]) -> set[str]:
        """The ids of the server's clients blocked right now in one of `commands` (a worker waiting for work:
        how the server shows a worker is ready, whatever the library)."""
        found = set()
        for c in self.client.client_list():
            if c.get("cmd", "").lower() in commands and "b" in c.get("flags", ""):
                found.add(c["id"])
        return found

    def wait_ready(self, commands: tuple[str, ...], n: int, timeout: float = BOOT_S) -> None:
        """Wait until `n` distinct clients have been seen blocked in one of `commands`: every worker booted,
        connected and waiting for work (their boot is the machine's time, not the story's)."""
        seen: set[str] = set()

        def ready() -> bool:
            seen.update(self.blocked_on(commands))
            return len(seen) >= n

        self.wait_until(f"{n} workers waiting for work", ready, timeout, every=0.05)

    def open_gate(self, name: str) -> None:
        """Let a gated process (`Reporter.wait_gate`) go on."""
        self.client.rpush(self.keys["gate"] + name, "go")

    # -- the story's clock ------------------------------------------------------------------------------
    def server_now(self) -> float:
        return time_reply_s(self.client.time())

    def begin(self) -> None:
        """The story starts now (t = 0 on the server's clock); the sampler starts reading."""
        self.t0 = self.server_now()
        self.sampler = Sampler(self.client, self.probe)
        self.sampler.start()

    @property
    def t(self) -> float:
        """Seconds since the story began (the server's clock and this machine's are one clock here)."""
        return time.time() - self.t0

    def sleep_until(self, t: float) -> None:
        time.sleep(max(0.0, t - self.t))

    def end(self, over: Callable[[], bool], span_s: float) -> Timeline:
        """The story's end: wait until `over()` says it is, or until `span_s` more seconds have passed (a story
        that outlives its span ends there, its processes as they stand); give the sampler a last reading
        (`LAST_READING_S` on); write the run down (`timeline()`)."""
        deadline = self.t + span_s
        self.wait_until("the story's end", lambda: over() or self.t > deadline, span_s + 30)
        self.sleep_until(self.t + LAST_READING_S)
        return self.timeline()

    def record(self, actor: str, kind: str, *, ts: float | None = None, **data: Any) -> float:
        """An event of the run's own (a crash, a pause, a job sent), stamped with the server's TIME (now, or
        `ts` read before the act)."""
        ts = self.server_now() if ts is None else ts
        self.own_events.append({"ts": ts, "actor": actor, "kind": kind, **data})
        return ts

    def reports(self) -> list[dict[str, Any]]:
        """What the task bodies and holders have reported so far, in order."""
        return [json.loads(x) for x in self.client.lrange(self.keys["reports"], 0, -1)]

    def reported(self, kind: str, actor: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.reports() if r["kind"] == kind and (actor is None or r["actor"] == actor)]

    def effects(self) -> int:
        return int(self.client.get(self.keys["effects"]) or 0)

    # -- the timeline --------------------------------------------------------------------------------
    def timeline(self) -> Timeline:
        """Stop the sampler and write the run down: the samples (the `server` lane's `state` events), the
        reports and the run's own events, each at its server time since the story began."""
        if self.sampler is None or self.t0 is None:
            raise StoreError(f"the {self.library} run never began")
        self.sampler.stop()
        if self.sampler.failure is not None:
            raise StoreError(f"the sampler failed: {self.sampler.failure}")
        tl = Timeline(f"tools-{self.library}", self.params, backend="valkey", clock="real")
        for ts, state in self.sampler.samples:
            tl.add(ts - self.t0, "server", Kind.STATE, **relative(state, self.t0))
        for item in [*self.reports(), *self.own_events]:
            item = dict(item)
            ts = item.pop("ts")
            tl.add(ts - self.t0, item.pop("actor"), item.pop("kind"), **item)
        tl.finish()
        tl.counts.update(library=self.library, version=self.version, effects_counted=self.effects(),
                         samples=self.sampler.reads)
        return tl


def relative(state: dict[str, Any], t0: float) -> dict[str, Any]:
    """A sampled state with every deadline (a server time) as seconds since the story began."""
    out = {}
    for key, value in state.items():
        if isinstance(value, dict):
            out[key] = relative(value, t0)
        elif key.endswith("deadline") and isinstance(value, (int, float)):
            out[key] = round(value - t0, 3)
        else:
            out[key] = value
    return out


__all__ = ["BOOT_S", "Child", "LibraryRun", "Probe", "SAMPLE_S", "Sampler", "check_budget", "relative",
           "require", "same"]
