"""The course's first figure: a job longer than its lease, with and without renewal.

A holder acquires the job's lock (SET NX PX, random token), works for `job` seconds and renews
on a cadence with the token-checked extend; a contender starts half a poll later and keeps trying
to take the lock every `poll` seconds. If the contender gets the lock before the job is marked
done, it runs the job too. Every lease band's end is what the server reported (the acquire's
PTTL, each extend's reply), and the verdict is read off the events.
"""

from __future__ import annotations

from typing import Any

import simpy

from ..errors import LeaseLost, StaleToken
from ..faults import Pause, World
from ..lease import Leases, new_token
from ..renewal import Cadence, parse_cadence
from ..timeline import Interval, Timeline, minus
from .base import Run, positive, run_on

LOST = "lease-lost"
STOP = "stop"


class Worker:
    """One worker holding (or hoping to hold) the job's lock."""

    def __init__(self, run: Run, name: str, lease_ms: float, job_ms: float, cadence: Cadence):
        self.run, self.name = run, name
        self.clock = run.clock
        self.leases = Leases(run.backend)
        self.lease_ms, self.job_ms, self.cadence = lease_ms, job_ms, cadence
        self.world = World(run.clock)
        self.lock_key, self.done_key = run.key("lock", "job"), run.key("done", "job")
        self.token = new_token()
        self.lease: Interval | None = None
        self.finished = False

    # -- the lease band, as the server reports it ------------------------------------------
    def _took(self, grant) -> None:
        t = self.run.t
        self.lease = self.run.timeline.open(t, self.name, "lease", deadline=round(t + grant.ttl_ms / 1000, 3),
                                            ended=None)

    def _pushed(self, grant) -> float:
        deadline = round(self.run.t + grant.ttl_ms / 1000, 3)
        self.lease.data["deadline"] = deadline
        return deadline

    def _lease_ended(self, released: bool) -> None:
        lease = self.lease
        deadline = lease.data["deadline"]
        if released and self.run.t <= deadline:
            lease.end, lease.data["ended"] = self.run.t, "released"
        else:
            lease.end, lease.data["ended"] = deadline, "lapsed"
            self.run.timeline.add(deadline, self.name, "lapse", note="the server expired the key")

    # -- holding and working -----------------------------------------------------------------
    def hold_and_work(self):
        """A process: the lock is held; work, renewing on the cadence; then mark done and release."""
        run, clock = self.run, self.clock
        work = run.timeline.open(run.t, self.name, "run")
        run.event(self.name, "work_start")
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
            run.event(self.name, "work_stopped", reason="renewal replied 0: the lock is gone")
            self._lease_ended(released=False)
            return
        work.end = run.t
        self.finished = True
        run.event(self.name, "work_done")
        if renewer is not None and renewer.is_alive:
            renewer.interrupt(STOP)
        run.backend.client.set(self.done_key, self.name)
        try:
            self.leases.release(self.lock_key, self.token)
            run.event(self.name, "release")
            self._lease_ended(released=True)
        except StaleToken:
            run.event(self.name, "release_refused", reason="token no longer owns the lock")
            self._lease_ended(released=False)

    def renew(self, worker: simpy.Process, every_ms: float):
        """A process: extend the lease every `every_ms`, starting from the acquire; stop at a 0 reply."""
        clock = self.clock
        next_tick = clock.now_ms + every_ms
        while True:
            try:
                yield from self.world.sleep(next_tick - clock.now_ms, work=False)
            except simpy.Interrupt as interrupt:
                if interrupt.cause == STOP:
                    return
                raise
            if self.finished:
                return
            try:
                grant = self.leases.extend(self.lock_key, self.token, self.lease_ms)
            except LeaseLost:
                self.run.event(self.name, "renew_lost", reply=0)
                if worker.is_alive:
                    worker.interrupt(LOST)
                return
            deadline = self._pushed(grant)
            self.run.event(self.name, "renew", ttl=round(grant.ttl_ms / 1000, 3), deadline=deadline)
            next_tick = clock.now_ms + every_ms

    def start_holding(self):
        """A process: take the lock at once (the holder)."""
        grant = self.leases.acquire(self.lock_key, self.lease_ms, self.token)
        if grant is None:  # a fresh run prefix makes this impossible unless the store misbehaves
            raise RuntimeError(f"{self.name} could not take a fresh lock {self.lock_key}")
        self.run.event(self.name, "acquire", ttl=round(grant.ttl_ms / 1000, 3))
        self._took(grant)
        yield from self.hold_and_work()

    def contend(self, poll_ms: float):
        """A process: try the lock every `poll_ms` (first try half a poll in) until it is ours or the job is done."""
        run, clock = self.run, self.clock
        yield clock.timeout(poll_ms / 2)
        while True:
            grant = self.leases.acquire(self.lock_key, self.lease_ms, self.token)
            if grant is None:
                run.event(self.name, "acquire_failed")
                yield clock.timeout(poll_ms)
                continue
            run.event(self.name, "acquire", ttl=round(grant.ttl_ms / 1000, 3))
            self._took(grant)
            if run.backend.client.get(self.done_key) is not None:
                run.event(self.name, "saw_done")
                self.leases.release(self.lock_key, self.token)
                self._lease_ended(released=True)
                return
            run.event(self.name, "reclaim")
            yield from self.hold_and_work()
            return


def heartbeat(lease: float = 30, job: float = 75, renew: Any = "none", pause: Any = None, poll: float = 1.0,
              backend=None, **connect_kw: Any) -> Timeline:
    """Run the renewal heartbeat and return its timeline.

    lease, job, poll: model seconds. renew: none | half | third | a fraction of the lease.
    pause: AT:SECONDS, a stop-the-world pause of the holder (its renewer included).
    backend: a Backend, or fake / valkey / a URL (opened and closed here).
    """
    lease_s, job_s, poll_s = positive("lease", lease), positive("job", job), positive("poll", poll)
    cadence, pause = parse_cadence(renew), Pause.parse(pause)
    params = {"lease": lease_s, "job": job_s, "renew": cadence.name, "cadence": cadence.fraction,
              "pause": None if pause is None else {"at": pause.at, "seconds": pause.seconds}, "poll": poll_s}
    lease_ms, job_ms, poll_ms = lease_s * 1000, job_s * 1000, poll_s * 1000
    with run_on(backend, "heartbeat", params, **connect_kw) as run:
        holder = Worker(run, "holder", lease_ms, job_ms, cadence)
        contender = Worker(run, "contender", lease_ms, job_ms, cadence)
        clock = run.clock
        holder.world.join(clock.process(holder.start_holding()))
        clock.process(contender.contend(poll_ms))
        if pause is not None:

            def pause_holder():
                yield clock.timeout(pause.at * 1000)
                run.event("holder", "pause_start", seconds=pause.seconds)
                frozen = run.timeline.open(run.t, "holder", "pause")
                yield from holder.world.stop_the_world(pause.seconds * 1000)
                frozen.end = run.t
                run.event("holder", "pause_end")

            clock.process(pause_holder())
        clock.run()
    run.timeline.verdict = verdict(run.timeline)
    return run.timeline


# -- the verdict, read off the events --------------------------------------------------------
def working_spans(timeline: Timeline, actor: str) -> list[tuple[float, float]]:
    """When `actor` was really working: its run intervals minus its pauses."""
    pauses = [(p.start, p.end) for p in timeline.spans("pause", actor)]
    return [part for run in timeline.spans("run", actor)
            for part in minus(run.start, run.end if run.end is not None else float("inf"), pauses)]


def verdict(timeline: Timeline) -> dict[str, Any]:
    holder_leases = timeline.spans("lease", "holder")
    lapsed = [lease.end for lease in holder_leases if lease.data.get("ended") == "lapsed"]
    reclaims = timeline.of("reclaim")
    runners = list(dict.fromkeys(e.actor for e in timeline.of("work_start")))
    spans = {actor: working_spans(timeline, actor) for actor in runners}
    overlap = [
        (round(max(a0, b0), 3), round(min(a1, b1), 3))
        for i, x in enumerate(runners) for y in runners[i + 1:]
        for a0, a1 in spans[x] for b0, b1 in spans[y] if max(a0, b0) < min(a1, b1)
    ]
    done = timeline.of("work_done")
    result = {
        "lapsed_at": lapsed[0] if lapsed else None,
        "renewals": len(timeline.of("renew", "holder")),
        "renew_lost_at": next((e.t for e in timeline.of("renew_lost", "holder")), None),
        "reclaimed_at": reclaims[0].t if reclaims else None,
        "runs": len(runners),
        "double_run": bool(overlap),
        "overlap": [list(o) for o in overlap],
        "finished_once": len(done) == 1,
    }
    result["summary"] = readout(timeline.params, result)
    return result


def readout(params: dict[str, Any], v: dict[str, Any]) -> str:
    lease, job = f"{params['lease']:g} s", f"{params['job']:g} s"
    label = parse_cadence(params["renew"]).label
    if v["double_run"]:
        both = sum(end - start for start, end in v["overlap"])
        late = (f"; the holder's renewal at {v['renew_lost_at']:g} s came too late, replied 0 and stopped it"
                if v["renew_lost_at"] is not None else "")
        return (f"{label}: the {lease} lease lapsed at {v['lapsed_at']:g} s, another worker reclaimed the job at "
                f"{v['reclaimed_at']:g} s, and the {job} job ran twice at once for {both:.3g} s{late}.")
    if v["renew_lost_at"] is not None:
        tail = (f"another worker reclaimed it at {v['reclaimed_at']:g} s and finished it"
                if v["reclaimed_at"] is not None else "nobody finished it")
        return (f"{label}: the lease lapsed at {v['lapsed_at']:g} s during a pause; the renewal at "
                f"{v['renew_lost_at']:g} s replied 0, the holder stopped at once, and {tail}.")
    if v["lapsed_at"] is None and v["finished_once"]:
        return (f"{label}: {v['renewals']} renewals held the {lease} lease to the end; "
                f"the {job} job finished once.")
    return f"{label}: lapsed at {v['lapsed_at']}, {v['runs']} run(s), finished once: {v['finished_once']}."
