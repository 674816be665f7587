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
from matplotlib.patches import Rectangle

from ..core.timeline import Timeline
from ..core.words import FigureWords
from . import Drawing, figure_for, legend_of_marks, modes_of, style

BAND_Y, BAND_H = 0.06, 0.30
RUN_Y, RUN_H = -0.30, 0.20
EFFECT = style.OKABE_ITO["sky"]


def _actors(timeline: Timeline) -> list[str]:
    return sorted(a for a in timeline.actors if a.startswith("worker"))


def _end(timeline: Timeline) -> float:
    ends = [e.t for e in timeline.events]
    ends += [x for i in timeline.intervals for x in (i.start, i.end) if x is not None]
    return max(ends, default=1.0)


# (event kind, marker, colour, the word beside the mark), and what each kind of mark means in the legend
MARKS = [("crash", "X", "black", "crash"), ("reap", "D", style.CONTENDER, "reap → pending"),
         ("renew", "|", style.RENEW, None), ("complete", "o", style.RUN, "done"),
         ("complete_refused", "x", "black", "refused: stale attempts"), ("effect", "P", EFFECT, None)]
MEANS = {"crash": "crash", "reap": "a beat's reap takes the job back", "renew": "extend",
         "complete": "completion accepted", "complete_refused": "completion refused", "effect": "effect written"}


def lease_bands(ax, tl: Timeline, actor: str, y0: float, height: float, gid: str, x_max: float) -> None:
    """`actor`'s leases as bands from `y0`, each labelled with its attempts (the fencing token) and
    marked where it lapsed; a band ends where the server's deadline (or the settle) put it."""
    for lease in tl.spans("lease", actor):
        end = lease.end if lease.end is not None else lease.data.get("deadline", x_max)
        ax.add_patch(Rectangle((lease.start, y0), max(end - lease.start, 0.15), height, color=style.LEASE,
                               alpha=0.55, lw=0, gid=gid, label="lease (its attempts: the fencing token)"))
        # set in from the band's start by a mark's width: a reap's diamond may sit on that edge
        ax.annotate(f"lease · attempts {lease.data.get('attempts')}", (lease.start, y0 + height / 2), xytext=(9, 0),
                    textcoords="offset points", va="center", fontsize=style.FONT["tick"], color="white", gid=gid)
        if lease.data.get("ended") == "lapsed":
            ax.plot([end], [y0 + height / 2], marker="X", markersize=12, color=style.LAPSE,
                    markeredgecolor="white", linestyle="none", gid=gid, label="lease lapsed")


def _lanes(ax, name: str, tl: Timeline, x_max: float) -> None:
    gid = f"mode:{name}"
    ax.add_patch(Rectangle((0, 0), 1, 1, transform=ax.transAxes, facecolor="#F2F2F2", lw=0, zorder=-10,
                           gid=f"lane:{name}", label="_lane"))
    actors = _actors(tl)
    ys = {a: float(len(actors) - 1 - k) for k, a in enumerate(actors)}
    for actor, y in ys.items():
        lease_bands(ax, tl, actor, y + BAND_Y, BAND_H, gid, x_max)
        for run in tl.spans("run", actor):
            end = run.end if run.end is not None else x_max
            ax.add_patch(Rectangle((run.start, y + RUN_Y), end - run.start, RUN_H, color=style.RUN, lw=0, gid=gid,
                                   label="working"))
        for pause in tl.spans("pause", actor):
            end = pause.end if pause.end is not None else x_max
            ax.add_patch(Rectangle((pause.start, y - 0.42), end - pause.start, 0.84, facecolor="none",
                                   edgecolor=style.PAUSE, hatch="///", lw=1.0, gid=gid, label="pause"))
            ax.text((pause.start + end) / 2, y - 0.44, "stopped (pause)", ha="center", va="top",
                    fontsize=style.FONT["tick"], color="#555555", gid=gid)
        for kind, marker, colour, label in MARKS:
            for e in tl.of(kind, actor):
                ax.plot([e.t], [y + BAND_Y + BAND_H + 0.12], marker=marker, markersize=10, color=colour,
                        markeredgewidth=2, linestyle="none", gid=gid, label=MEANS[kind])
                text = label or (f"effect ×{e.data['applied']}" if kind == "effect" else None)
                if text:
                    # effects and reaps label above the mark, outcomes below, so same-instant marks stay legible
                    dy = 5 if kind in ("effect", "reap", "crash") else -16
                    ax.annotate(text, (e.t, y + BAND_Y + BAND_H + 0.12), xytext=(6, dy), textcoords="offset points",
                                fontsize=style.FONT["tick"], gid=gid,
                                color=style.LAPSE if kind == "effect" and e.data.get("applied", 1) > 1 else "black")
    ax.set_yticks(list(ys.values()), list(ys))
    ax.set_ylim(-0.6, max(ys.values(), default=0) + 0.8)
    ax.set_xlim(min(0.0, min((e.t for e in tl.events), default=0.0)) - 1, x_max * 1.04 + 1)
    ax.tick_params(labelsize=style.FONT["tick"])
    ax.set_xlabel("model seconds", fontsize=style.FONT["label"])


def _title(ax, words: FigureWords, name: str) -> None:
    mode = words.modes[name]
    ax.set_title(f"{mode.label}\n{mode.verdict}", fontsize=style.FONT["label"], loc="left")


def _draw(timelines: Any, words: FigureWords, fig: Figure | None, what: str) -> Drawing:
    modes = modes_of(timelines, words, what)
    fig = figure_for(fig, (11, 1.2 + 3.0 * len(modes)))
    x_max = max(_end(tl) for tl in modes.values())
    axes = fig.subplots(len(modes), 1, squeeze=False, sharex=True)[:, 0]
    for ax, (name, tl) in zip(axes, modes.items()):
        _lanes(ax, name, tl, x_max)
        _title(ax, words, name)
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False)
    return Drawing(fig, words, modes)


def draw_reaper(timelines: Any, words: FigureWords, fig: Figure | None = None) -> Drawing:
    """Crash recovery (`reaper` runs): one panel per run (e.g. in-process and OS processes)."""
    return _draw(timelines, words, fig, "draw_reaper")


def draw_queue_heartbeat(timelines: Any, words: FigureWords, fig: Figure | None = None) -> Drawing:
    """The heartbeat on the queue (`queue_heartbeat` runs): one panel per renewal mode."""
    return _draw(timelines, words, fig, "draw_queue_heartbeat")


def draw_chaos(timelines: Any, words: FigureWords, fig: Figure | None = None) -> Drawing:
    """Chaos runs: pending / active / done over time, with the crashes and pauses marked; one panel
    per run (e.g. fencing on and off)."""
    modes = modes_of(timelines, words, "draw_chaos")
    fig = figure_for(fig, (11, 1.2 + 3.4 * len(modes)))
    axes = fig.subplots(len(modes), 1, squeeze=False)[:, 0]
    for ax, (name, tl) in zip(axes, modes.items()):
        gid = f"mode:{name}"
        ax.add_patch(Rectangle((0, 0), 1, 1, transform=ax.transAxes, facecolor="#F2F2F2", lw=0, zorder=-10,
                               gid=f"lane:{name}", label="_lane"))
        samples = tl.of("sample")
        ts = [e.t for e in samples]
        places = [("pending", style.PAUSE), ("active", style.LEASE), ("done", style.RUN)]
        if any(e.data.get("dead") for e in samples):  # a job out of attempts: the dead set is a place too
            places.append(("dead", style.LAPSE))
        for field, colour in places:
            ax.plot(ts, [e.data.get(field, 0) for e in samples], color=colour, lw=2, label=field, gid=gid)
        for e in tl.of("crash"):
            ax.axvline(e.t, color=style.LAPSE, lw=1.2, alpha=0.8, ls="--", gid=gid, label="a worker crashes")
        for span in tl.spans("pause"):
            ax.axvspan(span.start, span.end if span.end is not None else span.start, color=style.PAUSE, alpha=0.25,
                       lw=0, gid=gid, label="a worker paused")
        _title(ax, words, name)
        ax.set_xlabel("model seconds", fontsize=style.FONT["label"])
        ax.set_ylabel("jobs", fontsize=style.FONT["label"])
        ax.tick_params(labelsize=style.FONT["tick"])
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False)
    return Drawing(fig, words, modes)
