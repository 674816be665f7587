"""A stuck job under each way of holding it: the trade-off renewal apart from the work brings.

worker-1 claims a job that hangs (its first attempt never ends) while worker-1 itself stays alive:
whatever renews for it keeps running. worker-2 beats beside it. With no renewal (EchoMQ's shipped
path) the job's lease runs out and worker-2's beat returns it to pending within lease + beat. With
a renewal that runs apart from the work (a sweep, a session) the stuck job stays leased as long as
worker-1 lives. A hard deadline set once at the claim (`max_runtime`, the role Kafka's
`max.poll.interval.ms` plays) bounds it again, at no cost per tick: the reaper's same slice reads it.

`verdict.reclaimed_at` is when the job went back to pending (None if never within `verdict.horizon`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..store.clock import to_ms
from ..queue.consumer import Consumer
from ..queue.jobs import Queue, check_name
from ..lease.designs import DESIGNS, NONE, lookup_design
from ..core.kinds import Kind
from ..core.timeline import Event, Record, Timeline, Verdict
from ..core.words import ModeWords, plural, seconds
from .run_harness import mode_words, play, positive, run_on

JOB_ID = "ORD0NgWEfAEJfs"  # the course's example id
AFTER_S = 5.0  # how long the job runs once it no longer hangs (its second attempt)


def horizon_for(lease: float, max_runtime: float | None) -> float:
    """How long a run watches: 8 leases, and at least two leases past the hard deadline."""
    return max(8 * lease, (max_runtime or 0) + 2 * lease)


def mode_name(design: str, max_runtime: float | None) -> str:
    """The figure's name for a run: its design, with `+limit` when a hard deadline was set."""
    return f"{design}+limit" if max_runtime else design


@dataclass(frozen=True, kw_only=True)
class Params(Record):
    """A stuck-job run's parameters: how the workers hold their jobs, the hard deadline (model seconds
    from the claim; None: none), the lease and the beat, how long the run watches, the queue."""

    design: str
    max_runtime: float | None
    lease: float
    beat: float
    horizon: float
    queue: str = "orders"

    @property
    def mode(self) -> str:
        return mode_name(self.design, self.max_runtime)

    def cost(self) -> tuple[float, float]:
        """(model span, store steps): the horizon, two consumers' beats and renewals over it."""
        return self.horizon, 4 * self.horizon / self.beat + 10


@dataclass(frozen=True, kw_only=True)
class StuckVerdict(Verdict):
    """The facts of a stuck-job run, in model seconds from worker-1's claim (None: it did not happen)."""

    design: str
    max_runtime: float | None
    horizon: float
    claimed_at: float | None
    reclaimed_at: float | None
    reclaimed_by: str | None
    reclaim_reason: str | None  # lease | max_runtime | session
    held_to_horizon: bool
    holder_renewals: int
    holder_renew_calls: int
    holder_told_at: float | None
    second_attempt_at: float | None
    second_attempt_by: str | None
    completed_at: float | None


def stuck(design: str = NONE, max_runtime: float | None = None, lease: float = 30, beat: float = 5,
          queue: str = "orders", backend: Any = None) -> Timeline:
    """Run the stuck-job scenario. design: none | per-job | sweep | session. max_runtime: model
    seconds from the claim to a hard deadline no renewal pushes out (None: no limit). lease, beat:
    model seconds (the lease, or the session's lease; the consumers' beat). Renewing designs renew at
    TTL/2."""
    design = lookup_design(design).name  # a registered design, or one line naming them
    lease_s, beat_s = positive("lease", lease), positive("beat", beat)
    limit_s = None if max_runtime is None else positive("max_runtime", max_runtime)
    check_name(queue)
    horizon = horizon_for(lease_s, limit_s)
    params = Params(design=design, max_runtime=limit_s, lease=lease_s, beat=beat_s, horizon=horizon, queue=queue)
    with run_on(backend, "stuck", params, cost=params.cost()) as run:
        clock = run.clock
        q = Queue(run.backend, queue, prefix=run.prefix)
        q.enqueue(JOB_ID, "order")
        run.event("producer", Kind.ENQUEUE, job=JOB_ID)

        def work(job) -> float:  # the first attempt hangs past the horizon; a later one takes AFTER_S
            return 4 * to_ms(horizon) if job.attempts == 1 else to_ms(AFTER_S)

        opts = dict(lease_ms=to_ms(lease_s), beat_ms=to_ms(beat_s), work_ms=work, recorder=run, design=DESIGNS[design],
                    max_runtime_ms=to_ms(limit_s or 0))
        holder, other = Consumer(q, "worker-1", **opts), Consumer(q, "worker-2", **opts)

        def script():
            holder.start()
            yield clock.timeout(to_ms(beat_s) / 2)  # the two beats interleave
            other.start()
            yield clock.timeout(to_ms(horizon))

        play(run, script(), to_ms(horizon + beat_s), 1, [holder, other])
        run.timeline.verdict = verdict(run.timeline)
    return run.timeline


def _server_span(claim: Event | None, reap: Event) -> float:
    """Model seconds from the claim to the reap on the server's clock, the clock the reap script
    compared the lease with (the local record times differ from it by each reply's trip back: a claim
    whose reply came late would make a reap at the limit look early). A record without the server's
    readings is measured on the local clock."""
    if claim is not None and "time_s" in claim.data and "time_s" in reap.data:
        return reap.data["time_s"] - claim.data["time_s"]
    return reap.t - (claim.t if claim else 0.0)


def verdict(timeline: Timeline) -> StuckVerdict:
    p = timeline.params
    claim = timeline.first(Kind.CLAIM, where=lambda e: e.data.get("job") == JOB_ID and e.data.get("attempts") == 1)
    t0 = claim.t if claim else 0.0
    reap = timeline.first(Kind.REAP, where=lambda e: JOB_ID in e.data.get("jobs", []) and e.t <= t0 + p.horizon)
    again = timeline.first(Kind.CLAIM, where=lambda e: e.data.get("job") == JOB_ID and e.data.get("attempts", 0) >= 2)
    done = timeline.first(Kind.COMPLETE, where=lambda e: e.data.get("job") == JOB_ID)
    renewals = [e for e in timeline.of(Kind.RENEW, "worker-1")]
    told = timeline.first(Kind.WORK_STOPPED, "worker-1", where=lambda e: e.data.get("job") == JOB_ID)
    limit = p.max_runtime
    reclaimed = round(_server_span(claim, reap), 3) if reap else None
    if reclaimed is None:
        why = None
    elif limit and reclaimed >= limit - 1e-9:
        why = "max_runtime"
    else:
        why = "session" if DESIGNS[p.design].per_worker else "lease"
    v = StuckVerdict(
        design=p.design, max_runtime=limit, horizon=p.horizon,
        claimed_at=round(t0, 3) if claim else None,
        reclaimed_at=reclaimed,
        reclaimed_by=reap.actor if reap else None,
        reclaim_reason=why,
        held_to_horizon=claim is not None and reap is None,
        holder_renewals=len(renewals),
        holder_renew_calls=sum(e.data.get("calls", 1) for e in renewals),
        holder_told_at=round(told.t - t0, 3) if told else None,
        second_attempt_at=round(again.t - t0, 3) if again else None,
        second_attempt_by=again.actor if again else None,
        completed_at=round(done.t - t0, 3) if done else None,
    )
    return v.worded(words(p, v))


def design_label(design: str, max_runtime: float | None = None) -> str:
    """A design in words: "no renewal (EchoMQ)", "one sweep", … with its hard deadline if any."""
    base = DESIGNS[design].label if design in DESIGNS else design
    return f"{base} + {seconds(max_runtime)} limit" if max_runtime else base


def words(p: Params, v: StuckVerdict) -> ModeWords:
    """The stuck-job run in words: a headline (whether the hung job went back to pending, and when), the
    other facts, and the static verdict line, each clause read from `v`."""
    label = design_label(p.design, p.max_runtime)
    lease, limit = seconds(p.lease), p.max_runtime
    n = v.holder_renewals
    if not DESIGNS[p.design].renews:
        kept = f"nobody renewed its {lease} lease"
    elif DESIGNS[p.design].per_worker:
        kept = f"worker-1 stayed alive and {plural(n, 'session renewal')} kept its session fresh"
    else:
        calls = v.holder_renew_calls
        kept = (f"worker-1 stayed alive and {plural(n, 'renewal tick')} ({plural(calls, 'extend call')}) kept the "
                f"hung job's {lease} lease fresh")
    facts = [f"worker-1's job hung from its claim while {kept}"]
    if v.reclaimed_at is None:
        facts.append("a stuck job stays leased as long as its worker lives")
        return ModeWords(label, f"{label}: the job hung, and nothing returned it to pending within the "
                                f"{seconds(v.horizon)} horizon.",
                         f"held to the horizon ({seconds(v.horizon)}) · never back in pending", tuple(facts))
    why = {"lease": f"the lease ran out after {lease}",
           "max_runtime": f"the hard deadline set at the claim ({seconds(limit)}) passed",
           "session": "worker-1's session lapsed"}[v.reclaim_reason]
    facts.append(why)
    if v.second_attempt_by is not None:
        again = f"{v.second_attempt_by} ran it again (attempts 2)"
        if v.completed_at is not None:
            again += f" and finished it at {seconds(v.completed_at)}"
        facts.append(again)
    if v.holder_told_at is not None:
        facts.append(f"worker-1's next renewal found the job gone at {seconds(v.holder_told_at)} and stopped it")
    elif DESIGNS[p.design].per_worker:
        facts.append("worker-1 was not told (its renewal touches no job), but attempts fence its late completion")
    headline = f"{label}: the job hung, and {v.reclaimed_by}'s beat returned the job to pending at {seconds(v.reclaimed_at)}."
    return ModeWords(label, headline, f"back in pending at {seconds(v.reclaimed_at)} · "
                                      f"{'hard deadline' if v.reclaim_reason == 'max_runtime' else why}", tuple(facts))


figure_words = mode_words(
    "A worker stays alive while one of its jobs hangs. With no renewal the job's lease "
    "runs out and the reaper hands it on; a renewal that runs apart from the work (a "
    "sweep, a session) keeps the stuck job leased as long as the worker lives, until a "
    "hard deadline set once at the claim bounds it again.",
    "Point at a design to read when the stuck job went back to pending.")
