"""Figure 2 and the benchmark's figures drawn from real runs and rows with their scenario's words,
and the registries every one of them reads: each renewal design and cadence named once."""

from __future__ import annotations


import pytest

from emqlab.core.errors import BadParameter
from emqlab.core.marks import MARKS, SERIES
from emqlab.plot import Drawing, style
from emqlab.lease.cadence import CADENCE_HELP, CADENCES, cadence_help, parse_cadence
from emqlab.lease.designs import DESIGNS, check_design, design_help, design_names, make_plane
from emqlab.scenarios.renewal_cost import capacity_words, figure_words, renewal_cost, scaling_words


# -- the registries: each design and cadence named once ------------------------------------------
def test_designs_are_named_once_and_read_everywhere(fake):
    from emqlab.plot import renewal as plot_renewal

    assert design_names(renewing=True) == ["per-job", "sweep", "session"]
    looks = {name: style.series(f"emqlab {name}") for name in design_names(renewing=True)}
    assert all(f"emqlab {name}" in SERIES for name in looks)  # each a line of the mark table's own
    assert len(set(looks.values())) == len(looks)
    for name in design_names(renewing=True):
        design = DESIGNS[name]
        plane = make_plane(name, fake, 30_000, 15_000)
        assert type(plane) is design.plane and plane.design == design.plane.design == name
        assert plot_renewal._bench_style(f"emqlab {name}") == (*looks[name], "-")
        assert plot_renewal._bench_style(f"emqlab {name}, big pool") == (*looks[name], "--")  # a variant: dashed
        assert f"{name}: {design.description}" in design_help()
    with pytest.raises(BadParameter, match="allowed: per-job, sweep, session"):
        check_design("timers")


def test_cadences_are_named_once_and_the_help_lists_every_one():
    assert list(CADENCES) == ["none", "half", "third", "quarter"]
    assert CADENCE_HELP.startswith("none, half, third, quarter, or a fraction")
    assert cadence_help(renewing=True).startswith("half, third, quarter, or a fraction")
    for name, c in CADENCES.items():
        assert parse_cadence(name).label == c.label and parse_cadence(name).named is c
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
    assert titles == [(fw.modes[n].label, fw.modes[n].static) for n in ("per-job", "sweep")]
    gids = _gids(drawing.figure)
    assert gids.count("lane:per-job") == 1 and gids.count("lane:sweep") == 1
    # one mark per recorded round trip: 6 per tick on the per-job lane, 1 on the sweep lane
    marks = {name: [line for ax in drawing.figure.axes for line in ax.get_lines()
                    if line.get_gid() == f"mode:{name}" and line.get_marker() == "|"] for name in ("per-job", "sweep")}
    assert (len(marks["per-job"]), len(marks["sweep"])) == (24, 4)
    # lesson 01's convention: each row holds its lease until the worker let it go (none lost or taken here)
    for name, run in modes.items():
        ends = {p.get_x() + p.get_width() for ax in drawing.figure.axes for p in ax.patches
                if p.get_gid() == f"mode:{name}" and p.get_label() == MARKS["lease"].meaning}
        [release] = run.of("let_go", "worker")
        assert ends == {release.t} and release.data["leases"] == 6, name
    assert drawing.readout_text == fw.prompt
    assert drawing.light("sweep").readout_text == modes["sweep"].text and drawing.is_dimmed("per-job")
    drawing.figure.canvas.draw()  # it renders


def test_figure_two_draws_the_session_lane_and_its_loss(fake):
    from emqlab.plot.renewal import draw_renewal_cost

    modes = {d: renewal_cost(jobs=6, design=d, ticks=4, steal="20:3", backend=fake) for d in design_names(renewing=True)}
    fw = figure_words(modes)
    drawing = draw_renewal_cost(modes, fw)
    assert drawing.modes == ["per-job", "sweep", "session"]
    session_ax = drawing.figure.axes[2]
    assert [t.get_text() for t in session_ax.get_yticklabels()] == ["session"]
    marks = [line for line in session_ax.get_lines() if line.get_marker() == "|"]
    assert len(marks) == 2  # the renewals before the session was found gone; none after
    notes = [t.get_text() for t in session_ax.texts]
    assert "session taken" in notes and "6 jobs lost, holders stop" in notes  # one mark for the six, not six
    assert [line for line in session_ax.get_lines() if line.get_marker() == "X"][0].get_xdata()[0] == 30.0
    band = [p for p in session_ax.patches if p.get_label() == MARKS["lease"].meaning][0]
    assert band.get_x() + band.get_width() == 20.0  # the lease band ends when the session was taken
    assert drawing.light("session").readout_text == modes["session"].text
    drawing.figure.canvas.draw()


def test_benchmark_figures_draw_from_rows():
    from emqlab.plot.renewal import draw_capacity, draw_scaling

    rows = [{"design": d, "k": k, "rt_per_tick": (k if d.endswith("per-job") else 1), "wall_ms_per_tick": 0.1 * k,
             "all_held": True, "broke": "a tick took too long" if k == 1000 and d.endswith("per-job") else None}
            for d in ("emqlab per-job", "emqlab sweep") for k in (1, 10, 1000)]
    sw = scaling_words(rows, "measured here")
    drawing = draw_scaling(rows, sw)
    assert drawing.words is sw and drawing.readout_text == sw.prompt  # where it was measured, under the figure
    assert sw.prompt.startswith("Measured here.") and "hollow mark" in sw.prompt
    assert all(ax.get_xscale() == "log" and ax.get_yscale() == "log" for ax in drawing.figure.axes)
    hollow = [line for ax in drawing.figure.axes for line in ax.get_lines() if line.get_label() == MARKS["broke"].meaning]
    assert len(hollow) == 2  # the broken per-job point, on both panels
    joins = [line for ax in drawing.figure.axes for line in ax.get_lines() if line.get_label() == "_emqlab per-job, broke"]
    assert len(joins) == 2 and joins[0].get_color() == style.series("emqlab per-job")[0]
    assert drawing.figure.axes[1].get_title() == "wall time per tick"  # no server counts in these rows
    # measured on a live server: the second panel is the server's time, every design against K
    live = [{**r, "server_us_per_tick": 50.0 * r["k"]} for r in rows] + [
        {"design": "emqlab session", "k": k, "rt_per_tick": 1, "wall_ms_per_tick": 0.5, "server_us_per_tick": 60.0,
         "all_held": True} for k in (1, 10, 1000)]
    drawing = draw_scaling(live, scaling_words(live, "measured here"))
    ax_rt, ax_us = drawing.figure.axes
    assert ax_us.get_title() == "server time per tick" and "µs" in ax_us.get_ylabel()
    session = [line for line in ax_us.get_lines() if line.get_gid() == "mode:emqlab session" and len(line.get_xdata()) > 1]
    assert list(session[0].get_ydata()) == [60.0] * 3 and session[0].get_color() == style.series("emqlab session")[0]
    assert "60 µs of server time and 0.5 ms per tick" in scaling_words(live, "here").notes[-1]
    caps = [{"design": "emqlab sweep", "points": {1000: 0.01, 2000: 16.0}, "capacity_k": 1000, "first_over": 2000}]
    drawing = draw_capacity(caps, capacity_words(caps, 15.0), cadence_s=15.0)
    drawing.figure.canvas.draw()
    ax = drawing.figure.axes[0]
    assert ax.get_xscale() == "log" and [line.get_ydata()[0] for line in ax.get_lines()][-1] == 15.0
    # the session design's limit is memory: its flat ticks, and where the server's memory ran out
    caps.append({"design": "emqlab session", "limit": "memory", "maxmemory_mb": 64, "bytes_per_job": 72.4,
                 "jobs_per_gb": 14_830_000, "points": {100_000: 0.0004, 800_000: 0.0005}, "capacity_k": 800_000,
                 "first_over": 980_000})
    cw = capacity_words(caps, 15.0)
    assert "the server's memory is the limit (64 MB maxmemory in the search)" in cw.caption
    assert cw.notes[-1] == ("- emqlab session: keeps K = 800,000 alive in 64 MB, 72 bytes per job (≈ 14,830,000 jobs "
                            "per GB); K = 980,000 was refused for memory (OOM)")
    drawing = draw_capacity(caps, cw, cadence_s=15.0)
    drawing.figure.canvas.draw()
    assert "memory full (64 MB)\nat K ≈ 800,000" in [t.get_text() for t in drawing.figure.axes[0].texts]
