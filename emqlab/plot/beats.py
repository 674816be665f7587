"""The beat lane: each consumer's beats, step by step, over the server's clock (the reaper lesson).

`draw_beats(modes, words, fig=None) -> Drawing` draws, for each run, two panels on one time axis:

- the beats: one row per consumer and step (reap, promote, drain, park, top to bottom, the order a
  beat runs them), drawn from the consumers' `step` events: a reap or promote is a mark at the
  moment it ran (filled when it moved ids, hollow when nothing was due), a drain and a park are bars
  from when they started to when they ended (a drain that claimed a job is work as long as the job,
  one that waited or a park is waiting; a drain with nothing to claim is a tick at its moment);
- the server's clock: the `TIME` each reap read, drawn as the same mark as that reap above (which
  worker read it is the beat panel's row), against the lease scores in the active set (each claim's
  score, each extend's new one), so the reap shows up at the first beat whose TIME has reached the
  score.

Server readings are the ones the run recorded (`time_s`, `score_s`: the server's ms in model
seconds); they are pinned to the run's time base at the run's first claim, whose TIME is its
moment. Nothing here computes a deadline or composes a sentence: titles and the readout come
from the words.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure

from ..core.errors import BadParameter
from ..core.kinds import Kind
from ..core.timeline import Event, Timeline
from ..core.words import FigureWords
from . import Drawing, figure_for, legend_of_marks, modes_of, style

STEPS = ("reap", "promote", "drain", "park")  # the order of a beat (emqlab.queue.consumer.STEPS)
ROW_H = 0.56  # a bar's height, in rows
# a reap's or a promote's mark: (when it moved ids, when nothing was due)
MOVED = {"reap": ("taken-back", "reap-idle"), "promote": ("promote", "promote-idle")}


def _steps(tl: Timeline, actor: str | None = None) -> list[Event]:
    return [e for e in tl.of(Kind.STEP, actor) if e.data.get("step") in STEPS]


def _actors(tl: Timeline) -> list[str]:
    return sorted({e.actor for e in _steps(tl)})


def _pin(tl: Timeline) -> float | None:
    """Add this to a recorded server reading (model s) to put it on the run's time base."""
    claim = tl.first(Kind.CLAIM, where=lambda e: e.data.get("time_s") is not None)
    return None if claim is None else claim.t - claim.data["time_s"]


def _end(tl: Timeline) -> float:
    return max([e.t for e in tl.events] + [i.end for i in tl.intervals if i.end is not None], default=1.0)


def _draw_beats(ax, name: str, tl: Timeline, rows: dict[tuple[str, str], float]) -> None:
    gid = f"mode:{name}"
    style.lane(ax, name)
    for e in _steps(tl):
        y, step, moved = rows[(e.actor, e.data["step"])], e.data["step"], e.data.get("moved", 0)
        if step in ("reap", "promote"):
            style.marker(ax, MOVED[step][0 if moved else 1], [e.t], [y], size=11 if moved else 6, gid=gid)
            if moved and step == "reap":
                ax.annotate("reap → pending", (e.t, y), xytext=(8, 0), textcoords="offset points", va="center",
                            fontsize=style.FONT["tick"], gid=gid)
            continue
        start = e.data.get("started", e.t)
        if step == "drain":
            if moved:  # it ran a job: work, as long as the job
                style.band(ax, "work", start, y - ROW_H / 2, max(e.t - start, 0.05), ROW_H, gid=gid)
            elif e.t - start < 0.05:  # an empty drain: a tick at its moment
                style.marker(ax, "drain-idle", [e.t], [y], size=10, gid=gid)
            else:  # it waited for a job
                style.band(ax, "waiting", start, y - ROW_H / 2, e.t - start, ROW_H, gid=gid)
            if e.data.get("ended") == "crash":
                style.marker(ax, "crash", [e.t], [y], size=15, gid=gid)
        else:  # park: the wait for a wake or the end of the beat (a rim between parks back to back)
            style.band(ax, "waiting", start, y - ROW_H / 4, max(e.t - start, 0.05), ROW_H / 2,
                       edgecolor=style.INK["on-mark"], lw=1.5, gid=gid)
    ax.set_yticks(list(rows.values()), [f"{actor} · {step}" for actor, step in rows])
    ax.set_ylim(min(rows.values(), default=0) - 0.7, max(rows.values(), default=0) + 0.7)
    ax.tick_params(labelsize=style.FONT["tick"])


def _touches(e: Event) -> set[str]:
    """The jobs whose lease score `e` removes or rewrites."""
    if e.kind == Kind.STEP and e.data.get("step") == "reap":
        return set(e.data.get("jobs", []))
    if e.kind in (Kind.COMPLETE, Kind.CLAIM) and not e.data.get("late"):
        return {e.data.get("job")}
    if e.kind == Kind.RENEW:
        return set(e.data.get("jobs", [])) - set(e.data.get("lost", []))
    return set()


def _draw_clock(ax, name: str, tl: Timeline, actors: list[str], x_end: float) -> None:
    gid = f"mode:{name}"
    pin = _pin(tl)
    if pin is None:
        raise BadParameter("draw_beats needs runs whose claims recorded the server's TIME (emqlab records them "
                           "since the reaper lesson's beat lane); run the scenario again")
    # the server's clock itself, as a faint reference: only a beat's reap reads it
    style.line(ax, "server-clock", [0, x_end], [0, x_end], lw=1, zorder=-5, gid=gid)
    # each lease score, from the claim (or extend) that wrote it until the score left or changed:
    # a reap that moved the job, its completion, or the next claim or extend of it
    for e in (x for x in tl.events if x.kind in (Kind.CLAIM, Kind.RENEW) and x.data.get("score_s") is not None):
        jobs = set([e.data["job"]] if e.kind == Kind.CLAIM else e.data.get("jobs", []))
        after = tl.events[tl.events.index(e) + 1:]
        until = next((x.t for x in after if jobs & _touches(x)), x_end)
        score = e.data["score_s"] + pin
        style.line(ax, "lease-score", [e.t, until], [score, score], lw=2.5, dash_capstyle="butt", gid=gid)
        if e.kind == Kind.CLAIM:
            ax.annotate(f"attempts {e.data.get('attempts')}", (e.t, score), xytext=(4, 5), textcoords="offset points",
                        va="bottom", fontsize=style.FONT["tick"], color=style.colour("lease-score"), gid=gid)
    # the TIME each reap read, as that reap's own mark (which worker read it: its row in the beat panel)
    reaps = [e for actor in actors for e in _steps(tl, actor)
             if e.data["step"] == "reap" and e.data.get("time_s") is not None]
    quiet = [e for e in reaps if not e.data.get("moved")]
    if quiet:
        style.marker(ax, "reap-idle", [e.t for e in quiet], [e.data["time_s"] + pin for e in quiet], size=7, gid=gid)
    for e in reaps:
        if e.data.get("moved"):
            style.marker(ax, "taken-back", [e.t], [e.data["time_s"] + pin], size=11, gid=gid)
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
    first = None
    for k, (name, tl) in enumerate(modes.items()):
        actors = _actors(tl)
        rows = {(actor, step): -(a * (len(STEPS) + 0.6) + s) for a, actor in enumerate(actors)
                for s, step in enumerate(STEPS)}
        top = fig.add_subplot(grid[2 * k], sharex=first)
        first = first or top
        bottom = fig.add_subplot(grid[2 * k + 1], sharex=first)
        _draw_beats(top, name, tl, rows)
        _draw_clock(bottom, name, tl, actors, x_end)
        mode = words.modes[name]
        top.set_title(f"{mode.label}\n{mode.static}", fontsize=style.FONT["label"], loc="left")
        bottom.set_xlabel("model seconds", fontsize=style.FONT["label"])
    first.set_xlim(-1, x_end * 1.03 + 1)
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False, handlelength=1.4,
                    columnspacing=1.2)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")  # Drawing.fit wraps it and keeps room for it under the axes
    return Drawing(fig, words, dict(modes), readout)
