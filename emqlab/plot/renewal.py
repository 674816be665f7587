"""The course's second figure and the benchmark's two: what renewal costs a worker holding K leases.

- `draw_renewal_cost`: figure 2 from `renewal_cost` Timelines (K = 6 on the page), one lane per
  design: one row per timer where each round trip names its job, else one row; the lease held on
  each row until the worker let it go (or it was lost or taken), a mark for every round trip the run
  recorded, the count per tick above each tick, the static verdicts and the readout line.

Every function takes the words its scenario wrote (`emqlab.scenarios.renewal_cost`'s
`figure_words`, `scaling_words`, `capacity_words`) and returns a `Drawing`; the designs' labels
come from the registry `emqlab.lease.designs.DESIGNS`, every mark from the course's table
(`emqlab.core.marks`: MARKS, and SERIES for a benchmark's line per design or library).
- `draw_scaling`: benchmark rows -> round trips and server µs per tick against K (log–log).
- `draw_capacity`: capacity search results -> measured tick time against K, the cadence line, and
  the largest K each design keeps alive (for the session design, where its memory ran out).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

from ..lease.designs import DESIGNS
from ..core.kinds import Kind
from ..core.timeline import Timeline
from ..core.words import FigureWords, plural, seconds
from . import Drawing, as_modes, legend_of_marks, style

LEASE_H = 0.5  # a row's lease band: half the row's height, a gap to the next row for the words under it
# A benchmark's series is no mark of the table: its colour and marker are `style.series`'s, its line styles
# `style.SERIES_LINES`'s (a design's line, a variant of it, the way to its broken run)


def _bench_style(design: str) -> tuple[str, str, str]:
    """Colour, marker and line style of a benchmark design (`style.series`); a variant ("…, big pool") is dashed."""
    colour, marker = style.series(design)
    return colour, marker, style.SERIES_LINES["variant" if "," in design else "line"]


def _as_modes(timelines: Any) -> dict[str, Timeline]:
    return as_modes(timelines, _design, "draw_renewal_cost")


def _design(tl: Timeline) -> str:
    return tl.params.design


def _new_figure(fig: Figure | None, figsize: tuple[float, float]) -> Figure:
    if fig is None:
        return Figure(figsize=figsize, layout="constrained")
    if not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.set_layout_engine("constrained")
    return fig


def _rows(tl: Timeline) -> list[str]:
    """One row per timer for per-job runs that recorded each round trip; one row otherwise."""
    design, trips = _design(tl), tl.of(Kind.ROUND_TRIP)
    if trips and any("job" in e.data for e in trips):
        return [f"timer {j}" for j in range(1, tl.counts["jobs"] + 1)]
    one_call = design in DESIGNS and DESIGNS[design].round_trips_per_tick(2) == 1  # sweep, session
    return [design if one_call else "all timers"]


def _draw_mode(ax, name: str, tl: Timeline, words: FigureWords) -> None:
    gid = f"mode:{name}"
    style.lane(ax, name)
    rows = _rows(tl)
    y_of = {row: len(rows) - 1 - i for i, row in enumerate(rows)}
    top = len(rows) - 0.4
    # a lease is held from the acquire until the worker lets it go after its last tick, or to the moment it
    # was lost or taken (a run recorded without the release: to its last event)
    let_go = tl.first(Kind.LET_GO, "worker")
    run_end = let_go.t if let_go else max((e.t for e in tl.events), default=0.0)
    gone_at = dict(tl.verdict.lost_at)
    gone_at.update({f"job {e.data['job']}": e.t for e in tl.of(Kind.TAKE, "thief")})  # the lease ended when taken
    session_gone = min((e.t for e in tl.of(Kind.TAKE, "thief") if e.data.get("session")),
                       default=min(gone_at.values(), default=None) if len(gone_at) >= tl.counts["jobs"] else None)
    for row, y in y_of.items():
        end = run_end
        if row.startswith("timer "):
            end = gone_at.get("job " + row.split()[1], end)
        elif session_gone is not None:  # one row holds every lease: it ends when they all went
            end = session_gone
        style.band(ax, "lease", 0, y - LEASE_H / 2, end, LEASE_H, gid=gid)
    trips = tl.of(Kind.ROUND_TRIP)
    if trips:
        for e in trips:
            row = f"timer {e.data['job']}" if "timer 1" in y_of and "job" in e.data else rows[0]
            style.marker(ax, "round-trip", [e.t], [y_of[row]], 16 if len(rows) > 1 else 26, markeredgewidth=2.5,
                         gid=gid)
    many = False  # a tick whose round trips carry more leases than there are round trips: say how many
    for e in tl.of(Kind.TICK):
        n = e.data["round_trips"]
        note = plural(n, "round trip")
        if DESIGNS[_design(tl)].per_worker:  # one key renewed, whatever the jobs it stands for
            note += "\n1 key for " + plural(e.data["leases"], "job")
        elif e.data["leases"] != n:
            note += "\n" + plural(e.data["leases"], "lease")
            many = True
        ax.annotate(note, (e.t, top), xytext=(0, 4), textcoords="offset points", ha="center", va="bottom",
                    fontsize=style.FONT["tick"], color=style.INK["text"], gid=gid)
    for e in tl.of(Kind.TAKE, "thief"):
        y = y_of.get(f"timer {e.data['job']}", 0)
        style.marker(ax, "taken-back", [e.t], [y], 8, gid=gid)
        # under the row's band, clear of it and of the next row's
        ax.annotate("session taken" if e.data.get("session") else f"job {e.data['job']} taken",
                    (e.t, y - LEASE_H / 2), xytext=(0, -2), textcoords="offset points", ha="center", va="top",
                    fontsize=style.FONT["tick"], color=style.colour("taken-back"), gid=gid)
    lost_at: dict[tuple[float, int], list[str]] = {}  # on one row, the leases lost in one instant share a mark
    for e in tl.of(Kind.LEASE_LOST):
        lost_at.setdefault((e.t, y_of.get("timer " + e.actor.split()[1], 0)), []).append(e.actor)
    for (t, y), actors in lost_at.items():
        style.marker(ax, "lapse", [t], [y], 12, gid=gid)
        what = f"{actors[0]}: lost, holder stops" if len(actors) == 1 else f"{len(actors)} jobs lost, holders stop"
        ax.annotate(what, (t, y - LEASE_H / 2), xytext=(6, -2), textcoords="offset points", va="top",
                    fontsize=style.FONT["tick"], color=style.colour("lapse"), gid=gid)
    mode = words.modes[name]
    ax.set_title(mode.label, loc="left", fontsize=style.FONT["title"], fontweight="bold", gid=gid)
    ax.set_title(mode.static, loc="right", fontsize=style.FONT["tick"], gid=gid, wrap=True)
    ax.set_ylim(-0.7, top + (1.1 if many else 0.9))
    ax.set_yticks(list(y_of.values()), list(y_of), fontsize=style.FONT["tick"] if len(rows) > 1 else style.FONT["label"])
    ax.tick_params(axis="x", labelsize=style.FONT["tick"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def draw_renewal_cost(timelines: Any, words: FigureWords, fig: Figure | None = None, *,
                      figsize: tuple[float, float] = (12, 7.0)) -> Drawing:
    """Draw figure 2 from `renewal_cost` Timelines ({mode: Timeline}, a list, or one) and the words
    `scenarios.renewal_cost.figure_words` wrote for them; return the Drawing.

    Typical use: `modes = {d: renewal_cost(jobs=6, design=d) for d in DESIGNS}`, then
    `draw_renewal_cost(modes, figure_words(modes))` (emqlab.view.figures pairs the two).
    Lane titles are each mode's label and static verdict; the readout line is `Drawing.readout`."""
    modes = _as_modes(timelines)
    fig = _new_figure(fig, figsize)
    heights = [max(1.6, len(_rows(tl)) * 0.45 + 0.9) for tl in modes.values()]
    axes = fig.subplots(len(modes), 1, sharex=True, squeeze=False, height_ratios=heights)[:, 0]
    x_max = max((e.t for tl in modes.values() for e in tl.events), default=60.0)
    x_max = x_max * 1.06 + 2
    for ax, (name, tl) in zip(axes, modes.items()):
        _draw_mode(ax, name, tl, words)
    axes[-1].set_xlim(-1, x_max)
    axes[-1].set_xlabel("model seconds since the worker took its leases", fontsize=style.FONT["label"])
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False)
    fig.get_layout_engine().set(rect=(0, 0.05, 1, 0.95))
    readout = fig.text(0.01, 0.015, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout", wrap=True)
    return Drawing(fig, words, dict(modes), readout=readout)


# -- the benchmark's figures ---------------------------------------------------------------------
def draw_scaling(rows: Sequence[Mapping[str, Any]], words: FigureWords, fig: Figure | None = None, *,
                 figsize: tuple[float, float] = (12, 5.6)) -> Drawing:
    """Round trips per tick and server µs per tick against K, one line per design (log–log).
    `rows`: the benchmark's rows ({design, k, rt_per_tick, server_us_per_tick, wall_ms_per_tick,
    broke?}); rows measured without a server count (fakeredis) draw wall ms per tick instead. A run
    where the design broke (a tick over the cadence, leases lapsed) measured only part of a tick: it
    is the `broke` mark (a hollow dot) off the line, joined to it by a dotted line in the design's
    colour. The line under the figure (`words.prompt`) says where it was measured and what each hollow
    mark covers.
    `words`: `scenarios.renewal_cost.scaling_words(rows, where)`."""
    fig = _new_figure(fig, figsize)
    ax_rt, ax_wall = fig.subplots(1, 2)
    server = any(r.get("server_us_per_tick") for r in rows)
    second = "server_us_per_tick" if server else "wall_ms_per_tick"
    designs = list(dict.fromkeys(r["design"] for r in rows))
    for design in designs:
        mine = sorted((r for r in rows if r["design"] == design), key=lambda r: r["k"])
        color, marker, ls = _bench_style(design)
        gid = f"mode:{design}"
        for ax, field in ((ax_rt, "rt_per_tick"), (ax_wall, second)):
            whole = [(r["k"], r[field]) for r in mine if r.get(field) and not r.get("broke")]
            part = [(r["k"], r[field]) for r in mine if r.get(field) and r.get("broke")]
            if whole:
                ax.plot(*zip(*whole), color=color, lw=1.8, linestyle=ls, marker=marker, markersize=8, label=design,
                        gid=gid)
            for k, v in part:
                if whole:  # the broken run lies off the line: joined to it, dotted
                    ax.plot([whole[-1][0], k], [whole[-1][1], v], color=color, lw=1.2, linestyle=style.SERIES_LINES["broke"], gid=gid,
                            label=f"_{design}, broke")
                style.marker(ax, "broke", [k], [v], 8, gid=gid)
    for ax, title, unit in ((ax_rt, "round trips per tick", "round trips"),
                            (ax_wall, *(("server time per tick", "µs (INFO commandstats)") if server
                                        else ("wall time per tick", "ms")))):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("K, leases held by one worker", fontsize=style.FONT["label"])
        ax.set_ylabel(unit, fontsize=style.FONT["label"])
        ax.set_title(title, fontsize=style.FONT["title"])
        ax.tick_params(labelsize=style.FONT["tick"])
        ax.grid(True, which="major", alpha=0.3)
    if "flat" in words.labels:  # their lines lie on one another at 1: say so rather than hide one
        ax_rt.annotate(words.labels["flat"], (1.0, 1), xycoords=("axes fraction", "data"),
                       xytext=(-4, 7), textcoords="offset points", ha="right", va="bottom",
                       fontsize=style.FONT["tick"], color=style.INK["text"])
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False)
    fig.get_layout_engine().set(rect=(0, 0.09, 1, 0.91))  # room for the line under the axes
    readout = fig.text(0.01, 0.005, words.prompt, fontsize=style.FONT["tick"], color=style.INK["text"], ha="left",
                       va="bottom", wrap=True, gid="readout")
    return Drawing(fig, words, readout=readout)


def draw_capacity(capacity: Sequence[Mapping[str, Any]], words: FigureWords, cadence_s: float = 15.0,
                  fig: Figure | None = None, *, figsize: tuple[float, float] = (9, 5.5)) -> Drawing:
    """Measured tick time against K for each design's capacity search (its series' look), the cadence
    line, and the largest K whose tick still fits: one look for every design, its "K ≈ N" written in
    the design's colour (`capacity` items: {design, points {K: seconds}, capacity_k}).
    `words`: `scenarios.renewal_cost.capacity_words(capacity, cadence_s)`."""
    fig = _new_figure(fig, figsize)
    ax = fig.subplots()
    for c in capacity:
        color, marker, _ = _bench_style(c["design"])
        pts = sorted((int(k), s) for k, s in c["points"].items() if math.isfinite(s))  # inf: leases lapsed
        ax.plot([k for k, _ in pts], [s for _, s in pts], color=color, marker=marker, lw=1.5, label=c["design"],
                gid=f"mode:{c['design']}")
        if c.get("capacity_k") and c.get("limit") == "memory":  # the tick stays flat: memory runs out first
            style.vline(ax, "largest-k", c["capacity_k"], lw=1.5, gid=f"mode:{c['design']}")
            ax.annotate(f"memory full ({c['maxmemory_mb']} MB)\nat K ≈ {c['capacity_k']:,}", (c["capacity_k"], pts[-1][1]),
                        xytext=(-6, 10), textcoords="offset points", ha="right", va="bottom", color=color,
                        fontsize=style.FONT["label"])
        elif c.get("capacity_k"):
            style.vline(ax, "largest-k", c["capacity_k"], lw=1.5, gid=f"mode:{c['design']}")
            # beside its line, halfway down: clear of the measured points, which climb to the cadence
            ax.annotate(f"K ≈ {c['capacity_k']:,}", (c["capacity_k"], 0.5), xycoords=("data", "axes fraction"),
                        xytext=(-5, 0), textcoords="offset points", ha="right", va="center", rotation=90,
                        color=color, fontsize=style.FONT["label"])
    style.hline(ax, "cadence", cadence_s, lw=1.2)
    ax.annotate(f"cadence: {seconds(cadence_s)}", (0.01, cadence_s), xycoords=("axes fraction", "data"),
                xytext=(0, 5), textcoords="offset points", fontsize=style.FONT["tick"], color=style.INK["text"])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("K, leases held on one connection", fontsize=style.FONT["label"])
    ax.set_ylabel("one renewal tick (real seconds)", fontsize=style.FONT["label"])
    ax.set_title("How many leases one worker can keep alive", fontsize=style.FONT["title"])
    ax.tick_params(labelsize=style.FONT["tick"])
    ax.grid(True, which="major", alpha=0.3)
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False)
    return Drawing(fig, words)
