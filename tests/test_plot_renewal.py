"""Figure 2 and the benchmark's figures drawn from real runs and rows with their scenario's words,
and the registries every one of them reads: each renewal design and cadence named once."""

from __future__ import annotations

import importlib

import pytest

from emqlab.errors import BadParameter
from emqlab.plot import Drawing, style
from emqlab.renewal import CADENCE_HELP, CADENCES, cadence_help, parse_cadence
from emqlab.renewal_plane import DESIGNS, check_design, design_help, design_names, make_plane
from emqlab.scenarios.renewal_cost import capacity_words, figure_words, renewal_cost, scaling_words


# -- the registries: each design and cadence named once ------------------------------------------
def test_designs_are_named_once_and_read_everywhere(fake):
    from emqlab.plot import renewal as plot_renewal
    scenario = importlib.import_module("emqlab.scenarios.renewal_cost")

    assert design_names() == ["per-job", "sweep"]
    assert (DESIGNS["per-job"].colour, DESIGNS["sweep"].colour) == (style.PER_JOB, style.SWEEP)
    for name, design in DESIGNS.items():
        assert type(make_plane(name, fake, 30_000, 15_000)) is design.plane and design.plane.design == name
        assert scenario.LABELS[name] == design.label and plot_renewal.COLORS[name] == design.colour
        assert plot_renewal.BENCH_COLORS[f"emqlab {name}"] == design.colour
        assert f"{name}: {design.description}" in design_help()
    with pytest.raises(BadParameter, match="allowed: per-job, sweep"):
        check_design("timers")


def test_cadences_are_named_once_and_the_help_lists_every_one():
    assert list(CADENCES) == ["none", "half", "third", "quarter"]
    assert CADENCE_HELP.startswith("none, half, third, quarter, or a fraction")
    assert cadence_help(renewing=True).startswith("half, third, quarter, or a fraction")
    for name, c in CADENCES.items():
        assert parse_cadence(name).label == c.label and parse_cadence(name).colour == c.colour
    assert [parse_cadence(x).label for x in ("none", "0.5", "1/3", "0.25", "0.3")] == [
        "no renewal", "renew at TTL/2", "renew at TTL/3", "renew at TTL/4", "renew every 0.3 × TTL"]


# -- the figures ---------------------------------------------------------------------------------
def _gids(fig) -> list[str]:
    return [a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()]


def test_figure_two_draws_each_run_with_its_words(fake):
    from emqlab.plot.renewal import draw_renewal_cost

    modes = {d: renewal_cost(jobs=6, design=d, backend=fake) for d in ("per-job", "sweep")}
    fw = figure_words(modes)
    drawing = draw_renewal_cost(modes, fw)
    assert isinstance(drawing, Drawing) and drawing.modes == ["per-job", "sweep"]
    assert not [name for name in vars(drawing.figure) if name.startswith("emqlab_")]
    titles = [(ax.get_title(loc="left"), ax.get_title(loc="right")) for ax in drawing.figure.axes]
    assert titles == [(fw.modes[n].label, fw.modes[n].verdict) for n in ("per-job", "sweep")]
    gids = _gids(drawing.figure)
    assert gids.count("lane:per-job") == 1 and gids.count("lane:sweep") == 1
    # one mark per recorded round trip: 6 per tick on the per-job lane, 1 on the sweep lane
    marks = {name: [line for ax in drawing.figure.axes for line in ax.get_lines()
                    if line.get_gid() == f"mode:{name}" and line.get_marker() == "|"] for name in ("per-job", "sweep")}
    assert (len(marks["per-job"]), len(marks["sweep"])) == (24, 4)
    assert drawing.readout_text == fw.prompt
    assert drawing.light("sweep").readout_text == modes["sweep"].summary and drawing.is_dimmed("per-job")
    drawing.figure.canvas.draw()  # it renders


def test_benchmark_figures_draw_from_rows():
    from emqlab.plot.renewal import draw_capacity, draw_scaling

    rows = [{"design": d, "k": k, "rt_per_tick": (k if d.endswith("per-job") else 1), "wall_ms_per_tick": 0.1 * k,
             "all_held": True, "broke": "a tick took too long" if k == 1000 and d.endswith("per-job") else None}
            for d in ("emqlab per-job", "emqlab sweep") for k in (1, 10, 1000)]
    sw = scaling_words(rows, "measured here")
    drawing = draw_scaling(rows, sw)
    assert drawing.words is sw and drawing.readout is None
    assert all(ax.get_xscale() == "log" and ax.get_yscale() == "log" for ax in drawing.figure.axes)
    hollow = [line for ax in drawing.figure.axes for line in ax.get_lines() if line.get_markerfacecolor() == "white"]
    assert len(hollow) == 2  # the broken per-job point, on both panels
    caps = [{"design": "emqlab sweep", "points": {1000: 0.01, 2000: 16.0}, "capacity_k": 1000, "first_over": 2000}]
    drawing = draw_capacity(caps, capacity_words(caps, 15.0), cadence_s=15.0)
    drawing.figure.canvas.draw()
    ax = drawing.figure.axes[0]
    assert ax.get_xscale() == "log" and [line.get_ydata()[0] for line in ax.get_lines()][-1] == 15.0
