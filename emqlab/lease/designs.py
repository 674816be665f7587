"""The renewal designs, named once: none, per-job timers, one sweep, one session per worker.

Each `Design` says what the design is called (its CLI name, label, one-line description, the words a
sentence uses for one of its round trips and for how its cost grows) and selects its two
implementations: the `plane` that keeps a worker's bare leases fresh (`emqlab.lease.planes`, what
`renewal-cost` measures; None for a design that renews nothing) and the `keeper` that keeps the jobs
a queue consumer holds (`emqlab.lease.keepers`). The CLI's choices, the scenarios, the plots, the
consumer and the benchmark all read `DESIGNS`, so adding a design is one entry here plus its two
implementations; no code compares a design with a string. How a benchmark's figure draws a design is
the course's mark table's to say (`emqlab.core.marks.SERIES`, "emqlab <name>"), not the registry's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.errors import BadParameter
from .keepers import BatchedExtend, Keeper, PerJobExtends, Unrenewed, WorkerSession
from .planes import PerJobTimers, RenewalPlane, Session, Sweep, check_count


@dataclass(frozen=True)
class Design:
    """One renewal design, named once: what the CLI, the scenarios, the plots and the benchmark call it."""

    name: str  # the CLI's --design value
    label: str  # its name in words, as a figure's lane title says it
    description: str  # one line, for the CLI help
    plane: type[RenewalPlane] | None  # bare leases; None: the design renews nothing
    keeper: type[Keeper]  # the jobs a queue consumer holds
    trip: str = ""  # what one of its round trips is called in a sentence ("extend round trip")
    cost: str = ""  # how its cost grows, the tail of its static verdict
    # store steps (≈ round trips) per lease held, to bound a run's cost before it starts: to take a lease,
    # then each renewal tick (measured: a swept lease costs about a quarter of a round trip)
    setup_steps_per_lease: float = 0.0
    steps_per_lease: float = 0.0

    @property
    def renews(self) -> bool:
        return self.keeper.renews

    @property
    def per_worker(self) -> bool:
        """One lease on the worker itself: lose it and every job it holds goes with it."""
        return self.keeper.per_worker

    def round_trips_per_tick(self, leases: int) -> int:
        """What a tick costs while `leases` are held (0 for a design that renews nothing)."""
        return self.plane.round_trips_per_tick(leases) if self.plane is not None else 0


NONE = "none"  # the consumer's default: EchoMQ ships no holder-side renewal
SWEEP = "sweep"  # the bare-lease default: the page's "one server-side sweep"

DESIGNS: dict[str, Design] = {d.name: d for d in (
    Design(NONE, "no renewal (EchoMQ)", "nobody renews: each lease runs out on the server clock and "
           "the reaper returns the job (EchoMQ's shipped path)", None, Unrenewed),
    Design("per-job", "K per-job timers", "one timer and one extend per lease, each its own round trip",
           PerJobTimers, PerJobExtends, "extend round trip",
           "one per lease held: the cost grows with the jobs a worker holds", setup_steps_per_lease=1.0,
           steps_per_lease=1.0),
    Design(SWEEP, "one sweep", "one timer; every lease in bounded script calls, one round trip per tick",
           Sweep, BatchedExtend, "bounded round trip",
           "however many leases it carries: the cost grows with ticks, not with jobs",
           setup_steps_per_lease=0.25, steps_per_lease=0.25),
    Design("session", "one session", "one lease on the worker itself; each job names its holder; one "
           "extend per tick whatever K is", Session, WorkerSession, "session extend",
           "whatever K is: the server touches one key per tick, and every job goes if the session does",
           setup_steps_per_lease=0.05),  # each job's record: one MSETNX carries 10,000 of them
)}


def lookup_design(name: str, *, renewing: bool = False) -> Design:
    """The registered design called `name` (renewing: one that renews, i.e. has a plane), or BadParameter."""
    allowed = design_names(renewing=renewing)
    if name not in allowed:
        raise BadParameter(f"unknown {'renewal ' if renewing else ''}design {name!r}; allowed: {', '.join(allowed)}")
    return DESIGNS[name]


def check_design(name: str) -> str:
    """`name` if it is a design that renews bare leases (renewal-cost), else BadParameter."""
    return lookup_design(name, renewing=True).name


def design_names(*, renewing: bool = False) -> list[str]:
    """The CLI's --design choices: every design, or (renewing) only those that renew bare leases."""
    return [d.name for d in DESIGNS.values() if d.plane is not None or not renewing]


def design_help(default: str | None = SWEEP, *, renewing: bool = True) -> str:
    """Each design and its one-line description, for the CLI help."""
    return "; ".join(f"{d.name}: {d.description}{' (default)' if d.name == default else ''}"
                     for d in DESIGNS.values() if d.plane is not None or not renewing)


def queue_design(name: "str | Design | None", renew: float | None) -> tuple[Design, float | None]:
    """A consumer's (design, renewal fraction of the lease). No design: `sweep` if `renew` is set, else
    `none` (the consumer's behaviour before designs existed); a renewing design without `renew`
    renews at TTL/2; `none` refuses a `renew`. A Design (one a caller already looked up) is taken as it is."""
    if name is None:
        return DESIGNS[SWEEP if renew is not None else NONE], renew
    chosen = name if isinstance(name, Design) else lookup_design(name)
    if not chosen.renews:
        if renew is not None:
            raise BadParameter(f"design {name} renews nothing; leave renew unset (or pick a renewing design)")
        return chosen, None
    return chosen, 0.5 if renew is None else renew


def make_plane(name: str, backend, lease_ms: float, every_ms: float, *, batch: int | None = None,
               **kw: Any) -> RenewalPlane:
    """The registered design's plane for bare leases; only a plane that batches takes `batch` (the
    others check it and refuse a bad one); `session=` (its key) and `worker=` (its id) reach only a
    per-worker plane. The plane's Calls carry the registered name."""
    plane = lookup_design(name, renewing=True).plane
    if not plane.per_worker:
        kw.pop("session", None), kw.pop("worker", None)
    if plane.batched:
        made = plane(backend, lease_ms, every_ms, batch=batch, **kw)
    else:
        if batch is not None:
            check_count("batch", batch, "leases per sweep script call")
        made = plane(backend, lease_ms, every_ms, **kw)
    made.design = name
    return made
