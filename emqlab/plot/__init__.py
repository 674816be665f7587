"""Drawing: read Timelines (plain data) and their words, return a `Drawing`. Never runs a scenario.

Every drawing function has the shape `draw_x(timelines, words, fig=None, **kw) -> Drawing`:
- `timelines` is one Timeline, a list, or {mode: Timeline}; `words` is the `FigureWords` the
  scenario wrote (`emqlab.view.figures` pairs each drawing function with its scenario's words);
- with no `fig` it makes a plain `matplotlib.figure.Figure` (export); the explorer passes its own
  figure in, cleared, and the function draws into it from scratch;
- each artist that belongs to a mode carries `gid = "mode:<name>"`; each mode has exactly one
  lane background patch with `gid = "lane:<name>"`, the target a pointer hovers or clicks;
- a figure-level readout line, if the figure has one, is returned as `Drawing.readout`.

`Drawing.light(mode)` is the one place a mode is lit and the others dimmed in matplotlib: the
export calls it for each lit frame, the explorer for a mode a cell pins (its picture). In the
browser the page script lights the same tagged artists (`emqlab.view.interactive`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.legend_handler import HandlerLine2D
from matplotlib.patches import FancyArrowPatch
from matplotlib.lines import Line2D
from matplotlib.text import Text

from ..core.errors import BadParameter
from ..core.timeline import Timeline
from ..core.words import FigureWords
from . import style


def as_modes(timelines: Any, key: Callable[[Timeline], str], what: str) -> dict[str, Timeline]:
    """One Timeline, a list (named by `key`, a repeat gets a suffix) or a dict {mode: Timeline}."""
    if isinstance(timelines, Timeline):
        timelines = [timelines]
    if isinstance(timelines, Mapping):
        modes = dict(timelines)
    elif isinstance(timelines, Sequence) and not isinstance(timelines, str):
        modes = {}
        for tl in timelines:
            name = key(tl)
            modes[name if name not in modes else f"{name}-{len(modes) + 1}"] = tl
    else:
        raise BadParameter(f"{what} takes Timelines: one, a list, or a dict {{mode: Timeline}}")
    if not modes:
        raise BadParameter(f"{what} needs at least one Timeline")
    return modes


def modes_of(timelines: Any, words: FigureWords, what: str) -> dict[str, Timeline]:
    """{mode: Timeline} for a drawing; a list is named in the order of the words' modes, so the
    names always match the words the scenario wrote."""
    names = iter(words.modes)
    modes = as_modes(timelines, lambda tl: next(names, tl.scenario), what)
    missing = [name for name in modes if name not in words.modes]
    if missing:
        raise BadParameter(f"{what}: the words have no mode {', '.join(missing)}; they have: {', '.join(words.modes)}")
    return modes


def figure_for(fig: Figure | None, figsize: tuple[float, float]) -> Figure:
    """A new constrained-layout figure, or `fig` (an explorer's) cleared and laid out the same way."""
    if fig is None:
        return Figure(figsize=figsize, layout="constrained")
    fig.clear()
    if not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.set_layout_engine("constrained")
    return fig


LIT_LANE, UNLIT_LANE = style.INK["lit"], style.INK["lane"]
CHAR_EM = 0.56  # a generous average character width of the sans-serif font, in ems


def wrap(text: str, chars: int) -> str:
    """`text` in lines of at most `chars` characters, never parting a number from its unit ("44.5 s") nor
    a comparison from its two sides ("34 < 35")."""
    glued = re.sub(r"(\d) (s|ms)\b", "\\1\u00a0\\2", text)
    glued = re.sub(r"(\S+) ([<>≤≥=]) (\S+)", "\\1\u00a0\\2\u00a0\\3", glued)
    lines = [wrapped for line in glued.split("\n") for wrapped in (textwrap.wrap(line, chars) or [""])]  # a break stays
    return "\n".join(lines).replace("\u00a0", " ") or text


def drawn_readout(text: str) -> str:
    """A readout as the figure prints it under its axes: the headline on its own line, then its facts
    (the lines starting "· ") run on after it, one line of room rather than one line each."""
    head, *facts = text.split("\n")
    return "\n".join([head, " · ".join(fact.removeprefix("· ") for fact in facts)]) if facts else head


def legend_of_marks(fig: Figure, **kw: Any):
    """The figure's legend, built from what it drew: one entry per distinct label among the artists of
    its axes: its bands first, then its marks. Each mark is drawn with `label=` what it means (an arrow, which
    a legend cannot collect, with an empty line of the same look and label beside it); an artist that
    means nothing by itself, such as a lane's background, carries a label starting with "_". A mark no
    run drew has no entry. `plot.legibility.legend_problems` holds every figure to this."""
    entries: dict[str, Any] = {}
    bands = [a for ax in fig.axes for a in (*ax.patches, *ax.collections)]
    for handle in [*bands, *(a for ax in fig.axes for a in ax.lines)]:  # bands (lease, work, pause), then marks
        label = handle.get_label()
        if label and not label.startswith("_") and not isinstance(handle, FancyArrowPatch):  # arrows: their line
            entries.setdefault(label, handle)
    if not entries:
        return None
    kw.setdefault("handler_map", {Line2D: HandlerLine2D(update_func=_legend_marker)})
    if "ncols" in kw:
        return fig.legend(list(entries.values()), list(entries), **kw)
    # rows of even length, as few as fit the figure's width (measured: labels differ in length)
    for rows in range(-(-len(entries) // LEGEND_PER_ROW), len(entries) + 1):  # the last try: one column
        legend = fig.legend(list(entries.values()), list(entries), ncols=-(-len(entries) // rows), **kw)
        if rows == len(entries) or legend.get_window_extent().width <= 0.98 * fig.get_figwidth() * fig.dpi:
            return legend
        legend.remove()


LEGEND_PER_ROW = 8
LEGEND_MARKER_PX = (8, 12)  # a legend draws each mark as drawn, its size kept between these


def _legend_marker(entry: Line2D, drawn: Line2D) -> None:
    """A mark's legend entry: its own look, its size kept readable (a 22 pt tick would stretch the row,
    a 5 pt one would vanish); a mark at full strength, a band (a line with no marker) in its own tint."""
    entry.update_from(drawn)
    low, high = LEGEND_MARKER_PX
    entry.set_markersize(min(max(drawn.get_markersize(), low), high))
    if drawn.get_marker() not in (None, "None", "none", "", " "):  # a mark at full strength; a band keeps its own tint
        entry.set_alpha(None)


def _verdict_texts(figure: Figure, verdicts: list[str]):
    """(text artist, its text, its text without the verdict) for every text of `figure` that quotes one
    of `verdicts`, as drawn or wrapped over several lines."""
    for text in figure.findobj(Text):
        full = text.get_text()
        flat = " ".join(full.split())
        for verdict in verdicts:
            if verdict and verdict in full:
                yield text, full, full.replace(verdict, "").strip(" —\n")
                break
            if verdict and " ".join(verdict.split()) == flat:  # the whole text is the verdict, wrapped
                yield text, full, ""
                break


@dataclass
class Drawing:
    """A drawn figure and what it says: the words, the runs behind it, the readout artist."""

    figure: Figure
    words: FigureWords
    timelines: dict[str, Timeline] = field(default_factory=dict)
    readout: Any = None  # a matplotlib Text under the figure, rewritten when a mode is lit
    lit: str | None = None
    _artists: dict[str, list[tuple[Any, float]]] = field(default_factory=dict, repr=False)
    _lanes: dict[str, Any] = field(default_factory=dict, repr=False)
    _verdicts: list[tuple[Any, str, str]] = field(default_factory=list, repr=False)
    verdicts_shown: bool = True
    _said: str = field(default="", repr=False)  # the readout's text as said, before it was wrapped and run in
    _fitted: bool = field(default=False, repr=False)  # `fit` has laid out room for the readout

    def __post_init__(self) -> None:
        self._artists = {name: [] for name in self.words.modes}
        for artist in self.figure.findobj():
            part, _, name = (artist.get_gid() or "").partition(":")
            if part == "mode" and name in self._artists:
                base = artist.get_alpha()
                self._artists[name].append((artist, 1.0 if base is None else base))
            elif part == "lane" and name in self.words.modes:
                self._lanes[name] = artist
        self._verdicts = list(_verdict_texts(self.figure, [m.static for m in self.words.modes.values()]))
        self.fit()

    @property
    def modes(self) -> list[str]:
        return list(self.words.modes)

    @property
    def readout_text(self) -> str:
        """What the readout under the figure says, unwrapped: the text last said (see `say`)."""
        if self.readout is None:
            return ""
        return self._said or self.readout.get_text().replace("\n", " ")

    @property
    def lanes(self) -> dict[str, Any]:
        """{mode: its lane patch}, the areas a pointer hovers."""
        return dict(self._lanes)

    def light(self, mode: str | None) -> "Drawing":
        """Draw `mode` at full strength and dim the others (None: every mode at full strength);
        the readout line says the lit mode's full text, or the prompt."""
        if mode is not None and mode not in self.words.modes:
            raise KeyError(f"the figure has no mode {mode!r}; it has: {', '.join(self.words.modes) or 'none'}")
        self.lit = mode
        for name, artists in self._artists.items():
            factor = 1.0 if mode is None or name == mode else style.DIM_ALPHA
            for artist, base in artists:
                artist.set_alpha(base * factor)
        for name, lane in self._lanes.items():
            lane.set_linewidth(2.5 if name == mode else 0)
            lane.set_facecolor(LIT_LANE if name == mode else UNLIT_LANE)
        self.say(self.words.under(mode))
        return self

    # -- the readout line under the figure, wrapped to the figure's width ----------------------------
    def _chars_per_line(self) -> int:
        fig = self.figure
        size_px = self.readout.get_fontsize() * fig.dpi / 72
        return max(30, int(fig.get_figwidth() * fig.dpi * 0.97 / (size_px * CHAR_EM)))

    def say(self, text: str) -> None:
        """Put `text` on the readout line (until the next `light`), wrapped to the figure's width; once the
        figure is fit (`fit`), the room under the axes is what this text takes, no more."""
        if self.readout is None:
            return
        self._said = text
        drawn = wrap(drawn_readout(text), self._chars_per_line())
        self.readout.set_text(drawn)
        engine = self.figure.get_layout_engine()
        if self._fitted and self.readout.get_visible() and isinstance(engine, ConstrainedLayoutEngine):
            fig = self.figure
            lines = drawn.count("\n") + 1
            bottom = min(0.45, (lines * self.readout.get_fontsize() / 72 * 1.3 + 0.12) / fig.get_figheight())
            engine.set(rect=(0, bottom, 1, 1 - bottom))

    def fit(self, inches: tuple[float, float] | None = None, dpi: float | None = None) -> "Drawing":
        """Resize the figure (if asked) and keep room under the axes for the readout, wrapped to the
        figure's width, so no readout is ever printed over the axes (each `say` after this sizes the
        room to its own text)."""
        fig = self.figure
        if inches is not None:
            fig.set_size_inches(*inches)
        if dpi is not None:
            fig.set_dpi(dpi)
        if self.readout is None:
            return self
        self.readout.set_position((0.01, 0.04 / fig.get_figheight()))
        self.readout.set_wrap(False)
        self._fitted = True
        self.say(self.words.under(self.lit))
        return self

    def show_verdicts(self, shown: bool = True) -> "Drawing":
        """Show, or take out, every mode's static verdict where the figure prints it (a panel's title,
        a line over a lane): a figure shown under a prediction must not print the answer beside the
        question. The rest of each text (a mode's label) stays."""
        for text, full, without in self._verdicts:
            text.set_text(full if shown else without)
        self.verdicts_shown = shown
        return self

    def is_dimmed(self, mode: str) -> bool:
        artists = self._artists.get(mode, [])
        return bool(artists) and all(a.get_alpha() < base for a, base in artists)
