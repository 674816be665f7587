"""The course's second figure, measured: one worker holds K leases and keeps them fresh with K
per-job timers or with one sweep. Every renewal round trip is an event of the timeline; the counts
come from the client (both backends) and, on a live server, from INFO commandstats as well.

The leases are the worker-side lock subkeys of one queue, `emq:{orders}:job:<id>:lock`, under the
run's prefix: one hashtag, so a sweep batch lives on one cluster slot.
"""

from __future__ import annotations

import math
from typing import Any

from ..commandstats import ServerCounter
from ..errors import BadParameter
from ..lease import new_token
from ..renewal import parse_cadence
from ..renewal_plane import DESIGNS, PER_JOB, SWEEP, Call, Holding, check_count, check_design, make_plane
from ..timeline import Timeline
from .base import Run, positive, run_on

SCENARIO = "renewal_cost"
EVENT_LIMIT = 1000  # above this many round trips per tick, only per-tick events are recorded
WRITE_CHUNK = 10_000  # leases per pipeline when acquiring and checking (outside the counted ticks)

LABELS = {PER_JOB: "K per-job timers", SWEEP: "one sweep"}


def static_verdict(design: str, jobs: int = 6) -> str:
    """The course's fixed verdict for a design (K = 6 on the page), in one line."""
    if design == PER_JOB:
        return (f"K per-job timers → {jobs} extend round trips each tick, one per lease held: "
                "the cost grows with the jobs a worker holds.")
    return ("one sweep → one bounded round trip each tick, however many leases it carries: "
            "the cost grows with ticks, not with jobs.")


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
        if not (math.isfinite(at) and at >= 0) or not 1 <= job <= jobs:
            raise BadParameter(f"steal {':'.join(map(str, item))!r} needs a time >= 0 and a job number from 1 to {jobs}")
        out.append((at, job))
    return out


def lease_key(run: Run, queue: str, job: int) -> str:
    return run.key("emq", "{" + queue + "}", "job", f"{job:06d}", "lock")


def _acquire(run: Run, keys: list[str], tokens: list[str], lease_ms: float) -> float:
    """SET NX PX every lease (chunked pipelines); returns the TTL the server reported, model seconds."""
    client, px = run.backend.client, run.clock.to_server_ms(lease_ms)
    pttl = None
    for i in range(0, len(keys), WRITE_CHUNK):
        pipe = client.pipeline(transaction=False)
        for key, token in zip(keys[i:i + WRITE_CHUNK], tokens[i:i + WRITE_CHUNK]):
            pipe.set(key, token, nx=True, px=px)
        pipe.pttl(keys[i])
        *acquired, ttl = pipe.execute()
        if not all(acquired):  # a fresh run prefix makes this impossible unless the store misbehaves
            raise RuntimeError(f"a fresh lease under {run.prefix} was already taken")
        pttl = ttl if pttl is None else pttl
    return run.clock.from_server_ms(pttl) / 1000


def _still_held(run: Run, holdings: list[Holding]) -> list[Holding]:
    """The leases whose key still holds the holder's token (read after the ticks, not counted)."""
    held = []
    for i in range(0, len(holdings), WRITE_CHUNK):
        chunk = holdings[i:i + WRITE_CHUNK]
        values = run.backend.client.mget([h.key for h in chunk])
        held.extend(h for h, v in zip(chunk, values) if v == h.token)
    return held


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


def renewal_scaling(backend, ks=(1, 6, 100, 1000), ticks: int = 2) -> list[dict[str, Any]]:
    """Both designs at each K, measured on `backend`: the rows `plot.renewal.draw_scaling` reads."""
    rows = []
    for k in ks:
        for design in ("per-job", "sweep"):
            c = renewal_cost(jobs=k, design=design, ticks=ticks, backend=backend).counts
            rows.append({"design": f"emqlab {design}", "k": k, "rt_per_tick": c["round_trips_per_tick"],
                         "wall_ms_per_tick": c["wall_ms_per_tick"], "all_held": c["all_held"],
                         "broke": not c["all_held"]})
    return rows


def renewal_cost(jobs: int = 6, design: str = SWEEP, ticks: int = 4, batch: int | None = None, lease: float = 30,
                 cadence: Any = "half", steal: Any = None, queue: str = "orders", backend=None,
                 **connect_kw: Any) -> Timeline:
    """Hold `jobs` leases for `ticks` renewal ticks with one design; return the timeline.

    design: per-job | sweep. lease: model seconds. cadence: half (TTL/2), third, or a fraction of
    the lease. batch: sweep leases per script call (default bounded to stay under 5 ms a call).
    steal: (AT, JOB) or "AT:JOB,…": another token takes that job's key at model second AT; the next
    renewal reports it lost and its holder stops. backend: a Backend, or fake / valkey / a URL.

    The timeline's counts carry the CLI's JSON keys: design, jobs, ticks, round_trips_per_tick,
    commands_per_tick, wall_ms_per_tick, server_us_per_tick (None on fakeredis), all_held.
    Events: `round_trip` (one per round trip while a tick has at most 1000; actor = design),
    `tick` (one per tick, with its totals), `take` (actor thief), `lease_lost`/`work_stopped`
    (actor `job N`). The verdict carries `summary` (the readout) and `static` (the course's line).
    """
    jobs = check_count("jobs", jobs, "K, the leases the worker holds")
    design = check_design(design)
    ticks = check_count("ticks", ticks, "renewal ticks to run")
    lease_s = positive("lease", lease)
    cad = parse_cadence(cadence)
    if cad.fraction is None:
        raise BadParameter("renewal cost needs a renewal cadence; allowed: half, third, quarter, or a fraction > 0")
    if batch is not None:
        batch = check_count("batch", batch, "leases per sweep script call")
    steals = parse_steals(steal, jobs)
    lease_ms, every_ms = lease_s * 1000, cad.fraction * lease_s * 1000
    params = {"jobs": jobs, "design": design, "ticks": ticks, "batch": batch, "lease": lease_s,
              "cadence": cad.name, "cadence_s": round(every_ms / 1000, 6), "queue": queue,
              "steal": [list(s) for s in steals]}

    with run_on(backend, SCENARIO, params, **connect_kw) as run:
        be, clock = run.backend, run.clock
        keys = [lease_key(run, queue, n) for n in range(1, jobs + 1)]
        tokens = [new_token() for _ in keys]
        detail = design == SWEEP or jobs <= EVENT_LIMIT

        def on_call(call: Call) -> None:
            if detail:
                data = {"tick": call.tick, "leases": call.leases, "commands": call.commands,
                        "wall_ms": round(call.wall_ms, 3), "lost": [h.index + 1 for h in call.lost]}
                if call.job is not None:
                    data["job"] = call.job + 1
                run.event(design, "round_trip", **data)

        def on_lost(holding: Holding) -> None:
            # the holder is told in the same instant as the reply; it stops its work there
            t = run.t
            run.timeline.add(t, f"job {holding.index + 1}", "lease_lost", key=holding.key)
            run.timeline.add(t, f"job {holding.index + 1}", "work_stopped", reason="the renewal said the lease is gone")

        plane = make_plane(design, be, lease_ms, every_ms, batch=batch, ticks=ticks, on_call=on_call,
                           on_lost=on_lost)
        plane.hold_all(zip(keys, tokens))

        def thief(at_s: float, job: int):
            yield clock.timeout(max(0, at_s * 1000 - (clock.now_ms - run.t0_ms)))
            # as if the lease had lapsed and another worker re-took the key with its own token
            be.client.set(keys[job - 1], new_token(), px=clock.to_server_ms(lease_ms))
            run.event("thief", "take", job=job)

        server = ServerCounter(be.client) if be.live else None

        def worker():
            # on a real clock the time 100 000 SETs take counts against the leases, as it would for
            # a real worker: the first tick is one cadence after the acquiring began, not after it ended
            yield clock.timeout(0)
            began_ms = clock.now_ms
            ttl_s = _acquire(run, keys, tokens, lease_ms)
            run.event("worker", "acquire", leases=jobs, ttl=round(ttl_s, 3))
            if server is not None:
                server.start()  # after the acquire: the window holds renewal calls only
            plane.start(from_ms=began_ms)

        clock.process(worker())
        for at_s, job in steals:
            clock.process(thief(at_s, job))
        clock.run()
        if server is not None:
            server.stop()
        held = _still_held(run, plane.holdings)

        rows = _per_tick(plane.calls, ticks)
        for row in rows:
            t = run.ms_to_t(row.pop("t_ms")) if "t_ms" in row else None
            if t is not None:
                run.timeline.add(t, "worker", "tick", **{**row, "wall_ms": round(row["wall_ms"], 3)})
        lost_jobs = sorted(h.index + 1 for h in plane.lost)
        all_held = not lost_jobs and len(held) == jobs
        total_rt = sum(c.round_trips for c in plane.calls)
        total_cmd = sum(c.commands for c in plane.calls)
        total_wall = sum(c.wall_ms for c in plane.calls)
        counts = {
            "design": design,
            "jobs": jobs,
            "ticks": ticks,
            "round_trips_per_tick": _per(total_rt, ticks),
            "commands_per_tick": _per(total_cmd, ticks),
            "wall_ms_per_tick": round(total_wall / ticks, 3),
            "server_us_per_tick": None if server is None else round(server.usec("evalsha") / ticks, 1),
            "server_calls_per_tick": None if server is None else _per(server.calls("evalsha"), ticks),
            "all_held": all_held,
            "batch": getattr(plane, "batch", None),
            "threads": 1,
            "lost": lost_jobs,
            "held_at_end": len(held),
        }
        if server is not None:
            counts["server_commandstats"] = {k: {"calls": v.calls, "usec": v.usec} for k, v in server.delta.items()}
        run.timeline.counts.update(counts)
    timeline = run.timeline
    timeline.verdict = verdict(timeline)
    return timeline


def verdict(timeline: Timeline) -> dict[str, Any]:
    c = timeline.counts
    design = c["design"]
    lost = c["lost"]
    result = {
        "design": design,
        "label": LABELS[design],
        "round_trips_per_tick": c["round_trips_per_tick"],
        "all_held": c["all_held"],
        "lost": lost,
        "lost_at": {e.actor: e.t for e in timeline.of("lease_lost")},
        "static": static_verdict(design, c["jobs"]),
    }
    result["summary"] = readout(c)
    return result


def readout(c: dict[str, Any]) -> str:
    """The one line under the figure: what this run cost per tick and whether the leases held."""
    k, rt, ticks = c["jobs"], c["round_trips_per_tick"], c["ticks"]
    if c["design"] == PER_JOB:
        head = f"K per-job timers: a worker holding K = {k} leases paid {rt:g} extend round trips per tick"
    else:
        calls = c["commands_per_tick"]
        head = (f"one sweep: a worker holding K = {k} leases paid {rt:g} round trip per tick "
                f"({calls:g} bounded script call{'s' if calls != 1 else ''} of at most {c['batch']} leases)")
    head += f" over {ticks} tick{'s' if ticks != 1 else ''}, {c['wall_ms_per_tick']:.3g} ms of wall time each"
    if c["lost"]:
        shown = ", ".join(str(j) for j in c["lost"][:5]) + ("…" if len(c["lost"]) > 5 else "")
        return (f"{head}; the next renewal found job {shown}'s lease gone or re-owned, told its holder at once "
                f"and the holder stopped, while the other {c['held_at_end']} leases stayed held.")
    if c["all_held"]:
        return f"{head}; every lease was held to the end."
    return f"{head}; {k - c['held_at_end']} lease(s) lapsed before a renewal reached them."


__all__ = ["renewal_cost", "static_verdict", "DESIGNS", "LABELS"]
