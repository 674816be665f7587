"""The stuck-job figure (issue 13, item 6): one panel per mode (none, sweep, session, session with a
hard deadline), lightable, the readout from the verdict, no text on text at notebook, dashboard and
slide size."""

from __future__ import annotations

import pytest

from emqlab.view import figures
from emqlab.plot import Drawing
from emqlab.plot.legibility import overprints, small_texts

SIZES = [((12, 7.2), 80, 12), ((15, 7.5), 120, 18), ((16, 9), 120, 18)]


@pytest.fixture(scope="module")
def runs():
    from emqlab.store.backend import connect

    with connect("fake") as be:
        yield figures.stuck_modes(be)


def _gids(fig):
    return [a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()]


def test_the_figure_follows_the_protocol(runs):
    drawing = figures.stuck_figure(runs)
    assert isinstance(drawing, Drawing)
    assert drawing.modes == ["none", "sweep", "session", "session+limit"]
    gids = _gids(drawing.figure)
    titles = [ax.get_title(loc="left") for ax in drawing.figure.axes]
    for name in drawing.modes:
        words = drawing.words.modes[name]
        assert gids.count(f"lane:{name}") == 1 and f"mode:{name}" in gids
        assert f"{words.label} — {words.static}" in titles
        assert words.text == runs[name].text
    assert drawing.readout_text == drawing.words.prompt
    drawing.light("session+limit")
    assert drawing.readout_text == runs["session+limit"].text
    assert drawing.is_dimmed("none") and not drawing.is_dimmed("session+limit")
    assert drawing.words.modes["session+limit"].label == "one session + 120 s limit"


def test_the_hold_ends_at_the_deadline_the_server_gave_and_a_lapse_is_marked_there(runs):
    """The band ends at the first deadline the server gave (the lease's, or the hard deadline set at the claim),
    never past the reap, and a lapse mark sits at its end wherever a deadline ended it; the reap is marked on
    the row of the worker whose beat made it."""
    from emqlab.core.marks import MARKS

    drawing = figures.stuck_figure(runs)
    lapse, taken = MARKS["lapse"].meaning, MARKS["taken-back"].meaning
    for ax, name in zip(drawing.figure.axes, drawing.modes):
        v = runs[name].verdict
        bands = [p for p in ax.patches if p.get_gid() == f"mode:{name}" and p.get_y() == pytest.approx(0.4)]
        end = bands[0].get_x() + bands[0].get_width()
        lapses = [x for line in ax.lines if line.get_label() == lapse for x in line.get_xdata()]
        reaps = [(x, y) for line in ax.lines if line.get_label() == taken
                 for x, y in zip(line.get_xdata(), line.get_ydata())]
        if v.reclaimed_at is None:  # held to the horizon: nothing ran out
            assert end == pytest.approx(240.0, abs=0.31) and lapses == [] and reaps == [], name
        else:  # no renewal: the lease ran out at 30 s; the limit: the hard deadline passed at 120 s; both before the reap
            deadline = v.max_runtime or runs[name].params.lease
            assert end == pytest.approx(deadline, abs=0.31) and end < v.reclaimed_at, name
            assert lapses == [pytest.approx(end)], name
            assert reaps == [(pytest.approx(v.reclaimed_at), pytest.approx(-0.14))], name  # worker-2's row


@pytest.mark.parametrize("inches,dpi,min_px", SIZES)
def test_no_text_on_text_and_none_too_small(runs, inches, dpi, min_px):
    drawing = figures.stuck_figure(runs)
    drawing.fit(inches, dpi)
    for lit in [None, *drawing.modes]:
        drawing.light(lit)
        clashes = [f"{a.role} {a.text!r} × {b.role} {b.text!r}" for a, b in overprints(drawing.figure)]
        assert not clashes, f"{inches} in, lit {lit}: {clashes}"
        box = drawing.figure.legends[0].get_window_extent(drawing.figure.canvas.get_renderer())
        assert box.x0 >= 0 and box.x1 <= inches[0] * dpi  # the legend fits the figure's width
    assert not small_texts(drawing.figure, min_px)
