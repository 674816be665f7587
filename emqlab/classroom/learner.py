"""A learner's worker in a class: the lesson-05 consumer (beat, reap, claim, work, complete) on the
class queue, under the learner's name, with its lane written where the instructor can draw it.

The worker is one OS process (`emqlab class join`; `lab.join` starts one for a notebook). Beside the
consumer, a small control thread polls, every `POLL_S`: the instructor's order for this seat
(`P ctl:<slot>`, read-only to the learner), the fence (`P fence`), and renews the seat's presence
(`P learner:<slot>:alive`, PX `ALIVE_MS`). Orders:
- crash: once the worker holds a job, the process SIGKILLs itself: nothing is settled, the job is
  left to the reaper of a classmate;
- pause SECONDS: once it holds a job, the process SIGSTOPs itself (every thread stops: a true
  stop-the-world) and a `sleep; kill -CONT` started just before wakes it; its late write is then
  refused by the fence (fencing on: the job is no longer active under its attempts) or lands a second time
  (fencing off).
When the class ends, `class serve` deletes the learner's user; the server drops its connections and
the worker leaves (exit 0). Ctrl-C or SIGTERM: the job in hand is settled, then it leaves.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from typing import Any

import redis

from ..core.environment import CLASS_URL_ENV
from .server import QUEUE, open_class
from ..queue.consumer import Consumer
from ..core.children import TRACKER
from ..core.errors import BadParameter
from ..core.kinds import Command, Kind
from ..core.ranges import within
from ..queue.jobs import Queue, check_name
from ..core.timeline import Interval, Recorder, Timeline
from ..store.clock import time_reply_ms, to_ms
from .board import LANE_KEEP

POLL_S = 0.2
ALIVE_MS = 3000
HOLD_WAIT_S = 5.0  # an order waits at most this long for the worker to hold a job
ROUTINE = frozenset({Kind.CLAIM, Kind.COMPLETE, Kind.EFFECT})  # one of each per job: the lane's newest LANE_KEEP only
NOTABLE = frozenset({Kind.STARTED, Kind.COMPLETE_REFUSED, Kind.REAP, Kind.WORK_STOPPED, Kind.CRASH, Kind.PAUSE_START,
                     Kind.PAUSE_END, Kind.STOPPED})  # kept apart as well (`notes`), so a busy lane never pushes them out
LANE_KINDS = ROUTINE | NOTABLE


class LaneRecorder(Recorder):
    """The consumer's recorder: `t` is unix time (every lane shares it); the lane's kinds are pushed,
    each at once, to the learner's own capped list."""

    def __init__(self, client, key: str, notes: str, name: str):
        super().__init__(Timeline(name, {}))
        self.client, self.key, self.notes = client, key, notes
        self.counts: dict[str, int] = {}

    @property
    def t(self) -> float:
        return time.time()

    def event(self, actor: str, kind: str, **data: Any):
        if kind not in LANE_KINDS or (kind == Kind.REAP and not data.get("jobs")):
            return None
        self.counts[kind] = self.counts.get(kind, 0) + 1
        pipe = self.client.pipeline(transaction=False)
        line = self.line(actor, kind, **data)
        for key in self.keys if kind in NOTABLE else (self.key,):
            pipe.rpush(key, line)
            pipe.ltrim(key, -LANE_KEEP, -1)
        pipe.execute()
        return None

    @property
    def keys(self) -> tuple[str, str]:
        return self.key, self.notes

    def line(self, actor: str, kind: str, **data: Any) -> str:
        t = data.pop("at", None) or self.t  # an event written after the fact carries when it happened
        return json.dumps({"t": round(t, 3), "actor": actor, "kind": kind, **data})

    def open(self, actor: str, kind: str, **data: Any) -> Interval:  # bands are drawn from events: keep none
        return Interval(actor, kind, self.t, None, data)


class Learner:
    """One learner's worker on a class. `run()` blocks until it leaves; `stop()` asks it to."""

    def __init__(self, url: str, name: str | None = None, *, lease_s: float = 2.0, beat_s: float = 0.5,
                 work_s: float = 0.2):
        lease_s, beat_s, work_s = within("lease", lease_s), within("beat", beat_s), within("work", work_s)  # real seconds
        self.store = open_class(url)
        if self.store.slot == "instructor":
            self.store.close()
            raise BadParameter("that is the instructor's address; a learner joins with a line of the join file")
        keys, self.slot = self.store.keys, self.store.slot
        self.name = check_name(name or self.slot)
        self.keys, self.client = keys, self.store.client
        self.control = redis.Redis.from_url(url, decode_responses=True, socket_connect_timeout=5, socket_timeout=5)
        self.queue = Queue(self.store, QUEUE, prefix=keys.prefix)
        self.recorder = LaneRecorder(self.client, keys.own(self.slot, "lane"), keys.own(self.slot, "notes"),
                                     self.name)
        self.work_s = work_s
        self.consumer = Consumer(self.queue, self.name, lease_ms=to_ms(lease_s), beat_ms=to_ms(beat_s),
                                 work_ms=to_ms(work_s), effect="fenced", recorder=self.recorder,
                                 blocking_park=True, drain_limit=max(1, int(beat_s / work_s)))
        # a drain of about one beat of work brings the beat, and its reap, round every `beat_s` or so
        self.ended = False  # the class ended under us (our user is gone)
        self._done = threading.Event()
        self._seq = int(self.control.hget(keys.ctl(self.slot), "seq") or 0)  # orders before we joined: not ours

    # -- the control thread ---------------------------------------------------------------------
    def _poll(self) -> None:
        k, slot = self.keys, self.slot
        pipe = self.control.pipeline(transaction=False)
        pipe.hgetall(k.ctl(slot))
        pipe.get(k.key("fence"))
        pipe.set(k.own(slot, "alive"), self.name, px=ALIVE_MS)
        order, fence, _ = pipe.execute()
        self.consumer.effect = "unfenced" if fence == "0" else "fenced"
        seq = int(order.get("seq", 0) or 0)
        if seq > self._seq:
            self._seq = seq
            self.control.set(k.own(slot, "taken"), seq)  # the instructor's board waits for this: the order landed
            self._obey(order.get("cmd"), float(order.get("seconds") or 0))

    def _working(self, fresh: bool = False) -> list[str]:
        """The jobs in the middle of their work (claimed, not yet being settled); fresh: only those with at
        least half their work still ahead."""
        now = time.time()
        return sorted(j for j, span in self.consumer.spans.items() if not fresh or now - span.start < self.work_s / 2)

    def _wait_holding(self, fresh: bool = False) -> list[str]:
        waited = time.monotonic()
        while not self._working(fresh) and time.monotonic() - waited < HOLD_WAIT_S and not self._done.is_set():
            time.sleep(0.005)
        return self._working()

    def _holding_still(self, fresh: bool = False) -> list[str]:
        """Wait until the worker holds a job, then take the consumer's `settling` lock, so that no job in hand
        is settled while we act on it (the caller releases it, or dies holding it); what we hold."""
        end = time.monotonic() + HOLD_WAIT_S
        while True:
            self._wait_holding(fresh)
            self.consumer.settling.acquire()
            holding = self._working()
            if holding or time.monotonic() > end:
                return holding
            self.consumer.settling.release()  # it was settled while we waited for the lock: the next one

    def _obey(self, cmd: str | None, seconds: float) -> None:
        if cmd == Command.CRASH:
            # the lock is held to the kill: on a busy machine the worker's thread would otherwise settle the
            # job in hand between our reading it and the kill. The event is sent, not awaited (a reply would
            # leave time for the job to finish), and the kernel delivers the kill
            holding = self._holding_still()
            conn = self.control.connection_pool.get_connection()
            line = self.recorder.line(self.name, Kind.CRASH, holding=holding, order=True)
            conn.send_packed_command(conn.pack_commands([("RPUSH", key, line) for key in self.recorder.keys]))
            os.kill(os.getpid(), signal.SIGKILL)
        elif cmd == Command.PAUSE and seconds > 0:
            # the waker is ready before we stop: it starts its `sleep` when told, then sends SIGCONT; it
            # outlives our stop and ends by itself
            # (no code between fork and exec: this process has threads, and the waker must outlive our stop)
            waker = TRACKER.spawn(["sh", "-c", 'read go; sleep "$1"; kill -CONT "$2"', "sh", f"{seconds:g}",
                                   str(os.getpid())], setup=None, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
            # a job just begun: a pause that came as the job ended would freeze a worker holding nothing
            # (a busy machine can take that long between seeing the job and the stop)
            holding = self._holding_still(fresh=True)
            waker.stdin.write(b"go\n")
            waker.stdin.close()
            # held under the settling lock to the stop: the job we say we hold is still in hand when every
            # thread stops; once woken, the worker settles it late
            stopped = time.time()
            try:
                os.kill(os.getpid(), signal.SIGSTOP)  # every thread stops here, until the waker's SIGCONT
            finally:
                self.consumer.settling.release()
            self.recorder.event(self.name, Kind.PAUSE_START, seconds=seconds, holding=holding, order=True, at=stopped)
            self.recorder.event(self.name, Kind.PAUSE_END, seconds=seconds, started=stopped)
            waker.wait()
            TRACKER.release(waker)

    def _control_loop(self) -> None:
        failures = 0
        while not self._done.wait(POLL_S):
            try:
                self._poll()
                failures = 0
            except redis.AuthenticationError:
                self._class_ended()
                return
            except redis.RedisError:
                failures += 1
                if failures * POLL_S > 3:
                    self._class_ended()
                    return

    def _class_ended(self) -> None:
        self.ended = True
        self.consumer.stop()

    # -- the run -----------------------------------------------------------------------------------
    def stop(self) -> None:
        """Leave gracefully: the job in hand is settled first."""
        self.consumer.stop()

    def run(self) -> dict[str, Any]:
        """Work until stopped or the class ends; what this worker did."""
        self.client.set(self.keys.own(self.slot, "name"), self.name)
        self._poll()
        thread = threading.Thread(target=self._control_loop, name=f"class-control {self.slot}", daemon=True)
        thread.start()
        self.recorder.event(self.name, Kind.STARTED, pid=os.getpid(), slot=self.slot)
        try:
            self.consumer.clock.run(until=self.consumer.start())
        except (redis.AuthenticationError, redis.ConnectionError):
            self.ended = True
        finally:
            self._done.set()
            thread.join(timeout=5)
            self._leave()
        return self.tally()

    def _leave(self) -> None:
        try:
            self.client.delete(self.keys.own(self.slot, "alive"))
        except redis.RedisError:
            pass
        self.control.close()
        self.store.close()

    def tally(self) -> dict[str, Any]:
        c = self.consumer
        return {"slot": self.slot, "name": self.name, "completed": c.completed, "refused": c.refused,
                "claims": self.recorder.counts.get(Kind.CLAIM, 0), "class_ended": self.ended}


class Joined:
    """A worker started for a notebook (`lab.join`): its own OS process (the kernel stays free to draw,
    and a SIGSTOP pause stops the worker, not the kernel). It dies with the kernel (parent-death
    signal); `stop()` leaves gracefully (the job in hand is settled first)."""

    def __init__(self, address: str, name: str | None = None, *, lease_s: float = 2.0, beat_s: float = 0.5,
                 work_s: float = 0.2):
        import sys

        lease_s, beat_s, work_s = within("lease", lease_s), within("beat", beat_s), within("work", work_s)  # real seconds

        self.store = open_class(address)  # checks the address and gives us a view of our own lane
        if self.store.slot == "instructor":
            self.store.close()
            raise BadParameter("that is the instructor's address; a learner joins with a line of the join file")
        self.name = check_name(name or self.store.slot)
        cmd = [sys.executable, "-m", "emqlab.cli", "class", "join", "--name", self.name, "--json",
               "--lease", f"{lease_s:g}", "--beat", f"{beat_s:g}", "--work", f"{work_s:g}"]
        env = {**os.environ, CLASS_URL_ENV: address}  # never on the command line
        self.result: dict[str, Any] | None = None
        TRACKER.own(self, self.stop)
        try:
            self.proc = TRACKER.spawn(cmd, owner=self, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
        except BaseException:
            TRACKER.release(self)
            self.store.close()
            raise

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def lane(self, last: int = LANE_KEEP) -> dict[str, Any]:
        """This learner's lane as the instructor sees it: `events` (newest) and `notes` (notable)."""
        k, slot = self.store.keys, self.store.slot
        pipe = self.store.client.pipeline(transaction=False)
        pipe.lrange(k.own(slot, "lane"), -last, -1)
        pipe.lrange(k.own(slot, "notes"), -last, -1)
        events, notes = pipe.execute()
        return {"slot": slot, "name": self.name, "alive": self.alive, "events": [json.loads(x) for x in events],
                "notes": [json.loads(x) for x in notes]}

    def snapshot(self, last: int = LANE_KEEP) -> dict[str, Any]:
        """This learner's lane as a class snapshot (`totals` None: a learner cannot read the class's),
        with `fates`: each job it held when crashed or paused, as its hash says now."""
        lane = self.lane(last)
        client = self.store.client
        held = sorted({j for e in lane["notes"] if e["kind"] in (Kind.CRASH, Kind.PAUSE_START)
                       for j in e.get("holding", [])})
        queue = Queue(self.store, QUEUE, prefix=self.store.keys.prefix)
        pipe = client.pipeline(transaction=False)
        for job in held:
            pipe.hmget(queue.job_key(job), "state", "attempts", "worker")
        got = pipe.execute() if held else []
        fates = {job: {"state": s, "attempts": int(a or 0), "worker": w} for job, (s, a, w) in zip(held, got)}
        return {"lanes": [lane], "totals": None, "server_ms": time_reply_ms(client.time()), "local": time.time(),
                "fates": fates}

    def stop(self, timeout: float = 15.0) -> dict[str, Any] | None:
        """Leave: SIGCONT (a paused worker cannot act on SIGTERM), SIGTERM, wait; SIGKILL if it hangs."""
        if self.proc.poll() is None:
            for sig in (signal.SIGCONT, signal.SIGTERM):
                try:
                    self.proc.send_signal(sig)
                except ProcessLookupError:
                    break
            try:
                out, _ = self.proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, _ = self.proc.communicate()
        else:
            out = self.proc.stdout.read() if self.proc.stdout and not self.proc.stdout.closed else ""
        if self.result is None:
            lines = [x for x in (out or "").splitlines() if x.startswith("{")]
            self.result = json.loads(lines[-1]) if lines else {"exit": self.proc.returncode}
        try:
            self.store.close()
        except Exception:  # noqa: BLE001 - closing a dead connection
            pass
        TRACKER.release(self)
        return self.result

    def __repr__(self) -> str:
        return f"<Joined {self.name} ({self.store.slot}) {'working' if self.alive else 'left'}>"

    def __str__(self) -> str:
        """In words, as a lesson prints it: who joined, in which seat, and whether the worker still runs."""
        seat = int(self.store.slot[1:])  # l01: seat 1, the join file's first line
        return f"{self.name} joined in seat {seat}: {'working' if self.alive else 'left the class'}"
