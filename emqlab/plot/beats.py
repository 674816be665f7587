"""The beat lane: each consumer's beats, step by step, over the server's clock (the reaper lesson).

`draw_beats(modes, words, fig=None) -> Drawing` draws, for each run, two panels on one time axis:

- the beats: one row per consumer and step (reap, promote, drain, park, top to bottom, the order a
  beat runs them), drawn from the consumers' `step` events: a reap or promote is a mark at the
  moment it ran (filled when it moved ids), a drain and a park are bars from when they started to
  when they ended (a drain that claimed a job runs as long as the job);
- the server's clock: the `TIME` each reap read, against the lease scores in the active set (each
  claim's score, each extend's new one), so the reap shows up at the first beat whose TIME has
  reached the score.

Server readings are the ones the run recorded (`time_s`, `score_s`: the server's ms in model
seconds); they are pinned to the run's time base at the run's first claim, whose TIME is its
moment. Nothing here computes a deadline or composes a sentence: titles and the readout come
from the words.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..core.errors import BadParameter
from ..core.timeline import Event, Timeline
from ..core.words import FigureWords
from . import Drawing, figure_for, legend_of_marks, modes_of, style

STEPS = ("reap", "promote", "drain", "park")  # the order of a beat (emqlab.queue.consumer.STEPS)
ROW_H = 0.56  # a bar's height, in rows
# who read a TIME: colours no step of the beat lane uses
ACTOR_COLOURS = (style.OKABE_ITO["black"], style.OKABE_ITO["vermillion"], style.OKABE_ITO["sky"],
                 style.OKABE_ITO["yellow"])


def _steps(tl: Timeline, actor: str | None = None) -> list[Event]:
    return [e for e in tl.of("step", actor) if e.data.get("step") in STEPS]


def _actors(tl: Timeline) -> list[str]:
    return sorted({e.actor for e in _steps(tl)})


def _pin(tl: Timeline) -> float | None:
    """Add this to a recorded server reading (model s) to put it on the run's time base."""
    claim = next((e for e in tl.of("claim") if e.data.get("time_s") is not None), None)
    return None if claim is None else claim.t - claim.data["time_s"]


def _end(tl: Timeline) -> float:
    return max([e.t for e in tl.events] + [i.end for i in tl.intervals if i.end is not None], default=1.0)


def _draw_beats(ax, name: str, tl: Timeline, rows: dict[tuple[str, str], float]) -> None:
    gid = f"mode:{name}"
    ax.add_patch(Rectangle((0, 0), 1, 1, transform=ax.transAxes, facecolor="#F2F2F2", lw=0, zorder=-10,
                           gid=f"lane:{name}", label="_lane"))
    for e in _steps(tl):
        y, step, moved = rows[(e.actor, e.data["step"])], e.data["step"], e.data.get("moved", 0)
        if step in ("reap", "promote"):
            colour = style.CONTENDER if step == "reap" else style.RENEW
            ax.plot([e.t], [y], marker="D" if step == "reap" else "o", markersize=11 if moved else 6,
                    color=colour, markerfacecolor=colour if moved else "white", markeredgewidth=1.5,
                    linestyle="none", gid=gid, label=f"{step} moved ids" if moved else f"{step}: nothing due")
            if moved and step == "reap":
                ax.annotate("reap → pending", (e.t, y), xytext=(8, 0), textcoords="offset points", va="center",
                            fontsize=style.FONT["tick"], gid=gid)
            continue
        start = e.data.get("started", e.t)
        if step == "drain":
            colour = style.RUN if moved else style.PAUSE
            if e.t - start < 0.05:  # an empty drain: a tick at its moment
                ax.plot([e.t], [y], marker="|", markersize=10, color=colour, linestyle="none", gid=gid,
                        label="drain running a job" if moved else "drain: nothing to claim")
            else:
                ax.add_patch(Rectangle((start, y - ROW_H / 2), e.t - start, ROW_H, color=colour, lw=0, gid=gid,
                                       label="drain running a job" if moved else "drain: waiting for a job"))
            if e.data.get("ended") == "crash":
                ax.plot([e.t], [y], marker="X", markersize=12, color="black", markeredgecolor="white",
                        linestyle="none", gid=gid, label="crashed mid-job")
        else:  # park: the wait for a wake or the end of the beat
            ax.add_patch(Rectangle((start, y - ROW_H / 4), max(e.t - start, 0.05), ROW_H / 2,
                                   facecolor=style.PAUSE, edgecolor="white", alpha=0.6, lw=1.5, gid=gid, label="park"))
    ax.set_yticks(list(rows.values()), [f"{actor} · {step}" for actor, step in rows])
    ax.set_ylim(min(rows.values(), default=0) - 0.7, max(rows.values(), default=0) + 0.7)
    ax.tick_params(labelsize=style.FONT["tick"])


def _touches(e: Event) -> set[str]:
    """The jobs whose lease score `e` removes or rewrites."""
    if e.kind == "step" and e.data.get("step") == "reap":
        return set(e.data.get("jobs", []))
    if e.kind in ("complete", "claim") and not e.data.get("late"):
        return {e.data.get("job")}
    if e.kind == "renew":
        return set(e.data.get("jobs", [])) - set(e.data.get("lost", []))
    return set()


def _draw_clock(ax, name: str, tl: Timeline, actors: list[str], x_end: float) -> None:
    gid = f"mode:{name}"
    pin = _pin(tl)
    if pin is None:
        raise BadParameter("draw_beats needs runs whose claims recorded the server's TIME (emqlab records them "
                           "since the reaper lesson's beat lane); run the scenario again")
    # the server's clock itself, as a faint reference: only a beat's reap reads it
    ax.plot([0, x_end], [0, x_end], color=style.PAUSE, lw=1, linestyle=(0, (4, 4)), zorder=-5, gid=gid,
            label="the server's clock")
    # each lease score, from the claim (or extend) that wrote it until the score left or changed:
    # a reap that moved the job, its completion, or the next claim or extend of it
    for e in (x for x in tl.events if x.kind in ("claim", "renew") and x.data.get("score_s") is not None):
        jobs = set([e.data["job"]] if e.kind == "claim" else e.data.get("jobs", []))
        after = tl.events[tl.events.index(e) + 1:]
        until = next((x.t for x in after if jobs & _touches(x)), x_end)
        score = e.data["score_s"] + pin
        ax.plot([e.t, until], [score, score], color=style.LEASE, lw=2.5, solid_capstyle="butt", gid=gid,
                label="lease score in active")
        if e.kind == "claim":
            ax.annotate(f"attempts {e.data.get('attempts')}", (e.t, score), xytext=(4, 5), textcoords="offset points",
                        va="bottom", fontsize=style.FONT["tick"], color=style.LEASE, gid=gid)
    for k, actor in enumerate(actors):
        reaps = [e for e in _steps(tl, actor) if e.data["step"] == "reap" and e.data.get("time_s") is not None]
        colour = ACTOR_COLOURS[k % len(ACTOR_COLOURS)]
        quiet = [e for e in reaps if not e.data.get("moved")]
        if quiet:
            ax.plot([e.t for e in quiet], [e.data["time_s"] + pin for e in quiet], marker="o", markersize=7,
                    color=colour, markerfacecolor="white", markeredgewidth=1.5, linestyle="none", gid=gid,
                    label=f"TIME read by {actor}'s reap")
        for e in reaps:
            if e.data.get("moved"):
                ax.plot([e.t], [e.data["time_s"] + pin], marker="D", markersize=11, color=style.CONTENDER,
                        markeredgecolor=colour, markeredgewidth=1.5, linestyle="none", gid=gid,
                        label="reap moved ids")
                ax.annotate("TIME has reached the score: reap", (e.t, e.data["time_s"] + pin), xytext=(10, -4),
                            textcoords="offset points", va="top", fontsize=style.FONT["tick"], gid=gid)
    ax.set_ylabel("server TIME (s)", fontsize=style.FONT["label"])
    ax.tick_params(labelsize=style.FONT["tick"])


def draw_beats(timelines: Any, words: FigureWords, fig: Figure | None = None, *,
               figsize: tuple[float, float] = (12, 7.2)) -> Drawing:
    """The beat lane of runs recorded with the consumers' steps (`reaper`, `queue_heartbeat`): for
    each run, its beats step by step above the server's TIME at each beat against the lease scores."""
    modes = modes_of(timelines, words, "draw_beats")
    fig = figure_for(fig, figsize)
    x_end = max(_end(tl) for tl in modes.values())
    grid = fig.add_gridspec(2 * len(modes), 1, height_ratios=[1.25, 1] * len(modes))
    every: list[str] = []
    first = None
    for k, (name, tl) in enumerate(modes.items()):
        actors = _actors(tl)
        every += [a for a in actors if a not in every]
        rows = {(actor, step): -(a * (len(STEPS) + 0.6) + s) for a, actor in enumerate(actors)
                for s, step in enumerate(STEPS)}
        top = fig.add_subplot(grid[2 * k], sharex=first)
        first = first or top
        bottom = fig.add_subplot(grid[2 * k + 1], sharex=first)
        _draw_beats(top, name, tl, rows)
        _draw_clock(bottom, name, tl, actors, x_end)
        mode = words.modes[name]
        top.set_title(f"{mode.label}\n{mode.verdict}", fontsize=style.FONT["label"], loc="left")
        bottom.set_xlabel("model seconds", fontsize=style.FONT["label"])
    first.set_xlim(-1, x_end * 1.03 + 1)
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False, handlelength=1.4,
                    columnspacing=1.2)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")  # Drawing.fit wraps it and keeps room for it under the axes
    return Drawing(fig, words, dict(modes), readout)
