"""How a consumer holds what it claimed: the queue's renewal designs.

`none` is EchoMQ's shipped path: nobody renews, each job's lease runs out on the server clock and
the reaper returns the job. The others are the renewal designs of `emqlab.lease.designs` (their
names come from its registry), applied to the queue:

- `per-job`: a timer per job, each tick one token-checked extend per held job (K round trips);
- `sweep`: each tick one batched extend of every held lease (`extend_active.lua`, one round trip,
  K leases touched on the server);
- `session`: the worker holds one lease on itself (`session_*.lua`); a claim records the holder;
  each tick one token-checked renewal of the session alone, whatever K is. When the session
  lapses, the reaper returns every job the worker held, in bounded slices.

Whatever the design, a claim may set a hard deadline (`max_runtime_ms`) that no renewal pushes out:
the per-job limit that bounds a stuck job while its worker lives.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import BadParameter, StoreError
from ..lease.designs import design_names

NONE = "none"
SESSION = "session"
LOST = "lease-lost"  # the interrupt a job's work gets when its holder learns the job is gone


def queue_designs() -> list[str]:
    """The designs a consumer takes: `none` (EchoMQ's shipped path) and every registered renewal design."""
    return [NONE, *design_names()]


def check_design(design: str | None, renew: float | None) -> tuple[str, float | None]:
    """(design, renewal fraction of the lease). No design: `sweep` if `renew` is set, else `none`
    (the consumer's behaviour before designs existed). A renewing design without `renew` renews at TTL/2."""
    if design is None:
        return ("sweep" if renew is not None else NONE), renew
    if design not in queue_designs():
        raise BadParameter(f"unknown design {design!r}; a consumer takes: {', '.join(queue_designs())}")
    if design == NONE:
        if renew is not None:
            raise BadParameter("design none renews nothing; leave renew unset (or pick a renewing design)")
        return design, None
    return design, 0.5 if renew is None else renew


def open_session(c) -> bool:
    """Open the consumer's session (design session); False if its name is still taken (a lapsed
    session of the same name the reaper has not ended yet)."""
    try:
        c.session = c.queue.open_session(c.name, c.lease_ms)
    except StoreError:
        return False
    s = c.session
    c.rec.event(c.name, "session_open", now=s.server_now, time_s=c._server_s(s.server_now), score=s.deadline,
                score_s=c._server_s(s.deadline))
    return True


def close_session(c) -> None:
    if c.session is not None and c.queue.close_session(c.session) == 1:
        c.rec.event(c.name, "session_close")
        c.session = None


def claim_options(c) -> dict[str, Any]:
    """What the consumer's claim passes on: its name, its session (design session), its hard deadline."""
    opts: dict[str, Any] = {"max_runtime_ms": c.max_runtime_ms}
    if c.design == SESSION:
        opts["session"] = c.session
    elif c.worker_name:
        opts["worker"] = c.worker_name
    return opts


def renew_loop(c):
    """The consumer's renewal process: one tick every `renew_every` model ms, in its design."""
    while not c.crashed:
        yield from c.world.sleep(c.renew_every, work=False)
        if c.stopping and not c.held:
            return
        if c.design == SESSION:
            _renew_session(c)
        elif c.held:
            _renew_leases(c)


def _renew_leases(c) -> None:
    run = c.rec
    held = [(j.id, j.attempts) for j in c.held.values()]
    if c.design == "per-job":  # one extend per job: K round trips a tick
        exts = [c.queue.extend([pair], c.lease_ms) for pair in held]
        lost = [i for e in exts for i in e.lost]
        ext = exts[-1]
    else:  # sweep: one batched extend, one round trip
        ext = c.queue.extend(held, c.lease_ms)
        lost = list(ext.lost)
    deadline = round(run.t + ext.lease_ms / 1000, 3)
    for job_id, _ in held:
        if job_id not in lost and job_id in c.bands:
            hard = c.held[job_id].hard  # the extend never pushes a lease past the job's hard deadline
            capped = min(ext.deadline, hard) if hard else ext.deadline
            c.bands[job_id].data["deadline"] = round(run.t + c.clock.from_server_ms(capped - ext.server_now) / 1000, 3)
    run.event(c.name, "renew", jobs=[h[0] for h in held], deadline=deadline, lost=lost, design=c.design,
              calls=len(held) if c.design == "per-job" else 1, now=ext.server_now,
              time_s=c._server_s(ext.server_now), score=ext.deadline, score_s=c._server_s(ext.deadline))
    _stop_lost(c, lost)


def _renew_session(c) -> None:
    run = c.rec
    if c.session is None:  # lost earlier: open a new one once the reaper has ended the old
        return
    s = c.session = c.queue.renew_session(c.session, c.lease_ms)
    held = sorted(c.held)
    lost = [] if s.held else held
    deadline = round(run.t + s.lease_ms / 1000, 3) if s.held else None
    for job_id in held:
        if s.held and job_id in c.bands:
            c.bands[job_id].data["deadline"] = deadline
    run.event(c.name, "renew", jobs=held, deadline=deadline, lost=lost, design=SESSION, calls=1, session=s.held,
              now=s.server_now, time_s=c._server_s(s.server_now), score=s.deadline or None,
              score_s=c._server_s(s.deadline) if s.held else None)
    if not s.held:
        c.session = None
        _stop_lost(c, lost)


def _stop_lost(c, lost: list[str]) -> None:
    for job_id in lost:
        proc = c.workers.get(job_id)
        if proc is not None and proc.is_alive:
            proc.interrupt(LOST)
