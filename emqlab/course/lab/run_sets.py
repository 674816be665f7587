"""The lessons' sets of runs: the modes a lesson's explorer compares and the grids its boundary
figures draw, each run on the notebook's store (`session.backend()`)."""

from __future__ import annotations

from .session import backend


def cadence_modes(lease: float = 30, job: float = 75, cadence: float = 0.5, pause_at: float = 20,
                  pause_for: float = 0) -> dict:
    """The cadence lesson's two modes: no renewal, and renewal at `cadence` × lease; optionally a pause."""
    from ...scenarios.heartbeat import heartbeat

    pause = f"{pause_at}:{pause_for}" if pause_for > 0 else None
    be = backend()
    return {"none": heartbeat(lease=lease, job=job, renew="none", pause=pause, backend=be),
            "chosen": heartbeat(lease=lease, job=job, renew=cadence, pause=pause, backend=be)}


def cadence_boundary(lease: float = 30, at: float = 20, cadences=None, pauses=None) -> dict:
    """Run the heartbeat over a grid of cadences × pause lengths and record held or lost.

    The rule to test: a pause that starts `at` survives if it ends before the deadline the last
    extend set, i.e. pause < lease − (at mod every). The default live grid keeps every point at
    least 6 model seconds (60 real ms) off that line, so a late wake-up on a busy machine cannot
    flip a point, and is smaller because each run takes real time."""
    from ...scenarios.heartbeat import heartbeat

    be = backend()
    if cadences is None:
        cadences = [0.2, 0.4, 0.6, 0.8] if be.live else [round(0.1 * i, 1) for i in range(1, 10)]
    if pauses is None:
        pauses = [4, 16, 35] if be.live else [1.5 + 2 * i for i in range(20)]
    points, agrees = [], True
    for fraction in cadences:
        for pause in pauses:
            tl = heartbeat(lease=lease, job=lease, renew=fraction, pause=f"{at}:{pause}", backend=be)
            held = tl.verdict.lapsed_at is None
            agrees &= held == (pause < lease - at % (fraction * lease))
            points.append((fraction, pause, held))
    return {"lease": lease, "at": at, "points": points, "runs": len(points), "agrees": agrees}


def slow_link_modes(lease: float = 30, job: float = 75, cadence: float = 0.5, latency: float = 10) -> dict:
    """The slow link lesson's two modes: the holder beside the store, and over a link with a one-way `latency`."""
    from ...scenarios.heartbeat import heartbeat

    be = backend()
    return {"beside the store": heartbeat(lease=lease, job=job, renew=cadence, backend=be),
            "over the link": heartbeat(lease=lease, job=job, renew=cadence, latency=latency, backend=be)}


def latency_boundary(lease: float = 30, cadences=None, latencies=None) -> dict:
    """The held-or-lost grid of cadences × one-way delays on the lab's store
    (`emqlab.scenarios.slow_link.latency_boundary`)."""
    from ...scenarios.slow_link import latency_boundary as grid

    return grid(backend(), lease, cadences, latencies)


# -- one timer per job, or one sweep: renewal cost against K ----------------------------------------
def renewal_scaling(ks=(1, 10, 100, 1000), ticks: int = 2, designs=None) -> list[dict]:
    """Run every renewal design (or those named) for each K on the current store; rows for
    `figures.scaling_figure`."""
    from ...scenarios.renewal_cost import renewal_scaling as measure

    return measure(backend(), ks, ticks, designs)
