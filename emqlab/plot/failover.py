"""The failover figure: one panel per guard, a lane per server and per worker, and the storage lane.

`draw_failover(modes, words, fig=None) -> Drawing`. In each panel, top to bottom:
- `primary`: the holder's lease band while the primary held it, the SIGKILL (black star), then, a
  hollow grey ring and a dash-dot line, the fresh server that rejoined as a replica of the new primary
  (set a ring's width right of the star when it rejoined at the kill's moment, so both marks show);
- `replica`: the dotted outline where replication was stalled, the promotion (black triangle), and
  the lease bands it held after it (the holder's lease blue, the contender's striped purple);
- `holder`, `contender`: when each worked (green), its WAITs (sky thin diamond acknowledged, hollow
  when timed out), a worker that never started (said beside its WAIT), a worker the storage stopped
  (black pentagon: told it lost the lock);
- `storage`: every write, a sky plus taken or a black thin cross refused, with the token it carried
  written under it in its writer's colour (the holder's blue, the contender's purple).
A dashed vermillion line marks the failover moment across the panel. Every mark is drawn from the
course's table (`emqlab.core.marks`) and is a recorded event or interval of the run; the titles and
the readout are the scenario's words.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.transforms import offset_copy

from ..core.kinds import Kind
from ..core.timeline import Timeline
from ..core.words import FigureWords
from . import Drawing, figure_for, legend_of_marks, modes_of, style, wrap

LANES = {"primary": 4.0, "replica": 3.0, "holder": 2.0, "contender": 1.0, "storage": 0.0}
LEASE_OF = {"holder": "lease", "contender": "contender-lease"}  # whose lease a band is: its mark
BAND_H, RUN_H = 0.56, 0.44
RING_SHIFT_PT = 15  # a rejoin ring at the kill's moment sits this far right of the star: both show whole


def _ink(writer: str) -> str:
    """The colour a write's token is written in: its writer's lease's colour."""
    return style.colour(LEASE_OF[writer]) if writer in LEASE_OF else style.INK["text"]


def _end(tl: Timeline) -> float:
    ends = [e.t for e in tl.events] + [x for i in tl.intervals for x in (i.start, i.end) if x is not None]
    return max(ends, default=1.0)


def _mark(ax, name: str, t: float, actor: str, gid: str, size: float = 10, **kw: Any) -> None:
    style.marker(ax, name, [t], [LANES[actor]], size, gid=gid, **kw)


def _servers(ax, tl: Timeline, gid: str, x_max: float) -> None:
    for band in tl.spans("lease"):
        if band.actor in ("primary", "replica"):
            end = band.end if band.end is not None else x_max
            style.band(ax, LEASE_OF.get(band.data.get("holder"), "lease"), band.start, LANES[band.actor] - BAND_H / 2,
                       max(end - band.start, 0.15), BAND_H, gid=gid)
    stall = tl.first(Kind.STALL, "replica")
    promoted = tl.first(Kind.PROMOTED, "replica")
    if stall is not None:
        end = promoted.t if promoted is not None else x_max
        style.band(ax, "stalled", stall.t, LANES["replica"] - 0.36, end - stall.t, 0.72, lw=0.8, gid=gid)
    for e in tl.of(Kind.KILLED, "primary"):
        style.vline(ax, "failover", e.t, lw=1.4, gid=gid)
        _mark(ax, "crash", e.t, "primary", gid, size=15)
    if promoted is not None:
        _mark(ax, "promoted", promoted.t, "replica", gid, size=12)
    kills = [e.t for e in tl.of(Kind.KILLED, "primary")]
    for e in tl.of(Kind.REJOINED, "primary"):
        style.line(ax, "rejoined-line", [e.t, x_max], [LANES["primary"]] * 2, lw=1.5, gid=gid)
        # the fresh server rejoins at the kill's moment on the story's clock (the clock stands still while it
        # starts): drawn on the star it would read as one mark, so it sits one ring's width to its right, on
        # its own line, where the server's new life begins
        beside = any(abs(e.t - k) < NEAR * x_max for k in kills)
        shift = offset_copy(ax.transData, fig=ax.figure, x=RING_SHIFT_PT, units="points") if beside else ax.transData
        _mark(ax, "rejoined", e.t, "primary", gid, size=12, markeredgewidth=2, zorder=2.1, transform=shift)


def _workers(ax, tl: Timeline, gid: str, x_max: float) -> None:
    for actor in ("holder", "contender"):
        y = LANES[actor]
        for run in tl.spans("run", actor):
            end = run.end if run.end is not None else x_max
            style.band(ax, "work", run.start, y - RUN_H / 2, max(end - run.start, 0.1), RUN_H, gid=gid)
        for e in tl.of(Kind.WAIT, actor):
            _mark(ax, "wait-acked" if e.data["acked"] >= 1 else "wait-timeout", e.t, actor, gid, size=10)
        for e in tl.of(Kind.NOT_STARTED, actor):  # beside its WAIT's mark, which says why
            ax.annotate("never started", (e.t, y), xytext=(9, 0), textcoords="offset points", ha="left",
                        va="center", fontsize=style.FONT["tick"], color=style.INK["text"], gid=gid)
        # told by a refused write or release
        for e in tl.of(Kind.WORK_STOPPED, actor) + tl.of(Kind.RELEASE_REFUSED, actor):
            _mark(ax, "told", e.t, actor, gid, size=11)


NEAR = 0.05  # of the panel's width: two writes closer than this would print their tokens on each other


def _storage(ax, tl: Timeline, gid: str, x_max: float) -> None:
    style.hline(ax, "lane-line", LANES["storage"], lw=1.5, gid=gid, zorder=0)
    last: tuple[float, object, int] | None = None  # (time, token, side) of the last token printed
    for e in tl.of(Kind.WRITE, "storage"):
        d = e.data
        _mark(ax, "effect" if d["accepted"] else "refused", e.t, "storage", gid, size=11)
        if d.get("token") is None:
            continue
        # the token rides on its write, centred under it, in its writer's colour; writes that come close
        # together say a token they share once, and a different token goes above the lane instead
        near = last is not None and e.t - last[0] < NEAR * x_max
        if near and last[1] == d["token"]:
            continue
        side = -last[2] if near else -1
        ax.annotate(str(d["token"]), (e.t, LANES["storage"]), xytext=(0, 7 * side), textcoords="offset points",
                    ha="center", va="top" if side < 0 else "bottom", fontsize=style.FONT["tick"],
                    color=_ink(d["writer"]), gid=gid)
        last = (e.t, d["token"], side)


def _panel(ax, name: str, tl: Timeline, words: FigureWords, x_max: float, chars: int) -> None:
    gid = f"mode:{name}"
    style.lane(ax, name)
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
    # the verdict just over the axes, the title over it: both in points, so a tall panel (a slide's, a row's)
    # leaves them the same room as a short one
    ax.set_title(mode.label, loc="left", fontsize=style.FONT["label"], fontweight="bold",
                 pad=7 + 15 * _lines(mode.static, chars))
    ax.annotate(wrap(mode.static, chars), (0, 1), xycoords="axes fraction", xytext=(0, 2), textcoords="offset points",
                ha="left", va="bottom", fontsize=style.FONT["tick"], color=style.INK["text"], gid=gid)


def grid(n: int) -> tuple[int, int]:
    """(rows, columns) of `n` panels, every cell filled: an even number in two columns, an odd number in one row
    (a panel's five lanes need the height: three stacked would print their names on each other)."""
    return (n // 2, 2) if n % 2 == 0 else (1, n)


def _lines(text: str, chars: int) -> int:
    return wrap(text, chars).count("\n") + 1


def draw_failover(timelines: Any, words: FigureWords, fig: Figure | None = None, *,
                  figsize: tuple[float, float] = (12, 7.2)) -> Drawing:
    """The failover figure (`failover` runs, one per guard): panels in a grid they fill (`grid`), lanes per
    server and per worker, the storage lane under them; the readout line under the panels."""
    modes = modes_of(timelines, words, "draw_failover")
    fig = figure_for(fig, figsize)
    x_max = max(_end(tl) for tl in modes.values()) * 1.04 + 0.5
    rows, cols = grid(len(modes))
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True, sharey=True).ravel()
    chars = max(30, int(fig.get_figwidth() / cols * 72 / (style.FONT["tick"] * 0.56)) - 6)
    for ax, (name, tl) in zip(axes, modes.items()):
        _panel(ax, name, tl, words, x_max, chars)
    for ax in axes[-cols:]:
        ax.set_xlabel("model seconds since the story began", fontsize=style.FONT["tick"])
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False, handlelength=1.6,
                    columnspacing=1.0)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")  # Drawing.fit wraps it and keeps room for it under the axes
    return Drawing(fig, words, dict(modes), readout)
