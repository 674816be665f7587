"""What a person checks by eye, checked by machine: no text printed on other text, no text too small,
a legend that names exactly what the figure draws.

`figure_problems(fig)` is both checks at once (`emqlab figures` runs it on every export).
`overprints(fig)` lays the figure out (no pixels painted) and returns every pair of visible texts whose boxes overlap:
titles, axis labels, tick labels, annotations, figure texts and legend entries. `small_texts(fig,
min_px)` returns the texts set smaller than `min_px` pixels at the figure's own dpi. Tests walk
every figure the package draws through both, at notebook size and at slide size, each mode lit.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Annotation, Text

PAD_PX = 1.0  # boxes that merely touch are not an overprint


@dataclass(frozen=True)
class Placed:
    text: str
    role: str  # title, axis label, tick label, annotation, text, legend
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in display pixels

    def overlaps(self, other: "Placed") -> bool:
        a, b = self.box, other.box
        return (min(a[2], b[2]) - max(a[0], b[0]) > PAD_PX) and (min(a[3], b[3]) - max(a[1], b[1]) > PAD_PX)


def _roles(fig: Figure) -> dict[int, str]:
    """The role of each axis label, tick label and legend entry of `fig`, by id: looked up once per layout
    (asking an axis for its tick labels updates its ticks, too slow to do for every text)."""
    roles = {id(t): "legend" for legend in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
             for t in legend.get_texts()}
    for ax in reversed(fig.axes):  # an earlier axes' role wins, as a search through fig.axes would find it
        roles.update((id(t), "tick label") for t in ax.get_xticklabels() + ax.get_yticklabels())
        roles.update({id(ax.xaxis.label): "axis label", id(ax.yaxis.label): "axis label"})
    return roles


def _role(artist: Text, roles: dict[int, str]) -> str:
    ax = artist.axes
    if ax is not None and artist.get_transform() == ax.transAxes + ax.titleOffsetTrans:
        return "title"  # the centre, left and right titles all sit on the title transform
    return roles.get(id(artist)) or ("annotation" if hasattr(artist, "xyann") else "text")


def _in_view(axis) -> list:
    """The ticks of `axis` (major and minor) whose location lies inside its view: the ones the renderer draws."""
    lo, hi = sorted(axis.get_view_interval())
    span = (hi - lo) * 1e-9
    return [tick for tick in axis.get_major_ticks() + axis.get_minor_ticks()
            if lo - span <= tick.get_loc() <= hi + span]


def placed_texts(fig: Figure) -> list[Placed]:
    """Every visible, non-empty text of `fig`, where the renderer put it."""
    if fig.canvas is None or not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    fig.draw_without_rendering()  # the layout a draw makes (every text placed), with no pixels painted
    renderer = fig.canvas.get_renderer()
    ticks = {id(t) for ax in fig.axes for t in ax.get_xticklabels(which="both") + ax.get_yticklabels(which="both")}
    drawn = {id(label) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for tick in _in_view(axis)  # only the ticks inside the view are drawn
             for label, on in ((tick.label1, tick.label1.get_visible()), (tick.label2, tick.label2.get_visible())) if on}
    roles = _roles(fig)
    out = []
    for artist in fig.findobj(Text):
        if id(artist) in ticks and id(artist) not in drawn:
            continue
        if not artist.get_visible() or not artist.get_text().strip():
            continue
        if artist.get_alpha() is not None and artist.get_alpha() == 0:
            continue
        box = artist.get_window_extent(renderer)
        if box.width <= 0 or box.height <= 0:
            continue
        out.append(Placed(artist.get_text(), _role(artist, roles), (box.x0, box.y0, box.x1, box.y1)))
    return out


def overprints(fig: Figure) -> list[tuple[Placed, Placed]]:
    """Pairs of texts printed over each other (tick labels of one axis among themselves excepted
    when they do not touch, which the check covers like any other pair)."""
    return [(a, b) for a, b in combinations(placed_texts(fig), 2) if a.overlaps(b)]


def small_texts(fig: Figure, min_px: float) -> list[tuple[str, float]]:
    """Texts set smaller than `min_px` pixels (font size in points × dpi / 72)."""
    dpi = fig.dpi
    found = []
    for artist in fig.findobj(Text):
        if artist.get_visible() and artist.get_text().strip():
            px = artist.get_fontsize() * dpi / 72
            if px + 1e-9 < min_px:
                found.append((artist.get_text(), round(px, 1)))
    return found


def marks(fig: Figure) -> list:
    """Every visible mark in the axes of `fig`: a line or marker with data, a patch, a collection, an
    arrow. (Texts are words, not marks; a legend's own artists are not in the axes.)"""
    found = []
    for ax in fig.axes:
        found += [a for a in ax.lines if isinstance(a, Line2D) and len(a.get_xdata()) and a.get_visible()]
        found += [a for a in ax.patches if isinstance(a, Patch) and a.get_visible()]
        found += [a for a in ax.collections if isinstance(a, Collection) and a.get_visible()]
        found += [a for a in ax.texts if isinstance(a, Annotation) and a.arrow_patch is not None and a.get_visible()]
    return found


def _unlabelled(label: str) -> bool:
    return not label or label.startswith("_child") or label == "_nolegend_"


def legend_problems(fig: Figure) -> list[str]:
    """What is wrong between the marks of `fig` and its legend: a mark drawn without saying what it is
    (no label: matplotlib names it `_childN`), a kind of mark drawn but missing from the legend, an
    entry nothing in the figure draws. Labels starting with "_" mark decoration (a lane's background),
    which a legend leaves out. [] when the legend names exactly the kinds of marks drawn."""
    problems, drawn = [], []
    for mark in marks(fig):
        label = mark.get_label()
        if _unlabelled(label):
            problems.append(f"a {type(mark).__name__} drawn with no label (what does it mean?)")
        elif not label.startswith("_") and label not in drawn:
            drawn.append(label)
    legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    entries = [t.get_text() for legend in legends for t in legend.get_texts()]
    problems += [f"drawn but not in the legend: {label}" for label in drawn if label not in entries]
    problems += [f"in the legend but drawn nowhere: {entry}" for entry in entries if entry not in drawn]
    return problems


def figure_problems(fig: Figure) -> list[str]:
    """Everything a person would catch by eye in `fig` as it stands: its legend against its marks, and
    every pair of texts printed over each other. [] for a figure fit to show."""
    return legend_problems(fig) + [f"{a.role} {a.text!r} printed over {b.role} {b.text!r}" for a, b in overprints(fig)]
