"""Chaos: many consumers, many jobs, random crashes and stop-the-world pauses; count what was lost
and which effects landed twice.

Each job's effect is written to a results store (`emq:{q}:effects`). Fencing on: one script checks
the caller's attempts and that the job is still active, writes the effect and settles the job in
the same step. Fencing off: the effect is written unchecked and the completion follows. A pause
longer than the lease lets the reaper hand the job to someone else; when the paused consumer
wakes, fencing refuses its write, and without fencing the effect lands a second time.

On live Valkey the consumers are OS processes (SIGKILL, SIGSTOP/SIGCONT); on fakeredis they are
SimPy processes on the virtual clock with the same faults simulated. A supervisor replaces every
crashed consumer, so the run ends when every job is done (or at a generous horizon: then `lost`
counts what never finished).
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from typing import Any

from ..store.clock import to_ms
from ..core import ranges
from ..queue.consumer import Consumer, unusual
from ..core.errors import BadParameter
from ..lease.designs import DESIGNS, NONE, lookup_design
from ..queue import invariants
from ..queue.jobs import Queue, check_name
from ..core.kinds import Kind
from ..core.timeline import Filtered, Record, Timeline, Verdict
from ..core.words import ModeWords, plural, seconds
from .run_harness import Run, mode_words, positive, run_on
from .fault_plan import fault_plan, fault_wait, undelivered

@dataclass(frozen=True, kw_only=True)
class Params(Record):
    """A chaos run's parameters: consumers, jobs, fencing, the faults (crashes, pauses of
    `pause_seconds` each), the lease, beat and job length (model seconds), the fault plan's seed,
    jobs a consumer drains per beat, how consumers hold their jobs, and whether they are OS processes
    (decided once the store is open: a live server's runs are)."""

    workers: int
    jobs: int
    fencing: str
    kills: int
    pauses: int
    lease: float
    beat: float
    job: float
    seed: int
    pause_seconds: float
    drain: int = 5  # jobs per beat: the reaper gets its turn while the queue is still busy
    design: str = NONE
    procs: bool = False

    @property
    def mode(self) -> str:
        return f"fencing {self.fencing}"

    def cost(self) -> tuple[float, float]:
        """(model span, store steps): four times the jobs' work spread over the consumers, and 14
        leases; four steps a job and every consumer's beats (and the monitor's) over the span."""
        span = 4 * self.jobs * self.job / self.workers + 14 * self.lease
        return span, 4 * self.jobs + (self.workers + 1) * span / self.beat


@dataclass(frozen=True, kw_only=True)
class ChaosVerdict(Verdict):
    """The facts of a chaos run: the counts the words quote, so the verdict alone says what happened."""

    fencing: str
    all_done: bool
    no_duplicates: bool
    finished_at: float | None
    jobs: int
    completed: int
    lost: int
    kills: int
    pauses: int
    reaped: int
    refused_writes: int
    duplicate_effects: int
    planned: dict[str, int]  # {"kills": K, "pauses": P}: the faults the plan held
    undelivered: list[dict[str, Any]]  # [{at, kind, why}]: planned faults that could not land


def _choice(what: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise BadParameter(f"{what} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def chaos(workers: int = 4, jobs: int = 1000, fencing: str = "on", kills: int | None = None,
          pauses: int | None = None, lease: float | None = None, beat: float | None = None, job: float | None = None,
          seed: int = 1, procs: str = "auto", progress: str = "auto",
          queue: str = "orders", design: str = NONE, backend: Any = None) -> Timeline:
    """Run `jobs` jobs through `workers` consumers under `kills` crashes and `pauses` pauses.

    kills, pauses: how many of each (defaults: workers, 2 × workers); a pause lasts 2 × lease.
    lease, beat, job: model seconds (defaults 10, 1, 0.5). fencing: on | off. procs: auto | on |
    off (OS processes; on needs live Valkey). The figure is drawn by `emqlab.view.figures.chaos_figure`.
    progress: auto | on | off, a bar on stderr. Counts: jobs, completed, lost, duplicate_effects.
    design: how consumers hold their jobs (`emqlab.lease.designs`: none, per-job, sweep, session; renewing
    designs renew at TTL/2). A pause of 2 × lease outlives a lease, a renewal and a session alike.
    """
    workers, jobs = ranges.within("workers", workers), ranges.within("jobs", jobs)
    kills = workers if kills is None else ranges.within("kills", kills)
    pauses = 2 * workers if pauses is None else ranges.within("pauses", pauses)
    fencing = _choice("fencing", fencing, ("on", "off"))
    procs = _choice("procs", procs, ("auto", "on", "off"))
    progress = _choice("progress", progress, ("auto", "on", "off"))
    design = lookup_design(design).name  # a registered design, or one line naming them
    lease_s = positive("lease", 10 if lease is None else lease)
    beat_s = positive("beat", 1 if beat is None else beat)
    job_s = positive("job", 0.5 if job is None else job)
    seed = ranges.within("seed", seed)
    check_name(queue)
    params = Params(workers=workers, jobs=jobs, fencing=fencing, kills=kills, pauses=pauses, lease=lease_s,
                    beat=beat_s, job=job_s, seed=seed, pause_seconds=2 * lease_s, design=design)
    with run_on(backend, "chaos", params, cost=params.cost()) as run:
        use_procs = run.backend.live if procs == "auto" else procs == "on"
        if use_procs and not run.backend.live:
            raise BadParameter("procs on needs a live server (--backend valkey or a URL); "
                               "fakeredis lives in one process")
        params = run.timeline.params = params.but(procs=use_procs)
        q = Queue(run.backend, queue, prefix=run.prefix)
        q.enqueue_many([f"J{i:06d}" for i in range(jobs)], "effect")
        plan = fault_plan(params, random.Random(seed))
        bar = _bar(jobs, progress)
        try:
            if use_procs:
                from .os_processes import run_chaos_processes

                run_chaos_processes(run, q, params, plan, bar)
            else:
                _chaos_in_process(run, q, params, plan, bar)
        finally:
            bar.close()
        run.timeline.counts.update(chaos_counts(q, run.timeline, jobs))
        run.timeline.counts["planned"] = {"kills": params.kills, "pauses": params.pauses}
        run.timeline.counts["undelivered"] = [{"at": e.data["at"], "kind": e.data["fault"], "why": e.data["why"]}
                                              for e in run.timeline.of(Kind.FAULT_UNDELIVERED)]
        run.timeline.verdict = verdict(run.timeline)
    return run.timeline


def _bar(total: int, mode: str):
    from tqdm import tqdm

    disable = mode == "off" or (mode == "auto" and not sys.stderr.isatty())
    return tqdm(total=total, desc="jobs done", unit="job", file=sys.stderr, disable=disable, leave=False)


def _chaos_in_process(run: Run, q: Queue, params: Params, plan, bar) -> None:
    clock = run.clock
    effect = "fenced" if params.fencing == "on" else "unfenced"
    opts = dict(lease_ms=to_ms(params.lease), beat_ms=to_ms(params.beat), work_ms=to_ms(params.job),
                effect=effect, drain_limit=params.drain, design=DESIGNS[params.design],
                # a thousand jobs' routine steps would drown the timeline: keep faults, refusals, reaps,
                # effects that landed twice, and the pause bands
                recorder=Filtered(run, keep_event=unusual(), keep_interval=lambda kind, data: kind == "pause"))
    names = iter(f"worker-{i}" for i in range(1, 10_000))
    slots = [Consumer(q, next(names), **opts) for _ in range(params.workers)]
    everyone = list(slots)
    jobs = params.jobs

    def replace(slot: int):
        yield clock.timeout(to_ms(params.beat))  # the supervisor's restart delay
        slots[slot] = Consumer(q, next(names), **opts)
        everyone.append(slots[slot])
        slots[slot].start()

    handled, horizon = [0], [False]  # the plan's faults landed or reported undelivered; the run's horizon passed

    def faults():
        t0, wait_ms = clock.now_ms, to_ms(fault_wait(params))
        for at, fault, slot in plan:
            yield clock.timeout(max(0.0, to_ms(at) - (clock.now_ms - t0)))
            due = clock.now_ms
            while not (free := [k for k in range(len(slots)) if not (slots[k].crashed or slots[k].world.paused)]):
                if clock.now_ms - due >= wait_ms or horizon[0]:
                    break
                yield clock.timeout(to_ms(params.beat))  # every consumer is down or paused: look again a beat on
            if horizon[0]:
                return  # the run is winding down: what is left is reported undelivered below
            handled[0] += 1
            if not free:
                undelivered(run, at, fault, f"no consumer was awake and alive for {seconds(fault_wait(params))} "
                                           "after it fell due")
                continue
            slot = slot if slot in free else free[0]  # a busy victim passes the fault on
            victim = slots[slot]
            if fault == "crash":
                victim.crash()
                clock.process(replace(slot))
            else:
                clock.process(victim.pause(to_ms(params.pause_seconds)))

    def monitor():
        seen = 0
        while True:
            sizes = q.sizes()
            run.event("monitor", Kind.SAMPLE, **sizes)
            bar.update(sizes["done"] - seen)
            seen = sizes["done"]
            if seen >= jobs:
                return
            yield clock.timeout(to_ms(params.beat))

    for consumer in slots:
        consumer.start()
    striking = clock.process(faults())
    watch = clock.process(monitor())
    expected = jobs * params.job / params.workers
    limit = clock.timeout(to_ms(4 * expected + 10 * params.lease))
    # the run goes on until every job is settled and every planned fault has landed (or waited its bound)
    clock.run(until=clock.env.any_of([clock.env.all_of([watch, striking]), limit]))
    if striking.is_alive:  # the horizon came first: what was still to strike never landed
        horizon[0] = True
        for at, fault, _ in plan[handled[0]:]:
            undelivered(run, at, fault, "the run reached its horizon before it fell due")
    for consumer in everyone:
        consumer.stop()
    clock.run(until=clock.now_ms + 2 * to_ms(params.pause_seconds))
    for consumer in everyone:
        consumer.halt()
    clock.run(until=clock.now_ms + 1)


def chaos_counts(q: Queue, timeline: Timeline, jobs: int) -> dict[str, Any]:
    """The run's counts, from one snapshot of every job (`emqlab.queue.invariants.read`), and the queue's
    invariants judged on it (`invariants_broken`: how many violations of each, one per job or worker
    index; one_effect is the duplicate effects a run with fencing off shows). Only the invariants that
    end snapshot can judge are counted (`invariants.evaluable`: one_place, never_lost, one_effect,
    done_has_effect, sessions_agree); the others need what a run's history holds (fencing values handed
    out, refusals, granted deadlines, accepted operations) and are left out, not counted as held."""
    ids = [f"J{i:06d}" for i in range(jobs)]
    snap = invariants.read(q, ids)
    places = [row.places for row in snap.jobs.values()]
    done, dead = places.count(("done",)), places.count(("dead",))
    effects = snap.effects
    facts = invariants.Facts(snapshot=snap)
    judged = invariants.evaluable(facts)
    broken = invariants.judge(facts, judged)
    return {
        "jobs": jobs,
        "completed": done,
        "dead": dead,  # a place too: a job that used up its attempts is accounted for, not lost
        "lost": jobs - done - dead,
        "duplicate_effects": sum(n - 1 for n in effects.values() if n > 1),
        "jobs_with_duplicates": sum(1 for b in broken if b.invariant == "one_effect"),
        "effects_missing": sum(1 for job in ids if effects.get(job, 0) == 0),
        "invariants_broken": {name: sum(1 for b in broken if b.invariant == name) for name in judged},
        "kills": len(timeline.of(Kind.CRASH)),
        "pauses": len(timeline.of(Kind.PAUSE_START)),
        "refused_writes": len(timeline.of(Kind.COMPLETE_REFUSED)),
        # what the server did (its reap script's counter), not what surviving workers reported: a
        # worker that reaped and then died before it reported would make the sum of events short
        "reaped": q.reaped(),
    }


def verdict(timeline: Timeline) -> ChaosVerdict:
    c, p = timeline.counts, timeline.params
    samples = timeline.of(Kind.SAMPLE)
    v = ChaosVerdict(
        fencing=p.fencing,
        all_done=c["lost"] == 0,
        no_duplicates=c["duplicate_effects"] == 0,
        finished_at=next((e.t for e in samples if e.data["done"] >= p.jobs), None),
        **{k: c[k] for k in ("jobs", "completed", "lost", "kills", "pauses", "reaped", "refused_writes",
                             "duplicate_effects", "planned", "undelivered")},
    )
    return v.worded(words(p, v))


def words(p: Params, v: ChaosVerdict) -> ModeWords:
    """The chaos run in words: a headline with the counts that matter (completed, lost, duplicate effects),
    the conditions and the rest as facts, and the static verdict line, each number read from `v`."""
    crashes, pauses = plural(v.kills, "crash", "crashes"), plural(v.pauses, "pause")
    if v.fencing == "on":
        refused = plural(v.refused_writes, "stale write") if v.refused_writes else "no stale write"
        fence = f"the effect store refused {refused}"
    else:
        fence = "the effect store accepted every write unchecked"
    held = f", design {p.design}" if DESIGNS[p.design].renews else ""
    label = f"fencing {v.fencing}"
    headline = (f"{label}: {v.completed} of {v.jobs} jobs completed, {v.lost} lost; "
                f"duplicate effects: {v.duplicate_effects}.")
    facts = (f"{p.workers} consumers{held}, {crashes} and {pauses}"
             f"{' of ' + seconds(p.pause_seconds) if v.pauses else ''} (lease {seconds(p.lease)})",
             f"{plural(v.reaped, 'lease')} reaped back to pending", fence)
    if v.undelivered:  # a planned fault fell on nobody: the counts above are short of the plan, and say so
        first = v.undelivered[0]
        planned = v.planned["kills"] + v.planned["pauses"]
        facts += (f"{len(v.undelivered)} of {planned} planned faults could not land (the first, a "
                  f"{first['kind']} due at {seconds(first['at'])}: {first['why']})",)
    static = (f"{v.completed}/{v.jobs} done · lost {v.lost} · duplicate effects {v.duplicate_effects} · "
              f"{crashes} · {pauses}")
    return ModeWords(label, headline, static, facts)


figure_words = mode_words(
    "Many consumers work through many jobs while some crash and some are stopped for "
    "longer than their lease. The reaper gives every abandoned job back, so nothing is "
    "lost; only when the effect store checks attempts does each effect land once.",
    "Point at a run to read its counts.")
