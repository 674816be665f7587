"""A class on one server, drawn for the back of the room: one lane per joined learner, and the totals.

`draw_class(lanes, totals, words, fig=None) -> Drawing`. `lanes` are plain dicts, one per learner
(`emqlab.classroom.board.class_lanes` makes them): `slot`, `label`, `state`, and its `leases`
({job, attempts, start, deadline, end, ended}), `pauses`, `reaps`, `crashes`, every time in seconds
on the server's clock before the moment the figure shows (0 = now, so times are ≤ 0). `totals` is
the class's status (`Board.status()`), or None for one learner's own lane (no totals strip).

Each lease is a band (`lease`) from its claim to its end (a completion, a refused late write, a late
effect that landed with fencing off, a crash), drawn no further than the deadline the server stamped; past
that deadline the band is `held-past` (held after its lease lapsed: stale), and a crashed worker's lease
is `crashed-lease`, outlined until it runs out (then a classmate's reaper may take the job). Labels of what
began (a crash, a pause and the job it held, a job taken over) sit above the band, labels of how a lease
ended under it, each to the side of its mark that keeps it in the lanes. A classmate's job taken over
(attempts > 1) is a lease like any other, its words ("j3, try 2") in the taken-over ink. Every mark is the
course's (`emqlab.core.marks`). Each learner is a mode (`mode:<slot>`, lane patch `lane:<slot>`): lighting
one dims the others. Words: the labels here name single events; every sentence is the scenario's (`class_words`).
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.transforms import blended_transform_factory

from ..core.words import FigureWords
from ..plot import Drawing, figure_for, legend_of_marks, style
from .board import class_lanes, class_snapshot, class_words, held_past

BAND_H, LANE_H = 0.44, 0.9
ANNOTATE_MAX = 12  # lanes; more, and the marks speak through the legend and the readout alone
SPLIT_LABELS = 15  # lanes; more, and every other lane is named on the right
MIN_WINDOW_S = 10.0
# a label's box, legible on hatching
LABEL_BOX = dict(boxstyle="square,pad=0.15", fc=style.INK["on-mark"], edgecolor="none", alpha=0.85)


def _tiles(ax, totals: dict[str, Any]) -> None:
    """The totals strip: one tile per count, its number large, in the refused mark's colour where it is bad
    news and the done mark's where it is good."""
    ok = bool(totals["invariants_ok"])
    tiles = [("learners", str(totals["learners"]), False), ("enqueued", str(totals["enqueued"]), False),
             ("completed", str(totals["completed"]), False), ("lost", str(totals["lost"]), totals["lost"] > 0),
             ("duplicate\neffects", str(totals["duplicate_effects"]), totals["duplicate_effects"] > 0),
             ("reaped", str(totals["reaped"]), False), ("invariants", "ok" if ok else "BROKEN", not ok),
             ("fencing", "on" if totals.get("fencing", True) else "off", not totals.get("fencing", True))]
    ax.set_axis_off()
    ax.set_xticks([])
    ax.set_yticks([])
    for i, (label, value, bad) in enumerate(tiles):
        x = (i + 0.5) / len(tiles)
        colour = style.INK["alarm"] if bad else (style.colour("done") if label in ("invariants", "completed")
                                                      else style.INK["text"])
        ax.text(x, 0.42, value, transform=ax.transAxes, ha="center", va="bottom", fontsize=28,
                fontweight="bold", color=colour)
        ax.text(x, 0.36, label, transform=ax.transAxes, ha="center", va="top", fontsize=style.FONT["label"],
                color=style.INK["text"], linespacing=1.0)


class _Labels:
    """Event labels on one lane, kept apart: a label that would print over an earlier one is skipped."""

    def __init__(self, ax, per_s: float, fontsize: float):
        self.ax, self.per_s, self.fontsize = ax, per_s, fontsize  # per_s: data seconds per pixel
        self.taken: dict[tuple[float, bool], list[tuple[float, float]]] = {}

    def put(self, x: float, y: float, text: str, gid: str, colour: str, left: float, below: bool = False) -> None:
        """A label at `x`, above the band (what began there) or `below` it (how a lease ended there): to the
        mark's right, or to its left where the right has no room (an end's label prefers the left)."""
        width = (len(text) * self.fontsize * 0.62 + 10) * self.per_s
        if x < left:
            return
        spans = self.taken.setdefault((y, below), [])
        sides = ((x - width, x), (x, x + width)) if below else ((x, x + width), (x - width, x))
        free = [(x0, x1) for x0, x1 in sides
                if x0 >= left and x1 <= 0.5 and not any(a < x1 and x0 < b for a, b in spans)]
        if not free:
            return
        x0, x1 = free[0]
        spans.append((x0, x1))
        edge, offset, va = (y - BAND_H / 2, -3, "top") if below else (y + BAND_H / 2, 3, "bottom")
        self.ax.annotate(text, (x, edge), xytext=(4 if x0 == x else -4, offset), textcoords="offset points",
                         ha="left" if x0 == x else "right", va=va, fontsize=self.fontsize, color=colour,
                         gid=gid, annotation_clip=True, bbox=LABEL_BOX)


def _lane(ax, lane: dict[str, Any], y: float, labels: _Labels | None, left: float, mark: float = 1.0) -> None:
    """One learner's lane at height `y`; `mark` scales the markers (smaller when many lanes share the axes)."""
    gid = f"mode:{lane['slot']}"
    paused = lane["state"] == "paused"
    for b in lane["leases"]:
        start, deadline = b["start"], b["deadline"]
        end = b["end"] if b["end"] is not None else 0.0
        stale = held_past(b, paused)  # held on after its lease lapsed: a stale holder
        held_to = deadline if stale else end
        # a white edge keeps two jobs apart
        style.band(ax, "lease", start, y - BAND_H / 2, max(held_to - start, 0.02), BAND_H, alpha=0.6,
                   edgecolor=style.INK["on-mark"], lw=1.0, gid=gid)
        if stale:
            style.band(ax, "held-past", deadline, y - BAND_H / 2, end - deadline, BAND_H, lw=1.0, gid=gid)
        if b["ended"] == "crashed" and deadline > end:  # the lease runs on, unrenewed, until the reaper may take it
            style.band(ax, "crashed-lease", end, y - BAND_H / 2, deadline - end, BAND_H, lw=1.5, gid=gid)
        if b["ended"] == "completed":
            style.marker(ax, "done", [end], [y], size=6 * mark, gid=gid)
        elif b["ended"] == "refused":
            style.marker(ax, "refused", [end], [y], size=15 * mark, gid=gid)
            if labels:
                labels.put(end, y, f"late write on {b['job']} refused", gid, style.colour("refused"), left, below=True)
        elif b["ended"] == "landed":  # fencing off: the late effect was written, then its completion refused
            style.marker(ax, "effect", [end], [y], size=15 * mark, gid=gid)
            if labels:
                labels.put(end, y, f"late effect on {b['job']} landed", gid, style.INK["text"], left, below=True)
        if b["attempts"] > 1 and labels and b["ended"] != "refused":
            labels.put(start, y, f"{b['job']}, try {b['attempts']}", gid, style.INK["taken"], left)
    for p in lane["pauses"]:
        end = p["end"] if p["end"] is not None else 0.0
        style.band(ax, "pause", p["start"], y - LANE_H / 2 + 0.04, end - p["start"], LANE_H - 0.08, lw=1.2, gid=gid)
        if labels:
            held = ", ".join(p.get("holding", []))
            labels.put(p["start"], y, f"paused (holding {held})" if held else "paused", gid, style.INK["quiet"], left)
    for c in lane["crashes"]:
        style.marker(ax, "crash", [c["t"]], [y], size=17 * mark, gid=gid)
        if labels:
            held = ", ".join(c["holding"])
            labels.put(c["t"], y, f"crash (holding {held})" if held else "crash", gid, style.colour("crash"), left)
    for r in lane["reaps"]:
        style.marker(ax, "taken-back", [r["t"]], [y + BAND_H / 2 + 0.1], size=10 * mark, gid=gid)
        if labels:
            labels.put(r["t"], y, "reaped " + ", ".join(r["jobs"][:3]), gid, style.colour("taken-back"), left)


def _window(lanes: list[dict[str, Any]], window: float | None) -> float:
    """The left edge of the lanes, seconds before now: what the lanes hold, at least MIN_WINDOW_S and at
    most `window` seconds (None: no most)."""
    times = [t for lane in lanes for t in ([b["start"] for b in lane["leases"]] + [p["start"] for p in lane["pauses"]]
                                            + [r["t"] for r in lane["reaps"]] + [c["t"] for c in lane["crashes"]])]
    left = min(min(times, default=0.0) - 1.0, -MIN_WINDOW_S)
    return left if window is None else max(left, -float(window))


def draw_class(lanes: list[dict[str, Any]], totals: dict[str, Any] | None, words: FigureWords,
               fig: Figure | None = None, *, figsize: tuple[float, float] = (15, 7.5),
               window: float | None = None, readout: bool = True) -> Drawing:
    """The class (or one learner's lane, `totals=None`): lanes over the server's clock, totals on top."""
    fig = figure_for(fig, figsize)
    if totals is not None:
        top, ax = fig.subplots(2, 1, height_ratios=[1.0, 5.0])
        _tiles(top, totals)
    else:
        ax = fig.subplots()
    left = _window(lanes, window)
    n = max(len(lanes), 1)
    ys = {lane["slot"]: float(n - 1 - k) for k, lane in enumerate(lanes)}
    ax.set_xlim(left, 0.5)
    ax.set_ylim(-0.6, n - 0.4)
    width_px = fig.get_figwidth() * fig.dpi * 0.8  # the lanes' width, about
    labels = _Labels(ax, (0.5 - left) / width_px, style.FONT["tick"]) if len(lanes) <= ANNOTATE_MAX else None
    band = blended_transform_factory(ax.transAxes, ax.transData)
    for lane in lanes:
        y = ys[lane["slot"]]
        style.lane(ax, lane["slot"], transform=band, xy=(0, y - LANE_H / 2), size=(1, LANE_H))
        _lane(ax, lane, y, labels, left, 1.0 if len(lanes) <= ANNOTATE_MAX else 0.6)
    style.vline(ax, "now", 0, lw=1.2)  # named in the axis label
    names = [lane["label"] + ("" if lane["state"] == "working" else f" · {lane['state']}") for lane in lanes]
    if len(lanes) > SPLIT_LABELS:  # every other lane named on the right: the labels keep two lanes apart
        right = ax.twinx()
        right.set_ylim(ax.get_ylim())
        right.tick_params(axis="x", bottom=False, labelbottom=False)  # the lanes axis has the x ticks
        right.spines["top"].set_visible(False)
        right.set_yticks([ys[lane["slot"]] for lane in lanes[1::2]], names[1::2], fontsize=style.FONT["tick"])
        ax.set_yticks([ys[lane["slot"]] for lane in lanes[0::2]], names[0::2], fontsize=style.FONT["tick"])
    else:
        ax.set_yticks(list(ys.values())[:len(lanes)], names, fontsize=style.FONT["label"])
    ax.tick_params(axis="x", labelsize=style.FONT["tick"])
    ax.set_xlabel("seconds before now, on the server's clock (now: dashed line)", fontsize=style.FONT["label"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False, handlelength=1.4,
                    columnspacing=1.2)
    text = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                    gid="readout") if readout else None
    return Drawing(fig, words, {}, text)


# -- the figures: a class's board, or one learner's lane, read now ---------------------------------
def class_figure(board: Any, fig=None, **kw: Any) -> Drawing:
    """The instructor's class: one lane per joined learner over the server's clock, the totals on top.
    `board`: an `emqlab.classroom.board.Board` (read now) or a `class_snapshot` of one.
    kw: figsize, window (the most seconds shown before now; default: all the lanes hold), readout."""
    snap = board if isinstance(board, dict) else class_snapshot(board)
    return draw_class(class_lanes(snap), snap["totals"], class_words(snap), fig=fig, **kw)


def learner_lane_figure(handle: Any, fig=None, **kw: Any) -> Drawing:
    """A learner's own lane, from the handle `lab.join` returned (or its `.snapshot()`): its leases on
    the server's clock, its crash or pause, and under it what became of the job it lost."""
    snap = handle if isinstance(handle, dict) else handle.snapshot()
    kw.setdefault("figsize", (12, 3.6))
    return draw_class(class_lanes(snap), None, class_words(snap), fig=fig, **kw)
