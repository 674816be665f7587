"""The course's applied form, run: crash recovery by the reaper on the server clock.

`reaper()`: two consumers beat on one queue. worker-1 claims the job and dies mid-work; nobody
renews its lease, so its deadline passes on the server clock; worker-2's next beat reaps the job
back to pending and re-claims it (attempts 2) and finishes it; worker-1's late completion, sent
with its stale attempts, is refused. On live Valkey the consumers can be OS processes
(`procs=True`): the crash is a SIGKILL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..store.clock import to_ms
from ..core.errors import BadParameter
from ..core.kinds import Kind
from ..core.timeline import Record, Timeline, Verdict, json_name
from ..core.words import FigureWords, ModeWords, plural, seconds, times, words_of_modes
from ..faults.clock_jump import ClockJump, expires_at, jumping, jumps
from ..lease.cadence import parse_cadence
from ..lease.designs import DESIGNS, NONE, lookup_design
from ..queue.consumer import Consumer, late_completion
from ..queue.jobs import Queue, check_id, check_name
from .run_harness import Run, mode_words, named, play, positive, run_on

JOB_ID = "ORD0NgWEfAEJfs"  # the course's example id


@dataclass(frozen=True, kw_only=True)
class Params(Record):
    """A reaper run's parameters, checked (model seconds): the lease each claim takes, the beat, the
    job's length, when worker-1 dies and when its stale completion arrives; the queue; whether the
    consumers are OS processes; how they hold their jobs."""

    lease: float
    beat: float
    job: float
    crash_at: float | None  # None: worker-1 never crashes (a clock jump's story: its job is taken while it works)
    late_at: float
    queue: str = "orders"
    procs: bool = False
    design: str = NONE
    clock_jump: ClockJump | None = field(default=None, metadata=json_name("clock_jump", omit_default=True,
                                                                         load=ClockJump.from_dict))

    @property
    def mode(self) -> str:
        return "processes" if self.procs else "in-process"

    def cost(self) -> tuple[float, float]:
        """(model span, store steps): to the late completion, two jobs, two leases and four beats; two
        consumers' beats."""
        span = self.late_at + 2 * self.job + 2 * self.lease + 4 * self.beat
        span += abs(self.clock_jump.seconds) if self.clock_jump else 0.0  # a step back holds a lease that much longer
        return span, 2 * span / self.beat + 10


@dataclass(frozen=True, kw_only=True)
class ReaperVerdict(Verdict):
    """The facts of a reaper run (model seconds; None: it did not happen)."""

    claimed_at: float | None
    crashed_at: float | None
    died_holding: bool
    lease_deadline: float | None
    reaped_at: float | None
    reaped_by: str | None
    reclaimed_at: float | None
    reclaimed_by: str | None
    reclaim_attempts: int | None
    completed_at: float | None
    completed_by: str | None
    stale_complete_refused: bool
    stale_complete_accepted: bool
    late_completion_at: float | None
    stale_extend_held: bool | None
    lost: int | None
    back_in_pending_after: float | None
    within_lease_plus_beat: bool
    # what the beats saw of the lease (the consumers' `step` events, on the run's time base): its score,
    # the server TIME of the beat that reaped it, the beats between the claim and that reap, and whether
    # each of them read a TIME short of the score while the reaping beat's had reached it
    lease_score_at: float | None = None
    reap_time_at: float | None = None
    beats_before_reap: int | None = None
    first_beat_past_score: bool | None = None
    # a step of the server's clock (--clock-jump): when, by how much, whether the reap took worker-1's job while
    # it still worked it, and every completion the queue refused ({"t", "by", "attempts"})
    clock_jumped_at: float | None = None
    clock_jump_s: float | None = None
    lease_ended_at: float | None = None  # when the server's clock reached the lease's score (model seconds)
    reaped_while_working: bool = False
    refused_completions: list | None = None


def _on_server(claim, server_s: float | None) -> float | None:
    """A server clock reading (model seconds, as the consumer recorded it) on the run's time base,
    pinned at the claim: the lease's score is the claim's `deadline` (which the consumer set from the
    score and the claim's own TIME), so a reading at or past the score is at or past the deadline."""
    if claim is None or server_s is None or claim.data.get("score_s") is None:
        return None
    return round(claim.data["deadline"] + server_s - claim.data["score_s"], 3)


def _when(claim, event, steps: list[tuple[float, float]] = ()) -> float | None:
    """An event's moment: its server TIME pinned at the claim, less any step of the server's clock made before
    it (`steps`: (model time, seconds) of each), or its record time if it carries none."""
    if event is None:
        return None
    pinned = _on_server(claim, event.data.get("time_s"))
    return event.t if pinned is None else round(pinned - sum(s for at, s in steps if at <= event.t), 3)


def beat_facts(timeline: Timeline, claim, reap) -> dict[str, Any]:
    """What the beats saw of one lease, from the consumers' `step` events: the lease's score and the
    server TIME of the beat that reaped it (both on the run's time base), how many beats ran between
    the claim and that reap, and whether every one of them read a TIME short of the score while the
    reaping beat's TIME had reached it (the reap script returns score <= TIME)."""
    score = claim.data.get("score") if claim else None
    if score is None:
        return {}
    facts: dict[str, Any] = {"lease_score_at": _on_server(claim, claim.data.get("score_s"))}
    job = claim.data["job"]
    events = timeline.events
    start = next(k for k, e in enumerate(events) if e is claim)
    reaps = [e for e in events[start + 1:] if e.kind == Kind.STEP and e.data.get("step") == "reap"]
    reaping = next((e for e in reaps if job in e.data.get("jobs", [])), None)
    if reap is None or reaping is None:
        return facts
    before = reaps[:reaps.index(reaping)]
    facts.update(reap_time_at=_on_server(claim, reaping.data.get("time_s")), beats_before_reap=len(before),
                 first_beat_past_score=reaping.data["now"] >= score and all(e.data["now"] < score for e in before))
    return facts


def counts(queue: Queue, jobs: int, completions: int) -> dict[str, int]:
    done = queue.sizes()["done"]
    effects = queue.effects_applied()
    dup_effects = sum(n - 1 for n in effects.values() if n > 1)
    # a completion accepted twice would be a duplicate effect even without an effects store
    return {"jobs": jobs, "completed": done, "lost": jobs - done,
            "duplicate_effects": dup_effects + max(0, completions - done)}


def reaper(lease: float = 30, beat: float = 5, job: float = 20, crash_at: float | None = 10,
           late_at: float | None = None, queue: str = "orders", procs: bool = False, design: str = NONE,
           clock_jump: Any = None, backend: Any = None) -> Timeline:
    """Run the crash-recovery scenario and return its timeline.

    lease, beat, job: model seconds (the lease each claim takes, the consumers' beat, the job's
    length). crash_at: when worker-1 dies mid-job (must fall inside the job). late_at: when
    worker-1's late completion arrives with its stale attempts (default: lease + 3 beats).
    procs: run the consumers as OS processes (live Valkey only); the crash is a SIGKILL.
    design: how the consumers hold their jobs (`emqlab.lease.designs`: none, per-job, sweep, session;
    renewing designs renew at TTL/2); with session, the dead worker's session lapses and takes its job with it.
    crash_at None: worker-1 never dies, and its own completion is the late one. clock_jump: AT:SECONDS, a step
    of the server's clock while the job runs (`emqlab.faults.clock_jump`; in-process consumers only).
    """
    design = lookup_design(design).name  # a registered design, or one line naming them
    lease_s, beat_s, job_s = positive("lease", lease), positive("beat", beat), positive("job", job)
    crash_s = None if crash_at is None else positive("crash_at", crash_at)
    if crash_s is not None and crash_s >= job_s:
        raise BadParameter(f"crash_at must fall inside the job (< job = {job_s:g} s), got {crash_at!r}")
    jump = ClockJump.parse(clock_jump)
    if jump is not None and jump.at >= job_s:
        raise BadParameter(f"a clock jump must come while the job runs (AT < job = {job_s:g} s), got AT = {jump.at:g} s")
    if jump is not None and procs:
        raise BadParameter("--clock-jump runs its consumers in-process: leave out --procs")
    back = -jump.seconds if jump is not None and jump.seconds < 0 else 0.0  # a step back holds the lease that much longer
    late_s = lease_s + 3 * beat_s + back if late_at is None else positive("late_at", late_at)
    params = Params(lease=lease_s, beat=beat_s, job=job_s, crash_at=crash_s, late_at=late_s, queue=check_name(queue),
                    procs=bool(procs), design=design, clock_jump=jump)
    with run_on(backend, "reaper", params, cost=params.cost(), server_clock=jump is not None) as run:
        q = Queue(run.backend, queue, prefix=run.prefix)
        if procs:
            if not run.backend.live:
                raise BadParameter("procs needs a live server (--backend valkey or a URL); "
                                   "fakeredis lives in one process")
            from .os_processes import run_reaper_processes

            run_reaper_processes(run, q, lease_s, beat_s, job_s, crash_s, late_s, JOB_ID, design=design)
        else:
            if jump is not None:
                run.clock.process(jumping(run, jump))
            _reaper_in_process(run, q, lease_s, beat_s, job_s, crash_s, late_s, design)
            if jump is not None and not DESIGNS[design].renews:
                _bands_on_the_servers_clock(run.timeline)
        run.timeline.counts.update(counts(q, 1, len(run.timeline.of(Kind.COMPLETE))))
        run.timeline.verdict = verdict(run.timeline)
    return run.timeline


def _bands_on_the_servers_clock(timeline: Timeline) -> None:
    """End each lease band where the server's clock reached its score: a step of that clock (forward) ends a
    lease the worker still thinks it holds. The consumer drew it to its deadline on the workers' clock or to
    its settle; only unrenewed leases are read so (their deadline was set once, at the claim)."""
    steps = jumps(timeline)
    for band in timeline.spans("lease"):
        ends = expires_at(steps, band.start, band.data["deadline"])
        if band.end is not None and ends < band.end:
            band.end, band.data["ended"] = ends, "lapsed"


def _reaper_in_process(run: Run, q: Queue, lease_s, beat_s, job_s, crash_s, late_s, design: str = NONE) -> None:
    clock = run.clock
    q.enqueue(JOB_ID, "order")
    run.event("producer", Kind.ENQUEUE, job=JOB_ID)
    opts = dict(lease_ms=to_ms(lease_s), beat_ms=to_ms(beat_s), work_ms=to_ms(job_s), recorder=run, design=DESIGNS[design])
    w1, w2 = Consumer(q, "worker-1", **opts), Consumer(q, "worker-2", **opts)

    def script():
        w1.start()
        yield clock.timeout(to_ms(beat_s) / 2)  # the two beats interleave
        w2.start()
        if crash_s is not None:  # else worker-1 lives, and its own completion is the late one
            yield clock.timeout(max(0.0, to_ms(crash_s) - (clock.now_ms - run.t0_ms)))
            w1.crash()
            yield clock.timeout(max(0.0, to_ms(late_s) - (clock.now_ms - run.t0_ms)))
            late_completion(run, q, "worker-1", JOB_ID, attempts=1)
        while q.sizes()["done"] < 1 or (crash_s is None and not run.timeline.of(Kind.WORK_DONE, "worker-1")):
            yield clock.timeout(to_ms(beat_s))
        yield clock.timeout(to_ms(beat_s))  # the last completion's reply
        w1.stop()
        w2.stop()

    play(run, script(), to_ms(late_s + 2 * job_s + 2 * lease_s + 4 * beat_s), to_ms(beat_s), [w1, w2])


def verdict(timeline: Timeline) -> ReaperVerdict:
    p = timeline.params
    claim = timeline.first(Kind.CLAIM)
    job = claim.data["job"] if claim else JOB_ID
    crash = timeline.first(Kind.CRASH)
    reap = timeline.first(Kind.REAP, where=lambda e: job in e.data.get("jobs", []))
    reclaim = timeline.first(Kind.CLAIM, where=lambda e: e.data.get("attempts", 0) >= 2)
    late = next((e for e in timeline.events if e.data.get("late")), None)
    done = timeline.first(Kind.COMPLETE, where=lambda e: not e.data.get("late"))
    extend = timeline.first(Kind.LATE_EXTEND)
    # the reap and the re-claim on the one clock that decided them: their server TIME, pinned at the claim
    # like the lease's deadline (a local record time trails the server's by its reply's trip, and on a
    # loaded machine a reap right at the deadline would read as early)
    steps = jumps(timeline)
    reaped_at, reclaimed_at = _when(claim, reap, steps), _when(claim, reclaim, steps)
    if crash is None and reap is not None and late is None:  # worker-1 lived: its own completion came late
        late = next((e for e in timeline.events if e.actor == "worker-1" and e.t >= reap.t
                     and e.kind in (Kind.COMPLETE, Kind.COMPLETE_REFUSED)), None)
    worked = getattr(timeline.first(Kind.WORK_DONE, "worker-1"), "t", None)
    v = ReaperVerdict(
        claimed_at=claim.t if claim else None,
        crashed_at=crash.t if crash else None,
        died_holding=bool(crash and job in crash.data.get("holding", [])),
        lease_deadline=claim.data.get("deadline") if claim else None,
        reaped_at=reaped_at,
        reaped_by=reap.actor if reap else None,
        reclaimed_at=reclaimed_at,
        reclaimed_by=reclaim.actor if reclaim else None,
        reclaim_attempts=reclaim.data["attempts"] if reclaim else None,
        completed_at=done.t if done else None,
        completed_by=done.actor if done else None,
        stale_complete_refused=bool(late is not None and late.kind == Kind.COMPLETE_REFUSED),
        stale_complete_accepted=bool(late is not None and late.kind == Kind.COMPLETE),
        late_completion_at=late.t if late else None,
        stale_extend_held=bool(extend.data.get("held")) if extend else None,
        lost=timeline.counts.get("lost"),
        back_in_pending_after=round(reaped_at - claim.t, 3) if claim and reap else None,
        within_lease_plus_beat=bool(claim and reap and reaped_at - claim.t <= p.lease + p.beat + 1e-9),
        **beat_facts(timeline, claim, reap),
        **({"clock_jumped_at": steps[0][0], "clock_jump_s": steps[0][1],
            "lease_ended_at": expires_at(steps, claim.t, claim.data["deadline"]) if claim else None,
            "reaped_while_working": bool(crash is None and reap and (worked is None or reaped_at < worked)),
            "refused_completions": [{"t": e.t, "by": e.actor, "attempts": e.data.get("attempts")}
                                    for e in timeline.of(Kind.COMPLETE_REFUSED)]} if steps else {}),
    )
    return v.worded(words(p, v))


def _lost(n: int) -> str:
    """The jobs a run lost, in words: "no job lost", "1 job lost", "2 jobs lost"."""
    return "no job lost" if n == 0 else f"{plural(n, 'job')} lost"


def words(p: Params, v: ReaperVerdict) -> ModeWords:
    """The reaper run in words: a headline (the crash, the reap, the late completion's fate), the other
    facts in the order they happened, and the static verdict line; each clause read from `v`."""
    label = ("a worker keeps working its job" if p.crash_at is None and v.crashed_at is None
             else "a worker dies holding the job"
             + (" (two OS processes, SIGKILL)" if p.mode == "processes" else ""))
    if DESIGNS[p.design].renews:
        label += f" · {p.design}"
    if p.clock_jump is not None:
        step = p.clock_jump.seconds
        label += f" · server clock {'+' if step > 0 else '−'}{seconds(abs(step))}"
    if v.reaped_at is None:
        what = "The crashed job" if v.crashed_at is not None else "The job"
        facts, static = [f"lease {seconds(p.lease)}, beat {seconds(p.beat)}"], ""
        if v.stale_complete_accepted:  # before any reap: nobody else held the job yet
            inside = v.lease_deadline is not None and v.late_completion_at <= v.lease_deadline
            facts.append(f"worker-1's late completion at {seconds(v.late_completion_at)} was accepted"
                         f"{', inside its lease' if inside else ''}")
            static = " · late completion accepted"
        facts.append(_lost(v.lost))
        return ModeWords(label, f"{what} was never reaped.", f"never reaped{static} · {_lost(v.lost)}", tuple(facts))
    if v.crashed_at is None:
        died = "worker-1 never crashed"
    else:
        died = f"worker-1 died at {seconds(v.crashed_at)}{' holding the job' if v.died_holding else ''}"
    whose = "its session's" if DESIGNS[p.design].per_worker else "its"
    facts = [f"{whose} {seconds(p.lease)} lease ran out on the server clock at {seconds(v.lease_deadline)}"]
    if v.clock_jump_s:
        way = "forward" if v.clock_jump_s > 0 else "back"
        facts[0] = (f"the server's clock stepped {way} {seconds(abs(v.clock_jump_s))} at {seconds(v.clock_jumped_at)}, "
                    f"so {whose} {seconds(p.lease)} lease, due at {seconds(v.lease_deadline)}, ran out on the server "
                    f"clock at {seconds(v.lease_ended_at)}")
    if v.reaped_while_working:
        facts.append("worker-1 was still working the job when the reap took it back")
    if v.first_beat_past_score:  # the beats' own TIME readings against the lease's score
        n = v.beats_before_reap
        if n:
            facts.append(f"{plural(n, 'beat')} read a server TIME before that deadline and left the job alone")
        facts.append(f"the first beat whose TIME had reached it, {v.reaped_by}'s at {seconds(v.reaped_at)}, "
                     "reaped it back to pending")
    within = "within" if v.within_lease_plus_beat else "later than"
    facts.append(f"back in pending {seconds(v.back_in_pending_after)} after the claim: {within} one lease plus one beat")
    if v.reclaimed_by is None:
        facts.append("nobody re-claimed it")
        static_reclaim = "not re-claimed"
    else:
        facts.append(f"{v.reclaimed_by} re-claimed it with attempts {v.reclaim_attempts}")
        static_reclaim = f"re-claimed, attempts {v.reclaim_attempts}"
    facts.append("nobody finished it" if v.completed_by is None
                 else f"{v.completed_by} finished it at {seconds(v.completed_at)}")
    if v.stale_complete_refused:
        late, static_late = "a late completion in worker-1's name was refused", "refused"
    elif v.stale_complete_accepted:
        late, static_late = "a late completion in worker-1's name was ACCEPTED (a stale write landed)", "ACCEPTED"
    else:
        late, static_late = "worker-1 sent no late completion", "not sent"
    facts.append(_lost(v.lost))
    headline = f"{died}; {v.reaped_by}'s beat reaped it at {seconds(v.reaped_at)}; {late}."
    static = (f"reaped at {seconds(v.reaped_at)} · {static_reclaim} · stale completion {static_late} · "
              f"{_lost(v.lost)}")
    return ModeWords(label, headline, static, tuple(facts))


_crash_figure_words = mode_words(
    "A consumer dies holding a job. Nobody renews its lease, so the lease runs out on "
    "the server clock; the next beat's reap puts the job back in pending, another "
    "consumer claims it again, and a late completion in the dead consumer's name (what a "
    "worker that only looked dead would send) is checked against the new attempt count.",
    "Point at a run to read what happened to its job.")
_working_figure_words = mode_words(
    "A consumer works a job under a lease scored on the server clock, and nobody crashes. Where that clock "
    "steps past the score, the next beat's reap puts the job back in pending while it is still worked, another "
    "consumer claims it again, and the first consumer's completion is checked against the new attempt count.",
    "Point at a run to read what happened to its job.")


def figure_words(modes: Any, labels: dict[str, str] | None = None) -> FigureWords:
    """The reaper figure's words: a crash's story, or (when no run crashes) a working consumer's."""
    runs = named(modes, lambda tl: tl.params.mode)
    working = runs and all(tl.params.crash_at is None for tl in runs.values())
    return (_working_figure_words if working else _crash_figure_words)(runs, labels)


def beats_figure_words(modes: Any, labels: dict[str, str] | None = None) -> FigureWords:
    """The beat lane's words (runs of `reaper` or `queue_heartbeat`); each run speaks its own words."""
    modes = named(modes, lambda tl: "processes" if tl.params.procs else tl.scenario)
    return words_of_modes(modes, "Each consumer's beats, step by step: reap, promote, drain, park. Every reap reads "
                               "the server's TIME and returns the leases whose score that TIME has reached; the "
                               "lower panel puts each reap's TIME beside the lease scores in the active set.",
                        "Point at a run to read what its beats did.", labels)
