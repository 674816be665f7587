"""The failover figure: one panel per guard, a lane per server and per worker, and the storage lane.

`draw_failover(modes, words, fig=None) -> Drawing`. In each panel, top to bottom:
- `primary`: the holder's lease band while the primary held it, the SIGKILL (✕), then, hollow, the
  fresh server that rejoined as a replica of the new primary;
- `replica`: the hatched stretch where replication was stalled, the promotion (▲), and the lease
  bands it held after it (whose lease: the band's colour);
- `holder`, `contender`: when each worked (green), its WAITs (◆ acknowledged, ◇ timed out), a
  worker that never started (said beside its WAIT), a worker the storage stopped (✕);
- `storage`: every write, coloured by its writer, ● taken or ✕ refused, with the token it carried.
A dashed line marks the failover moment across the panel. Every mark is a recorded event or
interval of the run; the titles and the readout are the scenario's words.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..core.timeline import Timeline
from ..core.words import FigureWords
from . import Drawing, figure_for, legend_of_marks, modes_of, style, wrap

LANES = {"primary": 4.0, "replica": 3.0, "holder": 2.0, "contender": 1.0, "storage": 0.0}
WHO = {"holder": style.LEASE, "contender": style.CONTENDER}  # a lease band's and a write's colour
BAND_H, RUN_H = 0.56, 0.44
FAILOVER = style.LAPSE


def _end(tl: Timeline) -> float:
    ends = [e.t for e in tl.events] + [x for i in tl.intervals for x in (i.start, i.end) if x is not None]
    return max(ends, default=1.0)


def _mark(ax, t: float, actor: str, gid: str, **kw: Any) -> None:
    ax.plot([t], [LANES[actor]], linestyle="none", gid=gid, **kw)


def _servers(ax, tl: Timeline, gid: str, x_max: float) -> None:
    for band in tl.spans("lease"):
        if band.actor in ("primary", "replica"):
            end = band.end if band.end is not None else x_max
            ax.add_patch(Rectangle((band.start, LANES[band.actor] - BAND_H / 2), max(end - band.start, 0.15), BAND_H,
                                   color=WHO.get(band.data.get("holder"), style.PAUSE), alpha=0.55, lw=0, gid=gid,
                                   label=f"{band.data.get('holder', 'a worker')}'s lease"))
    stall = next(iter(tl.of("stall", "replica")), None)
    promoted = next(iter(tl.of("promoted", "replica")), None)
    if stall is not None:
        end = promoted.t if promoted is not None else x_max
        ax.add_patch(Rectangle((stall.t, LANES["replica"] - 0.36), end - stall.t, 0.72, facecolor="none",
                               edgecolor=style.PAUSE, hatch="///", lw=0.8, gid=gid, label="replication stalled"))
    for e in tl.of("killed", "primary"):
        ax.axvline(e.t, color=FAILOVER, ls="--", lw=1.4, gid=gid, label="the failover")
        _mark(ax, e.t, "primary", gid, marker="X", markersize=13, color=FAILOVER, markeredgecolor="white",
              label="primary killed")
    if promoted is not None:
        _mark(ax, promoted.t, "replica", gid, marker="^", markersize=12, color=FAILOVER, markeredgecolor="white",
              label="replica promoted")
    for e in tl.of("rejoined", "primary"):
        ax.plot([e.t, x_max], [LANES["primary"]] * 2, color=style.PAUSE, lw=1.5, ls=":", gid=gid,
                label="a replica of the new primary")
        # a ring, under the kill's ✕: the fresh server often rejoins at the moment of the promotion (the
        # story's clock stands still while it starts), and the two marks must both show
        _mark(ax, e.t, "primary", gid, marker="o", markersize=17, markerfacecolor="white", color=style.PAUSE,
              markeredgewidth=2, zorder=1.9, label="a fresh server rejoins")


def _workers(ax, tl: Timeline, gid: str, x_max: float) -> None:
    for actor in ("holder", "contender"):
        y = LANES[actor]
        for run in tl.spans("run", actor):
            end = run.end if run.end is not None else x_max
            ax.add_patch(Rectangle((run.start, y - RUN_H / 2), max(end - run.start, 0.1), RUN_H, color=style.RUN,
                                   alpha=0.9, lw=0, gid=gid, label="working"))
        for e in tl.of("wait", actor):
            acked = e.data["acked"] >= 1
            _mark(ax, e.t, actor, gid, marker="D", markersize=8, color=WHO[actor],
                  markerfacecolor=WHO[actor] if acked else "white", markeredgewidth=1.8,
                  label="WAIT acked" if acked else "WAIT timed out")
        for e in tl.of("not_started", actor):  # beside its WAIT's mark, which says why
            ax.annotate("never started", (e.t, y), xytext=(9, 0), textcoords="offset points", ha="left",
                        va="center", fontsize=style.FONT["tick"], gid=gid)
        for e in tl.of("work_stopped", actor):
            _mark(ax, e.t, actor, gid, marker="X", markersize=11, color="black", markeredgecolor="white",
                  label="stopped: its write refused")


NEAR = 0.05  # of the panel's width: two writes closer than this would print their tokens on each other


def _storage(ax, tl: Timeline, gid: str, x_max: float) -> None:
    ax.axhline(LANES["storage"], color="#777777", lw=1.5, gid=gid, zorder=0, label="_storage lane")
    last: tuple[float, object, int] | None = None  # (time, token, side) of the last token printed
    for e in tl.of("write", "storage"):
        d, y = e.data, LANES["storage"]
        colour = WHO.get(d["writer"], "black")
        if d["accepted"]:
            ax.plot([e.t], [y], marker="o", markersize=9, color=colour, markeredgecolor="white", ls="none", gid=gid,
                    label="write taken (its token below it, if it carries one)")
        else:
            ax.plot([e.t], [y], marker="X", markersize=12, color=style.LAPSE, markeredgecolor="white", ls="none",
                    gid=gid, label="write refused")
        if d.get("token") is None:
            continue
        # the token rides on its write, centred under it, in its writer's colour; writes that come close
        # together say a token they share once, and a different token goes above the lane instead
        near = last is not None and e.t - last[0] < NEAR * x_max
        if near and last[1] == d["token"]:
            continue
        side = -last[2] if near else -1
        ax.annotate(str(d["token"]), (e.t, y), xytext=(0, 7 * side), textcoords="offset points", ha="center",
                    va="top" if side < 0 else "bottom", fontsize=style.FONT["tick"], color=colour, gid=gid)
        last = (e.t, d["token"], side)


def _panel(ax, name: str, tl: Timeline, words: FigureWords, x_max: float, chars: int) -> None:
    gid = f"mode:{name}"
    ax.add_patch(Rectangle((0, 0), 1, 1, transform=ax.transAxes, facecolor="#F2F2F2", lw=0, zorder=-10,
                           gid=f"lane:{name}", label="_lane"))
    _servers(ax, tl, gid, x_max)
    _workers(ax, tl, gid, x_max)
    _storage(ax, tl, gid, x_max)
    ax.set_yticks(list(LANES.values()), list(LANES), fontsize=style.FONT["tick"])
    ax.set_ylim(-0.95, 4.5)
    ax.set_xlim(0, x_max)
    ax.tick_params(axis="x", labelsize=style.FONT["tick"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    mode = words.modes[name]
    ax.set_title(mode.label, loc="left", fontsize=style.FONT["label"], fontweight="bold", pad=4 + 14 * _lines(mode.verdict, chars))
    ax.text(0, 1.01, wrap(mode.verdict, chars), transform=ax.transAxes, ha="left", va="bottom",
            fontsize=style.FONT["tick"], color="#333333", gid=gid)


def _lines(text: str, chars: int) -> int:
    return wrap(text, chars).count("\n") + 1


def draw_failover(timelines: Any, words: FigureWords, fig: Figure | None = None, *,
                  figsize: tuple[float, float] = (12, 7.2)) -> Drawing:
    """The failover figure (`failover` runs, one per guard): panels in two columns, lanes per server
    and per worker, the storage lane under them; the readout line under the panels."""
    modes = modes_of(timelines, words, "draw_failover")
    fig = figure_for(fig, figsize)
    x_max = max(_end(tl) for tl in modes.values()) * 1.04 + 0.5
    cols = 1 if len(modes) == 1 else 2
    rows = (len(modes) + cols - 1) // cols
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True, sharey=True).ravel()
    chars = max(30, int(fig.get_figwidth() / cols * 72 / (style.FONT["tick"] * 0.56)) - 6)
    for ax, (name, tl) in zip(axes, modes.items()):
        _panel(ax, name, tl, words, x_max, chars)
    for ax in axes[len(modes):]:
        ax.set_visible(False)
    for ax in axes[-cols:]:
        ax.set_xlabel("model seconds since the story began", fontsize=style.FONT["tick"])
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False, handlelength=1.6,
                    columnspacing=1.0)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")  # Drawing.fit wraps it and keeps room for it under the axes
    return Drawing(fig, words, dict(modes), readout)
