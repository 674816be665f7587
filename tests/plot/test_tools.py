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
from emqlab.plot.legibility import figure_problems, overprints, small_texts
from emqlab.store.backend import connect
from emqlab.tools import libraries, load
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


@pytest.mark.parametrize("library", list(libraries()))
def test_each_run_is_a_mode_with_its_own_words(modes, library):
    runs = modes[library]
    drawing = figures.tools_figure(runs)
    assert isinstance(drawing, Drawing) and drawing.modes == list(runs) and drawing.modes[-1] == EMQLAB
    gids = _gids(drawing.figure)
    for name in drawing.modes:
        words = drawing.words.modes[name]
        assert gids.count(f"lane:{name}") == 1 and f"mode:{name}" in gids
        assert words.text == runs[name].text and headline_words(words.headline) <= HEADLINE_WORDS
    assert drawing.words.modes[EMQLAB].label.startswith("emqlab: ")
    assert drawing.readout_text == drawing.words.prompt
    drawing.light(drawing.modes[0])
    assert drawing.readout_text == runs[drawing.modes[0]].text
    assert drawing.is_dimmed(EMQLAB) and not drawing.is_dimmed(drawing.modes[0])


@pytest.mark.parametrize("library", list(libraries()))
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


# -- issue 35: every mark true to its run -----------------------------------------------------------------------
from emqlab.core.marks import MARKS  # noqa: E402
from emqlab.plot.tools import RUN_Y, stacked, worked  # noqa: E402


def _marks_of(drawing, mode: str, name: str) -> list:
    """The markers of mark `name` drawn in `mode`'s panel, as (x, y in display points) pairs."""
    meaning = MARKS[name].meaning
    found = []
    for ax in drawing.figure.axes:
        for line in ax.lines:
            if line.get_gid() == f"mode:{mode}" and line.get_label() == meaning:
                x, y = line.get_xdata()[0], line.get_ydata()[0]
                found.append((x, line.get_transform().transform((x, y))[1] * 72 / drawing.figure.dpi))
    return found


def _bands_of(drawing, mode: str, name: str) -> list:
    meaning = MARKS[name].meaning
    return [p for ax in drawing.figure.axes for p in ax.patches
            if p.get_gid() == f"mode:{mode}" and p.get_label() == meaning]


def test_marks_at_one_moment_stack_so_none_hides_another(modes):
    """RQ's cleaning abandons the job and fails it in one script, BullMQ's checker moves the job back and marks
    it failed in one: both marks are drawn, one above the other, at the moment the server showed them."""
    assert stacked([1.0, 1.001, 5.0], 0.1) == [0.0, 9.0, 0.0]
    for library, (first, then) in {"rq": ("abandoned", "failed"), "bullmq": ("taken-back", "failed")}.items():
        drawing = figures.tools_figure(modes[library]).fit((12, 7.2), 80)
        (x1, y1), (x2, y2) = _marks_of(drawing, "failure", first)[-1], _marks_of(drawing, "failure", then)[-1]
        assert x1 == pytest.approx(x2, abs=0.05) and y2 - y1 >= 8, library
    # BullMQ's checker moved the job back as often as its verdict counts (stc): each one is drawn
    drawing = figures.tools_figure(modes["bullmq"])
    assert len(_marks_of(drawing, "failure", "taken-back")) == modes["bullmq"]["failure"].verdict.stalled_count == 2


def test_a_frozen_process_does_no_work_in_the_figure(modes):
    """The work band stops where a pause begins and goes on where it ends (RQ's slow worker, python-redis-lock's
    frozen holder, emqlab's stopped worker)."""
    assert worked(0.0, 10.0, [(2.0, 4.0), (6.0, 12.0)]) == [(0.0, 2.0), (4.0, 6.0)]
    for library, mode in (("rq", "fix+slow"), ("python-redis-lock", "failure"), ("bullmq", EMQLAB)):
        drawing = figures.tools_figure(modes[library])
        pauses = _bands_of(drawing, mode, "pause")
        assert pauses, (library, mode)
        for pause in pauses:
            lane = pause.get_y() + 0.40
            p0, p1 = pause.get_x(), pause.get_x() + pause.get_width()
            on_lane = [b for b in _bands_of(drawing, mode, "work") if b.get_y() == pytest.approx(lane + RUN_Y)]
            assert on_lane and all(b.get_x() + b.get_width() <= p0 + 1e-9 or b.get_x() >= p1 - 1e-9 for b in on_lane)


def test_celerys_ack_is_drawn_as_an_ack_not_the_job_done(modes):
    """The first worker's ack deletes the message's entry while the second run still works: not the job done."""
    tl = modes["celery"]["failure"]
    drawing = figures.tools_figure(modes["celery"])
    assert [x for x, _ in _marks_of(drawing, "failure", "acked")] == [pytest.approx(tl.verdict.acked_at)]
    assert max(b.end for b in tl.spans("run")) > tl.verdict.acked_at + 1  # the second run went on after it
    assert _marks_of(drawing, "failure", "done") == []


def test_emqlabs_lock_panel_draws_the_reclaim_and_the_finish(modes):
    """redis-py's figure's emqlab panel: its readout says reclaimed and finishes once; the panel shows both."""
    tl = modes["redis-lock"][EMQLAB]
    drawing = figures.tools_figure(modes["redis-lock"])
    reclaim = next(e for e in tl.events if e.kind == "reclaim")
    finished = [e.t for e in tl.events if e.kind == "work_done"]
    assert [x for x, _ in _marks_of(drawing, EMQLAB, "taken-back")] == [pytest.approx(reclaim.t)]
    assert [x for x, _ in _marks_of(drawing, EMQLAB, "done")] == [pytest.approx(t) for t in finished] and len(finished) == 1


@pytest.mark.parametrize("library", list(libraries()))
def test_a_figure_of_the_librarys_runs_alone_says_nothing_of_emqlab(modes, library):
    """A lesson's second figure draws the library's runs without emqlab's panel: its caption drops its words for it."""
    alone = {name: tl for name, tl in modes[library].items() if name != EMQLAB}
    drawing = figures.tools_figure(alone).fit((12, 7.2), 80)
    assert EMQLAB not in drawing.modes and "emqlab" not in drawing.words.caption
    assert figure_problems(drawing.figure) == []
    assert "emqlab" in figures.tools_figure(modes[library]).words.caption
