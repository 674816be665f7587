"""A practice class for the lesson "Run it together", for a learner with no instructor at hand (and for CI).

`PracticeClass(seats, classmates)` does what an instructor does, for real: it runs
`emqlab class serve` (an embedded Valkey, the class queue, one ACL user per seat, a join file of
mode 0600 in a private temporary folder), joins `classmates` workers of their own (OS processes,
as a classmate's notebook would), and keeps the instructor's controls (`board`) for the lesson.
The learner joins with `lab.join(room.address(seat))`, exactly as in a real class. `close()`, or the
kernel's exit, ends the class: the serve process removes its users and keys and stops its server.

Nothing here writes a sentence about a run: `story(name)` quotes `classroom.board.lane_story`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from ..core.children import TRACKER, die_with_parent
from ..core.errors import BadParameter, EmqlabError
from ..core.kinds import Kind
from ..core.timeline import Verdict
from .learner import Joined
from .board import Board, lane_story, lane_words

SKEW_S = 0.5  # the learners' clocks are this machine's: a note is the order's if it is this recent
SERVE_TIMEOUT_S = 60.0  # a loaded 2-core machine starts the server and the users in well under this


@dataclass(frozen=True, kw_only=True)
class Fate(Verdict):
    """What happened to the jobs a learner's worker held when it crashed or froze, read off the lanes."""

    held: list  # the jobs it held
    reaped_by: dict  # {job: the classmate whose beat reaped it}
    finished: list  # the held jobs now done
    late_write_refused: bool  # the woken worker's own write was refused (fencing on)
    late_effect_landed: bool  # its effect landed (fencing off)


class Outcome:
    """What happened to a learner's job after a crash or a pause: its `verdict` (a `Fate`), the shape
    `widgets.Predict` reads."""

    def __init__(self, verdict: Fate):
        self.verdict = verdict

    def __repr__(self) -> str:
        return self.verdict.headline


def unfenced_answers(board: dict) -> dict:
    """The class lesson's question on a freeze with fencing off: {option: whether the run bears it out},
    read off the board's status after the run (`Board.status()`) and the run's `Fate`. Here and not in the
    lesson, so the question's cell shows the question and not what decides it."""
    return {
        "a lost job: nothing will ever run it": lambda v: board["lost"] > 0,
        "a job in two places at once": lambda v: bool(board["invariants"]["one_place"]),
        "nothing lost, every job in one place, and one effect applied twice":
            lambda v: (v.late_effect_landed and board["lost"] == 0 and not board["invariants"]["one_place"]
                       and board["duplicate_effects"] >= 1),
    }


class PracticeClass:
    """A class on this machine: `seats` seats, `classmates` of them worked by the lesson's own workers."""

    def __init__(self, seats: int = 4, classmates: int = 2, *, lease_s: float = 2.0, beat_s: float = 0.5,
                 work_s: float = 0.2):
        if isinstance(seats, bool) or not isinstance(seats, int) or not 2 <= seats <= 30:
            raise BadParameter(f"a practice class has from 2 to 30 seats, got {seats!r}")
        if isinstance(classmates, bool) or not isinstance(classmates, int) or not 1 <= classmates < seats:
            raise BadParameter(f"classmates is from 1 to seats - 1 (one seat is yours), got {classmates!r}")
        self.options = {"lease_s": lease_s, "beat_s": beat_s, "work_s": work_s}
        self.folder = tempfile.mkdtemp(prefix="emqlab-class-")  # mode 0700: the join file stays private
        self.join_file = os.path.join(self.folder, "join")
        self.board: Board | None = None
        self.classmates: list[Joined] = []
        self._serve: subprocess.Popen | None = None
        TRACKER.own(self, self.close)  # `class serve` is a SIGINT away from ending cleanly: no child_setup
        try:
            self._serve = TRACKER.spawn(
                [sys.executable, "-m", "emqlab.cli", "class", "serve", "--learners", str(seats),
                 "--join-file", self.join_file], owner=self, setup=die_with_parent,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            self.board = Board.connect(self._instructor_address())
            self.classmates = [Joined(self._line(seat), f"classmate-{seat}", **self.options)
                               for seat in range(2, 2 + classmates)]
            self._until_working([mate.name for mate in self.classmates])
        except BaseException:
            self.close()
            raise

    # -- addresses: read from the join file, never printed ----------------------------------------
    def _instructor_address(self) -> str:
        path, end = self.join_file + ".instructor", time.monotonic() + SERVE_TIMEOUT_S
        while not (os.path.exists(path) and os.path.getsize(path)):
            if self._serve.poll() is not None:
                raise EmqlabError(f"the practice class did not start: {self._serve.stderr.read().strip()}")
            if time.monotonic() > end:
                raise EmqlabError(f"the practice class did not start within {SERVE_TIMEOUT_S:g} s")
            time.sleep(0.05)
        with open(path) as f:
            return f.readline().strip()

    def _line(self, seat: int) -> str:
        with open(self.join_file) as f:
            lines = [line.strip() for line in f if line.strip()]
        if not 1 <= seat <= len(lines):
            raise BadParameter(f"seats are numbered 1 to {len(lines)}, got {seat!r}")
        return lines[seat - 1]

    def address(self, seat: int = 1) -> str:
        """Seat `seat`'s join address (a redis:// URL with its password: pass it on, do not print it)."""
        return self._line(seat)

    # -- what happened ------------------------------------------------------------------------------
    def story(self, name: str) -> str:
        """What happened to `name`'s jobs (the class scenario's own sentence)."""
        return lane_story(name, self.board.lanes())

    def crash(self, name: str, timeout: float = 60.0) -> "Outcome":
        """What the instructor's crash button does (the worker dies holding a job), then wait until its
        job was reaped by a classmate and finished."""
        since = self._working_now(name, timeout)
        self.board.crash(name)
        return Outcome(self.wait_until_reaped(name, timeout, since=since, struck_by=Kind.CRASH))

    def pause(self, name: str, seconds: float, timeout: float = 60.0) -> "Outcome":
        """What the instructor's pause button does (the worker's whole world stops for `seconds`), then
        wait until its job was reaped and finished by a classmate, and the woken worker's late write was
        answered (refused with fencing on)."""
        since = self._working_now(name, timeout)
        self.board.pause(name, seconds)
        verdict = self.wait_until_reaped(name, timeout + seconds, late_write=True, since=since,
                                         struck_by=Kind.PAUSE_START)
        return Outcome(verdict)

    def _until_working(self, names: list[str], timeout: float = SERVE_TIMEOUT_S) -> None:
        """Wait until each named worker has joined and beats (a slow machine starts processes slowly)."""
        end = time.monotonic() + timeout
        while not {n for n in names} <= {s["name"] for s in self.board.learners() if s["alive"]}:
            if time.monotonic() > end:
                raise EmqlabError(f"the classmates did not start within {timeout:g} s")
            time.sleep(0.1)

    def _working_now(self, name: str, timeout: float) -> float:
        """Wait until `name`'s worker records something new (a worker that has just joined takes orders
        only once it runs: an order sent before it read its seat's orders is not its own); now."""
        start, end = time.time(), time.monotonic() + timeout
        while True:
            lanes = self.board.lanes(last=5)
            mine = next((lane for lane in lanes if name in (lane["name"], lane["slot"])), None)
            if mine and any(e["t"] >= start for e in mine["events"]):
                return time.time()
            if time.monotonic() > end:
                raise EmqlabError(f"{name} is not working in this class (join it first: lab.join)")
            time.sleep(0.05)

    def wait_until_reaped(self, name: str, timeout: float = 60.0, late_write: bool = False,
                          since: float = 0.0, struck_by: str | None = None) -> Fate:
        """Wait until every job `name` held when it crashed or was paused (at unix time `since` or later)
        was reaped by someone else and then finished (and, with `late_write`, until the woken worker's
        own write of it was answered); returns its `Fate`. `struck_by`: only a `crash` or only a
        `pause_start` note counts (a worker that rejoined under the same name has its earlier crash on
        its lane, and a note a little older than `since` may still be this order's)."""
        end = time.monotonic() + timeout
        while True:
            lanes = self.board.lanes()
            mine = next((lane for lane in lanes if name in (lane["name"], lane["slot"])), None)
            kinds = (struck_by,) if struck_by else (Kind.CRASH, Kind.PAUSE_START)
            struck = [e for e in (mine or {}).get("notes", []) if e["kind"] in kinds and e["t"] >= since - SKEW_S]
            held = [job for e in struck for job in e.get("holding", [])]
            reaped_by = {job: lane["name"] or lane["slot"] for lane in lanes for r in lane.get("notes", [])
                         if r["kind"] == Kind.REAP for job in r["jobs"] if job in held}
            done = set(self.board.client.smembers(self.board.queue.done)) if held else set()
            finished = [job for job in held if job in done]
            # the woken worker's own settling of the job: fenced, its effect write is refused (no effect
            # event, then complete_refused); unfenced, the effect lands (an effect event) and only the
            # completion is refused
            late = [e for e in (mine or {}).get("events", []) + (mine or {}).get("notes", [])
                    if e.get("job") in held and e["kind"] in (Kind.EFFECT, Kind.COMPLETE, Kind.COMPLETE_REFUSED)
                    and e["t"] > max(n["t"] for n in struck)]
            settled = any(e["kind"] != Kind.EFFECT for e in late)
            # done: every job held is finished — reaped and run again by a classmate, or (a crash racing
            # its own completion) finished just before; a crash that held nothing has nothing to wait for
            if struck and len(finished) == len(held) and (settled or not late_write or not reaped_by):
                landed = any(e["kind"] == Kind.EFFECT for e in late)
                headline, facts = lane_words(name, lanes)
                return Fate(held=held, reaped_by=reaped_by, finished=finished,
                            late_write_refused=settled and not landed, late_effect_landed=landed,
                            headline=headline, facts=facts)
            if time.monotonic() > end:
                raise EmqlabError(f"{name}'s jobs were not all reaped and finished within {timeout:g} s")
            time.sleep(0.1)

    # -- the end ----------------------------------------------------------------------------------------
    def close(self) -> None:
        """End the class: stop the classmates, then `class serve` (which removes its users, its keys and
        its server), then the folder. Safe to call twice."""
        for mate in self.classmates:
            mate.stop()
        self.classmates = []
        if self.board is not None:
            self.board.close()
            self.board = None
        serve = self._serve
        if serve is not None and serve.poll() is None:
            serve.send_signal(signal.SIGINT)
            try:
                serve.wait(timeout=30)
            except subprocess.TimeoutExpired:
                serve.kill()
                serve.wait()
        if serve is not None and serve.stderr and not serve.stderr.closed:
            serve.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        TRACKER.release(self)

    def __enter__(self) -> "PracticeClass":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
