"""The course's second figure, measured: one worker holds K leases and keeps them fresh with K
per-job timers, one sweep or one session. Every renewal round trip is an event of the timeline; the counts
come from the client (both backends) and, on a live server, from INFO commandstats as well.

The leases are the worker-side lock subkeys of one queue, `emq:{orders}:job:<id>:lock`, under the
run's prefix: one hashtag, so a sweep batch lives on one cluster slot. The session design keeps its
one lease beside them, `emq:{orders}:worker:worker-1:session`, and each job key names the worker.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import BadParameter
from ..core.kinds import Kind
from ..core.ranges import within
from ..core.timeline import Record, Timeline, Verdict, json_name
from ..core.words import FigureWords, ModeWords, plural, seconds, words_of_modes
from ..lease.cadence import cadence_help, parse_cadence
from ..lease.designs import DESIGNS, SWEEP, check_design, design_names, make_plane
from ..lease.leases import new_token
from ..lease.planes import WRITE_CHUNK, Call, Holding, check_count
from ..store.commandstats import ServerCounter
from ..store.clock import to_ms, to_s
from .run_harness import Run, positive, run_on

SCENARIO = "renewal_cost"
EVENT_LIMIT = 1000  # above this many round trips per tick, only per-tick events are recorded



def _count(n: int, noun: str) -> str:
    """"one bounded round trip", "6 extend round trips"."""
    return f"one {noun}" if n == 1 else plural(n, noun)


def static_verdict(design: str, jobs: int = 6) -> str:
    """The course's fixed verdict for a design holding `jobs` leases (K = 6 on the page), in one
    line, read from the registry: what the design promises a tick costs, and what that cost grows with."""
    d = DESIGNS[check_design(design)]
    return f"{_count(d.plane.round_trips_per_tick(jobs), d.trip)} each tick, {d.cost}."


@dataclass(frozen=True, kw_only=True)
class Params(Record):
    """A renewal-cost run's parameters, checked: K (`jobs`), the design, the ticks, the sweep's batch (None:
    the design's default), the lease and its cadence (name, and seconds between ticks), the queue whose
    hashtag the keys carry, and each steal as [model second, job]."""

    jobs: int
    design: str
    ticks: int
    batch: int | None
    lease: float
    cadence: str
    cadence_s: float
    queue: str = "orders"
    steal: tuple = field(default=(), metadata=json_name("steal", load=lambda s: tuple(tuple(x) for x in s)))

    @property
    def mode(self) -> str:
        return self.design

    def cost(self) -> tuple[float, float]:
        """(model span, store steps): the ticks, and what the design costs per lease held — to take it,
        then each tick (`emqlab.lease.designs`: a per-job lease is a round trip a tick, a swept one about a
        quarter, a session's jobs nothing but their first record)."""
        d = DESIGNS[self.design]
        span = self.ticks * self.cadence_s
        return span, self.jobs * (d.setup_steps_per_lease + self.ticks * d.steps_per_lease) + self.ticks


@dataclass(frozen=True, kw_only=True)
class CostVerdict(Verdict):
    """The facts of a renewal-cost run, read off its counts and events."""

    design: str
    jobs: int
    ticks: int
    batch: int | None
    round_trips_by_tick: list
    calls_by_tick: list
    round_trips_per_tick: float
    commands_per_tick: float
    wall_ms_per_tick: float  # rounded as the run's words quote it
    all_held: bool
    held_at_end: int
    lost: list  # job numbers a renewal found lost
    lost_at: dict  # {"job N": model second it was told}
    stopped: list  # job numbers whose holder stopped
    taken: dict  # {job: model second another token took its key (session: the session key)}
    session_taken_at: float | None


def parse_steals(steal: Any, jobs: int) -> list[tuple[float, int]]:
    """Another holder takes job J's key at model second T: `(T, J)`, a list of them, or "T:J,T:J"."""
    if steal is None or steal == "" or steal == []:
        return []
    if isinstance(steal, str):
        items = [part.split(":") for part in steal.split(",") if part.strip()]
    elif isinstance(steal, tuple) and len(steal) == 2 and not isinstance(steal[0], (tuple, list)):
        items = [steal]
    else:
        items = list(steal)
    out = []
    for item in items:
        try:
            at, job = float(item[0]), int(item[1])
        except (TypeError, ValueError, IndexError):
            raise BadParameter(f"steal {item!r} must be AT:JOB (model seconds, job number), e.g. 20:3") from None
        if not 1 <= job <= jobs:
            raise BadParameter(f"steal {':'.join(map(str, item))!r} needs a job number from 1 to {jobs}")
        out.append((float(within("steal_at", at)), job))
    return out


def lease_key(run: Run, queue: str, job: int) -> str:
    return run.key("emq", "{" + queue + "}", "job", f"{job:06d}", "lock")


def let_go(be, plane, held: list[Holding]) -> int:
    """The token-checked release of every lease in `held` (a session design: of its one lease, which its jobs
    hang on), pipelined in chunks as the acquire is. Returns how many keys it deleted."""
    pairs = ([(plane.session_key, plane.token)] if plane.per_worker else [(h.key, h.token) for h in held])
    deleted = 0
    for i in range(0, len(pairs), WRITE_CHUNK):
        pipe = be.client.pipeline(transaction=False)
        for key, token in pairs[i:i + WRITE_CHUNK]:
            be.scripts("release_lease", [key], [token], client=pipe)
        deleted += sum(map(int, pipe.execute()))
    return deleted


def _per_tick(calls: list[Call], ticks: int) -> list[dict[str, Any]]:
    rows = {n: {"tick": n, "round_trips": 0, "commands": 0, "wall_ms": 0.0, "leases": 0, "lost": []}
            for n in range(1, ticks + 1)}
    for call in calls:
        row = rows[call.tick]
        row["t_ms"] = min(row.get("t_ms", call.t_ms), call.t_ms)
        row["round_trips"] += call.round_trips
        row["commands"] += call.commands
        row["wall_ms"] += call.wall_ms
        row["leases"] += call.leases
        row["lost"] += [h.index + 1 for h in call.lost]
    return [rows[n] for n in sorted(rows)]


def _per(total: float, ticks: int) -> float | int:
    value = total / ticks
    return int(value) if float(value).is_integer() else round(value, 3)


def renewal_scaling(backend, ks=(1, 6, 100, 1000), ticks: int = 2,
                    designs: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Each renewing design (or those named) at each K, measured on `backend`: the rows
    `plot.renewal.draw_scaling` reads."""
    rows = []
    for k in ks:
        for design in designs or design_names(renewing=True):
            c = renewal_cost(jobs=k, design=design, ticks=ticks, backend=backend).counts
            rows.append({"design": f"emqlab {design}", "k": k, "rt_per_tick": c["round_trips_per_tick"],
                         "wall_ms_per_tick": c["wall_ms_per_tick"], "all_held": c["all_held"],
                         "broke": not c["all_held"]})
    return rows


def renewal_cost(jobs: int = 6, design: str = SWEEP, ticks: int = 4, batch: int | None = None, lease: float = 30,
                 cadence: Any = "half", steal: Any = None, queue: str = "orders", backend=None,
                 bounded: bool = True) -> Timeline:
    """Hold `jobs` leases for `ticks` renewal ticks with one design; return the timeline.

    design: a renewing design of `emqlab.lease.designs` (per-job | sweep | session). lease: model seconds.
    cadence: half (TTL/2), third, or a fraction of the lease. batch: sweep leases per script call
    (default bounded to stay under 5 ms a call). steal: (AT, JOB) or "AT:JOB,…": another token
    takes that job's key at model second AT (session: the worker's session key, which every job
    hangs on); the next renewal reports it lost (session: every job) and each holder stops.
    backend: a Backend, or a StoreSpec (or its text: fake / valkey / a URL). bounded: refuse a run whose whole cost is over the
    limits of `emqlab.core.ranges.check_run` (the benchmark, which holds up to millions of leases on
    purpose, passes False; every number is still checked against its range).

    The timeline's counts carry the CLI's JSON keys: design, jobs, ticks, round_trips_per_tick,
    commands_per_tick, wall_ms_per_tick, server_us_per_tick (None on fakeredis), all_held.
    Events: `round_trip` (one per round trip while a tick has at most 1000; actor = design),
    `tick` (one per tick, with its totals), `take` (actor thief), `lease_lost`/`work_stopped`
    (actor `job N`), and `let_go` (actor worker: after the last tick it releases the leases it still
    holds; a stepper leaves it out, as it does the ticks' totals). The verdict carries its `headline`,
    `facts` and `static` (the course's line).
    """
    jobs = check_count("jobs", jobs, "K, the leases the worker holds")
    design = check_design(design)
    ticks = check_count("ticks", ticks, "renewal ticks to run")
    lease_s = positive("lease", lease)
    cad = parse_cadence(cadence)
    if cad.fraction is None:
        raise BadParameter(f"renewal cost needs a renewal cadence; allowed: {cadence_help(renewing=True)}")
    if batch is not None:
        batch = check_count("batch", batch, "leases per sweep script call")
    steals = parse_steals(steal, jobs)
    lease_ms, every_ms = to_ms(lease_s), to_ms(cad.fraction * lease_s)
    params = Params(jobs=jobs, design=design, ticks=ticks, batch=batch, lease=lease_s, cadence=cad.name,
                    cadence_s=round(to_s(every_ms), 6), queue=queue, steal=tuple(steals))

    with run_on(backend, SCENARIO, params, cost=params.cost() if bounded else None) as run:
        be, clock = run.backend, run.clock
        keys = [lease_key(run, queue, n) for n in range(1, jobs + 1)]
        tokens = [new_token() for _ in keys]
        detail = DESIGNS[design].plane.round_trips_per_tick(jobs) <= EVENT_LIMIT
        batched = DESIGNS[design].plane.batched

        def on_call(call: Call) -> None:
            if detail:
                data = {"tick": call.tick, "leases": call.leases, "commands": call.commands,
                        "wall_ms": round(call.wall_ms, 3), "lost": [h.index + 1 for h in call.lost]}
                if call.job is not None:
                    data["job"] = call.job + 1
                if batched:
                    data["call_sizes"] = list(call.sizes)  # leases in each script call of the round trip
                run.event(design, Kind.ROUND_TRIP, **data)

        def on_lost(holding: Holding) -> None:
            # the holder is told in the same instant as the reply; it stops its work there
            t = run.ms_to_t(holding.lost_at_ms)
            run.timeline.add(t, f"job {holding.index + 1}", Kind.LEASE_LOST, key=holding.key)
            run.timeline.add(t, f"job {holding.index + 1}", Kind.WORK_STOPPED,
                             reason="the renewal said the lease is gone")

        plane = make_plane(design, be, lease_ms, every_ms, batch=batch, ticks=ticks, on_call=on_call,
                           on_lost=on_lost, worker="worker-1")
        plane.hold_all(zip(keys, tokens))

        def thief(at_s: float, job: int):
            yield clock.timeout(max(0, to_ms(at_s) - (clock.now_ms - run.t0_ms)))
            # as if the lease had lapsed and another worker re-took the key with its own token; the
            # session design's jobs hang on the worker's session, so the thief takes that
            key = plane.steal_key(plane.holdings[job - 1])
            be.client.set(key, new_token(), px=clock.to_server_ms(lease_ms))
            run.event("thief", Kind.TAKE, job=job, **({"key": key, "session": True} if key != keys[job - 1] else {}))

        server = ServerCounter(be.client) if be.live else None

        def worker():
            # on a real clock the time 100 000 SETs take counts against the leases, as it would for
            # a real worker: the first tick is one cadence after the acquiring began, not after it ended
            yield clock.timeout(0)
            began_ms = clock.now_ms
            ttl_s = to_s(plane.acquire())
            run.event("worker", Kind.ACQUIRE, leases=jobs, ttl=round(ttl_s, 3))
            if server is not None:
                server.start()  # after the acquire: the window holds renewal calls only
            plane.start(from_ms=began_ms)

        clock.process(worker())
        for at_s, job in steals:
            clock.process(thief(at_s, job))
        clock.run()
        if server is not None:
            server.stop()
        held = plane.still_held()

        rows = _per_tick(plane.calls, ticks)
        for row in rows:
            t = run.ms_to_t(row.pop("t_ms")) if "t_ms" in row else None
            if t is not None:
                run.timeline.add(t, "worker", Kind.TICK, **{**row, "wall_ms": round(row["wall_ms"], 3)})
        if held:  # the worker is done with its jobs: it lets go of what it still holds (no renewal, not counted)
            let_go(be, plane, held)
            # after its last round trip (a real clock's reading stands at the last step it scheduled)
            run.timeline.add(max([run.t, *(e.t for e in run.timeline.events)]), "worker", Kind.LET_GO, leases=len(held))
        lost_jobs = sorted(h.index + 1 for h in plane.lost)
        all_held = not lost_jobs and len(held) == jobs
        total_rt = sum(c.round_trips for c in plane.calls)
        total_cmd = sum(c.commands for c in plane.calls)
        counts = {
            "design": design,
            "jobs": jobs,
            "ticks": ticks,
            "round_trips_per_tick": _per(total_rt, ticks),
            "commands_per_tick": _per(total_cmd, ticks),
            # the median tick, as the benchmark reports it: the first tick, on a cold server, is slower
            "wall_ms_per_tick": round(statistics.median(r["wall_ms"] for r in rows) if rows else 0.0, 3),
            "server_us_per_tick": None if server is None else round(server.usec("evalsha") / ticks, 1),
            "server_calls_per_tick": None if server is None else _per(server.calls("evalsha"), ticks),
            "all_held": all_held,
            "batch": getattr(plane, "batch", None),
            "threads": 1,
            "lost": lost_jobs,
            "held_at_end": len(held),
        }
        if server is not None:
            counts["server_commandstats"] = renewal_commands(server.delta)
        run.timeline.counts.update(counts)
    timeline = run.timeline
    timeline.verdict = verdict(timeline)
    return timeline




# -- the facts, and the one place they are put into words ------------------------------------------
def renewal_commands(delta: dict) -> dict[str, dict[str, int]]:
    """The server's counts of the run's renewal commands: INFO commandstats over the run, less the run's own
    bookkeeping. The run-lease renews the run's prefix with EVAL (never EVALSHA) of the token-checked extend,
    a GET, a PEXPIRE and a PTTL each time: a run that lasts longer in real time than a third of the
    run-lease's TTL renews it, and those calls are not the design's."""
    own = delta["eval"].calls if "eval" in delta else 0
    out = {}
    for name, stat in delta.items():
        calls = stat.calls - (own if name in ("get", "pexpire", "pttl") else 0)
        if name != "eval" and calls:
            out[name] = {"calls": calls, "usec": stat.usec}
    return out


def _by_tick(timeline: Timeline, ticks: int, field: str) -> list[int]:
    """`field` of every tick, 1..ticks; a tick that sent nothing (every lease lost) counts 0."""
    seen = {e.data["tick"]: e.data[field] for e in timeline.of(Kind.TICK, "worker")}
    return [seen.get(n, 0) for n in range(1, ticks + 1)]


def verdict(timeline: Timeline) -> CostVerdict:
    """The facts of a renewal-cost run, read off its counts and events; then its words."""
    c = timeline.counts
    ticks = c["ticks"]
    taken = {}
    for e in timeline.of(Kind.TAKE, "thief"):
        taken.setdefault(e.data["job"], e.t)
    facts = CostVerdict(
        design=c["design"], jobs=c["jobs"], ticks=ticks, batch=c["batch"],
        round_trips_by_tick=_by_tick(timeline, ticks, "round_trips"),
        calls_by_tick=_by_tick(timeline, ticks, "commands"),
        round_trips_per_tick=c["round_trips_per_tick"],
        commands_per_tick=c["commands_per_tick"],
        wall_ms_per_tick=float(f"{c['wall_ms_per_tick']:.3g}"),
        all_held=c["all_held"], held_at_end=c["held_at_end"], lost=c["lost"],
        lost_at={e.actor: e.t for e in timeline.of(Kind.LEASE_LOST)},
        stopped=sorted(int(e.actor.split()[1]) for e in timeline.of(Kind.WORK_STOPPED)),
        taken=taken,
        session_taken_at=min((e.t for e in timeline.of(Kind.TAKE, "thief") if e.data.get("session")), default=None),
    )
    return facts.worded(words(timeline.params, facts))


def _cost(v: CostVerdict) -> tuple[str, str]:
    """What the ticks cost: (the round trips, per tick when every tick cost the same, else the total and
    each tick's; the script calls they carried)."""
    rts, calls, ticks = v.round_trips_by_tick, v.calls_by_tick, v.ticks

    def each(n: int) -> str:  # what one script call carries
        if DESIGNS[v.design].per_worker:
            return f"{', each' if n != 1 else ''} on the worker's session, none on a job"
        if not v.batch:
            return ", one per lease held"
        return f" of at most {plural(v.batch, 'lease')}{' each' if n != 1 else ''}"

    if len(set(rts)) == 1 and len(set(calls)) == 1:
        return (f"paid {plural(rts[0], 'round trip')} per tick over {plural(ticks, 'tick')}",
                f"{plural(calls[0], 'script call')} per tick{each(calls[0])}")
    listed = (", ".join(map(str, rts[:-1])) + f", then {rts[-1]}" if ticks <= 6 else f"from {min(rts)} to {max(rts)} a tick")
    return (f"paid {plural(sum(rts), 'round trip')} over {plural(ticks, 'tick')} ({listed})",
            f"{plural(sum(calls), 'script call')} in all{each(sum(calls))}")


def _lost(v: CostVerdict) -> str:
    """Which leases a renewal found gone (lapsed) or re-owned (taken first), when, and whether each holder stopped."""
    def state(job: int) -> str:
        taken = v.taken.get(job)
        return "re-owned" if taken is not None and taken <= v.lost_at[f"job {job}"] else "gone"

    lost = v.lost
    all_stopped = set(lost) <= set(v.stopped)
    if DESIGNS[v.design].per_worker:  # one lease for every job: the renewal that finds it gone loses them all
        first, taken = min(v.lost_at.values()), v.session_taken_at
        whose = "its one job" if len(lost) == 1 else f"all {len(lost):,} jobs"
        return (f"the renewal at {seconds(first)} found the worker's session {'re-owned' if taken is not None and taken <= first else 'gone'} "
                f"and told the holders of {whose} at once{', and each stopped' if all_stopped else ''}")
    if len(lost) == 1:
        job = lost[0]
        return (f"the renewal at {seconds(v.lost_at[f'job {job}'])} found job {job}'s lease {state(job)} and told "
                f"its holder at once{', which stopped' if all_stopped else ''}")
    states = " or ".join(sorted({state(job) for job in lost}))
    shown = ", ".join(f"job {j} at {seconds(v.lost_at[f'job {j}'])}" for j in lost[:5])
    more = f" and {len(lost) - 5} more" if len(lost) > 5 else ""
    return (f"renewals found {len(lost)} leases {states} ({shown}{more}) and told each holder at once"
            f"{', and each stopped' if all_stopped else ''}")


def _held(v: CostVerdict) -> list[str]:
    """How many leases were still held at the end, and how many lapsed with no renewal saying so."""
    if v.all_held:
        return ["every lease was held to the end"]
    others, held = v.jobs - len(v.lost), v.held_at_end
    if others == 0:
        parts = []  # every lease was reported lost: nothing else to hold
    elif v.lost and held == others:
        parts = ["the other lease stayed held" if held == 1 else f"the other {held} leases stayed held"]
    elif held == 0:
        parts = ["no lease was held at the end"]
    else:
        parts = [f"{held} of {plural(v.jobs, 'lease')} {'was' if held == 1 else 'were'} held at the end"]
    unseen = others - held
    if unseen:
        parts.append(f"{plural(unseen, 'lease')} lapsed before a renewal reached {'it' if unseen == 1 else 'them'}")
    return parts


def words(params: Params, v: CostVerdict) -> ModeWords:
    """The one place a renewal-cost run is put into words: its headline, facts and static verdict.

    Every clause is a fact of the verdict `v` (counts and times read from the run's events);
    model times are quoted through `seconds`, the wall time as the verdict rounded it."""
    label = DESIGNS[v.design].label
    paid, calls = _cost(v)
    headline = f"{label}: K = {v.jobs} {'lease' if v.jobs == 1 else 'leases'} held by one worker {paid}."
    held = _held(v)
    if v.lost:
        held[:1] = [f"{_lost(v)}, while {held[0]}" if held else _lost(v)]
    facts = (calls, f"the median tick took {v.wall_ms_per_tick:g} ms of wall time", *held)
    return ModeWords(label, headline, static_verdict(v.design, v.jobs), facts)


def figure_words(modes: dict[str, Timeline], labels: dict[str, str] | None = None) -> FigureWords:
    """Figure 2's words: caption, the prompt before a mode is lit, and each run's words."""
    ks = " and ".join(str(k) for k in dict.fromkeys(tl.verdict.jobs for tl in modes.values()))
    ticks = " and ".join(str(t) for t in dict.fromkeys(tl.verdict.ticks for tl in modes.values()))
    def listed(items: list[str], last: str) -> str:  # "a", "a and b", "a, b and c"
        return f"{', '.join(items[:-1])} {last} {items[-1]}" if len(items) > 1 else "".join(items)

    names = listed([f"“{(labels or {}).get(name) or tl.verdict.label}”" for name, tl in modes.items()], "or")
    caption = listed([DESIGNS[tl.verdict.design].label for tl in modes.values()], "and") or "Renewal"
    caption = (f"{caption[:1].upper()}{caption[1:]}: round trips per renewal tick for a worker holding "
               f"K = {ks} jobs ({ticks} ticks, measured).")
    prompt = f"A worker holds K = {ks} jobs. Point at {names} to read what each renewal tick costs."
    return words_of_modes(modes, caption, prompt, labels)


# -- the benchmark's figures ------------------------------------------------------------------------
def _row_line(r: dict[str, Any]) -> str:
    line = f"- {r['design']}, K = {r['k']:,}: "
    if r.get("wall_ms_per_tick") is None:
        return line + f"broke: {r.get('broke')}"
    rt, us = r["rt_per_tick"], r.get("server_us_per_tick")
    line += (f"{rt:,} round trip{'' if rt == 1 else 's'} per tick, "
             f"{'' if us is None else f'{us:,.0f} µs of server time and '}{r['wall_ms_per_tick']:.3g} ms per tick, "
             f"all held: {r['all_held']}")
    return line + (f"; broke: {r['broke']}" if r.get("broke") else "")


def _partial(r: dict[str, Any]) -> str:
    """A broken row's count, said for what it is: how far through a tick the design got."""
    return f"{r['design']}, {r['rt_per_tick']:,.0f} of {r['k']:,}"


def scaling_words(rows: list[dict[str, Any]], where: str) -> FigureWords:
    """The scaling figure's words: what it shows and where it was measured (the line under it), what a
    hollow mark means, and one line per row. `labels["flat"]`: the designs whose one round trip a tick
    lies on one line at 1 (drawn over each other, so said beside them)."""
    ks = sorted({r["k"] for r in rows})
    time = "server time" if any(r.get("server_us_per_tick") is not None for r in rows) else "wall time"
    caption = (f"Renewal cost against K = {', '.join(f'{k:,}' for k in ks)}: round trips and {time} per "
               f"tick for each design, {where}.")
    prompt = where[:1].upper() + where[1:] + "."
    broke = [r for r in rows if r.get("broke") and r.get("wall_ms_per_tick") is not None]
    if broke:
        prompt += " A hollow mark: the design broke at that K (a tick outlasted the cadence or leases lapsed)"
        partial = [r for r in broke if r.get("rt_per_tick") and r["rt_per_tick"] < r["k"]]
        prompt += (", so it counts only the round trips made before it stopped: " + "; ".join(map(_partial, partial))
                   if partial else "") + "."
        whole = [r for r in broke if r not in partial]  # made every round trip, yet a lease lapsed
        if whole:
            prompt += " " + "; ".join(f"{r['design']} made all {r['k']:,} and still broke ({r['broke'].split(';')[0]})"
                                      for r in whole) + "."
    designs = list(dict.fromkeys(r["design"] for r in rows))
    flat = [d for d in designs if (rts := [r.get("rt_per_tick") for r in rows if r["design"] == d and r.get("rt_per_tick")])
            and set(rts) == {1} and len(rts) > 1]
    labels = {"flat": f"{' and '.join(flat)}: 1 round trip at every K"} if len(flat) > 1 else {}
    return FigureWords(caption, prompt, notes=tuple(_row_line(r) for r in rows), labels=labels)


def capacity_words(caps: list[dict[str, Any]], cadence_s: float) -> FigureWords:
    """The capacity figure's words: the search it shows, and the largest K each design keeps alive."""
    caption = (f"Capacity on live Valkey, one connection: the largest K whose renewal tick still fits a "
               f"{seconds(cadence_s)} cadence (a {seconds(2 * cadence_s)} lease at TTL/2), found by measured ticks "
               "(doubling, then bisection) in benchmarks/renewal_cost.py")
    memory = [c for c in caps if c.get("limit") == "memory"]
    if memory:  # the session design: its tick is one key at any K, so memory is what runs out
        caption += (f"; for {', '.join(c['design'] for c in memory)} the tick never nears the cadence: the "
                    f"server's memory is the limit ({memory[0]['maxmemory_mb']} MB maxmemory in the search)")

    def note(c: dict[str, Any]) -> str:
        if not c.get("capacity_k"):
            return f"- {c['design']}: {c.get('note', 'no capacity found')}"
        if c.get("limit") == "memory":
            over = f"; K = {c['first_over']:,} was refused for memory (OOM)" if c.get("first_over") else ""
            return (f"- {c['design']}: keeps K = {c['capacity_k']:,} alive in {c['maxmemory_mb']} MB, "
                    f"{c['bytes_per_job']:,.0f} bytes per job (≈ {c['jobs_per_gb']:,} jobs per GB){over}")
        return (f"- {c['design']}: keeps K = {c['capacity_k']:,} alive; K = {c['first_over']:,} takes longer "
                "than the cadence")

    return FigureWords(caption + ".", notes=tuple(note(c) for c in caps))


__all__ = ["renewal_cost", "renewal_scaling", "verdict", "words", "figure_words", "scaling_words", "capacity_words",
           "static_verdict", "DESIGNS"]
