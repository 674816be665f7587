"""The stuck-job figure: one panel per way of holding a job (none, sweep, session, a hard deadline).

Each panel is one run of `emqlab.scenarios.stuck`: worker-1's lease on the hung job (the band; its
end is the deadline the server last stamped, or the hard deadline set at the claim if that came first, or
the horizon if it was still held; a lapse mark where a deadline ended it), worker-1's hung work under it
(work that does not end), worker-1's renewal ticks, the reap that returned the job to pending (on
worker-2's row: its beat reaped it, as in the queue figures), worker-2's second attempt, and the hard
deadline where one was set. Each panel's title is
the mode's label and static verdict; the readout line under the figure says the lit mode's full text.
Nothing here composes a sentence about a run: the words come from the scenario.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from ..core.kinds import Kind
from ..core.words import FigureWords
from . import Drawing, figure_for, legend_of_marks, modes_of, style

BAND = (0.4, 0.4)  # worker-1's lease band: y, height
HUNG = (0.08, 0.24)  # worker-1's hung attempt under it
AGAIN = (-0.26, 0.24)  # worker-2's second attempt, under that


def _panel(ax, name: str, tl, horizon: float) -> None:
    gid = f"mode:{name}"
    style.lane(ax, name)
    v, p = tl.verdict, tl.params
    t0 = v.claimed_at or 0.0

    def x(t: float) -> float:  # on the claim's time base, clipped to the horizon
        return min(max(t - t0, 0.0), horizon)

    first = next((s for s in tl.spans("lease", "worker-1") if s.data.get("attempts") == 1), None)
    if first is not None:
        end = first.end if first.end is not None else first.data.get("deadline", horizon)
        if p.max_runtime:  # the hard deadline the server set at the claim: no renewal holds the job past it
            end = min(end, t0 + p.max_runtime)
        if v.reclaimed_at is not None:  # the server's reap ended worker-1's hold, told or not
            end = min(end, t0 + v.reclaimed_at)
        style.band(ax, "lease", x(first.start), BAND[0], max(x(end) - x(first.start), 0.3), BAND[1], gid=gid)
        # a deadline ended the hold (the lease's, or the hard one) before the reap took the job: it lapsed there
        ran_out = first.data.get("ended") == "lapsed" or (
            v.reclaimed_at is not None and end < t0 + v.reclaimed_at and x(end) < horizon)
        if ran_out:
            style.marker(ax, "lapse", [x(end)], [BAND[0] + BAND[1] / 2], size=11, gid=gid)
    for run in tl.spans("run"):  # the hung attempt is work that does not end; the second, worker-2's
        end = run.end if run.end is not None else t0 + horizon
        y, h = HUNG if run.data.get("attempts") == 1 else AGAIN
        style.band(ax, "work", x(run.start), y, max(x(end) - x(run.start), 0.3), h, gid=gid)
    ticks = [x(e.t) for e in tl.of(Kind.RENEW, "worker-1") if e.t - t0 <= horizon]
    if ticks:
        style.marker(ax, "extend", ticks, [BAND[0] + BAND[1] + 0.08] * len(ticks), size=9, gid=gid)
    if p.max_runtime:
        style.line(ax, "hard-deadline", [p.max_runtime] * 2, [AGAIN[0] - 0.05, BAND[0] + BAND[1] + 0.15], lw=1.5,
                   gid=gid)
    if v.reclaimed_at is not None:  # on the row of the worker whose beat reaped it
        y = AGAIN[0] + AGAIN[1] / 2 if v.reclaimed_by == "worker-2" else BAND[0] + BAND[1] / 2
        style.marker(ax, "taken-back", [v.reclaimed_at], [y], size=10, gid=gid, zorder=3)
    ax.set_ylim(-0.4, 1.05)
    ax.set_yticks([BAND[0] + BAND[1] / 2, HUNG[0] + HUNG[1] / 2, AGAIN[0] + AGAIN[1] / 2],
                  ["worker-1 holds", "worker-1 works", "worker-2 works"], fontsize=style.FONT["tick"])
    ax.tick_params(labelsize=style.FONT["tick"])


def _legend(fig: Figure) -> None:
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False)


def draw_stuck(timelines: Any, words: FigureWords, fig: Figure | None = None) -> Drawing:
    """Stuck-job runs (`emqlab.scenarios.stuck`): one panel per mode, on the claim's time base, up to
    the runs' horizon; the readout line says the lit mode's full text."""
    modes = modes_of(timelines, words, "draw_stuck")
    fig = figure_for(fig, (12, 2.0 + 1.4 * len(modes)))
    horizon = max(tl.verdict.horizon for tl in modes.values())
    axes = fig.subplots(len(modes), 1, squeeze=False, sharex=True)[:, 0]
    for ax, (name, tl) in zip(axes, modes.items()):
        _panel(ax, name, tl, horizon)
        mode = words.modes[name]
        ax.set_title(f"{mode.label} — {mode.static}", fontsize=style.FONT["label"], loc="left")
    axes[-1].set_xlim(-2, horizon * 1.02)
    axes[-1].set_xlabel("model seconds since worker-1's claim", fontsize=style.FONT["label"])
    _legend(fig)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")  # Drawing.fit wraps it and keeps room for it under the axes
    return Drawing(fig, words, dict(modes), readout)
