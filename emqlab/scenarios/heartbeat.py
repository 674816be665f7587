"""The course's first figure: a job longer than its lease, with and without renewal.

A holder acquires the job's lock (SET NX PX, random token), works for `job` seconds and renews
on a cadence with the token-checked extend; a contender starts half a poll later and keeps trying
to take the lock every `poll` seconds. If the contender gets the lock before the job is marked
done, it runs the job too. Every lease band's end is what the server reported (the acquire's
PTTL, each extend's reply, counted from when the server acted: over a delayed link, `latency`
after the command left), and the verdict is read off the events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import simpy

from ..core.errors import BadParameter, LeaseLost, StaleToken, StoreError
from ..core.kinds import Kind
from ..core.ranges import within
from ..core.timeline import Interval, Record, Timeline, Verdict, json_name, minus
from ..core.words import FigureWords, ModeWords, panel_places, plural, seconds, times
from ..core.words import boundary_words as grid_words
from ..core.words import words_of_modes
from ..faults.clock_jump import ClockJump, expires_at, jumping, jumps
from ..faults.link import Link
from ..faults.pauses import Pause, World
from ..lease.cadence import Cadence, parse_cadence
from ..lease.leases import Leases, new_token
from ..store.clock import to_ms, to_s
from .run_harness import Run, positive, run_on

LOST = "lease-lost"
STOP = "stop"


@dataclass(frozen=True, kw_only=True)
class Params(Record):
    """A heartbeat run's parameters, checked (model seconds). `renew` names the cadence, `cadence` is
    its fraction of the lease (None: no renewal); `miss`: the holder's extends lost on the way (1 = the
    first); `latency`: the holder's link's one-way delay. JSON: `miss` and `latency` only when set."""

    lease: float
    job: float
    renew: str
    cadence: float | None
    pause: Pause | None = field(default=None, metadata=json_name("pause", load=Pause.from_dict))
    poll: float = 1.0
    miss: tuple[int, ...] = field(default=(), metadata=json_name("miss", omit_default=True, load=tuple))
    latency: float = field(default=0.0, metadata=json_name("latency", omit_default=True))
    clock_jump: ClockJump | None = field(default=None, metadata=json_name("clock_jump", omit_default=True,
                                                                         load=ClockJump.from_dict))

    @property
    def mode(self) -> str:
        """The run's name in a figure of several: its cadence."""
        return self.renew

    @property
    def every(self) -> float | None:
        """Model seconds between renewals (None: no renewal)."""
        return None if self.cadence is None else self.cadence * self.lease

    def cost(self) -> tuple[float, float]:
        """(model span in seconds, store steps) this run takes at most: the job and two leases each way,
        the pause, six legs of the link (acquire, done, release), a poll each poll, a renewal each cadence."""
        at, length = (self.pause.at, self.pause.seconds) if self.pause else (0.0, 0.0)
        span = at + length + 2 * (self.job + self.lease + self.poll) + 6 * self.latency
        span += abs(self.clock_jump.seconds) if self.clock_jump else 0.0  # a step back holds a lease that much longer
        renewals = span / self.every if self.every else 0
        return span, renewals + span / self.poll + 10


@dataclass(frozen=True, kw_only=True)
class HeartbeatVerdict(Verdict):
    """The facts of a heartbeat run, read off its events and intervals (model seconds; None: never)."""

    lapsed_at: float | None  # the holder's lease lapsed on the server
    renewals: int  # the holder's extends that came back with a TTL
    renew_lost_at: float | None  # when an extend's 0 reply reached the holder
    holder_stopped_at: float | None
    reclaimed_at: float | None  # when the contender took the lock and started the job
    runs: int  # workers that ran the job
    double_run: bool
    overlap: list  # [start, end] of each stretch both ran it at once
    both_ran_s: float
    finished_once: bool
    finished_by: list
    paused_at: float | None
    resumed_at: float | None
    lapsed_in_pause: bool
    contender_lapsed_at: float | None
    missed_at: list  # when each lost extend was sent
    tightest_margin_s: float | None  # the least lease an extend still found left
    blind_s: float | None = None  # how long the holder worked on after its lease had lapsed
    renewal_gaps: list | None = None  # seconds between the holder's acquire and each extend that reached the store
    released_at: float | None = None  # when the store let the holder's key go (its release landed)
    holder_done_at: float | None = None  # when the holder finished the job's work (None: it never did)
    clock_jumped_at: float | None = None  # when the server's clock stepped (None: it never did)
    clock_jump_s: float | None = None  # by how much (model seconds; negative: back)
    lost_at_jump: bool = False  # the holder's lease vanished at that step, before the deadline it was given
    lapse_moved_s: float | None = None  # how much later (< 0: sooner) the holder's lease lapsed than the deadline
    # the server had given it, moved by the step (None: no step moved it)


class Worker:
    """One worker holding (or hoping to hold) the job's lock."""

    def __init__(self, run: Run, name: str, lease_ms: float, job_ms: float, cadence: Cadence,
                 missed: frozenset[int] = frozenset(), latency_ms: float = 0.0):
        self.run, self.name = run, name
        self.clock = run.clock
        self.lease_ms, self.job_ms, self.cadence = lease_ms, job_ms, cadence
        self.world = World(run.clock)
        self.link = Link(run, self.world, latency_ms, name)  # every command of this worker goes over it
        self.leases = Leases(self.link.backend, prefix=run.prefix)  # nothing outside this run
        self.has_lock = run.clock.event()  # when this worker's acquire reply reached it
        self.lock_key, self.done_key = run.key("lock", "job"), run.key("done", "job")
        self.token = new_token()
        self.lease: Interval | None = None
        self._set_at = 0.0  # when the server last set the lease's deadline (model seconds)
        self.finished = False
        self.extending = False  # an extend is on the wire
        self.missed = missed  # which extends (1 = the first) are lost on the way to the store

    # -- the lease band, as the server reports it ------------------------------------------
    def _at(self, at_ms: float | None) -> float:  # when the server acted: `at_ms` from the link, else now
        return self.run.t if at_ms is None else self.run.ms_to_t(at_ms)

    def _took(self, grant, at_ms: float | None = None) -> None:
        t = self._at(at_ms)
        self.lease = self.run.timeline.open(t, self.name, "lease", deadline=round(t + to_s(grant.ttl_ms), 3),
                                            ended=None)
        self._set_at = t

    def _pushed(self, grant, at_ms: float | None = None) -> float:
        self._set_at = self._at(at_ms)
        deadline = round(self._set_at + to_s(grant.ttl_ms), 3)
        self.lease.data["deadline"] = deadline
        return deadline

    def _lease_ended(self, released: bool, at_ms: float | None = None) -> None:
        lease = self.lease
        # when the server's clock reached the deadline it set: the deadline itself, unless it stepped between
        deadline = expires_at(jumps(self.run.timeline), self._set_at, lease.data["deadline"])
        if deadline != lease.data["deadline"]:  # a step of the server's clock moved it: keep the one it gave
            lease.data["given"], lease.data["deadline"] = lease.data["deadline"], deadline
        if released and self._at(at_ms) <= deadline:
            lease.end, lease.data["ended"] = self._at(at_ms), "released"
        else:
            lease.end, lease.data["ended"] = deadline, "lapsed"
            self.run.timeline.add(deadline, self.name, Kind.LAPSE, note="the server expired the key")

    # -- holding and working -----------------------------------------------------------------
    def hold_and_work(self):
        """A process: the lock is held; work, renewing on the cadence; then mark done and release."""
        run, clock = self.run, self.clock
        work = run.timeline.open(run.t, self.name, "run")
        run.event(self.name, Kind.WORK_START)
        renewer = None
        every = self.cadence.every_ms(self.lease_ms)
        if every is not None:
            renewer = self.world.join(clock.process(self.renew(clock.env.active_process, every)))
        try:
            yield from self.world.sleep(self.job_ms, work=True)
        except simpy.Interrupt as interrupt:
            if interrupt.cause != LOST:
                raise
            work.end = run.t
            run.event(self.name, Kind.WORK_STOPPED, reason="renewal replied 0: the lock is gone")
            self._lease_ended(released=False)
            return
        work.end = run.t
        self.finished = True
        run.event(self.name, Kind.WORK_DONE)
        if renewer is not None and renewer.is_alive and not self.extending:  # an extend on the wire gets its reply
            renewer.interrupt(STOP)
        yield from self.link.call(lambda: self.link.backend.client.set(self.done_key, self.name))
        try:
            at, _ = yield from self.link.call(lambda: self.leases.release(self.lock_key, self.token))
            landed = {"at": round(self.run.ms_to_t(at), 3)} if self.link.latency_ms else {}
            run.event(self.name, Kind.RELEASE, **landed)  # over a slow link, `at`: when the store let the key go
            self._lease_ended(released=True, at_ms=at)
        except StaleToken:
            run.event(self.name, Kind.RELEASE_REFUSED, reason="token no longer owns the lock")
            self._lease_ended(released=False)

    def renew(self, worker: simpy.Process, every_ms: float):
        """A process: extend the lease every `every_ms`, starting from the acquire; stop at a 0 reply."""
        clock = self.clock
        next_tick = clock.now_ms + every_ms
        tick = 0
        while True:
            try:
                yield from self.world.sleep(next_tick - clock.now_ms, work=False)
            except simpy.Interrupt as interrupt:
                if interrupt.cause == STOP:
                    return
                raise
            if self.finished:
                return
            tick += 1
            if tick in self.missed:  # sent, but it never reaches the store: the lease is not touched
                self.run.event(self.name, Kind.RENEW_MISSED, tick=tick)
                next_tick = clock.now_ms + every_ms
                continue
            self.extending = True
            try:
                at, grant = yield from self.link.call(lambda: self.leases.extend(self.lock_key, self.token,
                                                                                 self.lease_ms))
            except LeaseLost:
                self.run.event(self.name, Kind.RENEW_LOST, reply=0)
                if worker.is_alive and not self.finished:
                    worker.interrupt(LOST)
                return
            finally:
                self.extending = False
            deadline = self._pushed(grant, at)
            landed = {"at": round(self.run.ms_to_t(at), 3)} if self.link.latency_ms else {}
            self.run.event(self.name, Kind.RENEW, ttl=round(to_s(grant.ttl_ms), 3), deadline=deadline, **landed)
            if self.finished:  # the job ended while this extend was on the wire
                return
            next_tick = clock.now_ms + every_ms

    def start_holding(self):
        """A process: take the lock at once (the holder)."""
        at, grant = yield from self.link.call(lambda: self.leases.acquire(self.lock_key, self.lease_ms, self.token))
        if grant is None:  # a fresh run prefix makes this impossible unless the store misbehaves
            raise StoreError(f"{self.name} could not take a fresh lock {self.lock_key}: another run is using this key")
        self._took(grant, at)
        landed = {"deadline": self.lease.data["deadline"]} if self.link.latency_ms else {}
        self.run.event(self.name, Kind.ACQUIRE, ttl=round(to_s(grant.ttl_ms), 3), **landed)
        self.has_lock.succeed()
        yield from self.hold_and_work()

    def contend(self, poll_ms: float, holder: "Worker | None" = None):
        """A process: try the lock every `poll_ms` until it is ours or the job is done; the first try is
        half a poll in (after the `holder`'s acquire reply reached it, when it has a delayed link)."""
        run, clock = self.run, self.clock
        if holder is not None:
            yield holder.has_lock
        yield clock.timeout(poll_ms / 2)
        while True:
            grant = self.leases.acquire(self.lock_key, self.lease_ms, self.token)
            if grant is None:
                run.event(self.name, Kind.ACQUIRE_FAILED)
                yield clock.timeout(poll_ms)
                continue
            run.event(self.name, Kind.ACQUIRE, ttl=round(to_s(grant.ttl_ms), 3))
            self._took(grant)
            if run.backend.client.get(self.done_key) is not None:
                run.event(self.name, Kind.SAW_DONE)
                self.leases.release(self.lock_key, self.token)
                self._lease_ended(released=True)
                return
            run.event(self.name, Kind.RECLAIM)
            yield from self.hold_and_work()
            return


def _missed(miss: Any) -> frozenset[int]:
    ticks = (miss,) if isinstance(miss, int) else tuple(miss or ())
    if not all(isinstance(t, int) and not isinstance(t, bool) and 1 <= t <= 1000 for t in ticks):
        raise BadParameter(f"miss names the extends lost on the way, as whole numbers from 1 (the first) to 1000, "
                           f"got {miss!r}")
    return frozenset(ticks)


def heartbeat(lease: float = 30, job: float = 75, renew: Any = "none", pause: Any = None, poll: float = 1.0,
              miss: Any = (), latency: float = 0, clock_jump: Any = None, backend: Any = None) -> Timeline:
    """Run the renewal heartbeat and return its timeline.

    lease, job, poll: model seconds. renew: none | half | third | a fraction of the lease.
    pause: AT:SECONDS, a stop-the-world pause of the holder (its renewer included).
    miss: the holder's extends (1 = the first, or a list) lost on the way: sent, never received.
    latency: the one-way delay of the holder's link, model seconds (the contender sits beside the server):
    each holder command reaches the store `latency` after it is sent and its reply as long after that;
    the holder starts its job and its renewal timer when the acquire reply arrives, and the contender
    starts polling half a poll after that.
    clock_jump: AT:SECONDS, a step of the server's clock at AT (back when SECONDS < 0): on fakeredis its clock
    alone moves; on live Valkey the run starts a server of its own under libfaketime (`emqlab.faults.clock_jump`).
    backend: a Backend, or a StoreSpec (`store_spec`: fake, valkey or a URL, with its clock and scale; a bare
    text is read into one), opened and closed here.
    """
    cadence, missed = parse_cadence(renew), _missed(miss)
    p = Params(lease=positive("lease", lease), job=positive("job", job), renew=cadence.name, cadence=cadence.fraction,
               pause=Pause.parse(pause), poll=positive("poll", poll), miss=tuple(sorted(missed)),
               latency=float(within("latency", latency)), clock_jump=ClockJump.parse(clock_jump))
    if p.clock_jump is not None and p.clock_jump.at >= p.job:
        raise BadParameter(f"a clock jump must come while the job runs (AT < job = {p.job:g} s), got AT = "
                           f"{p.clock_jump.at:g} s")
    lease_ms, job_ms, poll_ms = to_ms(p.lease), to_ms(p.job), to_ms(p.poll)
    with run_on(backend, "heartbeat", p, cost=p.cost(), server_clock=p.clock_jump is not None) as run:
        holder = Worker(run, "holder", lease_ms, job_ms, cadence, missed, latency_ms=to_ms(p.latency))
        with holder.link:
            if p.clock_jump is not None:
                run.clock.process(jumping(run, p.clock_jump))
            _play(run, holder, Worker(run, "contender", lease_ms, job_ms, cadence), poll_ms, p.pause)
    run.timeline.verdict = verdict(run.timeline)
    return run.timeline


def _play(run: Run, holder: Worker, contender: Worker, poll_ms: float, stop: Pause | None) -> None:
    """Run the holder, the contender and the holder's pause (`stop`, if any) to the end on the run's clock."""
    clock = run.clock
    holder.world.join(clock.process(holder.start_holding()))
    clock.process(contender.contend(poll_ms, holder if holder.link.latency_ms else None))
    if stop is not None:

        def pause_holder():
            yield clock.timeout(to_ms(stop.at))
            run.event("holder", Kind.PAUSE_START, seconds=stop.seconds)
            frozen = run.timeline.open(run.t, "holder", "pause")
            yield from holder.world.stop_the_world(to_ms(stop.seconds))
            frozen.end = run.t
            run.event("holder", Kind.PAUSE_END)

        clock.process(pause_holder())
    clock.run()


# -- the verdict, read off the events --------------------------------------------------------
def working_spans(timeline: Timeline, actor: str) -> list[tuple[float, float]]:
    """When `actor` was really working: its run intervals minus its pauses."""
    pauses = [(p.start, p.end) for p in timeline.spans("pause", actor)]
    return [part for run in timeline.spans("run", actor)
            for part in minus(run.start, run.end if run.end is not None else float("inf"), pauses)]


def _lapsed(timeline: Timeline, actor: str) -> list[float]:
    return [lease.end for lease in timeline.spans("lease", actor) if lease.data.get("ended") == "lapsed"]


def _tightest_margin(timeline: Timeline) -> float | None:
    """The least lease an extend of the holder's still found left (deadline it had to beat − when it landed)."""
    deadline, margins = None, []
    for e in timeline.events:
        if e.actor != "holder":
            continue
        if e.kind == Kind.ACQUIRE:  # over a delayed link the event says when the server stamped the lease
            deadline = e.data.get("deadline", round(e.t + e.data["ttl"], 3))
        elif e.kind == Kind.RENEW and deadline is not None:
            margins.append(round(deadline - e.data.get("at", e.t), 3))
            deadline = e.data["deadline"]
    return min(margins) if margins else None


def _blind(timeline: Timeline, lapsed_at: float | None, learned_at: float | None) -> float | None:
    """How long the holder worked on after its lease lapsed on the server: until the 0 reply reached it
    or it stopped working, whichever came first (a 0 reply after the work ends adds nothing).
    None when nothing lapsed."""
    stopped = max((end for _, end in working_spans(timeline, "holder")), default=lapsed_at)
    learned = stopped if learned_at is None else min(learned_at, stopped)
    return None if lapsed_at is None else round(max(0.0, learned - lapsed_at), 3)


def _gaps(timeline: Timeline) -> list[float]:
    """Seconds from the holder's acquire to its first extend, and between each extend and the next."""
    times = [e.t for e in timeline.of(Kind.ACQUIRE, "holder")][:1] + [e.t for e in timeline.of(Kind.RENEW, "holder")]
    return [round(b - a, 3) for a, b in zip(times, times[1:])]


def pushed_out(gaps: list[float]) -> str:
    """How the holder's extends came, as a verdict says it: "every 15 s", or "every 15 s, once after 25 s"."""
    usual = max(set(gaps), key=gaps.count)
    odd = sorted(g for g in set(gaps) if abs(g - usual) > 0.05)
    return f"every {seconds(usual)}" + "".join(
        f", {times(sum(abs(x - g) <= 0.05 for x in gaps))} after {seconds(g)}" for g in odd)


def verdict(timeline: Timeline) -> HeartbeatVerdict:
    """The facts of a heartbeat run, read off its events and intervals; then its words."""
    lapsed = _lapsed(timeline, "holder")
    reclaims = timeline.of(Kind.RECLAIM)
    runners = list(dict.fromkeys(e.actor for e in timeline.of(Kind.WORK_START)))
    spans = {actor: working_spans(timeline, actor) for actor in runners}
    overlap = [
        (round(max(a0, b0), 3), round(min(a1, b1), 3))
        for i, x in enumerate(runners) for y in runners[i + 1:]
        for a0, a1 in spans[x] for b0, b1 in spans[y] if max(a0, b0) < min(a1, b1)
    ]
    pause = next(iter(timeline.spans("pause", "holder")), None)
    finished_by = [e.actor for e in timeline.of(Kind.WORK_DONE)]
    contender_lapsed = _lapsed(timeline, "contender")
    lapsed_at = lapsed[0] if lapsed else None
    # renew_lost_at is when the 0 reply reached the holder (over a delayed link, a full delay after the
    # server answered it); blind_s: how long the holder went on working after its lease had lapsed
    renew_lost_at = getattr(timeline.first(Kind.RENEW_LOST, "holder"), "t", None)
    released = timeline.first(Kind.RELEASE, "holder")
    facts = HeartbeatVerdict(
        lapsed_at=lapsed_at,
        renewals=len(timeline.of(Kind.RENEW, "holder")),
        renew_lost_at=renew_lost_at,
        holder_stopped_at=getattr(timeline.first(Kind.WORK_STOPPED, "holder"), "t", None),
        reclaimed_at=reclaims[0].t if reclaims else None,
        runs=len(runners),
        double_run=bool(overlap),
        overlap=[list(o) for o in overlap],
        both_ran_s=round(sum(b - a for a, b in overlap), 3),
        finished_once=len(finished_by) == 1,
        finished_by=finished_by,
        paused_at=pause.start if pause else None,
        resumed_at=pause.end if pause else None,
        lapsed_in_pause=bool(pause and lapsed and pause.start <= lapsed[0] <= pause.end),
        contender_lapsed_at=contender_lapsed[0] if contender_lapsed else None,
        missed_at=[e.t for e in timeline.of(Kind.RENEW_MISSED, "holder")],
        tightest_margin_s=_tightest_margin(timeline),
        blind_s=_blind(timeline, lapsed_at, renew_lost_at),
        renewal_gaps=_gaps(timeline),
        released_at=released.data.get("at", released.t) if released else None,
        holder_done_at=getattr(timeline.first(Kind.WORK_DONE, "holder"), "t", None),
        **_jump_facts(timeline, lapsed),
    )
    return facts.worded(words(timeline.params, facts))


def _jump_facts(timeline: Timeline, lapsed: list[float]) -> dict[str, Any]:
    """What a step of the server's clock did: when, by how much, and whether the holder's lease vanished at it
    (its lapse is the step's moment: the deadline it had been given lay past the server's new time)."""
    steps = jumps(timeline)
    if not steps:
        return {}
    at, step = steps[0]
    moved = next((round(lease.end - lease.data["given"], 3) for lease in timeline.spans("lease", "holder")
                  if lease.data.get("ended") == "lapsed" and "given" in lease.data), None)
    return {"clock_jumped_at": at, "clock_jump_s": step, "lost_at_jump": bool(lapsed) and lapsed[0] == at,
            "lapse_moved_s": moved}


def _lapsed_after_work(v: HeartbeatVerdict) -> bool:
    """The holder's lease lapsed only after it had finished the job (its release, or an extend still on
    the wire, reached the store late): it was done by the time the lease lapsed."""
    return v.lapsed_at is not None and v.holder_done_at is not None and v.holder_done_at <= v.lapsed_at


def words(p: Params, v: HeartbeatVerdict) -> ModeWords:
    """The one place a heartbeat run is put into words: its text (a headline with the lease's fate
    and the job's, then the other facts in the order they happened) and the static verdict.

    Every clause is a fact of the verdict `v`; every time is quoted through `seconds`."""
    label = parse_cadence(p.renew).label
    lease, job = seconds(p.lease), seconds(p.job)
    every, latency = p.every, p.latency
    said, short, fate = [], [], ""  # fate: the lease's, said in the headline
    if latency:
        label = f"{label}, {seconds(latency)} link"
        said.append(f"over a link whose one-way delay is {seconds(latency)}")
    if v.paused_at is not None:
        said.append(f"the holder was paused from {seconds(v.paused_at)} to {seconds(v.resumed_at)}")
        short.append(f"paused {seconds(v.paused_at)}–{seconds(v.resumed_at)}")
    if v.clock_jump_s:
        way = "forward" if v.clock_jump_s > 0 else "back"
        label = f"{label}, server clock {'+' if v.clock_jump_s > 0 else '−'}{seconds(abs(v.clock_jump_s))}"
        said.append(f"the server's clock stepped {way} {seconds(abs(v.clock_jump_s))} at {seconds(v.clock_jumped_at)}")
        short.append(f"server clock {'+' if v.clock_jump_s > 0 else '−'}{seconds(abs(v.clock_jump_s))} at "
                     f"{seconds(v.clock_jumped_at)}")
        if v.lapse_moved_s is not None and v.lapse_moved_s < 0:
            said.append(f"the holder's lease vanished {'at the step' if v.lost_at_jump else 'early'}, "
                        f"{seconds(-v.lapse_moved_s)} before the deadline the server had given it")
        elif v.lapse_moved_s:
            said.append(f"the holder's lease outlived the deadline the server had given it by {seconds(v.lapse_moved_s)}")
    if v.missed_at:
        lost = ", ".join(seconds(t) for t in v.missed_at)
        said.append(f"the holder's {'extend' if len(v.missed_at) == 1 else 'extends'} at {lost} never reached "
                    "the store")
        short.append(f"{plural(len(v.missed_at), 'extend')} lost")
    if v.lapsed_at is None:
        end = f"held to its release at {seconds(v.released_at)}" if v.released_at is not None else "held to the end"
        if v.renewals:
            fate = f"{plural(v.renewals, 'token-checked extend')} held the {lease} lease to the end"
            # the gaps the run measured (over a slow link: the cadence plus each reply's round trip)
            pace = pushed_out(v.renewal_gaps) if v.renewal_gaps else f"every {seconds(every)}"
            short.append(f"pushed out {pace} · {end}")
        else:
            fate = f"the {lease} lease outlasted the {job} job"
            short.append(end)
    elif _lapsed_after_work(v):  # the lease held while the holder worked; its release reached the store too late
        if v.renewals:
            pace = pushed_out(v.renewal_gaps) if v.renewal_gaps else f"every {seconds(every)}"
            fate = f"the {lease} lease held while the holder worked"
            said.append(f"{plural(v.renewals, 'token-checked extend')} kept it")
            short.append(f"pushed out {pace}")
        else:  # shorter: a headline is read in one breath, and this one may go on to two finishers
            fate = f"the {lease} lease held through the work"
        said.append(f"it lapsed at {seconds(v.lapsed_at)}, after the job was done, before the holder's release "
                    "reached the store")
        if v.lapsed_in_pause:
            said.append("it lapsed while the holder was frozen")
        short.append(f"held while the holder worked · lapses at {seconds(v.lapsed_at)}, after the work")
    else:
        fate = f"the {lease} lease lapsed at {seconds(v.lapsed_at)}"
        if v.lapsed_in_pause:
            said.append("it lapsed while the holder was frozen")
        short.append(f"lease ends at {seconds(v.lapsed_at)} and lapses")
    if v.reclaimed_at is not None:
        said.append(f"the contender reclaimed the job at {seconds(v.reclaimed_at)}")
        short.append("reclaimed")
    if v.double_run:
        both = seconds(v.both_ran_s) if v.both_ran_s >= 0.05 else "less than 0.1 s"
        said.append(f"both ran it at once for {both}")
        short.append("runs twice at once")
    blind = latency and v.blind_s is not None and v.blind_s >= 0.05
    late = f", {seconds(v.blind_s)} after its lease had lapsed" if blind else ""
    if v.renew_lost_at is not None:
        stop = " and it stopped at once" if v.holder_stopped_at is not None else ""
        if latency:  # renew_lost_at is when the 0 reply reached the holder, a delay after the server sent it
            said.append(f"the holder learned only at {seconds(v.renew_lost_at)}{late}, when its extend replied 0"
                        + ("," if stop else "") + stop)
        else:
            said.append(f"the holder's extend at {seconds(v.renew_lost_at)} replied 0{stop}")
        short.append("extend replies 0" + (" · holder stops" if stop else ""))
    elif blind:
        said.append(f"the holder was never told: it went on working until {seconds(v.blind_s)} after its lease had lapsed")
    if blind:
        short.append(f"blind {seconds(v.blind_s)}")
    if v.missed_at and v.tightest_margin_s is not None:
        said.append(f"the closest extend landed with {seconds(v.tightest_margin_s)} of the lease left")
    if v.contender_lapsed_at is not None:
        said.append(f"the contender's own lease lapsed at {seconds(v.contender_lapsed_at)}")
    finished = v.finished_by
    if not finished:
        end = "nobody finished the job"
        short.append("never finishes")
    elif len(finished) == 1:
        end = f"the job finished once, by the {finished[0]}"
        short.append("finishes once")
    else:
        end = f"the job finished {times(len(finished))}, by the " + " and the ".join(finished)
        short.append(f"finishes {times(len(finished))}")
    facts = tuple(said)
    return ModeWords(label, f"{label}: {fate}; {end}.", " · ".join(short), facts)


def figure_words(modes: dict[str, Timeline], labels: dict[str, str] | None = None) -> FigureWords:
    """What figure 1 says about these runs: caption, prompt, and each run's words. The caption names
    each panel by its place (top to bottom), and the lease only when every run shares it."""
    params = [tl.params for tl in modes.values()]
    named = [(labels or {}).get(name) or tl.verdict.label for name, tl in modes.items()]
    jobs, leases = {p.job for p in params}, {p.lease for p in params}
    where = f"a {seconds(params[0].job)} job" if len(jobs) == 1 else "each run's job"
    if len(leases) == 1:
        where += f" under a {seconds(params[0].lease)} lease"
    places = panel_places(len(named))
    panels = "; ".join(f"{at}: {n}" for at, n in zip(places, named))
    caption = f"The renewal heartbeat, {where}. {panels[0].upper()}{panels[1:]}."
    prompt = (f"{where[0].upper()}{where[1:]}. Point at " + " or ".join(f"“{n}”" for n in named)
              + " to light its timeline and read what happened.")
    return words_of_modes(modes, caption, prompt, labels)


def boundary_words(boundary: dict[str, Any]) -> FigureWords:
    """What the held-or-lost grid of the cadence lesson says (`lab.cadence_boundary`)."""
    return grid_words(boundary, f"Held or lost: a {seconds(boundary['lease'])} lease, a pause at "
                                f"{seconds(boundary['at'])}")
