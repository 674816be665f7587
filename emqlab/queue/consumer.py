"""The consumer: EchoMQ's one supervised loop, one beat at a time, as a SimPy process.

Each beat: check for stop, reap (expired leases back to pending, on the server clock), promote
(due scheduled jobs), drain (claim and run ready jobs until none is left), park (wait on the wake
key until a wake or the beat elapses). Renewal is off by default, as EchoMQ ships it; `design`
picks how held jobs are kept (`emqlab.lease.designs`: none, per-job, sweep, session, each with its
keeper); `renew` alone means one batched extend of every held lease per tick (sweep).
`max_runtime_ms` sets a hard deadline at each claim that no renewal pushes out.

The beat is recorded step by step: one `step` event per step, in the order the steps ran, each
with the beat's number and what it moved (`moved`: ids reaped, jobs promoted, jobs claimed). The
reap step carries the server `TIME` the reap script used (`now`, server ms, as the script replied;
`time_s`, the same reading in model seconds); a claim carries the lease score the server stamped
(`score` and `score_s`), an extend the new one. Drain and park are recorded when they end, with
the time they `started`; a crash ends the step in hand (`ended="crash"`).

Faults: `crash()` stops every process of the consumer where it stands (nothing is settled, the
lease is left to the reaper); `pause(ms)` stops the world; `stop()` is graceful: the jobs in hand
are settled, then the loop exits. On a virtual clock the park is a clock timeout plus a
non-blocking LPOP (fakeredis's BLPOP would wait in real time); BLPOP with a scaled timeout is used
only on a real clock, and only when nothing else shares the consumer's SimPy environment.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import simpy

from ..core.errors import BadParameter, StaleToken
from ..store.clock import to_ms, to_s
from ..faults.pauses import World
from ..lease.designs import queue_design
from ..lease.keepers import Renewed
from .jobs import MAX_SLICE, NAME_RE, REAP_LIMIT, Claimed, Queue
from ..core.kinds import Kind
from ..core.timeline import ClockRecorder, Recorder, Timeline

CRASH, STOP = "crash", "stop"
LOST = "lease-lost"  # the interrupt a job's work gets when its holder learns the job is gone
# real s: a blocking park's longest single BLPOP, below every read timeout emqlab's clients use (5 s and up;
# redis-py 8 reads for as long as it connects, 5 s, when no read timeout is given)
PARK_SLICE_S = 1.0
MAX_REAP_CALLS = 1000  # design session: reap calls a beat may make (bounded slices) to empty a dead worker's backlog
EFFECTS = ("none", "fenced", "unfenced")


# one each per job, and the steps of each beat (`step`): what a run of many jobs leaves out
ROUTINE = frozenset({Kind.CLAIM, Kind.WORK_START, Kind.WORK_DONE, Kind.COMPLETE, Kind.STARTED, Kind.STEP})
STEPS = ("reap", "promote", "drain", "park")  # a beat's steps, in the order they run


def unusual(routine: frozenset[str] = ROUTINE):
    """A `Filtered` keep_event predicate for runs of many jobs: drop the routine steps of each job
    and effects applied once; keep faults, refusals, reaps and effects that landed twice."""

    def keep(kind: str, data: dict[str, Any]) -> bool:
        return kind not in routine and not (kind == Kind.EFFECT and data.get("applied", 1) <= 1)

    return keep


def late_completion(recorder: Recorder, queue: Queue, actor: str, job_id: str, attempts: int) -> bool:
    """A worker presumed dead sends its renewal and its completion with its old attempts: a stale
    completion. The queue refuses it if the job was re-claimed since; True if it was accepted."""
    ext = queue.extend([(job_id, attempts)], 1000.0)
    recorder.event(actor, Kind.LATE_EXTEND, job=job_id, attempts=attempts, held=job_id not in ext.lost,
                   where=queue.where(job_id))
    try:
        queue.complete(job_id, attempts)
    except StaleToken:
        recorder.event(actor, Kind.COMPLETE_REFUSED, job=job_id, attempts=attempts, late=True)
        return False
    recorder.event(actor, Kind.COMPLETE, job=job_id, attempts=attempts, late=True)
    return True


class Consumer:
    """One consumer on one queue. Durations are model milliseconds.

    work_ms: how long a job runs (a number, or a function of the Claimed job).
    effect: none (just complete), fenced (the effect and the completion in one fenced write), or
    unfenced (write the effect without the attempts check, then complete).
    recorder: where it writes what it did (default: a timeline of its own on the queue's clock).
    """

    def __init__(self, queue: Queue, name: str, *, lease_ms: float, beat_ms: float,
                 work_ms: float | Callable[[Claimed], float], batch: int = 1, reap_limit: int = REAP_LIMIT,
                 promote_limit: int = REAP_LIMIT, renew: float | None = None, effect: str = "none",
                 recorder: Recorder | None = None, blocking_park: bool = False, drain_limit: int = 100,
                 design: str | None = None, max_runtime_ms: float = 0, reap_calls: int | None = None):
        chosen, renew = queue_design(design, renew)
        if effect not in EFFECTS:
            raise BadParameter(f"effect must be one of {', '.join(EFFECTS)}, got {effect!r}")
        for what, value in (("lease", lease_ms), ("beat", beat_ms), ("renewal fraction", renew)):
            if value is not None and not (isinstance(value, (int, float)) and value > 0):
                raise BadParameter(f"a consumer's {what} must be a number > 0, got {value!r}")
        for what, value in (("batch", batch), ("drain limit", drain_limit)):
            if not (isinstance(value, int) and value >= 1):
                raise BadParameter(f"a consumer's {what} must be a whole number >= 1, got {value!r}")
        if isinstance(reap_limit, bool) or not (isinstance(reap_limit, int) and 1 <= reap_limit <= MAX_SLICE):
            raise BadParameter(f"a consumer's reap limit must be a whole number from 1 to {MAX_SLICE}, got {reap_limit!r}")
        self.queue, self.name = queue, name
        self.clock = queue.clock
        self.lease_ms, self.beat_ms, self.batch = lease_ms, beat_ms, batch
        self.reap_limit, self.promote_limit = reap_limit, promote_limit
        # a bounded drain brings the beat (and its reap) round even while the queue stays busy
        self.drain_limit = drain_limit
        self.renew_every = None if renew is None else renew * lease_ms
        if not (isinstance(max_runtime_ms, (int, float)) and max_runtime_ms >= 0) or isinstance(max_runtime_ms, bool):
            raise BadParameter(f"a consumer's max runtime must be a number of model ms >= 0, got {max_runtime_ms!r}")
        if reap_calls is not None and (isinstance(reap_calls, bool) or not isinstance(reap_calls, int) or
                                       not 1 <= reap_calls <= MAX_REAP_CALLS):
            raise BadParameter(f"a consumer's reap calls must be a whole number from 1 to {MAX_REAP_CALLS}, "
                               f"got {reap_calls!r}")
        self.design, self.max_runtime_ms = chosen.name, max_runtime_ms
        # one slice a beat, as EchoMQ reaps; a worker's lapsed session frees all its jobs at once: slices until none is left
        self.reap_calls = reap_calls or (MAX_REAP_CALLS if chosen.per_worker else 1)
        # how this consumer holds what it claims (its name is written to each job when it is a valid one)
        self.keeper = chosen.keeper(queue, name if NAME_RE.fullmatch(name) else "", lease_ms)
        self.work_ms, self.effect = work_ms, effect
        self.rec = recorder if recorder is not None else ClockRecorder(Timeline(name, {}), self.clock)
        self.blocking_park = blocking_park and self.clock.real
        self.world = World(self.clock)
        self.held: dict[str, Claimed] = {}
        self.bands: dict[str, Any] = {}  # job id -> its open lease interval
        self.workers: dict[str, simpy.Process] = {}
        self.spans: dict[str, Any] = {}  # job id -> its open work interval
        # held from a job's work ending to its settling (effect and completion): another thread that holds it
        # (a learner obeying a crash or a pause) sees `spans` stand still while it acts on what they hold
        self.settling = threading.Lock()
        self.stopping = self.crashed = False
        self.beats = self.completed = self.refused = 0
        self.main: simpy.Process | None = None
        self._parked = False
        self._step_open: tuple[int, str, float] | None = None  # (beat, step, started) of a drain or park
        self._taken = 0  # jobs claimed by the drain in hand

    # -- control ---------------------------------------------------------------------------
    def start(self) -> simpy.Process:
        if self.keeper.per_worker and not self._open_session():
            raise BadParameter(f"consumer {self.name!r} cannot open its session: a session of that name is still "
                               "open on the queue; give the consumer another name")
        self.main = self.world.join(self.clock.process(self._guard(self.loop())))
        if self.renew_every is not None:
            self.world.join(self.clock.process(self._guard(self.renewer())))
        return self.main

    def stop(self) -> None:
        """Graceful: settle what is in hand, then leave the loop."""
        self.stopping = True
        if self.main is not None and self.main.is_alive and self._parked:
            self.main.interrupt(STOP)

    def crash(self) -> None:
        """Die where we stand: nothing is settled, every held lease is left to the reaper."""
        self.crashed = self.stopping = True
        t = self.rec.t
        self.rec.event(self.name, Kind.CRASH, holding=sorted(self.held))
        if self._step_open is not None:  # the drain or park in hand ends here
            beat, step, started = self._step_open
            self._step(beat, step, started=started, ended="crash",
                       **({"moved": self._taken} if step == "drain" else {"woken": False}))
        for proc in self.world.members:
            if proc.is_alive and proc is not self.clock.env.active_process:
                proc.interrupt(CRASH)
        for job_id in list(self.held):
            self._end_band(job_id, "lapsed")
            span = self.spans.pop(job_id, None)
            if span is not None and span.end is None:
                span.end, span.data["ended"] = t, "crashed"

    def halt(self) -> None:
        """Teardown, not a fault: end whatever is still running, record nothing."""
        self.stopping = True
        for proc in self.world.members:
            if proc.is_alive and proc is not self.clock.env.active_process:
                proc.interrupt(CRASH)

    def pause(self, ms: float):
        """A process: stop this consumer's world for `ms`."""
        rec = self.rec
        rec.event(self.name, Kind.PAUSE_START, seconds=to_s(ms))
        band = rec.open(self.name, "pause")
        yield from self.world.stop_the_world(ms)
        band.end = rec.t
        rec.event(self.name, Kind.PAUSE_END)

    def _guard(self, gen):
        try:
            yield from gen
        except simpy.Interrupt as interrupt:
            if interrupt.cause not in (CRASH, STOP):
                raise

    # -- the beat ------------------------------------------------------------------------------
    def _step(self, beat: int, step: str, **data) -> None:
        self.rec.event(self.name, Kind.STEP, beat=beat, step=step, **data)

    def _server_s(self, server_ms: int) -> float:
        """A server clock reading (ms) in model seconds (absolute: compare two, never read one alone)."""
        return round(to_s(self.clock.from_server_ms(server_ms)), 3)

    def loop(self):
        queue, run = self.queue, self.rec
        while not self.stopping:  # check for stop
            self.beats += 1
            beat = self.beats
            # the reap script replies the server TIME it compared the lease scores with, then the ids
            now, reaped, ended, calls = self._reap()
            self._step(beat, "reap", moved=len(reaped), now=now, time_s=self._server_s(now), jobs=reaped,
                       **({"calls": calls} if calls > 1 else {}))
            if reaped or ended:
                run.event(self.name, Kind.REAP, jobs=reaped, now=now, time_s=self._server_s(now),
                          **({"sessions": ended} if ended else {}))
            promoted = queue.promote(self.promote_limit)
            self._step(beat, "promote", moved=promoted)
            if promoted:
                run.event(self.name, Kind.PROMOTE, count=promoted)
            started, self._taken = run.t, 0
            self._step_open = (beat, "drain", started)
            busy = yield from self.drain()
            self._step_open = None
            self._step(beat, "drain", moved=self._taken, started=started)
            if self.stopping:
                break
            if not busy:
                started = run.t
                self._step_open = (beat, "park", started)
                woken = yield from self.park()
                self._step_open = None
                self._step(beat, "park", started=started, woken=bool(woken))
        if not self.crashed:
            if self.keeper.close():
                run.event(self.name, Kind.SESSION_CLOSE)
            run.event(self.name, Kind.STOPPED)

    def _reap(self) -> tuple[int, list[str], list[str], int]:
        """Up to `reap_calls` bounded reap calls, until one returns a short slice: (the first call's
        server TIME, the ids returned, the sessions ended, the calls made)."""
        ids: list[str] = []
        ended: list[str] = []
        first = None
        for calls in range(1, self.reap_calls + 1):
            got = self.queue.reap_slice(self.reap_limit)
            first = got.now if first is None else first
            ids += got.ids
            ended += got.ended
            if len(got.ids) < self.reap_limit:
                break
        return first, ids, ended, calls

    def drain(self):
        """Claim and run ready jobs until none is left, a stop is asked for, or `drain_limit` jobs
        ran this beat (then True: more may be waiting, so the next beat starts at once)."""
        taken = 0
        while not self.stopping:
            if taken >= self.drain_limit:
                return True
            if not self.keeper.ready and not self._open_session():
                return False  # the session was lost and its name is not free yet: claim nothing this beat
            try:
                jobs = self.queue.claim(self.lease_ms, min(self.batch, self.drain_limit - taken),
                                        max_runtime_ms=self.max_runtime_ms, **self.keeper.claim_options())
            except StaleToken:  # the session lapsed and the reaper ended it
                self.keeper.forget()
                return False
            if not jobs:
                return False
            taken += len(jobs)
            self._taken = taken
            procs = []
            for job in jobs:
                self._claimed(job)
                proc = self.world.join(self.clock.process(self._guard(self.run_job(job))))
                self.workers[job.id] = proc
                procs.append(proc)
            done = self.clock.env.all_of(procs)
            while not done.triggered:
                try:
                    yield done
                except simpy.Interrupt as interrupt:  # a pause reaches us here: keep waiting
                    if interrupt.cause == CRASH:
                        raise

    def park(self):
        """Wait for a wake or the end of the beat; True if a wake token was taken."""
        queue = self.queue
        if self.blocking_park:
            started = time.monotonic()
            end = started + max(0.001, self.clock.real_s(to_s(self.beat_ms)))
            woken = None
            # in slices of PARK_SLICE_S: a beat longer in real time than the client's read timeout (a slow
            # scale) would otherwise have the client give up on a BLPOP the server is still holding
            while woken is None and (left := end - time.monotonic()) > 0:
                woken = queue.backend.client.blpop([queue.wake_key], timeout=max(0.001, min(left, PARK_SLICE_S)))
            # The wait happened outside SimPy; catch its time up. The clock is lax, so this
            # already-due timeout fires at once and model time stays on the wall clock.
            yield self.clock.timeout(to_ms(self.clock.model_s(time.monotonic() - started)))
            return woken is not None
        self._parked = True
        try:
            yield from self.world.sleep(self.beat_ms, work=False)
        except simpy.Interrupt as interrupt:
            if interrupt.cause != STOP:
                raise
            return False
        finally:
            self._parked = False
        return queue.backend.client.lpop(queue.wake_key) is not None

    # -- one job -----------------------------------------------------------------------------
    def _claimed(self, job: Claimed) -> None:
        rec = self.rec
        self.held[job.id] = job
        # the lease's deadline on the run's time base, from the server's own score and TIME
        deadline = round(rec.t + self._server_s(job.deadline) - self._server_s(job.server_now), 3)
        rec.event(self.name, Kind.CLAIM, job=job.id, attempts=job.attempts, deadline=deadline, now=job.server_now,
                  time_s=self._server_s(job.server_now), score=job.deadline, score_s=self._server_s(job.deadline))
        self.bands[job.id] = rec.open(self.name, "lease", job=job.id, attempts=job.attempts, deadline=deadline,
                                      ended=None)

    def _end_band(self, job_id: str, how: str) -> None:
        band = self.bands.pop(job_id, None)
        self.held.pop(job_id, None)
        if band is None:
            return
        # settled after its deadline: the lease had lapsed even if nobody reaped it in between
        if how == "lapsed" or self.rec.t > band.data["deadline"]:
            band.end, band.data["ended"] = band.data["deadline"], "lapsed"
        else:
            band.end, band.data["ended"] = min(self.rec.t, band.data["deadline"]), how

    def run_job(self, job: Claimed):
        run = self.rec
        span = self.spans[job.id] = run.open(self.name, "run", job=job.id, attempts=job.attempts)
        run.event(self.name, Kind.WORK_START, job=job.id, attempts=job.attempts)
        ms = self.work_ms(job) if callable(self.work_ms) else self.work_ms
        try:
            yield from self.world.sleep(ms, work=True)
        except simpy.Interrupt as interrupt:
            if interrupt.cause != LOST:
                raise
            span.end, span.data["ended"] = run.t, "lease lost"
            run.event(self.name, Kind.WORK_STOPPED, job=job.id, reason="the batched extend no longer holds it")
            self._end_band(job.id, "lapsed")
            return
        with self.settling:
            span.end = run.t
            self.spans.pop(job.id, None)
            run.event(self.name, Kind.WORK_DONE, job=job.id, attempts=job.attempts)
            self.settle(job)

    def settle(self, job: Claimed) -> bool:
        """Write the effect (if any) and complete; a refusal is recorded, not raised."""
        run, queue = self.rec, self.queue
        try:
            if self.effect == "fenced":
                applied = queue.record_effect(job.id, job.attempts, fenced=True)
                run.event(self.name, Kind.EFFECT, job=job.id, attempts=job.attempts, applied=applied)
            else:
                if self.effect == "unfenced":
                    applied = queue.record_effect(job.id, job.attempts, fenced=False)
                    run.event(self.name, Kind.EFFECT, job=job.id, attempts=job.attempts, applied=applied)
                queue.complete(job.id, job.attempts)
        except StaleToken:
            self.refused += 1
            run.event(self.name, Kind.COMPLETE_REFUSED, job=job.id, attempts=job.attempts)
            band = self.bands.get(job.id)
            self._end_band(job.id, "lapsed" if band is None or run.t >= band.data["deadline"] else "reaped")
            return False
        self.completed += 1
        run.event(self.name, Kind.COMPLETE, job=job.id, attempts=job.attempts)
        self._end_band(job.id, "completed")
        return True

    # -- renewal: the design's keeper, one tick every `renew_every` ------------------------------------
    def renewer(self):
        while not self.crashed:
            yield from self.world.sleep(self.renew_every, work=False)
            if self.stopping and not self.held:
                return
            renewed = self.keeper.renew(list(self.held.values()))
            if renewed is not None:
                self._renewed(renewed)

    def _renewed(self, r: Renewed) -> None:
        """Record a renewal tick as the server answered it, push out the bands it renewed, and stop
        the work of every job it found lost."""
        run = self.rec
        for job_id, score in r.deadlines.items():
            if job_id in self.bands:
                self.bands[job_id].data["deadline"] = round(run.t + to_s(self.clock.from_server_ms(score - r.server_now)), 3)
        deadline = None if r.lease_ms is None else round(run.t + to_s(r.lease_ms), 3)
        run.event(self.name, Kind.RENEW, jobs=list(r.jobs), deadline=deadline, lost=list(r.lost), design=self.design,
                  calls=r.calls, **({} if r.session is None else {"session": r.session}), now=r.server_now,
                  time_s=self._server_s(r.server_now), score=r.score,
                  score_s=None if r.score is None else self._server_s(r.score))
        for job_id in r.lost:
            proc = self.workers.get(job_id)
            if proc is not None and proc.is_alive:
                proc.interrupt(LOST)

    def _open_session(self) -> bool:
        """Open the worker's own lease (per-worker designs) and record it; False if its name is still
        taken (a lapsed session of the same name the reaper has not ended yet)."""
        s = self.keeper.open()
        if s is None:
            return False
        self.rec.event(self.name, Kind.SESSION_OPEN, now=s.server_now, time_s=self._server_s(s.server_now),
                       score=s.deadline, score_s=self._server_s(s.deadline))
        return True
