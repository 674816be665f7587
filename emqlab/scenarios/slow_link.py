"""The slow link's rule, and what the runs say about it.

A holder that renews at a fraction c of the lease over a link with a one-way delay d: the server
stamps the lease d after the acquire was sent, the reply reaches the holder d later, the holder's
timer fires c × TTL after that, and its extend reaches the server d after it was sent. The extend
lands 2d + c × TTL after the stamp, so the lease holds while 2d + c × TTL < TTL, that is while
d < (1 − c) × TTL / 2: a quarter of the lease when renewing at half of it. Exactly on the line the
extend lands at the deadline itself.

`rule_words(run)` holds one heartbeat run against the rule; `latency_boundary(backend)` runs a grid
of cadences and delays, and `boundary_words(boundary)` says what it found.
"""

from __future__ import annotations

from typing import Any

from ..core.timeline import Timeline
from ..core.words import FigureWords, seconds
from ..core.words import boundary_words as grid_words
from .heartbeat import heartbeat

EDGE = 1e-9
LIVE_MARGIN = 2.5  # model seconds between a live grid point and the rule's line


def latency_bound(lease: float, fraction: float) -> float:
    """The largest one-way delay, model seconds, that renewal at `fraction` of `lease` survives."""
    return round((1 - fraction) * lease / 2, 9)


def rule_says_held(lease: float, fraction: float, latency: float) -> bool | None:
    """True under the line, False over it, None exactly on it (the extend lands at the deadline)."""
    bound = latency_bound(lease, fraction)
    if abs(latency - bound) <= EDGE:
        return None
    return latency < bound


def rule_words(run: Timeline) -> str:
    """One heartbeat run held against the rule, in one sentence."""
    p, v = run.params, run.verdict
    lease, fraction, latency = p.lease, p.cadence, p.latency
    if fraction is None:
        return "Without renewal the rule has nothing to say: the lease lasts what it was given."
    bound = latency_bound(lease, fraction)
    # the timer restarts when each reply arrives, so over the link the extends leave 2d + c × TTL apart
    said = (f"The rule: renewing {seconds(fraction * lease)} after each reply (c = {fraction:g}) holds a "
            f"{seconds(lease)} lease while the one-way delay stays under (1 − {fraction:g}) × {seconds(lease)} / 2 "
            f"= {seconds(bound)}")
    held = v.reclaimed_at is None  # a lapse while the final release is on the wire costs nothing
    ran = ("the run held it while the job ran" if held
           else f"in the run it lapsed at {seconds(v.lapsed_at)} and the contender took the job")
    predicted = rule_says_held(lease, fraction, latency)
    if predicted is None:
        return (f"{said}. A delay of {seconds(latency)} is exactly on the line: the extend arrives at the "
                f"deadline itself, and {ran}.")
    verb = "predicts the lease holds" if predicted else "predicts a lapse"
    agree = "they agree" if predicted == held else "they disagree"
    return f"{said}. A delay of {seconds(latency)} {verb}; {ran}: {agree}."


def latency_boundary(backend, lease: float = 30, cadences=None, latencies=None) -> dict[str, Any]:
    """Run the heartbeat over a grid of cadences × one-way delays and record held or lost (held: the
    contender never took the job; a lapse while the final release is on the wire costs nothing).

    No point sits on the rule's line; on a live store every point is more than `LIVE_MARGIN` (2.5 model
    seconds, 25 real ms at the default scale) off it, so a wake-up less late than that cannot flip one."""
    if cadences is None:
        cadences = [0.2, 0.4, 0.6, 0.8] if backend.live else [round(0.1 * i, 1) for i in range(1, 10)]
    if latencies is None:
        latencies = [1.0, 4.0, 8.5, 13.0] if backend.live else [0.75 + i for i in range(14)]
    margin = LIVE_MARGIN if backend.live else 0.0
    points, agrees = [], True
    for fraction in cadences:
        for latency in latencies:
            bound = latency_bound(lease, fraction)
            if abs(latency - bound) <= margin or latency == bound:
                continue
            tl = heartbeat(lease=lease, job=lease, renew=fraction, latency=latency, backend=backend)
            held = tl.verdict.reclaimed_at is None
            agrees &= held == (latency < bound)
            points.append((fraction, latency, held))
    line = [(c, latency_bound(lease, c)) for c in (min(cadences), max(cadences))]  # the bound is linear in c
    return {"lease": lease, "points": points, "runs": len(points), "agrees": agrees, "line": line}


def boundary_words(boundary: dict[str, Any]) -> FigureWords:
    """What the held-or-lost grid of delays and cadences says (`latency_boundary`)."""
    return grid_words(boundary, f"Held or lost over a slow link: a {seconds(boundary['lease'])} lease renewed "
                                "at a fraction c of it")
