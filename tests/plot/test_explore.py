"""The explorer's figures (`emqlab.plot.explore`): a schedule step by step (the search's counterexample, its
replay, a history's window), the space growing with depth, and the state space itself (every state reached,
walkable); each follows the drawing protocol, its legend names exactly its marks, and no text is printed on
text at notebook and slide size, each mode lit."""

from __future__ import annotations

from pathlib import Path

import pytest

from emqlab.plot.legibility import figure_problems, small_texts
from emqlab.scenarios.explore import explore, replay
from emqlab.scenarios.heartbeat import heartbeat
from emqlab.scenarios.history import check
from emqlab.view import figures
from support.words import check_protocol

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
    d = drawings["schedule"]
    invariant = d.timelines["search"].verdict.invariant
    texts = [t.get_text() for ax in d.figure.axes for t in ax.texts]
    assert invariant == "current_fence"  # fencing off: a stale holder's write is accepted before any double effect
    assert texts.count(f"{invariant} breaks") == 2  # the search's panel and the replay's
    # the stale write says under which attempts it was written, the claim before it which it was handed
    assert "effect J1\nattempts 1" in texts and "claim J1\nattempts 2" in texts


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

    return {(m.colour.upper(), m.shape) for m in MARKS.values() if m.artist == "marker" and not m.hollow}


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


# -- the state space, walkable ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def space():
    from emqlab.scenarios.explore import state_space

    return state_space(workers=2, jobs=1, depth=6, fencing="off")


@pytest.fixture(scope="module")
def space_drawing(space):
    return figures.space_figure(space)


def _xy(line) -> list[tuple[float, float]]:
    return list(zip(map(float, line.get_xdata()), map(float, line.get_ydata())))


def test_the_space_draws_every_state_by_depth_as_a_mode_with_one_lane(space, space_drawing):
    from emqlab.plot.explore import STATE, space_layout

    d = space_drawing
    assert d.modes == [STATE(s["id"]) for s in space.states]
    gids = [a.get_gid() for ax in d.figure.axes for a in ax.get_children() if a.get_gid()]
    for s in space.states:
        assert gids.count(f"lane:{STATE(s['id'])}") == 1 and f"mode:{STATE(s['id'])}" in gids
    place = space_layout(space.states)
    assert all(place[s["id"]][0] == s["depth"] for s in space.states)  # a column per depth
    ticks = [t.get_text() for t in d.figure.axes[0].get_xticklabels()]
    levels = space.timeline.verdict.levels
    assert ticks[0].startswith("start") and all(f"{n} state" in tick for n, tick in zip(levels, ticks))
    d.light(STATE(space.path[-2]))
    assert d.is_dimmed(STATE(0)) and not d.is_dimmed(STATE(space.path[-2]))
    d.light(None)


def test_the_space_draws_the_counterexamples_path_to_a_broken_state(space, space_drawing):
    from emqlab.core.marks import MARKS
    from emqlab.plot.explore import space_layout

    ax = space_drawing.figure.axes[0]
    place = space_layout(space.states)
    paths = [line for line in ax.lines if line.get_label() == MARKS["counterexample"].meaning]
    assert len(paths) == 1 and _xy(paths[0]) == [place[i] for i in space.path]
    assert len(space.path) == len(space.timeline.verdict.counterexample) + 1  # the start, then a state a step
    end = space.states[space.path[-1]]
    assert end["broken"]["invariant"] == space.timeline.verdict.invariant == "current_fence"
    broken = [line for line in ax.lines if line.get_label() == MARKS["broken-state"].meaning]
    assert place[end["id"]] in [xy for line in broken for xy in _xy(line)]  # the broken state is marked
    assert f"{end['broken']['invariant']} breaks" in [t.get_text() for t in ax.texts]
    # every step tried from a state to another is a line of that state's mode, ending where it leads
    steps = [line for line in ax.lines if line.get_label() == MARKS["step-tried"].meaning]
    s = space.states[space.path[-2]]
    mine = [_xy(line) for line in steps if line.get_gid() == f"mode:state {s['id']}"]
    assert sorted(xy[-1] for xy in mine) == sorted(place[e["to"]] for e in s["next"] if e["to"] not in (None, s["id"]))


def test_pointing_at_a_state_says_its_keys_what_each_worker_believes_and_the_steps_that_lead_on(space, space_drawing):
    import json
    import re

    from emqlab.view.interactive import interactive_html

    page = interactive_html(space_drawing, "space", fold=True)
    modes = json.loads(re.search(r"<script type=\"application/json\" data-modes>(.*?)</script>", page).group(1))["modes"]
    assert list(modes) == space_drawing.modes
    s = space.states[space.path[-2]]  # the state before the break: two workers believe they hold J1
    said = modes[f"state {s['id']}"]["html"]
    assert f"first met at {s['state']['t']:g} s" in said
    assert "job:J1 {attempts 2," in said and "active {J1: lease to 62 s}" in said  # its keys, times from the start
    assert "worker-1 believes it holds J1 (attempts 1), lease to 30 s" in said  # what each worker believes
    assert "worker-2 believes it holds J1 (attempts 2), lease to 62 s" in said
    for e in s["next"]:  # every step tried from it, and where it leads
        assert f"→ {'an invariant breaks: ' if space.states[e['to']]['broken'] else ''}state {e['to']}" in said
    assert "worker-1 writes its effect → an invariant breaks: state" in said
    # no raw score: every number said is a model time, an attempts or a state's id, never the server's epoch ms
    assert not [n for m in modes.values() for n in re.findall(r"\d{6,}", m["html"])]
    end = modes[f"state {space.path[-1]}"]["html"]
    assert "current_fence: the store accepted job J1&#x27;s holder of attempts 1" in end
    assert "effects {J1 1}" in end and "its effect written" in end
    # folded: every state's words stay on the page as text, in a box that scrolls
    assert 'class="emqlab-fold"' in page and all(m["verdict"] in page for m in modes.values())


def test_a_folded_explorer_says_its_caption_and_notes_not_a_line_per_state(space):
    from emqlab.view.widgets import ModeExplorer

    walk = ModeExplorer(figures.space_figure, space, fold=True)
    try:
        said = walk.said()
        assert said.splitlines()[0] == walk.drawing.words.caption
        assert space.timeline.verdict.headline in said and " → ".join(map(str, space.path)) in said
        assert "state 1 →" not in said and len(said.splitlines()) == 3
    finally:
        walk.close()


@pytest.mark.parametrize("size, dpi, min_px", SIZES)
def test_the_space_has_no_text_on_text_and_a_legend_of_its_marks(space, space_drawing, size, dpi, min_px):
    d = space_drawing
    for lit in [None, f"state {space.path[-2]}", f"state {space.path[-1]}"]:
        d.fit(size, dpi).light(lit)
        assert figure_problems(d.figure) == [], lit
        assert small_texts(d.figure, min_px) == []
    d.light(None)


def test_the_space_with_nothing_broken_draws_no_path():
    from emqlab.core.marks import MARKS
    from emqlab.scenarios.explore import state_space

    sp = state_space(workers=2, jobs=1, depth=4, fencing="on")
    d = figures.space_figure(sp)
    labels = {line.get_label() for ax in d.figure.axes for line in ax.lines}
    assert sp.path == [] and MARKS["counterexample"].meaning not in labels
    assert MARKS["broken-state"].meaning not in labels and figure_problems(d.figure) == []
