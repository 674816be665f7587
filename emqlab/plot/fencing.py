"""The fencing lesson's figure: the workers and the store they write to, fencing off and on.

`draw_fencing(modes, words, fig=None) -> Drawing`, one panel per mode. Each panel has a lane per
worker and, under them, a lane for the effects store (drawn the way Kleppmann draws the storage
in his fencing-token figure: the store as its own lane, each write an arrow from the worker
carrying the attempts it was made under, and the store's answer where the arrow lands). Every
mark in the store lane is one of the store's own recorded events (`store` actor: `write`,
`completion`), never something a worker believed. A paused worker's work bar is broken for the
length of the pause: no work is done while it is frozen. A refusal, of a write or a completion, is
only ever labelled with what refused it: the job's state (no longer active) or its attempts.

Titles and the readout are the scenario's words; the labels here name single events.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from ..core.kinds import Kind
from ..core.timeline import Timeline, minus
from ..core.words import FigureWords
from . import Drawing, figure_for, legend_of_marks, modes_of, style
from .applied import lease_bands

STORE = "store"
STORE_Y = 0.0
LEASE_Y, LEASE_H = 0.10, 0.30  # above a worker's line
WORK_Y, WORK_H = -0.32, 0.22  # below it


def _end(tl: Timeline) -> float:
    ends = [e.t for e in tl.events] + [x for i in tl.intervals for x in (i.start, i.end) if x is not None]
    return max(ends, default=1.0)


def store_marks(tl: Timeline) -> list[dict[str, Any]]:
    """What the storage lane shows, one entry per store event: the effect writes, and any completion
    the store turned away (a completion it accepted is the job settling, not a write to draw)."""
    marks = []
    for e in tl.events:
        if e.actor != STORE or e.kind not in (Kind.WRITE, Kind.COMPLETION):
            continue
        if e.kind == Kind.COMPLETION and e.data["accepted"]:
            continue
        d = e.data
        # a refusal says what refused it: the job's state (done, no longer active) or its attempts
        state = d.get("job_state")
        first, rest = (("job already", state) if state not in (None, "active") else ("not the", "current attempt"))
        if e.kind == Kind.WRITE:  # under the store's lane
            label = f"accepted · effect ×{d['applied']}" if d["accepted"] else f"refused: {first}\n{rest}"
        else:  # beside the writer's lane
            label = f"completion refused:\n{first} {rest}"
        marks.append({"t": e.t, "kind": e.kind, "writer": d["writer"], "attempts": d["attempts"],
                      "accepted": d["accepted"], "label": label})
    return marks


def _worker(ax, tl: Timeline, actor: str, y: float, gid: str, x_max: float) -> None:
    lease_bands(ax, tl, actor, y + LEASE_Y, LEASE_H, gid, x_max)
    pauses = [(p.start, p.end if p.end is not None else x_max) for p in tl.spans("pause", actor)]
    for run in tl.spans("run", actor):
        end = run.end if run.end is not None else x_max
        for a, b in minus(run.start, end, pauses):  # no work while the worker is frozen
            style.band(ax, "work", a, y + WORK_Y, b - a, WORK_H, gid=gid)
    for a, b in pauses:
        style.band(ax, "pause", a, y + WORK_Y - 0.06, b - a, WORK_H + 0.12, gid=gid)
        ax.text((a + b) / 2, y + WORK_Y + WORK_H / 2, "frozen: no work", ha="center", va="center",
                fontsize=style.FONT["tick"], color=style.INK["quiet"], gid=gid,
                bbox=dict(boxstyle="round,pad=0.15", fc=style.INK["on-mark"], lw=0, alpha=0.9))
    # on the reaper's lane, where its own lease is about to start: clear of the lane above
    for e in tl.of(Kind.REAP, actor):
        style.marker(ax, "taken-back", [e.t], [y + LEASE_Y + LEASE_H / 2], size=9, gid=gid, zorder=3)
        ax.annotate("reap → pending", (e.t, y + LEASE_Y + LEASE_H / 2), xytext=(-9, 0), textcoords="offset points",
                    ha="right", va="center", fontsize=style.FONT["tick"], gid=gid)


def _store(ax, tl: Timeline, ys: dict[str, float], gid: str) -> None:
    style.hline(ax, "lane-line", STORE_Y, lw=2, gid=gid)  # the store's line, named by its tick
    marks = store_marks(tl)
    last = max((k for k, m in enumerate(marks) if m["kind"] == Kind.WRITE), default=-1)
    for k, m in enumerate(marks):
        t, top = m["t"], ys[m["writer"]] + WORK_Y - 0.04
        if m["kind"] == Kind.WRITE:
            answer = "effect" if m["accepted"] else "refused"  # the store's answer: its mark, and its words' colour
            style.arrow(ax, "write", (t, top), (t, STORE_Y + 0.06), mutation_scale=14, lw=1.4, gid=gid)
            # the writer's attempts sit at the arrow's tail, after the end of the writer's own work bar (an arrow
            # from an upper lane crosses the lanes below it: a label on its way down would read as theirs); the
            # store's answer sits under the store's lane, each on the side away from its neighbour so same-panel
            # labels never meet
            side = 1 if k == last else -1
            ax.annotate(f"attempts {m['attempts']}", (t, ys[m["writer"]] + WORK_Y + WORK_H / 2), xytext=(6, 0),
                        textcoords="offset points", ha="left", va="center", fontsize=style.FONT["tick"], gid=gid)
            style.marker(ax, answer, [t], [STORE_Y], size=12, gid=gid)
            ax.annotate(m["label"], (t, STORE_Y), xytext=(6 * side, -10), textcoords="offset points",
                        ha="left" if side > 0 else "right", va="top", fontsize=style.FONT["tick"],
                        color=style.colour(answer), gid=gid)
        else:  # a completion turned away: on the writer's lane, with what turned it away
            y = ys[m["writer"]] + LEASE_Y
            style.marker(ax, "refused", [t], [y], size=10, gid=gid)
            ax.annotate(m["label"], (t, y), xytext=(-8, 0), textcoords="offset points", ha="right", va="bottom",
                        fontsize=style.FONT["tick"], gid=gid)


def _panel(ax, name: str, tl: Timeline, words: FigureWords, x_max: float) -> None:
    gid = f"mode:{name}"
    style.lane(ax, name)
    actors = sorted(a for a in tl.actors if a.startswith("worker"))
    ys = {a: float(len(actors) - k) for k, a in enumerate(actors)}  # workers above, the store at 0
    for actor, y in ys.items():
        _worker(ax, tl, actor, y, gid, x_max)
    _store(ax, tl, ys, gid)
    ax.set_yticks([*ys.values(), STORE_Y], [*ys, "effects store"])
    ax.set_ylim(STORE_Y - 0.95, max(ys.values(), default=1) + 0.75)  # room under the store for a two-line answer
    ax.set_xlim(-1, x_max * 1.15 + 1)  # room for the store's answer to the last write
    ax.tick_params(labelsize=style.FONT["tick"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    mode = words.modes[name]
    ax.set_title(f"{mode.label}\n{mode.static}", fontsize=style.FONT["label"], loc="left")


def _legend(fig: Figure) -> None:
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False, handlelength=1.2,
                    columnspacing=1.0)


def draw_fencing(timelines: Any, words: FigureWords, fig: Figure | None = None, *,
                 figsize: tuple[float, float] = (12, 7.2)) -> Drawing:
    """The fencing lesson (`fencing` runs): one panel per mode (fencing off and on), workers above the store."""
    modes = modes_of(timelines, words, "draw_fencing")
    fig = figure_for(fig, figsize)
    x_max = max(_end(tl) for tl in modes.values())
    axes = fig.subplots(len(modes), 1, squeeze=False, sharex=True)[:, 0]
    for ax, (name, tl) in zip(axes, modes.items()):
        _panel(ax, name, tl, words, x_max)
    axes[-1].set_xlabel("model seconds", fontsize=style.FONT["label"])
    _legend(fig)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")  # Drawing.fit wraps it and keeps room for it under the axes
    return Drawing(fig, words, dict(modes), readout)
