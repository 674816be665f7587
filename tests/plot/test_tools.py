"""Issue 21: a library's runs drawn beside emqlab's own design (emqlab.plot.tools, through
emqlab.view.figures.tools_figure): one lane patch and tagged artists per mode, each run's own words, a
legend built from the marks drawn, no text on text at notebook, slide and dashboard size, each mode lit. Drawn from
runs recorded with `emqlab tools … --json` (tests/tools/runs/) and emqlab's own on fakeredis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emqlab.core.words import HEADLINE_WORDS, headline_words
from emqlab.plot import Drawing
from emqlab.plot.check import figure_problems, overprints, small_texts
from emqlab.store.backend import connect
from emqlab.tools import LIBRARIES, load
from emqlab.tools.story import EMQLAB
from emqlab.view import figures

RUNS = Path(__file__).resolve().parents[1] / "tools" / "runs"
RECORDED = {"celery": ("celery", "celery_fix_crash"), "bullmq": ("bullmq", "bullmq_fix"),
            "rq": ("rq", "rq_fix", "rq_fix_fate_slow"), "redis-lock": ("redis-lock", "redis-lock_fix"),
            "python-redis-lock": ("python-redis-lock", "python-redis-lock_fix")}
# the notebook's explorer, an exported slide (`emqlab figures`: 16 x 9 in at 120 dpi), `emqlab present`'s dashboard
SIZES = [((12, 7.2), 80, 12), ((16, 9), 120, 18), ((15, 7.5), 120, 18)]


def recorded(name: str):
    return load(json.loads((RUNS / f"{name}.json").read_text()))


@pytest.fixture(scope="module")
def modes():
    with connect("fake") as be:
        return {library: figures.tools_modes(library, be, runs={(tl := recorded(n)).params.mode: tl for n in names})
                for library, names in RECORDED.items()}


def _gids(fig):
    return [a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()]


@pytest.mark.parametrize("library", list(LIBRARIES))
def test_each_run_is_a_mode_with_its_own_words(modes, library):
    runs = modes[library]
    drawing = figures.tools_figure(runs)
    assert isinstance(drawing, Drawing) and drawing.modes == list(runs) and drawing.modes[-1] == EMQLAB
    gids = _gids(drawing.figure)
    for name in drawing.modes:
        words = drawing.words.modes[name]
        assert gids.count(f"lane:{name}") == 1 and f"mode:{name}" in gids
        assert words.text == runs[name].summary and headline_words(words.readout) <= HEADLINE_WORDS
    assert drawing.words.modes[EMQLAB].label.startswith("emqlab: ")
    assert drawing.readout_text == drawing.words.prompt
    drawing.light(drawing.modes[0])
    assert drawing.readout_text == runs[drawing.modes[0]].summary
    assert drawing.is_dimmed(EMQLAB) and not drawing.is_dimmed(drawing.modes[0])


@pytest.mark.parametrize("library", list(LIBRARIES))
@pytest.mark.parametrize("size", SIZES, ids=["notebook", "slide", "dashboard"])
def test_the_figure_prints_no_text_on_text_and_its_legend_names_its_marks(modes, library, size):
    inches, dpi, min_px = size
    drawing = figures.tools_figure(modes[library]).fit(inches, dpi)
    assert figure_problems(drawing.figure) == []
    for lit in (None, *drawing.modes):
        drawing.light(lit)
        clashes = [f"{a.role} {a.text!r} × {b.role} {b.text!r}" for a, b in overprints(drawing.figure)]
        assert not clashes, f"{library}, lit {lit}: " + "; ".join(clashes)
    assert not small_texts(drawing.figure, min_px)


def test_a_band_ends_where_the_server_said(modes):
    """The visibility band of Celery's first delivery ends at its score + the timeout, as the server held it."""
    tl = modes["celery"]["failure"]
    first = tl.spans("lease")[0]
    assert first.end == pytest.approx(tl.verdict.delivered_at[0] + tl.params.visibility_timeout, abs=0.002)
    assert first.data["ended"] == "delivered again"


def test_a_figure_needs_a_librarys_run(modes):
    from emqlab.core.errors import BadParameter

    with pytest.raises(BadParameter, match="a library's runs"):
        figures.tools_figure({EMQLAB: modes["celery"][EMQLAB]})
