"""No text on text, and no text too small to read: every figure the package draws, each mode lit,
at notebook size (the explorer's 80 dpi) and at slide size (1920 × 1080)."""

from __future__ import annotations

import pytest

from emqlab.core.marks import MARKS

from emqlab.view import figures
from emqlab.scenarios.slow_link import latency_boundary
from emqlab.plot.legibility import figure_problems, legend_problems, overprints, small_texts
from emqlab.scenarios.heartbeat import heartbeat
from emqlab.scenarios.queue_heartbeat import queue_heartbeat
from emqlab.scenarios.chaos import chaos

RUN_SECONDS = 60  # about how long this file runs on a quiet 2-core machine: the suite starts the longest first

NOTEBOOK = ((12, 7.2), 80, 12)  # inches, dpi, smallest text in px
SLIDE = ((16, 9), 120, 18)
DASHBOARD = ((15, 7.5), 120, 18)  # emqlab present: the explorer at slide dpi, on a 1920-wide screen


def _pause_past_the_lease(be):
    modes = {"none": heartbeat(renew="none", pause="20:40", backend=be),
             "chosen": heartbeat(renew=1.2, pause="20:40", backend=be)}
    return figures.heartbeat_figure(modes)


def _mortal_and_durable(be):
    runs = {"crash-short": heartbeat(lease=10, renew="half", pause="11:100", backend=be),
            "crash-long": heartbeat(lease=60, renew="half", pause="11:100", backend=be),
            "alive-short": heartbeat(lease=10, renew="half", backend=be)}
    labels = {"crash-short": "10 s lease, holder frozen 11 s to 111 s", "crash-long": "60 s lease, holder frozen 11 s to 111 s",
              "alive-short": "10 s lease, holder alive"}
    return figures.heartbeat_figure(runs, labels=labels)


def _boundary(be):
    from emqlab.course import lab
    from emqlab.course.lab import session

    session._current = be
    try:
        return figures.boundary_figure(lab.cadence_boundary(cadences=[0.3, 0.5, 0.8], pauses=[5.5, 12.5, 27.5]))
    finally:
        session._current = None


BUILDERS = {
    "heartbeat": lambda be: figures.heartbeat_figure(figures.heartbeat_modes(be)),
    "mortal-and-durable": _mortal_and_durable,
    "pause-past-the-lease": _pause_past_the_lease,
    "renewal": lambda be: figures.renewal_figure(figures.renewal_designs(be)),
    "scaling": figures.measured_scaling,
    "capacity": lambda be: figures.measured_capacity(),
    "reaper": lambda be: figures.reaper_figure(figures.applied_runs(be)["reaper"]),
    "queue-heartbeat": lambda be: figures.queue_heartbeat_figure(
        {r: queue_heartbeat(renew=r, backend=be) for r in ("none", "half")}),
    "fencing": lambda be: figures.fencing_figure(figures.applied_runs(be)["fencing"]),
    "chaos": lambda be: figures.chaos_figure(chaos(workers=3, jobs=60, backend=be, progress="off")),
    "boundary": _boundary,
    "beats": lambda be: figures.beats_figure(figures.applied_runs(be)["reaper"]),
    "beats-queue": lambda be: figures.beats_figure({"none": queue_heartbeat(renew="none", backend=be)}),
    "stuck": lambda be: figures.stuck_figure(figures.stuck_modes(be)),
    "slow-link": lambda be: figures.heartbeat_figure(figures.link_delay_modes(be)),
    "latency-boundary": lambda be: figures.latency_boundary_figure(latency_boundary(be, cadences=[0.3, 0.5, 0.7])),
}


def frames(drawing):
    yield None
    yield from drawing.modes


@pytest.mark.parametrize("size", [NOTEBOOK, SLIDE, DASHBOARD], ids=["notebook", "slide", "dashboard"])
@pytest.mark.parametrize("name", list(BUILDERS))
def test_no_text_is_printed_on_other_text(fake, name, size):
    inches, dpi, min_px = size
    drawing = BUILDERS[name](fake)
    fig = drawing.figure
    drawing.fit(inches, dpi)
    for lit in frames(drawing):
        drawing.light(lit)
        clashes = [f"{a.role} {a.text!r} × {b.role} {b.text!r}" for a, b in overprints(fig)]
        assert not clashes, f"{name} at {inches} in, lit {lit}: " + "; ".join(clashes)
    assert not small_texts(fig, min_px), f"{name}: texts under {min_px} px: {small_texts(fig, min_px)}"


def test_the_check_sees_a_label_moved_onto_another(fake):
    drawing = figures.heartbeat_figure(figures.heartbeat_modes(fake))
    fig = drawing.figure
    assert not overprints(fig)
    ax = fig.axes[0]
    ax.yaxis.label.set_text("holder lane")
    ax.title.set_text("a title")  # the centre title, moved onto the left one
    ax.title.set_position(ax._left_title.get_position())
    ax.title.set_ha("left")
    assert any({a.role, b.role} == {"title"} for a, b in overprints(fig))
    assert small_texts(fig, 100)  # and a threshold no text meets is reported


# -- legends by construction: the figures whose legend is built from their marks (`plot.legend_of_marks`)
# figure 1's family (01-0, 02-0, 03-0, 08-0), 04-3, 05-0, 05-1 and 06-0
# every figure here; the cluster's (tests/store/test_cluster.py), the failover's (tests/scenarios/test_failover.py)
# and the class's (tests/classroom/test_draw.py) need live servers or a class, and are held to it there
@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_mark_is_the_grammars_in_view_and_the_legend_names_exactly_them(fake, name):
    drawing = BUILDERS[name](fake)
    assert figure_problems(drawing.figure) == [], name


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_readout_opens_with_a_headline_read_in_one_breath(fake, name):
    from emqlab.core.words import HEADLINE_WORDS, headline_words

    for mode, words in BUILDERS[name](fake).words.modes.items():
        assert headline_words(words.headline) <= HEADLINE_WORDS, (name, mode, words.headline)
        assert "\n" not in words.headline and all("\n" not in fact for fact in words.facts), (name, mode)


def test_the_legend_check_sees_a_mark_left_out_and_an_entry_left_over(fake):
    drawing = BUILDERS["heartbeat"](fake)
    fig = drawing.figure
    ax = fig.axes[0]
    ax.plot([10], [0.5], marker="*")  # a mark drawn without saying what it is
    assert legend_problems(fig) == ["a Line2D drawn with no label (what does it mean?)"]
    ax.lines[-1].set_label("a star")  # named, but the legend was built before it
    assert legend_problems(fig) == ["drawn but not in the legend: a star"]
    ax.lines[-1].remove()
    said = MARKS["lapse"].meaning
    lapse = next(a for a in ax.lines if a.get_label() == said)
    for other in fig.axes:  # no panel draws a lapse any more, yet the legend still lists one
        for line in [a for a in other.lines if a.get_label() == said]:
            line.remove()
    assert lapse not in ax.lines and legend_problems(fig) == [f"in the legend but drawn nowhere: {said}"]


def test_a_mark_no_run_drew_has_no_entry(fake):
    entries = [t.get_text() for t in BUILDERS["heartbeat"](fake).figure.legends[0].get_texts()]
    said = {name: m.meaning for name, m in MARKS.items()}
    assert said["pause"] not in entries and said["told"] not in entries  # figure 1 has neither
    assert {said[n] for n in ("lease", "extend", "moved", "lapse", "done", "tried", "double-run")} <= set(entries)
    frozen = [t.get_text() for t in BUILDERS["mortal-and-durable"](fake).figure.legends[0].get_texts()]
    assert {said["pause"], said["told"], said["saw-done"]} <= set(frozen) and said["double-run"] not in frozen
