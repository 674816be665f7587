"""Consumers as OS processes, on live Valkey: a crash is SIGKILL, a stop-the-world pause is
SIGSTOP … SIGCONT, a graceful stop is SIGTERM (the job in hand is settled first).

Every child is tracked and always reaped: by `ProcessPool.close()` (also when the parent is
interrupted with Ctrl-C or an exception unwinds through the `with`), at interpreter exit, and by
the kernel if the parent itself is killed (PR_SET_PDEATHSIG). Each child runs in a session of its
own: a terminal's signals reach the parent alone, which decides what its children do.

A child is started as `python -m emqlab.queue.procs consumer …` and reports what it did as JSON events
pushed to a list under the run's prefix, stamped on the parent's model time base (wall time since
`t0`, as the real clock converts it). A child receives the store's specification whole, its address,
clock and scale (`StoreSpec.dumps`), and never on its command line (any local user can read those,
and the address may hold a password): in its environment (`EMQLAB_CHILD_STORE`), readable by its owner alone.
A child's stderr goes to a file the parent reads, never to the user's terminal; a child that fails
writes one line there and exits 1, and the parent reports the failure in one line of its own.
The scenarios that drive these processes live in `emqlab.scenarios.os_processes`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from ..core.environment import CHILD_STORE_ENV
from ..core.children import TRACKER, stop_then_kill
from ..core.errors import BadParameter, StoreError
from ..core.kinds import Kind
from ..core.timeline import Filtered, Recorder, Timeline
from ..store.clock import to_ms



def child_spec(backend) -> str:
    """The specification another process opens this backend's store with (live backends only): its URL and
    the backend's clock, as `StoreSpec.dumps` writes it."""
    from ..store.backend import store_spec

    if not backend.url:
        raise BadParameter("fakeredis has no URL: it lives inside one process; consumer processes need a live server")
    return store_spec(backend.url, clock=backend.clock.name, scale=backend.clock.scale).dumps()


class ProcessPool:
    """Consumer processes by name. Use as a context manager: every child is gone when it exits."""

    def __init__(self, backend, queue, *, t0_wall: float, events_key: str):
        if not backend.live:
            raise BadParameter("consumer processes need a live server; fakeredis lives inside one process")
        self.backend, self.spec = backend, child_spec(backend)
        self.queue, self.t0_wall, self.events_key = queue, t0_wall, events_key
        self.procs: dict[str, subprocess.Popen] = {}
        self.paused: set[str] = set()
        self._stderr: dict[str, Any] = {}

    def spawn(self, name: str, *, lease_ms: float, beat_ms: float, work_ms: float, effect: str = "none",
              batch: int = 1, drain_limit: int = 100, quiet: tuple[str, ...] = (), design: str = "none",
              max_runtime_ms: float = 0, gated: bool = False) -> subprocess.Popen:
        """Start one consumer process. `gated`: it boots and connects, says so, then waits for `open(name)`
        before it consumes (see `wait_ready`), so a story's clock need not include a process's boot."""
        args = [sys.executable, "-m", "emqlab.queue.procs", "consumer",
                "--prefix", self.queue.prefix, "--queue", self.queue.name, "--name", name, "--lease-ms", str(lease_ms),
                "--beat-ms", str(beat_ms), "--work-ms", str(work_ms), "--effect", effect, "--batch", str(batch),
                "--drain-limit", str(drain_limit), "--t0", repr(self.t0_wall), "--events", self.events_key,
                "--quiet", ",".join(quiet), "--design", design, "--max-runtime-ms", str(max_runtime_ms)]
        if gated:
            args += ["--gate", self.gate_key(name), "--ready", self.ready_key]
        env = {**os.environ, CHILD_STORE_ENV: self.spec}
        err = self._stderr[name] = tempfile.TemporaryFile()  # unlinked at once: gone with the parent
        proc = TRACKER.spawn(args, end=lambda p: stop_then_kill(p, graceful=False), env=env,
                                stdin=subprocess.DEVNULL, stderr=err)
        self.procs[name] = proc
        return proc

    @property
    def ready_key(self) -> str:
        return self.queue.base + "gate:ready"

    def gate_key(self, name: str) -> str:
        return self.queue.base + "gate:" + name

    def wait_ready(self, names: list[str], timeout: float) -> None:
        """Block until every gated child in `names` has booted and connected (real seconds, at most `timeout`)."""
        client, waiting = self.backend.client, set(names)
        deadline = time.monotonic() + timeout
        while waiting:
            failed = self.failures()
            if failed:
                name, line = sorted(failed.items())[0]
                raise StoreError(f"{name} failed: {line}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreError(f"{', '.join(sorted(waiting))} did not boot within {timeout:g} s (real time)")
            got = client.blpop([self.ready_key], timeout=min(0.5, left))
            if got:
                waiting.discard(got[1].decode() if isinstance(got[1], bytes) else got[1])

    def booted(self) -> list[str]:
        """The gated children that said they are ready since the last call (no waiting)."""
        client, names = self.backend.client, []
        while (got := client.lpop(self.ready_key)) is not None:
            names.append(got.decode() if isinstance(got, bytes) else got)
        return names

    def open(self, name: str) -> None:
        """Let a gated child start consuming."""
        self.backend.client.lpush(self.gate_key(name), "go")

    def failures(self) -> dict[str, str]:
        """{name: the last line a child wrote to stderr} for children that exited with an error."""
        found = {}
        for name, proc in self.procs.items():
            if proc.poll() not in (None, 0, -signal.SIGKILL, -signal.SIGTERM):
                err = self._stderr[name]
                err.seek(0)
                lines = err.read().decode(errors="replace").strip().splitlines()
                found[name] = lines[-1] if lines else f"exit {proc.returncode}"
        return found

    def alive(self) -> list[str]:
        return [n for n, p in self.procs.items() if p.poll() is None]

    def kill(self, name: str) -> None:
        """Crash: SIGKILL, nothing is settled."""
        proc = self.procs[name]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        self.paused.discard(name)
        TRACKER.release(proc)

    def pause(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGSTOP)
        self.paused.add(name)

    def resume(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGCONT)
        self.paused.discard(name)

    def stop_all(self, timeout: float = 10.0) -> None:
        """Graceful: SIGTERM every child (each settles its job in hand), then make sure they are gone."""
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self.close()

    def close(self) -> None:
        for proc in self.procs.values():
            stop_then_kill(proc, graceful=False)
        for err in self._stderr.values():
            err.close()

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs.values()]

    def __enter__(self) -> "ProcessPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def collect_events(backend, events_key: str, timeline: Timeline) -> int:
    """Move the children's reported events into `timeline` (model seconds on the parent's base)."""
    raw = backend.client.lrange(events_key, 0, -1)
    for line in raw:
        e = json.loads(line)
        timeline.add(e.pop("t"), e.pop("actor"), e.pop("kind"), **e)
    return len(raw)


def bands_from_events(timeline: Timeline) -> None:
    """Rebuild lease and work intervals from claim/complete/crash events (a child cannot ship
    intervals it never closed: a SIGKILLed one dies holding them)."""
    timeline.events.sort(key=lambda e: e.t)
    open_runs: dict[tuple[str, str], Any] = {}
    for e in timeline.events:
        job = e.data.get("job")
        if e.kind == Kind.CLAIM:
            key = (e.actor, job)
            timeline.open(e.t, e.actor, "lease", job=job, attempts=e.data["attempts"],
                          deadline=e.data["deadline"], ended=None)
            open_runs[key] = timeline.open(e.t, e.actor, "run", job=job, attempts=e.data["attempts"])
        elif e.kind in (Kind.WORK_DONE, Kind.COMPLETE, Kind.COMPLETE_REFUSED) and (e.actor, job) in open_runs:
            span = open_runs.pop((e.actor, job))
            span.end = e.t
        elif e.kind == Kind.CRASH:
            for (actor, held), span in list(open_runs.items()):
                if actor == e.actor:
                    span.end, span.data["ended"] = e.t, "crashed"
                    del open_runs[(actor, held)]
    for lease in timeline.spans("lease"):
        done = timeline.first(Kind.COMPLETE, lease.actor,
                              where=lambda x: x.data.get("job") == lease.data["job"] and x.t >= lease.start)
        if done is not None and done.t <= lease.data["deadline"]:
            lease.end, lease.data["ended"] = done.t, "completed"
        else:
            lease.end, lease.data["ended"] = lease.data["deadline"], "lapsed"


# -- the child ------------------------------------------------------------------------------------
class ProcessRecorder(Recorder):
    """A child's recorder: each event is pushed to the store as it happens, stamped on the parent's
    wall-clock time base. Intervals stay in a local timeline; the parent rebuilds them from events."""

    def __init__(self, client, events_key: str, t0_wall: float, clock):
        super().__init__(Timeline("process", {}))
        self.client, self.events_key, self.t0_wall, self.clock = client, events_key, t0_wall, clock
        self._buffer: list[str] = []

    @property
    def t(self) -> float:
        return self.clock.model_s(time.time() - self.t0_wall)

    def event(self, actor: str, kind: str, **data: Any) -> None:
        self._buffer.append(json.dumps({"t": round(self.t, 3), "actor": actor, "kind": kind, **data}))
        # pushed at once: a SIGKILL may come any moment, and what the child did before it is the story
        self.flush()

    def flush(self) -> None:
        if self._buffer:
            self.client.rpush(self.events_key, *self._buffer)
            self._buffer.clear()


def blpop_can_time(backend, beat_ms: float) -> bool:
    """Whether the server can time out a BLPOP of one beat faithfully. Valkey checks blocking
    timeouts on its `hz` tick (default 10 a second): at hz 10 a 50 ms BLPOP waits ~100 ms. A beat
    shorter than two ticks is parked with a timed wait and a non-blocking LPOP instead."""
    try:
        hz = int(backend.client.config_get("hz").get("hz", 10))
    except Exception:  # a managed server may refuse CONFIG; assume the default
        hz = 10
    return backend.clock.to_server_ms(beat_ms) >= to_ms(2 / max(hz, 1))


def child_main(argv: list[str]) -> int:
    from ..store.backend import StoreSpec, connect
    from .consumer import Consumer, unusual
    from .jobs import Queue

    p = argparse.ArgumentParser(prog="python -m emqlab.queue.procs consumer")
    p.add_argument("--prefix", required=True)
    p.add_argument("--queue", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--lease-ms", type=float, required=True)
    p.add_argument("--beat-ms", type=float, required=True)
    p.add_argument("--work-ms", type=float, required=True)
    p.add_argument("--effect", default="none")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--drain-limit", type=int, default=100)
    p.add_argument("--t0", type=float, required=True)
    p.add_argument("--events", required=True)
    p.add_argument("--quiet", default="", help="comma-separated event kinds not to report")
    p.add_argument("--design", default="none", help="how the consumer holds its jobs (emqlab.lease.designs)")
    p.add_argument("--max-runtime-ms", type=float, default=0.0, help="a hard deadline per claim (0: none)")
    p.add_argument("--gate", default="", help="a list to wait on (BLPOP) before consuming; empty: start at once")
    p.add_argument("--ready", default="", help="with --gate: the list the child pushes its name on once connected")
    a = p.parse_args(argv)
    spec = os.environ.pop(CHILD_STORE_ENV, None)
    if not spec:
        raise BadParameter(f"a consumer process reads the store's specification from ${CHILD_STORE_ENV}; it is not set")
    with connect(StoreSpec.loads(spec)) as backend:
        queue = Queue(backend, a.queue, prefix=a.prefix)
        blocking = blpop_can_time(backend, a.beat_ms)
        pushed = ProcessRecorder(backend.client, a.events, a.t0, backend.clock)
        quiet = frozenset(k for k in a.quiet.split(",") if k)  # routine kinds not worth a round trip each
        recorder = Filtered(pushed, keep_event=unusual(quiet)) if quiet else pushed
        consumer = Consumer(queue, a.name, lease_ms=a.lease_ms, beat_ms=a.beat_ms, work_ms=a.work_ms,
                            batch=a.batch, effect=a.effect, recorder=recorder, blocking_park=blocking,
                            drain_limit=a.drain_limit, design=a.design, max_runtime_ms=a.max_runtime_ms)
        stopped = []
        signal.signal(signal.SIGTERM, lambda *_: (stopped.append(True), consumer.stop()))
        if a.gate:
            backend.client.rpush(a.ready, a.name)
            while not stopped and not backend.client.blpop([a.gate], timeout=0.2):
                pass
            if stopped:
                return 0
        recorder.event(a.name, Kind.STARTED, pid=os.getpid())
        main = consumer.start()
        try:
            backend.clock.run(until=main)
        finally:
            pushed.flush()
    return 0


def child_entry(argv: list[str]) -> int:
    """A child's top level: whatever happens, one line on its stderr (a file the parent reads) and
    an exit code, never a traceback. A store that dies under it is exit 1."""
    from ..store.backend import redact
    from ..core.errors import EmqlabError

    try:
        return child_main(argv)
    except EmqlabError as exc:
        print(f"consumer: {redact(exc)}", file=sys.stderr)
        return exc.exit_code
    except SystemExit as exc:  # argparse: its usage line is already on stderr
        return exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:  # noqa: BLE001 - the store died, or anything else: one line
        print(f"consumer: {type(exc).__name__}: {redact(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "consumer":
        sys.exit(child_entry(sys.argv[2:]))
    print("usage: python -m emqlab.queue.procs consumer … (the store's specification in $EMQLAB_CHILD_STORE)", file=sys.stderr)
    sys.exit(2)
