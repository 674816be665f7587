"""The course's visual grammar (`emqlab.core.marks`): one look for one meaning, written in one place, read the
same way by the figures, the legend check and the lessons' words.

Every figure the package draws is held to `plot.legibility.mark_problems` through `figure_problems` and the
figure tests (tests/plot/test_legibility.py's builders on fakeredis, the export of every course figure, the live
failover, cluster and class figures in their own files); this file checks the table, the check itself, that
no plotting module writes a colour or a marker of its own, and that the lessons name marks by the table's words.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import nbformat
import pytest
from matplotlib.figure import Figure

from emqlab.core.marks import INK, MARKS, OTHER_SERIES, PALETTE, RUNS, SERIES
from emqlab.plot import legend_of_marks, style
from emqlab.plot.legibility import mark_problems

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "emqlab"


def test_one_look_means_one_thing_and_one_thing_has_one_look():
    looks = Counter(m.look for m in MARKS.values())
    assert [look for look, n in looks.items() if n > 1] == []
    meanings = Counter(m.meaning for m in MARKS.values())
    assert [meaning for meaning, n in meanings.items() if n > 1] == []
    said = Counter(m.said for m in MARKS.values() if m.legend)
    assert [words for words, n in said.items() if n > 1] == []  # prose can name each mark apart
    allowed = set(PALETTE.values()) | set(INK.values())
    assert {m.name: m.colour for m in MARKS.values() if m.colour not in allowed} == {}


def test_no_series_or_run_looks_like_an_event():
    """A benchmark's series and an explorer's side-by-side runs take looks no filled marker of the table has:
    a purple diamond is a job taken back wherever it appears, never a library's line."""
    events = {(m.colour, m.shape) for m in MARKS.values() if m.artist == "marker" and not m.hollow}
    lines = {**{f"series {k}": v for k, v in SERIES.items()}, "other series": OTHER_SERIES,
             **{f"run {k}": v for k, v in enumerate(RUNS)}}
    assert {name: look for name, look in lines.items() if tuple(look) in events} == {}
    assert len(set(SERIES.values())) == len(SERIES) and len(set(RUNS)) == len(RUNS)


def _figure(*draws) -> Figure:
    fig = Figure(figsize=(6, 3))
    ax = fig.subplots()
    for draw in draws:
        draw(ax)
    legend_of_marks(fig)
    return fig


def test_the_check_passes_marks_drawn_from_the_table():
    fig = _figure(lambda ax: style.marker(ax, "lapse", [1], [1]), lambda ax: style.band(ax, "lease", 0, 0, 1, 1),
                  lambda ax: style.arrow(ax, "moved", (0, 2), (1, 2)), lambda ax: style.line(ax, "trip", [0, 1, 2], [0, 1, 0]),
                  lambda ax: style.hline(ax, "lane-line", 0))
    assert mark_problems(fig) == []


def test_the_check_fails_a_mark_the_table_does_not_hold():
    fig = _figure(lambda ax: ax.plot([1], [1], marker="o", color=PALETTE["blue"], linestyle="none", label="a ghost"))
    assert any("a ghost" in p and "does not hold" in p for p in mark_problems(fig))


def test_the_check_fails_a_meaning_drawn_another_way():
    fig = _figure(lambda ax: style.marker(ax, "lapse", [1], [1], color=PALETTE["blue"], markerfacecolor=PALETTE["blue"]))
    problems = mark_problems(fig)
    assert len(problems) == 1 and MARKS["lapse"].meaning in problems[0] and "the table says" in problems[0]


def test_the_check_fails_two_meanings_told_apart_by_colour_alone():
    fig = _figure(lambda ax: style.marker(ax, "done", [1], [1]), lambda ax: style.marker(ax, "promote", [2], [1]))
    problems = mark_problems(fig)
    assert len(problems) == 1 and "told apart by colour alone" in problems[0]


def test_the_key_draws_every_mark_a_legend_can_name(fake):
    from emqlab.view.figures import key_figure
    from emqlab.plot.legibility import clipped_marks, overprints

    drawing = key_figure()
    drawn = {a.get_label()[1:] for ax in drawing.figure.axes for a in [*ax.lines, *ax.patches]}
    assert drawn >= {m.meaning for m in MARKS.values() if m.legend}
    fig = drawing.figure
    assert mark_problems(fig, side_by_side=False) == [] and clipped_marks(fig) == [] and overprints(fig) == []


# -- no plotting module writes a colour or a marker of its own ----------------------------------------------
DRAWING_MODULES = sorted([*PACKAGE.joinpath("plot").glob("*.py"), PACKAGE / "classroom" / "draw.py",
                          PACKAGE / "view" / "interactive.py"])
LOOK_KEYWORDS = {"color", "colour", "c", "facecolor", "fc", "edgecolor", "ec", "markeredgecolor", "mec",
                 "markerfacecolor", "mfc", "marker", "hatch", "linestyle", "ls"}
HEX = re.compile(r"#[0-9A-Fa-f]{6}\b|#[0-9A-Fa-f]{3}\b")
NAMED = {"black", "white", "red", "blue", "green", "orange", "purple", "grey", "gray", "yellow", "pink", "k", "w", "r"}


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}


@pytest.mark.parametrize("path", DRAWING_MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_drawing_module_writes_a_colour_or_a_marker_of_its_own(path):
    """Shapes and colours come from the table (core/marks.py) through plot/style.py; a drawing module names marks."""
    tree = ast.parse(path.read_text())
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in docs:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and HEX.search(node.value):
            found.append(f"line {node.lineno}: {node.value!r}")
        if isinstance(node, ast.keyword) and node.arg in LOOK_KEYWORDS and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str) and node.value.value != "none":
            found.append(f"line {node.lineno}: {node.arg}={node.value.value!r}")
        if isinstance(node, ast.Dict):  # a bbox or arrowprops: {"fc": "white"}
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value in LOOK_KEYWORDS and isinstance(v, ast.Constant) \
                        and isinstance(v.value, str) and v.value != "none":
                    found.append(f"line {k.lineno}: {k.value}: {v.value!r}")
        if isinstance(node, ast.Constant) and node.value in NAMED - {"k", "w", "r"}:
            found.append(f"line {node.lineno}: {node.value!r}")
    if path.name == "style.py":  # the one place that turns a mark into matplotlib's words
        found = [f for f in found if "marker=" not in f and "linestyle=" not in f]
    assert found == [], f"{path.relative_to(ROOT)}: {found}"


# -- the lessons name a mark by the table's words ---------------------------------------------------------
COLOURS = "|".join(sorted({*PALETTE, "red", "pink", "reddish-purple"}, key=len, reverse=True))
SHAPES = "cross|thin cross|diamond|thin diamond|dot|square|star|tick|dash|triangle|plus|pentagon|hexagon|band|outline|arrow|line"
NAMED_MARK = re.compile(rf"\b(?:hollow )?(?:{COLOURS}) (?:{SHAPES})\b", re.I)


def _lesson_words():
    from emqlab.course import notebooks as course

    for path in course.lessons():
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                yield path.name, cell.source
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                yield path.name, data.get("text/plain", "") + out.get("text", "")


def test_the_lessons_name_marks_by_the_tables_words():
    said = [m.said for m in MARKS.values() if m.legend]
    wrong = [(name, phrase) for name, text in _lesson_words() for phrase in NAMED_MARK.findall(text)
             if not any(s.endswith(phrase.lower()) for s in said)]
    assert wrong == []
