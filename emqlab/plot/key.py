"""How to read a figure: every mark of the course's grammar (`emqlab.core.marks`), drawn the way the figures
draw it, beside what it means. Lesson 00 shows it; it is drawn from the table, so it can never disagree with
a figure.

`draw_key(words, fig=None) -> Drawing`: the marks in columns, bands first, then arrows, lines and markers,
each sample drawn by `emqlab.plot.style` (its artist carries the mark's meaning behind a "_": a key has no
legend, it is one).
"""

from __future__ import annotations

from matplotlib.figure import Figure

from ..core.marks import MARKS
from ..core.words import FigureWords
from . import Drawing, figure_for, style

ORDER = ("band", "arrow", "line", "marker")
COLUMNS = 3


def key_marks() -> list:
    """The marks a legend can name, in the key's order: by artist, then as the table lists them."""
    return sorted((m for m in MARKS.values() if m.legend), key=lambda m: ORDER.index(m.artist))


def draw_key(words: FigureWords, fig: Figure | None = None, *, figsize: tuple[float, float] = (15, 8.4)) -> Drawing:
    """Every mark a figure may draw, with its meaning."""
    fig = figure_for(fig, figsize)
    marks = key_marks()
    rows = -(-len(marks) // COLUMNS)
    axes = fig.subplots(1, COLUMNS)
    for ax in axes:
        ax.set_xlim(0, 10)
        ax.set_ylim(rows - 0.5, -0.7)
        ax.set_axis_off()
        ax.set_xticks([])
        ax.set_yticks([])
    for k, m in enumerate(marks):
        ax, y = axes[k // rows], k % rows
        hidden = {"label": "_" + m.meaning}
        if m.artist == "band":
            style.band(ax, m.name, 0.1, y - 0.3, 1.2, 0.6, **hidden)
        elif m.artist == "arrow":
            style.arrow(ax, m.name, (0.1, y), (1.3, y), label="_" + m.meaning)
        elif m.artist == "line":
            style.line(ax, m.name, [0.1, 0.7, 1.3], [y, y, y], lw=2, **hidden)
        else:
            style.marker(ax, m.name, [0.7], [y], size=11, **hidden)
        ax.text(1.6, y, m.meaning, va="center", ha="left", fontsize=style.FONT["tick"], color=style.INK["text"])
    title = words.caption.split(". ")[0].rstrip(".")  # the caption's first sentence; the rest is its text
    fig.suptitle(title, fontsize=style.FONT["label"], x=0.01, ha="left")
    return Drawing(fig, words)
