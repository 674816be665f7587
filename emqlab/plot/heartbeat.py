"""The course's first figure: the renewal heartbeat, one stacked panel per mode.

Each panel has two lanes, holder and contender. A lane shows the lease band (from the `lease`
intervals, whose ends are the deadlines the server reported), the work (`run`), each extend and the
deadline it moved, stop-the-world pauses, the lapse, and the stretch where both workers ran the job at
once. When the holder's link is slow, a `store` line sits between the lanes and each of the holder's
commands (its `trip` intervals) is drawn as a path down to the store, when the server acted, and back.
Under the panels sits the readout line; each panel's title carries its static verdict. Every mark is
one of the course's table (`emqlab.core.marks`), drawn by `emqlab.plot.style`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.ticker import MultipleLocator

from ..core.kinds import Kind
from ..core.timeline import Timeline, minus
from ..core.words import FigureWords, ModeWords
from . import Drawing, as_modes, legend_of_marks, style

LANES = {"holder": 1.0, "contender": 0.0}
BAND_Y, BAND_H = 0.06, 0.30  # lease band, above the lane's centre line
RUN_Y, RUN_H = -0.30, 0.20  # work bar, below it
FOOT_Y = -0.62  # the "both run the job" label, under the contender's work bar
LINK_LIFT = 0.3  # a slow link: the holder's lane moves up to make room for the store's line under it
STORE_Y, WIRE_TOP = 0.74, 0.96  # the store's line, and where a trip leaves the holder's (lifted) lane


def _as_modes(timelines: Any) -> dict[str, Timeline]:
    return as_modes(timelines, lambda tl: tl.params.mode, "draw_heartbeat")


def _end_of(timeline: Timeline) -> float:
    """The last moment the panel draws: an event, an interval's end, or the deadline an extend moved
    the lease to (its arrow ends there, and would be cut off short of the axis's end)."""
    ends = [e.t for e in timeline.events]
    ends.extend(e.data["deadline"] for e in timeline.of(Kind.RENEW) if e.data.get("deadline") is not None)
    for i in timeline.intervals:
        ends.extend(x for x in (i.start, i.end) if x is not None)
    return max(ends, default=0.0)


def _draw_lane(ax, timeline: Timeline, actor: str, gid: str, x_max: float, y: float) -> None:
    top = y + BAND_Y + BAND_H
    for lease in timeline.spans("lease", actor):
        end = lease.end if lease.end is not None else lease.data.get("deadline", x_max)
        style.band(ax, "lease", lease.start, y + BAND_Y, max(end - lease.start, 0.15), BAND_H, gid=gid)
    pauses = [(p.start, p.end) for p in timeline.spans("pause", actor)]
    for run in timeline.spans("run", actor):
        end = run.end if run.end is not None else x_max
        for a, b in minus(run.start, end, pauses):  # a frozen worker does no work: its bar is broken
            style.band(ax, "work", a, y + RUN_Y, b - a, RUN_H, gid=gid)
    for pause in timeline.spans("pause", actor):
        style.band(ax, "pause", pause.start, y - 0.42, pause.end - pause.start, 0.84, gid=gid)
        ax.annotate("paused", (pause.start, y + RUN_Y + RUN_H / 2), xytext=(4, 0), textcoords="offset points",
                    ha="left", va="center", fontsize=style.FONT["tick"], color=style.INK["quiet"], gid=gid)

    def marks(kind, dy, mark, size, **kw):
        ts = [e.t for e in timeline.of(kind, actor)]
        if ts:
            style.marker(ax, mark, ts, [y + dy] * len(ts), size, gid=gid, **kw)
        return ts

    marks(Kind.ACQUIRE_FAILED, BAND_Y + BAND_H / 2, "tried", 5, alpha=0.6)
    # each extend moves the deadline: an arrow from the extend to the deadline the server set, staggered in
    # two rows so consecutive extends stay apart; over a slow link both start when the server acted on the
    # extend (`at`), not when its reply came back, so an arrow spans the whole lease it granted
    moved = [e for e in timeline.of(Kind.RENEW, actor) if "deadline" in e.data]
    for k, e in enumerate(moved):
        row = top + 0.10 + 0.13 * (k % 2)
        style.arrow(ax, "moved", (e.data.get("at", e.t), row), (e.data["deadline"], row), gid=gid)  # legend too
    landed = [e.data.get("at", e.t) for e in timeline.of(Kind.RENEW, actor)]
    if landed:
        style.marker(ax, "extend", landed, [y + BAND_Y + BAND_H / 2] * len(landed), 22, gid=gid,
                     markeredgewidth=2.5)
    told = [e.t for e in timeline.of(Kind.RENEW_LOST, actor)]
    for t in marks(Kind.LAPSE, BAND_Y + BAND_H / 2, "lapse", 13):
        # right of the cross, on the band's own row, where the lapsed lease no longer is: above it run the
        # extend arrows, which a label there would sit on. When the holder is told just after (a step of the
        # server's clock), the told mark sits there: the cross goes unlabelled (the legend names it)
        if any(0 < w - t <= 0.12 * x_max for w in told):
            continue
        ax.annotate("lapse", (t, y + BAND_Y + BAND_H / 2), xytext=(9, 0), textcoords="offset points", ha="left",
                    va="center", fontsize=style.FONT["tick"], color=style.colour("lapse"), fontweight="bold", gid=gid,
                    bbox={"boxstyle": "round,pad=0.1", "fc": style.INK["on-mark"], "ec": "none", "alpha": 0.85})
    for t in marks(Kind.RENEW_LOST, BAND_Y + BAND_H / 2, "told", 11):
        ax.annotate("extend → 0", (t, y + RUN_Y + RUN_H / 2), xytext=(6, 0), textcoords="offset points",
                    ha="left", va="center", fontsize=style.FONT["tick"], gid=gid,
                    bbox={"boxstyle": "round,pad=0.15", "fc": style.INK["on-mark"], "ec": "none", "alpha": 0.85})
    marks(Kind.RECLAIM, BAND_Y + BAND_H / 2, "taken-back", 8)
    for t in marks(Kind.SAW_DONE, BAND_Y + BAND_H / 2, "saw-done", 7):
        # beside its own square, on the contender's row: a label above it would sit under the holder's bar
        ax.annotate("saw done, let go", (t, y + BAND_Y + BAND_H / 2), xytext=(8, 0), textcoords="offset points",
                    ha="left", va="center", fontsize=style.FONT["tick"], gid=gid)
    marks(Kind.WORK_DONE, RUN_Y + RUN_H / 2, "done", 8)


def _draw_trips(ax, timeline: Timeline, gid: str) -> bool:
    """The holder's commands over a slow link: down to the store when the server acted, back up when
    the reply arrived, one `trip` line each (its point marks when the server acted). Returns whether
    there were any."""
    trips = [t for t in timeline.spans("trip") if t.end is not None and t.data.get("at") is not None]
    for trip in trips:
        style.line(ax, "trip", [trip.start, trip.data["at"], trip.end], [WIRE_TOP, STORE_Y, WIRE_TOP], lw=1.4,
                   gid=gid, solid_joinstyle="miter")
    return bool(trips)


def _draw_mode(ax, name: str, timeline: Timeline, x_max: float, mode: ModeWords) -> None:
    gid = f"mode:{name}"
    style.lane(ax, name)
    lift = LINK_LIFT if timeline.spans("trip") else 0.0
    lanes = {"holder": LANES["holder"] + lift, "contender": LANES["contender"]}
    for actor, y in lanes.items():
        _draw_lane(ax, timeline, actor, gid, x_max, y)
    for start, end in timeline.verdict.overlap:  # under the lanes' bands (zorder), after them in the legend
        style.span(ax, "double-run", start, end, alpha=0.16, gid=gid, zorder=0.5)
        # at the foot of the panel, under the contender's work: the top is the lapse label's and the arrows'
        ax.text((start + end) / 2, FOOT_Y, "both run the job", ha="center", va="center",
                color=style.colour("double-run"), fontsize=style.FONT["tick"], fontweight="bold", gid=gid, clip_on=True)
    if _draw_trips(ax, timeline, gid):
        style.hline(ax, "lane-line", STORE_Y, lw=0.8, gid=gid)  # named by its tick, "store"
        lanes["store"] = STORE_Y
    for e in timeline.of(Kind.CLOCK_JUMP, "server"):  # a step of the server's clock, across the panel (the verdict
        style.vline(ax, "clock-jump", e.t, lw=1.4, gid=gid, zorder=0.6)  # line above says by how much)
    ax.set_title(mode.label, loc="left", fontsize=style.FONT["title"], fontweight="bold", gid=gid, pad=20)
    ax.text(0, 1.0, mode.static, transform=ax.transAxes, ha="left", va="bottom", fontsize=style.FONT["tick"],
            color=style.INK["text"], gid=gid)
    ax.set_ylim(FOOT_Y - 0.25, lanes["holder"] + 1.0)
    ax.set_yticks(list(lanes.values()), list(lanes), fontsize=style.FONT["label"])
    ax.tick_params(axis="x", labelsize=style.FONT["tick"])
    lease = timeline.params.lease
    if lease and x_max / (lease / 2) <= 14:  # ticks at the story's times: every half lease (15, 30, 45, …)
        ax.xaxis.set_major_locator(MultipleLocator(lease / 2))
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _legend(fig) -> None:
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False, handlelength=1.2,
                    columnspacing=1.0)


def draw_heartbeat(timelines: Any, words: FigureWords, fig: Figure | None = None, *,
                   figsize: tuple[float, float] = (12, 7.2)) -> Drawing:
    """Draw figure 1 from heartbeat Timelines ({mode: Timeline}, a list, or one) and their words.

    Follows the drawing protocol of `emqlab.plot`: mode artists carry gid "mode:<name>", one lane
    patch per mode carries "lane:<name>"; the readout line under the panels is `Drawing.readout`."""
    modes = _as_modes(timelines)
    if fig is None:
        fig = Figure(figsize=figsize, layout="constrained")
    elif not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.set_layout_engine("constrained")  # the outside legend and the readout's room need it
    x_max = max(_end_of(tl) for tl in modes.values()) + 3
    axes = fig.subplots(len(modes), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (name, tl) in zip(axes, modes.items()):
        _draw_mode(ax, name, tl, x_max, words.modes[name])
    axes[-1].set_xlim(0, x_max)
    # 0 is when the holder sent its acquire: beside the store it took the lock then; over a slow link the
    # server stamped the lease one delay later, and the holder learned it had the lock a delay after that
    linked = any(tl.spans("trip") for tl in modes.values())
    axes[-1].set_xlabel(f"model seconds since the holder {'asked for' if linked else 'took'} the lock",
                        fontsize=style.FONT["label"])
    _legend(fig)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")  # Drawing.fit wraps it and keeps room for it under the axes
    return Drawing(fig, words, dict(modes), readout)


def _held_or_lost(ax, points) -> None:
    """Each run's point: `held-run` where the holder kept its lease, `lapse` where it was lost."""
    for held, mark in ((True, "held-run"), (False, "lapse")):
        pts = [(x, y) for x, y, h in points if h == held]
        if pts:
            style.marker(ax, mark, *zip(*pts), size=9, zorder=3)


def _boundary_axes(fig, ax, words: FigureWords, ylabel: str, ncols: int) -> None:
    ax.set_xlabel("cadence, as a fraction of the lease", fontsize=style.FONT["label"])
    ax.set_ylabel(ylabel, fontsize=style.FONT["label"])
    ax.set_title(words.caption, fontsize=style.FONT["title"])
    ax.tick_params(labelsize=style.FONT["tick"])
    legend_of_marks(fig, loc="outside lower center", fontsize=style.FONT["tick"], ncols=ncols, frameon=False)


def draw_boundary(result: Mapping[str, Any], words: FigureWords, fig: Figure | None = None, *,
                  figsize: tuple[float, float] = (10, 6.5)) -> Drawing:
    """Held or lost, for each (cadence, pause) run of `emqlab.course.lab.cadence_boundary`, over the rule's line."""
    if fig is None:
        fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    lease, at = result["lease"], result["at"]
    _held_or_lost(ax, result["points"])
    fractions = sorted({f for f, _, _ in result["points"]})
    fine = [fractions[0] + i * (fractions[-1] - fractions[0]) / 400 for i in range(401)]
    style.line(ax, "rule-pause", fine, [lease - at % (f * lease) for f in fine], lw=1.5)
    _boundary_axes(fig, ax, words, "pause length (model seconds)", ncols=2)
    return Drawing(fig, words)


def draw_latency_boundary(result: Mapping[str, Any], words: FigureWords, fig: Figure | None = None, *,
                          figsize: tuple[float, float] = (10, 6.5)) -> Drawing:
    """Held or lost, for each (cadence, one-way delay) run of `emqlab.course.lab.latency_boundary`, over the
    rule's line, which the result carries as `line` (points of (cadence, largest delay held))."""
    if fig is None:
        fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    _held_or_lost(ax, result["points"])
    style.line(ax, "rule-delay", *zip(*result["line"]), lw=1.5)
    _boundary_axes(fig, ax, words, "one-way delay of the holder's link (model seconds)", ncols=3)
    return Drawing(fig, words)
