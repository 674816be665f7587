"""The applied form's figures: the reaper timeline, the fencing timeline, the heartbeat on the
queue, and the chaos run. Each is `draw_x(modes, words, fig=None) -> Drawing`: `modes` is
{mode: Timeline} (or a list, named in the order of `words.modes`), `words` the `FigureWords` its
scenario wrote. One panel per mode, a `lane:<mode>` background patch, every artist of a mode
tagged `mode:<mode>`; each panel's title is the mode's label and static verdict, read from the
words: nothing here composes a sentence about a run.

Lease bands are the `lease` intervals as the run recorded them: their ends are the deadlines the
server stamped (claim and extend replies), never arithmetic done here.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.transforms import blended_transform_factory, offset_copy

from ..core.kinds import Kind
from ..core.timeline import Timeline
from ..core.words import FigureWords
from . import Drawing, figure_for, legend_of_marks, modes_of, style

BAND_Y, BAND_H = 0.06, 0.30
RUN_Y, RUN_H = -0.30, 0.20
SIZES = {"crash": 15}  # a mark's size in points where it is not 10 (a star's arms are thin)


def _actors(timeline: Timeline) -> list[str]:
    return sorted(a for a in timeline.actors if a.startswith("worker"))


def _end(timeline: Timeline) -> float:
    ends = [e.t for e in timeline.events]
    ends += [x for i in timeline.intervals for x in (i.start, i.end) if x is not None]
    return max(ends, default=1.0)


# event kind -> the mark it is drawn as (emqlab.core.marks), in drawing order
MARKS = {Kind.CRASH: "crash", Kind.REAP: "taken-back", Kind.RENEW: "extend", Kind.COMPLETE: "done",
         Kind.COMPLETE_REFUSED: "refused", Kind.EFFECT: "effect"}
# the word beside a kind's mark (an effect says how many times it was applied)
WORDS = {Kind.CRASH: "crash", Kind.REAP: "reap → pending", Kind.COMPLETE: "done",
         Kind.COMPLETE_REFUSED: "refused: stale attempts"}


def lease_bands(ax, tl: Timeline, actor: str, y0: float, height: float, gid: str, x_max: float) -> None:
    """`actor`'s leases as bands from `y0`, each labelled with the attempts its claim gave it and
    marked where it lapsed; a band ends where the server's deadline (or the settle) put it."""
    for lease in tl.spans("lease", actor):
        end = lease.end if lease.end is not None else lease.data.get("deadline", x_max)
        style.band(ax, "lease", lease.start, y0, max(end - lease.start, 0.15), height, gid=gid)
        # set in from the band's start by a mark's width: a reap's diamond may sit on that edge
        ax.annotate(f"lease · attempts {lease.data.get('attempts')}", (lease.start, y0 + height / 2), xytext=(9, 0),
                    textcoords="offset points", va="center", fontsize=style.FONT["tick"], color=style.INK["on-mark"],
                    gid=gid)
        if lease.data.get("ended") == "lapsed":
            style.marker(ax, "lapse", [end], [y0 + height / 2], size=12, gid=gid)


def _lanes(ax, name: str, tl: Timeline, x_max: float) -> None:
    gid = f"mode:{name}"
    style.lane(ax, name)
    actors = _actors(tl)
    ys = {a: float(len(actors) - 1 - k) for k, a in enumerate(actors)}
    for actor, y in ys.items():
        lease_bands(ax, tl, actor, y + BAND_Y, BAND_H, gid, x_max)
        for run in tl.spans("run", actor):
            end = run.end if run.end is not None else x_max
            style.band(ax, "work", run.start, y + RUN_Y, end - run.start, RUN_H, gid=gid)
        for pause in tl.spans("pause", actor):
            end = pause.end if pause.end is not None else x_max
            style.band(ax, "pause", pause.start, y - 0.42, end - pause.start, 0.84, gid=gid)
            ax.text((pause.start + end) / 2, y - 0.44, "stopped (pause)", ha="center", va="top",
                    fontsize=style.FONT["tick"], color=style.INK["quiet"], gid=gid)
        for kind, mark in MARKS.items():
            for e in tl.of(kind, actor):
                style.marker(ax, mark, [e.t], [y + BAND_Y + BAND_H + 0.12], size=SIZES.get(mark, 10), gid=gid)
                text = WORDS.get(kind) or (f"effect ×{e.data['applied']}" if kind == Kind.EFFECT else None)
                if text:
                    # effects and reaps label above the mark, outcomes below, so same-instant marks stay legible
                    dy = 5 if kind in (Kind.EFFECT, Kind.REAP, Kind.CRASH) else -16
                    twice = kind == Kind.EFFECT and e.data.get("applied", 1) > 1  # the effect of a double run
                    ax.annotate(text, (e.t, y + BAND_Y + BAND_H + 0.12), xytext=(6, dy), textcoords="offset points",
                                fontsize=style.FONT["tick"], gid=gid,
                                color=style.colour("double-run") if twice else style.INK["text"])
    for e in tl.of(Kind.CLOCK_JUMP, "server"):  # a step of the server's clock, across the panel
        style.vline(ax, "clock-jump", e.t, lw=1.4, gid=gid, zorder=0.6)
    ax.set_yticks(list(ys.values()), list(ys))
    ax.set_ylim(-0.6, max(ys.values(), default=0) + 0.8)
    ax.set_xlim(min(0.0, min((e.t for e in tl.events), default=0.0)) - 1, x_max * 1.04 + 1)
    ax.tick_params(labelsize=style.FONT["tick"])


def _title(ax, words: FigureWords, name: str) -> None:
    mode = words.modes[name]
    ax.set_title(f"{mode.label}\n{mode.static}", fontsize=style.FONT["label"], loc="left")


def _draw(timelines: Any, words: FigureWords, fig: Figure | None, what: str) -> Drawing:
    modes = modes_of(timelines, words, what)
    fig = figure_for(fig, (11, 1.2 + 3.0 * len(modes)))
    x_max = max(_end(tl) for tl in modes.values())
    axes = fig.subplots(len(modes), 1, squeeze=False, sharex=True)[:, 0]
    for ax, (name, tl) in zip(axes, modes.items()):
        _lanes(ax, name, tl, x_max)
        _title(ax, words, name)
    axes[-1].set_xlabel("model seconds", fontsize=style.FONT["label"])  # shared x: one label, under the last panel
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False)
    return Drawing(fig, words, modes)


def draw_reaper(timelines: Any, words: FigureWords, fig: Figure | None = None) -> Drawing:
    """Crash recovery (`reaper` runs): one panel per run (e.g. in-process and OS processes)."""
    return _draw(timelines, words, fig, "draw_reaper")


def draw_queue_heartbeat(timelines: Any, words: FigureWords, fig: Figure | None = None) -> Drawing:
    """The heartbeat on the queue (`queue_heartbeat` runs): one panel per renewal mode."""
    return _draw(timelines, words, fig, "draw_queue_heartbeat")


def draw_chaos(timelines: Any, words: FigureWords, fig: Figure | None = None) -> Drawing:
    """Chaos runs: pending / active / done over time, each crash a mark on the panel's top edge at its
    moment and each pause a band across the panel; one panel per run (e.g. fencing on and off)."""
    modes = modes_of(timelines, words, "draw_chaos")
    fig = figure_for(fig, (11, 1.2 + 3.4 * len(modes)))
    axes = fig.subplots(len(modes), 1, squeeze=False)[:, 0]
    for ax, (name, tl) in zip(axes, modes.items()):
        gid = f"mode:{name}"
        style.lane(ax, name)
        samples = tl.of(Kind.SAMPLE)
        ts = [e.t for e in samples]
        places = [("pending", "pending"), ("active", "active"), ("done", "done-count")]  # (field, mark)
        if any(e.data.get("dead") for e in samples):  # a job out of attempts: the dead set is a place too
            places.append(("dead", "dead"))
        for field, mark in places:
            style.line(ax, mark, ts, [e.data.get(field, 0) for e in samples], lw=2, gid=gid)
        # a crash: x its time, y the axes' top (set in by half the star, so it stays inside the panel)
        size = SIZES["crash"]
        top = offset_copy(blended_transform_factory(ax.transData, ax.transAxes), fig=fig, y=-size / 2, units="points")
        for e in tl.of(Kind.CRASH):
            style.marker(ax, "crash", [e.t], [1.0], size=size, transform=top, zorder=5, gid=gid)
        for span in tl.spans("pause"):
            style.span(ax, "pause", span.start, span.end if span.end is not None else span.start, alpha=0.4,
                       zorder=-5, gid=gid)
        _title(ax, words, name)
        ax.set_xlabel("model seconds", fontsize=style.FONT["label"])
        ax.set_ylabel("jobs", fontsize=style.FONT["label"])
        ax.tick_params(labelsize=style.FONT["tick"])
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False)
    return Drawing(fig, words, modes)
