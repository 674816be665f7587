"""The course's applied form, run: crash recovery by the reaper on the server clock.

`reaper()`: two consumers beat on one queue. worker-1 claims the job and dies mid-work; nobody
renews its lease, so its deadline passes on the server clock; worker-2's next beat reaps the job
back to pending and re-claims it (attempts 2) and finishes it; worker-1's late completion, sent
with its stale attempts, is refused. On live Valkey the consumers can be OS processes
(`procs=True`): the crash is a SIGKILL.

`queue_heartbeat()`: the course's first figure again, on the queue: a 75 s job under a 30 s lease
is reaped and run twice without renewal, and held to the end with one batched extend per tick.
"""

from __future__ import annotations

from typing import Any

from ..consumer import Consumer, run_clock
from ..errors import BadParameter, StaleToken
from ..queue import Queue, check_id, check_name
from ..renewal import parse_cadence
from ..timeline import Timeline
from .base import Run, positive, run_on

JOB_ID = "ORD0NgWEfAEJfs"  # the course's example id


def _first(timeline: Timeline, kind: str, **match: Any):
    for e in timeline.of(kind):
        if all(e.data.get(k) == v or (k == "job" and v in e.data.get("jobs", [])) for k, v in match.items()):
            return e
    return None


def _reaped(timeline: Timeline, job: str):
    return next((e for e in timeline.of("reap") if job in e.data.get("jobs", [])), None)


def _counts(queue: Queue, jobs: int, completions: int) -> dict[str, int]:
    done = queue.sizes()["done"]
    effects = queue.effects_applied()
    dup_effects = sum(n - 1 for n in effects.values() if n > 1)
    # a completion accepted twice would be a duplicate effect even without an effects store
    return {"jobs": jobs, "completed": done, "lost": jobs - done,
            "duplicate_effects": dup_effects + max(0, completions - done)}


def reaper(lease: float = 30, beat: float = 5, job: float = 20, crash_at: float = 10, late_at: float | None = None,
           queue: str = "orders", procs: bool = False, backend=None, **connect_kw: Any) -> Timeline:
    """Run the crash-recovery scenario and return its timeline.

    lease, beat, job: model seconds (the lease each claim takes, the consumers' beat, the job's
    length). crash_at: when worker-1 dies mid-job (must fall inside the job). late_at: when
    worker-1's late completion arrives with its stale attempts (default: lease + 3 beats).
    procs: run the consumers as OS processes (live Valkey only); the crash is a SIGKILL.
    """
    lease_s, beat_s, job_s = positive("lease", lease), positive("beat", beat), positive("job", job)
    crash_s = positive("crash_at", crash_at)
    if crash_s >= job_s:
        raise BadParameter(f"crash_at must fall inside the job (< job = {job_s:g} s), got {crash_at!r}")
    late_s = lease_s + 3 * beat_s if late_at is None else positive("late_at", late_at)
    check_name(queue)
    params = {"lease": lease_s, "beat": beat_s, "job": job_s, "crash_at": crash_s, "late_at": late_s,
              "queue": queue, "procs": bool(procs)}
    with run_on(backend, "reaper", params, **connect_kw) as run:
        q = Queue(run.backend, queue, prefix=run.prefix)
        if procs:
            from ..procs import run_reaper_processes

            if not run.backend.live:
                raise BadParameter("procs needs a live server (--backend valkey or a URL); "
                                   "fakeredis lives in one process")

            run_reaper_processes(run, q, lease_s, beat_s, job_s, crash_s, late_s, JOB_ID)
        else:
            _reaper_in_process(run, q, lease_s, beat_s, job_s, crash_s, late_s)
        run.timeline.counts.update(_counts(q, 1, len(run.timeline.of("complete"))))
        run.timeline.verdict = reaper_verdict(run.timeline)
    return run.timeline


def _reaper_in_process(run: Run, q: Queue, lease_s, beat_s, job_s, crash_s, late_s) -> None:
    clock = run.clock
    ms = 1000.0
    q.enqueue(JOB_ID, "order")
    run.event("producer", "enqueue", job=JOB_ID)
    w1 = Consumer(q, "worker-1", lease_ms=lease_s * ms, beat_ms=beat_s * ms, work_ms=job_s * ms, run=run)
    w2 = Consumer(q, "worker-2", lease_ms=lease_s * ms, beat_ms=beat_s * ms, work_ms=job_s * ms, run=run)

    def script():
        w1.start()
        yield clock.timeout(beat_s * ms / 2)  # the two beats interleave
        w2.start()
        yield clock.timeout(max(0.0, crash_s * ms - (clock.now_ms - run.t0_ms)))
        w1.crash()
        yield clock.timeout(max(0.0, late_s * ms - (clock.now_ms - run.t0_ms)))
        late_completion(run, q, "worker-1", JOB_ID, attempts=1)
        while q.sizes()["done"] < 1:
            yield clock.timeout(beat_s * ms)
        w2.stop()

    _play(run, script(), (late_s + 2 * job_s + 2 * lease_s + 4 * beat_s) * ms, beat_s * ms, [w1, w2])


def _play(run: Run, script, horizon_ms: float, settle_ms: float, consumers: list[Consumer]) -> None:
    """Run `script` to its end (at most `horizon_ms`), let stopped consumers settle, then end any
    process still running, so nothing of this run touches the store after its keys are gone."""
    clock = run.clock
    proc = clock.process(script)
    limit = clock.timeout(horizon_ms)
    run_clock(clock, until=clock.env.any_of([proc, limit]))
    run_clock(clock, clock.now_ms + settle_ms)
    for consumer in consumers:
        consumer.halt()
    run_clock(clock, clock.now_ms + 1)


def late_completion(run: Run, q: Queue, actor: str, job_id: str, attempts: int) -> bool:
    """A worker presumed dead sends its completion (and a renewal) with its old attempts."""
    ext = q.extend([(job_id, attempts)], 1000.0)
    run.event(actor, "late_extend", job=job_id, attempts=attempts, held=job_id not in ext.lost,
              where=q.where(job_id))
    try:
        q.complete(job_id, attempts)
    except StaleToken:
        run.event(actor, "complete_refused", job=job_id, attempts=attempts, late=True)
        return False
    run.event(actor, "complete", job=job_id, attempts=attempts, late=True)
    return True


def reaper_verdict(timeline: Timeline) -> dict[str, Any]:
    p = timeline.params
    claim = _first(timeline, "claim")
    job = claim.data["job"] if claim else JOB_ID
    crash = _first(timeline, "crash")
    reap = _reaped(timeline, job)
    reclaim = next((e for e in timeline.of("claim") if e.data.get("attempts", 0) >= 2), None)
    late = next((e for e in timeline.events if e.data.get("late")), None)
    done = next((e for e in timeline.of("complete") if not e.data.get("late")), None)
    extend = _first(timeline, "late_extend")
    v: dict[str, Any] = {
        "claimed_at": claim.t if claim else None,
        "crashed_at": crash.t if crash else None,
        "lease_deadline": claim.data.get("deadline") if claim else None,
        "reaped_at": reap.t if reap else None,
        "reaped_by": reap.actor if reap else None,
        "reclaimed_at": reclaim.t if reclaim else None,
        "reclaimed_by": reclaim.actor if reclaim else None,
        "reclaim_attempts": reclaim.data["attempts"] if reclaim else None,
        "completed_at": done.t if done else None,
        "stale_complete_refused": bool(late is not None and late.kind == "complete_refused"),
        "stale_extend_held": bool(extend.data.get("held")) if extend else None,
        "lost": timeline.counts.get("lost"),
    }
    if claim and reap:
        v["back_in_pending_after"] = round(reap.t - claim.t, 3)
        v["within_lease_plus_beat"] = reap.t - claim.t <= p["lease"] + p["beat"] + 1e-9
    else:
        v["back_in_pending_after"], v["within_lease_plus_beat"] = None, False
    v["summary"] = reaper_readout(p, v)
    return v


def _s(x) -> str:
    """A model time for a sentence, to a tenth of a second: a live run's jitter stays out of the prose."""
    return "never" if x is None else f"{round(x, 1):g} s"


def reaper_readout(p: dict[str, Any], v: dict[str, Any]) -> str:
    if v["reaped_at"] is None:
        return f"The crashed job was never reaped (lease {p['lease']:g} s, beat {p['beat']:g} s); lost {v['lost']}."
    refused = "was refused" if v["stale_complete_refused"] else "was ACCEPTED (a stale write landed)"
    return (f"worker-1 died at {_s(v['crashed_at'])} holding the job; its {p['lease']:g} s lease ran out on the "
            f"server clock at {_s(v['lease_deadline'])}, {v['reaped_by']}'s beat reaped it back to pending at "
            f"{_s(v['reaped_at'])} ({_s(v['back_in_pending_after'])} after the claim, within lease + beat: "
            f"{'yes' if v['within_lease_plus_beat'] else 'no'}), re-claimed it with attempts "
            f"{v['reclaim_attempts']} and finished it at {_s(v['completed_at'])}; worker-1's late completion "
            f"{refused}. Lost: {v['lost']}.")


# -- the heartbeat, on the queue ------------------------------------------------------------------
def queue_heartbeat(lease: float = 30, job: float = 75, renew: Any = "none", beat: float = 5, queue: str = "orders",
                    backend=None, **connect_kw: Any) -> Timeline:
    """A `job`-second job under a `lease`-second lease on the queue. renew none: nobody extends, the
    reaper returns the job and a second consumer runs it while the first still does. renew half (or
    any fraction): the holder's one batched extend per tick keeps the lease, the job finishes once."""
    lease_s, job_s, beat_s = positive("lease", lease), positive("job", job), positive("beat", beat)
    cadence = parse_cadence(renew)
    check_name(queue)
    params = {"lease": lease_s, "job": job_s, "beat": beat_s, "renew": cadence.name, "cadence": cadence.fraction}
    ms = 1000.0
    with run_on(backend, "queue-heartbeat", params, **connect_kw) as run:
        clock = run.clock
        q = Queue(run.backend, queue, prefix=run.prefix)
        q.enqueue(check_id(JOB_ID), "order")
        opts = dict(lease_ms=lease_s * ms, beat_ms=beat_s * ms, work_ms=job_s * ms, renew=cadence.fraction, run=run)
        holder, other = Consumer(q, "worker-1", **opts), Consumer(q, "worker-2", **opts)

        def script():
            holder.start()
            yield clock.timeout(beat_s * ms / 2)
            holder.stop()  # the holder of the figure runs this one job, then leaves
            other.start()
            while q.sizes()["done"] < 1 or holder.held or other.held:
                yield clock.timeout(beat_s * ms)
            holder.stop()
            other.stop()

        _play(run, script(), (2 * job_s + 2 * lease_s + 4 * beat_s) * ms, beat_s * ms, [holder, other])
        run.timeline.counts.update(_counts(q, 1, len(run.timeline.of("complete"))))
        run.timeline.verdict = queue_heartbeat_verdict(run.timeline)
    return run.timeline


def queue_heartbeat_verdict(timeline: Timeline) -> dict[str, Any]:
    p = timeline.params
    runs = timeline.of("work_start")
    reap = timeline.of("reap")
    lapsed = [i.end for i in timeline.spans("lease") if i.data.get("ended") == "lapsed"]
    spans = [(i.start, i.end if i.end is not None else float("inf")) for i in timeline.spans("run")]
    overlap = any(max(a[0], b[0]) < min(a[1], b[1]) for k, a in enumerate(spans) for b in spans[k + 1:])
    v = {
        "lapsed_at": min(lapsed) if lapsed else None,
        "reaped_at": reap[0].t if reap else None,
        "renewals": len(timeline.of("renew")),
        "runs": len(runs),
        "double_run": overlap,
        "completions_refused": len(timeline.of("complete_refused")),
        "finished_once": len(timeline.of("complete")) == 1,
    }
    label = parse_cadence(p["renew"]).label
    if v["reaped_at"] is not None:
        v["summary"] = (f"{label}: the {p['lease']:g} s lease ran out at {_s(v['lapsed_at'])}, the reaper returned "
                        f"the job at {_s(v['reaped_at'])} to a second consumer, and the {p['job']:g} s job ran "
                        f"{'twice' if v['runs'] == 2 else str(v['runs']) + ' times'}"
                        f"{', both runs overlapping' if overlap else ''}; the first holder's completion was refused.")
    else:
        v["summary"] = (f"{label}: {v['renewals']} batched extends held the {p['lease']:g} s lease to the end; "
                        f"the {p['job']:g} s job finished once.")
    return v
