"""The course's first figure again, on the queue: `queue_heartbeat()` runs a 75 s job under a 30 s lease on
EchoMQ's queue. Without renewal the lease runs out, the reaper hands the job to a second consumer and it runs
twice; with one batched extend per tick the holder keeps it to the end."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..store.clock import to_ms
from ..core.kinds import Kind
from ..core.timeline import Record, Timeline, Verdict, json_name
from ..core.words import ModeWords, plural, seconds, times
from ..lease.cadence import parse_cadence
from ..queue.consumer import Consumer
from ..queue.jobs import Queue, check_id, check_name
from .run_harness import mode_words, play, positive, run_on
from .reaper import JOB_ID, counts


@dataclass(frozen=True, kw_only=True)
class QueueHeartbeatParams(Record):
    """A queue heartbeat's parameters: the lease, the job, the beat (model seconds), and the renewal
    cadence (its name, its fraction of the lease; None: no renewal)."""

    lease: float
    job: float
    beat: float
    renew: str
    cadence: float | None
    procs: bool = field(default=False, metadata=json_name("procs", omit_default=True))  # always in-process

    @property
    def mode(self) -> str:
        return self.renew

    def cost(self) -> tuple[float, float]:
        span = 2 * self.job + 2 * self.lease + 4 * self.beat
        return span, 2 * span / self.beat + (span / (self.cadence * self.lease) if self.cadence else 0) + 10


@dataclass(frozen=True, kw_only=True)
class QueueHeartbeatVerdict(Verdict):
    """The facts of a heartbeat on the queue; `accepted_*`: the first completion accepted although its
    lease had run out (no beat, hence no reap, came between), else None."""

    accepted_after_lapse_by: str | None
    accepted_lapsed_at: float | None
    accepted_at: float | None
    accepted_attempts: int | None
    beats_in_gap: int | None
    claims_in_gap: int | None
    lapsed_at: float | None
    reaped_at: float | None
    reclaimed_by: str | None
    renewals: int
    runs: int
    double_run: bool
    completions: int
    completions_refused: int
    first_holder_refused: bool
    finished_once: bool



def queue_heartbeat(lease: float = 30, job: float = 75, renew: Any = "none", beat: float = 5, queue: str = "orders",
                    backend: Any = None) -> Timeline:
    """A `job`-second job under a `lease`-second lease on the queue. renew none: nobody extends, the
    reaper returns the job and a second consumer runs it while the first still does. renew half (or
    any fraction): the holder's one batched extend per tick keeps the lease, the job finishes once."""
    lease_s, job_s, beat_s = positive("lease", lease), positive("job", job), positive("beat", beat)
    cadence = parse_cadence(renew)
    check_name(queue)
    params = QueueHeartbeatParams(lease=lease_s, job=job_s, beat=beat_s, renew=cadence.name, cadence=cadence.fraction)
    with run_on(backend, "queue-heartbeat", params, cost=params.cost()) as run:
        clock = run.clock
        q = Queue(run.backend, queue, prefix=run.prefix)
        q.enqueue(check_id(JOB_ID), "order")
        opts = dict(lease_ms=to_ms(lease_s), beat_ms=to_ms(beat_s), work_ms=to_ms(job_s), renew=cadence.fraction,
                    recorder=run)
        holder, other = Consumer(q, "worker-1", **opts), Consumer(q, "worker-2", **opts)

        def script():
            holder.start()
            yield clock.timeout(to_ms(beat_s) / 2)
            holder.stop()  # the holder of the figure runs this one job, then leaves
            other.start()
            while q.sizes()["done"] < 1 or holder.held or other.held:
                yield clock.timeout(to_ms(beat_s))
            holder.stop()
            other.stop()

        play(run, script(), to_ms(2 * job_s + 2 * lease_s + 4 * beat_s), to_ms(beat_s), [holder, other])
        run.timeline.counts.update(counts(q, 1, len(run.timeline.of(Kind.COMPLETE))))
        run.timeline.verdict = verdict(run.timeline)
    return run.timeline


def verdict(timeline: Timeline) -> QueueHeartbeatVerdict:
    p = timeline.params
    runs = timeline.of(Kind.WORK_START)
    reap = timeline.of(Kind.REAP)
    reclaim = timeline.first(Kind.CLAIM, where=lambda e: e.data.get("attempts", 0) >= 2)
    lapsed = [i.end for i in timeline.spans("lease") if i.data.get("ended") == "lapsed"]
    spans = [(i.start, i.end if i.end is not None else float("inf")) for i in timeline.spans("run")]
    overlap = any(max(a[0], b[0]) < min(a[1], b[1]) for k, a in enumerate(spans) for b in spans[k + 1:])
    refused = timeline.of(Kind.COMPLETE_REFUSED)
    v = QueueHeartbeatVerdict(
        **_accepted_after_lapse(timeline),
        lapsed_at=min(lapsed) if lapsed else None,
        reaped_at=reap[0].t if reap else None,
        reclaimed_by=reclaim.actor if reclaim else None,
        renewals=len(timeline.of(Kind.RENEW)),
        runs=len(runs),
        double_run=overlap,
        completions=len(timeline.of(Kind.COMPLETE)),
        completions_refused=len(refused),
        first_holder_refused=any(e.actor == "worker-1" for e in refused),
        finished_once=len(timeline.of(Kind.COMPLETE)) == 1,
    )
    return v.worded(words(p, v))


def _accepted_after_lapse(timeline: Timeline) -> dict[str, Any]:
    """A completion accepted although its lease had run out: the lease lapsed on the server clock,
    but no beat ran between the lapse and the completion (so no reap took the job back) and nobody
    claimed the job again, so the attempt was still the current one. The first such, from the events."""
    for done in timeline.of(Kind.COMPLETE):
        job, attempts = done.data.get("job"), done.data.get("attempts")
        band = next((i for i in timeline.spans("lease", done.actor)
                     if i.data.get("job") == job and i.data.get("attempts") == attempts), None)
        if band is None or band.data.get("ended") != "lapsed" or band.end is None or band.end >= done.t:
            continue
        beats = [e for e in timeline.of(Kind.STEP) if e.data.get("step") == "reap" and band.end <= e.t < done.t]
        claims = [e for e in timeline.of(Kind.CLAIM) if e.data.get("job") == job and band.end <= e.t < done.t]
        return {"accepted_after_lapse_by": done.actor, "accepted_lapsed_at": band.end, "accepted_at": done.t,
                "accepted_attempts": attempts, "beats_in_gap": len(beats), "claims_in_gap": len(claims)}
    return {"accepted_after_lapse_by": None, "accepted_lapsed_at": None, "accepted_at": None,
            "accepted_attempts": None, "beats_in_gap": None, "claims_in_gap": None}


def _lapse_words(v: QueueHeartbeatVerdict) -> tuple[str, ...]:
    """The facts of a completion accepted after its lease ran out, or () when there was none."""
    if v.accepted_after_lapse_by is None:
        return ()
    if v.beats_in_gap == 0 and v.claims_in_gap == 0:
        why = ("no consumer beat in between, so no reap took the job back and nobody claimed it again, and attempt "
               f"{v.accepted_attempts} was still the current one")
    else:
        why = (f"{plural(v.beats_in_gap, 'beat')} and {plural(v.claims_in_gap, 'claim')} came in between, "
               "and the attempt was still the current one")
    return (f"{v.accepted_after_lapse_by}'s own lease ran out at {seconds(v.accepted_lapsed_at)}, yet its "
            f"completion at {seconds(v.accepted_at)} was accepted", why)


def words(p: QueueHeartbeatParams, v: QueueHeartbeatVerdict) -> ModeWords:
    """The heartbeat on the queue in words: a headline (the lease's fate and how often the job ran), the
    other facts, and the static verdict line, read from `v`."""
    label = parse_cadence(p.renew).label
    lease, job = seconds(p.lease), seconds(p.job)
    done = v.completions
    finish = ("did not finish", "does not finish") if done == 0 else (f"finished {times(done)}", f"finishes {times(done)}")
    if v.reaped_at is not None:
        lapse = (f"the {lease} lease ran out at {seconds(v.lapsed_at)} and " if v.lapsed_at is not None
                 else "the reaper took the job back and ")
        to = {None: "", "worker-2": " to a second consumer"}.get(v.reclaimed_by, f" to {v.reclaimed_by}")
        overlap = (", both runs overlapping" if v.runs == 2 else ", runs overlapping") if v.double_run else ""
        if v.first_holder_refused:
            refused = "the first holder's completion was refused"
        elif v.completions_refused:
            refused = f"{plural(v.completions_refused, 'completion')} refused"
        else:
            refused = "no completion was refused"
        facts = (f"the reaper returned the job at {seconds(v.reaped_at)}{to}", refused, *_lapse_words(v))
        lapses = f"lapses at {seconds(v.lapsed_at)} · " if v.lapsed_at is not None else ""
        return ModeWords(label, f"{label}: {lapse}the {job} job ran {times(v.runs)}{overlap}.",
                         f"{lapses}reaped · the job runs {times(v.runs)}", facts)
    extends = plural(v.renewals, "batched extend")
    if v.lapsed_at is not None:
        held, static = f"the {lease} lease ran out at {seconds(v.lapsed_at)}, but nobody reaped the job", \
            f"lapses at {seconds(v.lapsed_at)} · not reaped"
    elif v.renewals:
        held, static = f"{extends} held the {lease} lease to the end", f"{extends} · held to the end"
    else:
        held, static = f"the {lease} lease never ran out, with no extend", "no extend · never lapses"
    return ModeWords(label, f"{label}: {held}; the {job} job {finish[0]}.", f"{static} · the job {finish[1]}",
                     _lapse_words(v))


figure_words = mode_words(
    "The heartbeat on the queue: a job longer than its lease. Without renewal the lease "
    "runs out, the reaper hands the job to a second consumer and the job runs while the "
    "first consumer is still on it; with one batched extend per tick the holder keeps it.",
    "Point at a renewal mode to read what happened to the job.")
