"""How every figure draws a mark of the course's grammar (`emqlab.core.marks`), and its type sizes.

A figure names a mark (`marker(ax, "lapse", xs, ys)`, `band(ax, "lease", x, y, w, h)`, …) and gets the
mark's shape and colour from the table and its meaning as the artist's label, which the legend collects
(`emqlab.plot.legend_of_marks`); furniture (a lane's line) carries its meaning behind a "_", which a legend
leaves out. Sizes, positions and layering are the figure's own; shape and colour never are. Nothing here
changes global matplotlib state.
"""

from __future__ import annotations

from typing import Any

from matplotlib.patches import FancyArrowPatch, Rectangle

from ..core.marks import INK, MARKS, PALETTE, RUNS, SERIES_LINES, UNFILLED, Mark, mark, series  # noqa: F401  (one import for figures)

FONT = {"title": 15, "label": 13, "tick": 11, "readout": 13}
DIM_ALPHA = 0.18  # an unlit mode
BAND_ALPHA = 0.55
THIN = ("*",)  # filled marks too slender for a white rim: it would eat them  # a filled band, so marks and hatching on it stay legible


def label(m: Mark) -> str:
    return m.meaning if m.legend else "_" + m.meaning


def colour(name: str) -> str:
    """The colour of mark `name`, for words written beside it in its colour."""
    return mark(name).colour


def marker_kw(name: str, size: float = 10, **kw: Any) -> dict[str, Any]:
    """matplotlib keywords for marker `name` at `size` points (a filled marker gets a white rim)."""
    m = mark(name)
    assert m.artist == "marker", f"{name} is a {m.artist}, not a marker"
    unfilled = m.shape in UNFILLED
    rimmed = not (unfilled or m.hollow or m.shape in THIN)  # a white rim keeps a filled mark apart from a band
    out = dict(marker=m.shape, markersize=size, linestyle="none", color=m.colour, label=label(m),
               markeredgecolor=INK["on-mark"] if rimmed else m.colour,
               markeredgewidth=1.0 if rimmed or m.shape in THIN else 2.2)
    if m.hollow:
        out["markerfacecolor"] = INK["on-mark"]
    out.update(kw)
    return out


def marker(ax, name: str, xs, ys, size: float = 10, **kw: Any):
    """Mark `name` at each (x, y)."""
    xs, ys = list(xs), list(ys)
    return ax.plot(xs, ys, **marker_kw(name, size, **kw))[0]


def line_kw(name: str, **kw: Any) -> dict[str, Any]:
    m = mark(name)
    assert m.artist == "line", f"{name} is a {m.artist}, not a line"
    out: dict[str, Any] = dict(color=m.colour, linestyle=m.shape, label=label(m))
    if m.point:
        out.update(marker=m.point, markevery=[1], markersize=5)
    out.update(kw)
    return out


def line(ax, name: str, xs, ys, **kw: Any):
    return ax.plot(list(xs), list(ys), **line_kw(name, **kw))[0]


def hline(ax, name: str, y: float, **kw: Any):
    return ax.axhline(y, **line_kw(name, **kw))


def vline(ax, name: str, x: float, **kw: Any):
    return ax.axvline(x, **line_kw(name, **kw))


def band_kw(name: str, **kw: Any) -> dict[str, Any]:
    m = mark(name)
    assert m.artist == "band", f"{name} is a {m.artist}, not a band"
    fill, _, ls = m.shape.partition(" ")
    if fill == "filled":
        out: dict[str, Any] = dict(facecolor=m.colour, edgecolor=INK["on-mark"] if m.hatch else "none", lw=0,
                                   alpha=BAND_ALPHA, label=label(m))
    else:
        out = dict(facecolor="none", edgecolor=m.colour, lw=1.2, linestyle=ls or "-", label=label(m))
    if m.hatch:
        out["hatch"] = m.hatch
    out.update(kw)
    return out


def band(ax, name: str, x: float, y: float, width: float, height: float, **kw: Any) -> Rectangle:
    """Band `name` from (x, y), `width` by `height` in data units (or the transform given)."""
    return ax.add_patch(Rectangle((x, y), width, height, **band_kw(name, **kw)))


def span(ax, name: str, x0: float, x1: float, **kw: Any):
    """Band `name` across the whole height of the axes, from x0 to x1."""
    return ax.axvspan(x0, x1, **band_kw(name, **kw))


def arrow(ax, name: str, start: tuple[float, float], end: tuple[float, float], **kw: Any) -> FancyArrowPatch:
    """Arrow `name` from `start` to `end` (data units), and once per axes an empty line of its look, which
    a legend collects (it collects no arrow)."""
    m = mark(name)
    assert m.artist == "arrow", f"{name} is a {m.artist}, not an arrow"
    said = kw.pop("label", label(m))
    patch = FancyArrowPatch(start, end, arrowstyle=m.shape, mutation_scale=kw.pop("mutation_scale", 12),
                            color=m.colour, lw=kw.pop("lw", 1.3), shrinkA=0, shrinkB=0, label=said, **kw)
    ax.add_patch(patch)
    if said == m.meaning and not any(line.get_label() == said and not len(line.get_xdata()) for line in ax.lines):
        ax.plot([], [], color=m.colour, marker=">", markersize=6, lw=1.3, label=said)
    return patch


def lane(ax, name: str, **kw: Any) -> Rectangle:
    """A mode's background across its axes, the target a pointer hovers (`lane:<name>`)."""
    kw.setdefault("transform", ax.transAxes)
    xy = kw.pop("xy", (0, 0))
    size = kw.pop("size", (1, 1))
    return ax.add_patch(Rectangle(xy, *size, facecolor=INK["lane"], edgecolor=INK["frame"], lw=0, zorder=-10,
                                  gid=f"lane:{name}", label="_lane", **kw))


def run_look(k: int) -> tuple[str, str]:
    """(colour, marker) of the k-th run drawn side by side in one axes."""
    return RUNS[k % len(RUNS)]
