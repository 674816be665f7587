"""Figure 1 (the renewal heartbeat) drawn from real runs: what the figure shows is what the store did."""

from __future__ import annotations

import re
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

from emqlab.core.errors import BadParameter  # noqa: E402
from emqlab.core.marks import MARKS  # noqa: E402
from emqlab.plot.legibility import arrow_ends  # noqa: E402
from emqlab.view.figures import heartbeat_figure  # noqa: E402
from emqlab.plot import Drawing  # noqa: E402
from emqlab.scenarios.heartbeat import heartbeat  # noqa: E402
from emqlab.store.backend import connect  # noqa: E402
from support.records import SLOW_SCALE, slack  # noqa: E402


@pytest.fixture(scope="module", params=["fake", pytest.param("live", marks=pytest.mark.live)])
def pair(request):
    """The store and the figure's two runs on it, made once for the module: fakeredis, and the session's
    Valkey at SLOW_SCALE (the bands are checked to a few model seconds, and at LIVE_SCALE a loaded machine's
    slack is tens of them)."""
    if request.param == "fake":
        be = connect("fake")
    else:
        be = connect(request.getfixturevalue("valkey_url"), clock="real", scale=SLOW_SCALE)
    try:
        yield be, {"none": heartbeat(renew="none", backend=be), "half": heartbeat(renew="half", backend=be)}
    finally:
        be.close()


@pytest.fixture
def both(pair):
    return pair[1]


def mode_artists(fig, mode):
    return [a for a in fig.findobj() if a.get_gid() == f"mode:{mode}"]


def bands(fig, mode, name):
    """(start, end) of the mode's rectangles drawn as band `name` of the mark table (its meaning, its colour)."""
    m, out = MARKS[name], []
    for a in mode_artists(fig, mode):
        if isinstance(a, Rectangle) and a.get_label() == m.meaning:
            assert matplotlib.colors.same_color(a.get_facecolor()[:3], m.colour)
            out.append((a.get_x(), a.get_x() + a.get_width()))
    return sorted(out)


def marker_xs(fig, mode, name):
    """x of every mark `name` of the mark table the mode drew (its meaning, its shape)."""
    m, xs = MARKS[name], []
    for a in mode_artists(fig, mode):
        if isinstance(a, Line2D) and a.get_label() == m.meaning:
            assert a.get_marker() == m.shape and matplotlib.colors.same_color(a.get_color(), m.colour)
            xs.extend(a.get_xdata())
    return sorted(xs)


def draw(runs, **kw):
    return heartbeat_figure(runs, **kw).figure


def test_protocol_modes_lanes_and_readout(pair):
    be, both = pair
    drawing = heartbeat_figure(both)
    fig, words = drawing.figure, drawing.words
    assert isinstance(drawing, Drawing) and isinstance(fig, Figure)
    assert list(words.modes) == ["none", "half"]
    assert words.modes["none"].label == "no renewal"
    assert words.modes["half"].label == "renew at TTL/2"
    lanes = [a.get_gid() for a in fig.findobj() if (a.get_gid() or "").startswith("lane:")]
    assert sorted(lanes) == ["lane:half", "lane:none"]
    assert mode_artists(fig, "none") and mode_artists(fig, "half")
    assert "75 s job" in words.caption and "30 s lease" in words.caption
    assert drawing.readout_text == words.prompt
    # the titles on the figure are the scenario's words, not text made up by the plot
    titles = {ax.get_title(loc="left") for ax in fig.axes}
    assert titles == {words.modes["none"].label, words.modes["half"].label}
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {words.modes["none"].static, words.modes["half"].static} <= texts
    assert words.modes["none"].text == both["none"].verdict.text
    assert "runs twice" in words.modes["none"].static
    half = words.modes["half"].static
    # renewed at TTL/2: every 15 s on the virtual clock; on a real clock the spacing is as late as the host's wake-ups
    spacing = float(re.search(r"every ([\d.]+) s", half).group(1))
    assert abs(spacing - 15) <= slack(be) if be.clock.real else spacing == 15, half
    assert "finishes once" in half


def test_the_x_axis_counts_from_when_the_holder_asked_over_a_link_and_took_beside_the_store(both):
    """Beside the store the acquire is answered at once; over a link, 0 is when it was sent."""
    assert draw(both).axes[-1].get_xlabel() == "model seconds since the holder took the lock"
    be = connect("fake")
    try:
        linked = {"beside": heartbeat(renew="half", backend=be),
                  "link": heartbeat(renew="half", latency=10, backend=be)}
        assert draw(linked).axes[-1].get_xlabel() == "model seconds since the holder asked for the lock"
    finally:
        be.close()


def test_bands_come_from_the_servers_deadlines(pair):
    backend, both = pair
    fig = draw(both)
    # live: the server's PTTL is scaled, and a late wake-up on a busy machine records when it really
    # acted, so allow a loaded machine's slack (about 5 model seconds at SLOW_SCALE); the virtual clock is exact
    margin = slack(backend, 3.0) if backend.live else 0
    holder_band, contender_band = bands(fig, "none", "lease")
    assert holder_band == pytest.approx((0, 30), abs=margin)
    assert holder_band[1] == both["none"].spans("lease", "holder")[0].end  # the band is the recorded lease
    assert contender_band[0] == pytest.approx(30.5, abs=margin)
    assert marker_xs(fig, "none", "lapse") == pytest.approx([30, 60.5], abs=margin)
    assert marker_xs(fig, "none", "extend") == []
    # renew at TTL/2: a tick for every extend the run recorded, every 15 s, and the band reaches the release
    ticks = marker_xs(fig, "half", "extend")
    assert ticks == sorted(e.t for e in both["half"].of("renew", "holder"))
    assert ticks[:4] == pytest.approx([15, 30, 45, 60], abs=margin)
    assert len(ticks) == 4 or (backend.live and len(ticks) == 5)  # live: the tick at 75 s may beat the job's end
    assert bands(fig, "half", "lease")[0] == pytest.approx((0, 75), abs=margin)
    assert marker_xs(fig, "half", "lapse") == []
    # every extend's arrow ends at the deadline it set, inside the axis (none cut off at its end)
    deadlines = [e.data["deadline"] for e in both["half"].of("renew", "holder")]
    assert fig.axes[-1].get_xlim()[1] > max(deadlines)


def test_each_band_ends_where_lesson_01_says_it_does(pair):
    """Lesson 01: a lease band runs from the acquire until the holder let the key go or, if the lease lapsed, to
    the deadline the server gave (its reply to the acquire or the latest extend); each arrow runs from an extend
    to the deadline it set."""
    backend, both = pair
    margin = slack(backend, 3.0) if backend.live else 1e-9
    fig = draw(both).figure
    for mode, tl in both.items():
        said = []
        for lease in tl.spans("lease"):
            # the event that ended it: the lapse, or the holder letting go (a release, or seeing the job done)
            ended = ("lapse",) if lease.data["ended"] == "lapsed" else ("release", "release_refused", "saw_done")
            end = min((e.t for e in tl.events if e.kind in ended and e.actor == lease.actor),
                      key=lambda t: abs(t - lease.end))
            assert end == pytest.approx(lease.end, abs=margin), (mode, lease)
            if ended == ("lapse",):  # the last deadline the server gave this holder, by its acquire or an extend
                given = [e.data["deadline"] for e in tl.of("renew", lease.actor) if e.t < end] or [lease.start + tl.params.lease]
                assert end == pytest.approx(given[-1], abs=max(margin, 0.6)), (mode, lease)  # 0.6: a poll's step
            said.append((lease.start, max(lease.end, lease.start + 0.15)))
        drawn = bands(fig, mode, "lease")
        assert [x for band in drawn for x in band] == pytest.approx([x for band in sorted(said) for x in band]), mode
        arrows = sorted((start[0], tip[0]) for start, tip in (arrow_ends(a) for a in mode_artists(fig, mode)
                        if isinstance(a, FancyArrowPatch) and a.get_label() == MARKS["moved"].meaning))
        wanted = sorted((e.t, e.data["deadline"]) for e in tl.of("renew") if "deadline" in e.data)
        head = 0.005 * (fig.axes[-1].get_xlim()[1] - fig.axes[-1].get_xlim()[0])  # a head's tip is drawn a hair short
        assert [x for pair in arrows for x in pair] == pytest.approx([x for pair in wanted for x in pair], abs=head), mode


def test_double_run_is_shaded_only_where_both_worked(both):
    fig = draw(both)
    overlap = both["none"].verdict.overlap
    assert len(overlap) == 1
    assert bands(fig, "none", "double-run") == [pytest.approx(tuple(overlap[0]))]
    assert bands(fig, "half", "double-run") == []


def test_a_pause_is_drawn_and_told(fake):
    tl = heartbeat(renew="half", pause="20:40", backend=fake)
    drawing = heartbeat_figure([tl])
    hatched = [a for a in mode_artists(drawing.figure, "half") if isinstance(a, Rectangle) and a.get_hatch()]
    assert [(a.get_x(), a.get_x() + a.get_width()) for a in hatched] == [(20, 60)]
    words = drawing.words.modes["half"]
    assert "extend replies 0 · holder stops" in words.static and "paused 20 s–60 s" in words.static
    assert words.headline == "renew at TTL/2: the 30 s lease lapsed at 45 s; the job finished once, by the contender."
    assert words.facts[:2] == ("the holder was paused from 20 s to 60 s", "it lapsed while the holder was frozen")
    assert "replied 0" in words.text


def test_exports_png_and_svg(both, tmp_path):
    fig = draw(both)
    fig.savefig(tmp_path / "f1.png", dpi=60)
    fig.savefig(tmp_path / "f1.svg")
    assert (tmp_path / "f1.png").read_bytes()[:4] == b"\x89PNG"
    svg = (tmp_path / "f1.svg").read_text()
    assert "lane:none" in svg and "mode:half" in svg  # gids survive into SVG for the dashboard


def test_draws_into_a_given_figure_and_rejects_nonsense(both):
    fig = Figure()
    drawing = heartbeat_figure(list(both.values()), fig=fig)
    assert drawing.figure is fig and drawing.modes == ["none", "half"]
    with pytest.raises(BadParameter, match="heartbeat_figure takes Timelines"):
        heartbeat_figure(42)
    with pytest.raises(BadParameter, match="at least one"):
        heartbeat_figure({})


def test_sentences_quote_times_to_the_tenth_of_a_second():
    from emqlab.core.words import seconds

    assert seconds(29.96) == "30 s" and seconds(30.5) == "30.5 s" and seconds(30.61) == "30.6 s"
    assert seconds(None) == "never" and seconds(-0.01) == "0 s"


def test_the_model_never_imports_matplotlib():
    code = ("import sys, emqlab, emqlab.scenarios, emqlab.course.lab, emqlab.course.exercises; "
            "bad = [m for m in ('matplotlib', 'ipywidgets', 'anywidget') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
