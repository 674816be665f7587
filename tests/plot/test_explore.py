"""The explorer's figures (`emqlab.plot.explore`): a schedule step by step (the search's counterexample, its
replay, a history's window) and the space growing with depth; each follows the drawing protocol, its legend
names exactly its marks, and no text is printed on text at notebook and slide size, each mode lit."""

from __future__ import annotations

from pathlib import Path

import pytest

from emqlab.plot.check import figure_problems, small_texts
from emqlab.scenarios.explore import explore, replay
from emqlab.scenarios.heartbeat import heartbeat
from emqlab.scenarios.history import check
from emqlab.view import figures
from support import check_protocol

SIZES = [((12, 7.2), 80, 12), ((15, 7.5), 120, 18)]
ECHOMQ_LIKE = {name: Path(__file__).parents[1] / "scenarios" / f"echomq_like_{short}.lua"
               for name, short in (("extend_active", "extend"), ("complete", "complete"), ("claim", "claim"))}


@pytest.fixture(scope="module")
def drawings():
    off = explore(depth=8, fencing="off")
    two_jobs = explore(depth=7, jobs=2, fencing="off", design="sweep", scripts=ECHOMQ_LIKE)
    return {
        "schedule": figures.explore_figure({"search": off, "replay": replay(off, backend="fake")}),
        "two jobs": figures.explore_figure({"echomq-like": two_jobs}),
        "growth": figures.growth_figure({"none": explore(depth=8), "session": explore(depth=6, design="session")}),
        "window": figures.check_figure(check(heartbeat(renew="none"))),
    }


def test_a_schedule_follows_the_protocol(drawings):
    check_protocol(drawings["schedule"], ["search", "replay"])
    check_protocol(drawings["window"], ["1. one_effect"])


def test_the_step_that_breaks_is_shaded_and_named(drawings):
    texts = [t.get_text() for ax in drawings["schedule"].figure.axes for t in ax.texts]
    assert texts.count("one_effect breaks") == 2  # the search's panel and the replay's


def test_the_growth_figure_has_a_lane_and_a_card_per_mode(drawings):
    d = drawings["growth"]
    gids = [a.get_gid() for ax in d.figure.axes for a in ax.get_children() if a.get_gid()]
    for name in ("none", "session"):
        assert gids.count(f"lane:{name}") == 1 and f"mode:{name}" in gids
    d.light("session")
    assert d.is_dimmed("none")


@pytest.mark.parametrize("name", ["schedule", "two jobs", "growth", "window"])
@pytest.mark.parametrize("size, dpi, min_px", SIZES)
def test_no_text_on_text_and_a_legend_of_its_marks(drawings, name, size, dpi, min_px):
    d = drawings[name]
    for lit in [None, *d.modes]:
        d.fit(size, dpi).light(lit)
        assert figure_problems(d.figure) == [], (name, lit)
        assert small_texts(d.figure, min_px) == []


def _marker_looks(fig) -> set[tuple[str, str]]:
    """(colour, marker) of every line drawn with a marker."""
    from matplotlib.colors import to_hex

    return {(to_hex(line.get_color()).upper(), line.get_marker()) for ax in fig.axes for line in ax.lines
            if line.get_marker() not in (None, "None", "none", "")}


def _course_markers() -> set[tuple[str, str]]:
    from emqlab.core.marks import MARKS

    return {(m.colour.upper(), m.shape) for m in MARKS.values() if m.kind == "marker" and not m.hollow}


def test_a_growth_run_is_drawn_with_no_look_a_course_mark_has():
    """Reader c, F5: a run's line is data, not an event: no purple diamond (a job taken back), no blue dot
    (a lease held), no green dot (a job done) on it. Runs of different designs take the design's line from
    the benchmarks' table, runs of one design the run looks: neither holds a course marker's look."""
    from emqlab.core.marks import series

    designs = {d: explore(depth=4, design=d) for d in ("none", "per-job", "sweep", "session")}
    d = figures.growth_figure(designs)
    assert not _marker_looks(d.figure) & _course_markers(), _marker_looks(d.figure)
    lines = {line.get_label(): line for ax in d.figure.axes for line in ax.lines}
    assert lines["emqlab session, states in all"].get_marker() == series("emqlab session")[1]
    assert lines["emqlab sweep, states in all"].get_marker() == series("emqlab sweep")[1]
    assert figure_problems(d.figure) == []
    workers = figures.growth_figure({"2 workers": explore(depth=4), "3 workers": explore(workers=3, depth=4)})
    looks = _marker_looks(workers.figure)
    assert len(looks) == 2 and not looks & _course_markers(), looks
    assert len({marker for _, marker in looks}) == 2  # told apart by shape, not by colour alone
    assert figure_problems(workers.figure) == []
