"""What a person checks by eye, checked by machine: every mark one the course's grammar holds, drawn as it
says (`mark_problems`), none cut off by its axes (`clipped_marks`), a legend that names exactly what the
figure draws (`legend_problems`), no axis label floating between panels (`stray_axis_labels`), no text
printed on other text, no text too small.

`figure_problems(fig)` is all but the size check at once (`emqlab figures` runs it on every export).
`overprints(fig)` lays the figure out (no pixels painted) and returns every pair of visible texts whose boxes overlap:
titles, axis labels, tick labels, annotations, figure texts and legend entries. `small_texts(fig,
min_px)` returns the texts set smaller than `min_px` pixels at the figure's own dpi. Tests walk
every figure the package draws through both, at notebook size and at slide size, each mode lit.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import ArrowStyle, FancyArrowPatch, Patch, Rectangle
from matplotlib.path import Path
from matplotlib.text import Annotation, Text

from ..core.marks import BY_MEANING, INK, RUN_FAMILIES, RUNS, SERIES, UNFILLED, Mark, series

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


def _hex(colour) -> str:
    return to_hex(colour, keep_alpha=False).upper()


NO_MARKER = (None, "None", "none", "", " ")


def look(artist) -> tuple[str, str, str] | None:
    """(artist, shape, colour) of a drawn mark, read off the artist the way `Mark.look` says it: a line
    with no line style is a marker; a patch a band (filled, or outlined with its line style) with its
    hatching; an arrow by its style. None: no mark the grammar knows how to read (a scatter's collection)."""
    if isinstance(artist, Annotation):
        artist = artist.arrow_patch
    if isinstance(artist, FancyArrowPatch):
        return "arrow", type(artist.get_arrowstyle()).__name__, _hex(artist.get_edgecolor())
    if isinstance(artist, Line2D):
        marker, ls = artist.get_marker(), artist.get_linestyle()
        if ls in NO_MARKER and marker not in NO_MARKER:
            face = artist.get_markerfacecolor()
            hollow = marker not in UNFILLED and _hex(face) == _hex(INK["on-mark"])
            colour = artist.get_markeredgecolor() if hollow or marker in UNFILLED else face
            return "marker", marker + (" hollow" if hollow else ""), _hex(colour)
        return "line", ls + ("" if marker in NO_MARKER else marker), _hex(artist.get_color())
    if isinstance(artist, Patch):
        filled = artist.get_fill() and artist.get_facecolor()[3] > 0
        ls = {"solid": "-", "dashed": "--", "dotted": ":", "dashdot": "-."}.get(artist.get_linestyle(),
                                                                               artist.get_linestyle())
        shape = "filled" if filled else "outline" + ("" if ls == "-" else f" {ls}")
        hatch = artist.get_hatch()
        return "band", shape + (f" {hatch}" if hatch else ""), _hex(artist.get_facecolor() if filled
                                                                    else artist.get_edgecolor())
    return None


def expected_look(m: Mark) -> tuple[str, str, str]:
    """`m.look`, with an arrow's style named as matplotlib names it."""
    drawn_by, form, colour = m.look
    return (drawn_by, type(ArrowStyle(form)).__name__, colour) if drawn_by == "arrow" else (drawn_by, form, colour)


def mark_problems(fig: Figure, side_by_side: bool = True) -> list[str]:
    """What breaks the course's visual grammar (`emqlab.core.marks`) in `fig`: a mark the table does not
    hold, a mark drawn other than the table says (a meaning drawn two ways, a look used for another
    meaning), two markers, lines or arrows side by side that differ only in colour (bands differ by their place as
    well: the lease above a lane's line, the work under it, a span across the panel). A lane's background is no mark; a
    benchmark's line is read against its design's or library's look, and runs side by side against
    the runs' looks. `side_by_side=False`: leave out the colour-alone check (the key, which shows every mark
    apart from the others). [] when every mark of `fig` is one the table holds, drawn as it says."""
    problems: list[str] = []
    forms: dict[tuple[str, str], set[str]] = {}
    for artist in marks(fig):
        label = artist.get_label()
        if label == "_lane" or _unlabelled(label):
            continue  # a lane is the pointer's target; an unlabelled mark is legend_problems' to name
        seen = look(artist)
        meaning = label[1:] if label.startswith("_") else label
        m = BY_MEANING.get(meaning)
        if seen is None:
            problems.append(f"{meaning}: a {type(artist).__name__}, which the grammar cannot read (draw it with plot.style)")
        elif m is not None:
            if seen != expected_look(m):
                problems.append(f"{meaning}: drawn as {seen}, the table says {expected_look(m)}")
            elif m.legend and m.artist != "band" and side_by_side:  # bands are told apart by their place too: a lane's row, its height
                forms.setdefault((seen[0], seen[1]), set()).add(meaning)
        elif meaning.split(",")[0] in SERIES:  # a design's or library's line, a variant of it, the way to a broken run
            colour, symbol = series(meaning)
            if seen[2] != _hex(colour) or (seen[0] == "line" and seen[1].lstrip("-:.") not in ("", symbol)):
                problems.append(f"{meaning}: drawn as {seen}, its series is {colour} {symbol}")
        elif meaning.partition(": ")[0] in RUN_FAMILIES:
            if seen[2] not in {_hex(c) for c, _ in RUNS}:
                problems.append(f"{meaning}: drawn in {seen[2]}, which no run side by side has")
        else:
            problems.append(f"{meaning}: a mark the table (emqlab.core.marks) does not hold, drawn as {seen}")
    problems += [f"{' and '.join(sorted(meanings))}: two meanings drawn in one shape ({form}), told apart by colour "
                 "alone" for (_, form), meanings in forms.items() if len(meanings) > 1]
    return problems


def _outside(ax, points) -> bool:
    """Whether any of `points` (data coordinates) lies outside the axes' view, past a hair's tolerance."""
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    tx, ty = (x1 - x0) * 1e-6, (y1 - y0) * 1e-6
    return any(not (x0 - tx <= x <= x1 + tx and y0 - ty <= y <= y1 + ty) for x, y in points)


def arrow_ends(arrow: FancyArrowPatch) -> list[tuple[float, float]]:
    """Where an arrow starts and where its head reaches, read off the path it draws (matplotlib gives it in
    the arrow's own coordinates: data, for an arrow placed in data)."""
    path = arrow.get_path()
    codes = path.codes if path.codes is not None else [Path.LINETO] * len(path.vertices)
    points = [tuple(v) for v, code in zip(path.vertices, codes) if code not in (Path.CLOSEPOLY, Path.STOP)]
    start = points[0]
    return [start, max(points, key=lambda p: (p[0] - start[0]) ** 2 + (p[1] - start[1]) ** 2)]


def _in_data(artist, ax) -> bool:
    """Whether `artist` is placed in `ax`'s data coordinates (not the axes' fractions, nor a blend)."""
    placed = artist.get_data_transform() if isinstance(artist, Patch) else artist.get_transform()
    return placed == ax.transData


def clipped_marks(fig: Figure) -> list[str]:
    """The marks of `fig` the axes cut off without a word: a marker or a line's point outside its axes'
    view, an arrow whose end lies past it, a band that runs out of it. Only marks placed in data
    coordinates are read (a lane's background, a span across the panel, a mark pinned to the axes' top
    are placed on purpose)."""
    problems = []
    for ax in fig.axes:
        for artist in marks(fig):
            if artist.axes is not ax or artist.get_label() == "_lane":
                continue
            if isinstance(artist, Annotation):
                artist = artist.arrow_patch
            if isinstance(artist, FancyArrowPatch):
                if _in_data(artist, ax) and _outside(ax, arrow_ends(artist)):
                    problems.append(f"{artist.get_label()}: an arrow to {arrow_ends(artist)[1]}, past the axes")
            elif isinstance(artist, Line2D):
                if _in_data(artist, ax) and _outside(ax, zip(artist.get_xdata(), artist.get_ydata())):
                    problems.append(f"{artist.get_label()}: a point outside the axes")
            elif isinstance(artist, Rectangle) and _in_data(artist, ax):
                x, y, w, h = artist.get_x(), artist.get_y(), artist.get_width(), artist.get_height()
                if _outside(ax, [(x, y), (x + w, y + h)]):
                    problems.append(f"{artist.get_label()}: a band from {x:g} to {x + w:g}, out of the axes")
    return problems


def stray_axis_labels(fig: Figure, laid_out: bool = False) -> list[str]:
    """An x axis label on a panel whose x axis a panel under it shares: it floats between the two panels
    (say it once, under the lowest). `laid_out`: the figure was just laid out (no second layout)."""
    if not laid_out:
        if fig.canvas is None or not hasattr(fig.canvas, "get_renderer"):
            FigureCanvasAgg(fig)
        fig.draw_without_rendering()
    problems = []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.get_xlabel() or not ax.xaxis.label.get_visible():
            continue
        box = ax.get_position()
        under = [o for o in ax.get_shared_x_axes().get_siblings(ax) if o is not ax and o.get_visible()
                 and o.get_position().y1 <= box.y0 + 1e-6 and min(o.get_position().x1, box.x1) > max(o.get_position().x0, box.x0)]
        if under:
            problems.append(f"x label {ax.get_xlabel()!r} between two panels that share the axis")
    return problems


def figure_problems(fig: Figure) -> list[str]:
    """Everything a person would catch by eye in `fig` as it stands: its marks against the course's
    grammar, a mark its axes cut off, its legend against its marks, an axis label floating between panels,
    and every pair of texts printed over each other. [] for a figure fit to show."""
    printed = [f"{a.role} {a.text!r} printed over {b.role} {b.text!r}" for a, b in overprints(fig)]  # lays it out
    return mark_problems(fig) + clipped_marks(fig) + legend_problems(fig) + stray_axis_labels(fig, laid_out=True) + printed
