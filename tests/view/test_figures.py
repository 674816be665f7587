"""`emqlab figures`: every course figure, run for real, drawn at slide size, with its caption file."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from emqlab.cli import command as cli
from emqlab.core.errors import BadParameter
from emqlab.view import figures
from emqlab.view.export import course_figures, export_all, export_figure
from emqlab.plot import style

RUN_SECONDS = 50  # about how long this file runs on a quiet 2-core machine: the suite starts the longest first

EXPECTED = [
    "heartbeat", "heartbeat-no-renewal", "heartbeat-renew-half",
    "renewal-cost-k6", "renewal-cost-k6-per-job", "renewal-cost-k6-sweep",
    "renewal-scaling", "renewal-capacity", "reaper", "fencing",
    "stuck-job", "stuck-job-session-limit", "slow-link", "slow-link-boundary",
    "failover", "failover-no-guard", "failover-fence-wait",
    "tools-celery", "tools-bullmq", "tools-rq", "tools-redis-lock",
    "tools-python-redis-lock",  # the tests run with the `tools` extra installed (./run installs it)
]
# the failover runs on two real servers it starts itself, whatever the store: its exports are live; so are
# the libraries' runs (each on a server of its own)
FAILOVER = [name for name in EXPECTED if name.startswith("failover")]
IN_PROCESS = [name for name in EXPECTED if not name.startswith(("failover", "tools-"))]


@pytest.fixture(scope="module")
def svg_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("figures-out")
    return out, export_all(out, fmt="svg", progress=False, only=IN_PROCESS)


def test_every_course_figure_is_written_with_its_caption(svg_export):
    out, written = svg_export
    assert [f.name for f in course_figures()] == EXPECTED
    assert sorted(p.name for p in written) == sorted([f"{n}.svg" for n in IN_PROCESS] +
                                                     [f"{n}.txt" for n in IN_PROCESS])
    for name in IN_PROCESS:
        root = ET.parse(out / f"{name}.svg").getroot()
        # 16 x 9 inches: a slide, in points
        assert (root.get("width"), root.get("height")) == ("1152pt", "648pt"), name
        assert len(root.findall(".//{http://www.w3.org/2000/svg}path")) > 20, f"{name} looks empty"
        caption = (out / f"{name}.txt").read_text(encoding="utf-8")
        assert caption.strip() and caption.endswith("\n"), name


def test_only_keeps_the_course_order_and_names_no_other_figure():
    only = ["tools-redis-lock", "reaper", "heartbeat"]
    assert [f.name for f in course_figures(only)] == ["heartbeat", "reaper", "tools-redis-lock"]
    assert course_figures([]) == []


def caption(svg_export, name):
    return (svg_export[0] / f"{name}.txt").read_text(encoding="utf-8")


def test_captions_say_what_each_figure_shows(svg_export):
    from emqlab.scenarios.heartbeat import heartbeat

    none = caption(svg_export, "heartbeat-no-renewal")
    # the readout of the lit mode, in the scenario's words: exactly the run's text
    assert f"\nreadout · {heartbeat(renew='none').verdict.text}\n" in none
    assert "lapsed at 30 s" in none and "finished twice" in none
    half = caption(svg_export, "heartbeat-renew-half")
    assert f"\nreadout · {heartbeat(renew='half').verdict.text}\n" in half
    assert "finished once" in half and "lapsed" not in half
    both = caption(svg_export, "heartbeat")
    assert "- no renewal → lease ends at 30 s and lapses · reclaimed · runs twice at once" in both
    assert "- renew at TTL/2 → pushed out every 15 s · held to its release at 75 s · finishes once" in both

    k6 = caption(svg_export, "renewal-cost-k6")
    assert "K = 6" in k6 and "6 extend round trips each tick" in k6 and "one bounded round trip each tick" in k6
    assert "K per-job timers → K per-job timers" not in k6  # a verdict that names itself is not prefixed twice
    sweep = caption(svg_export, "renewal-cost-k6-sweep")
    assert "\nreadout · one sweep:" in sweep and "K = 6" in sweep and "1 round trip per tick" in sweep

    scaling = caption(svg_export, "renewal-scaling")
    # drawn from the committed live benchmark (emqlab/data/renewal_cost.json), every K to 100,000
    assert "emqlab per-job, K = 1,000: 1,000 round trips per tick" in scaling
    assert "emqlab sweep, K = 100,000: 1 round trip per tick" in scaling
    assert "measured on live Valkey by benchmarks/renewal_cost.py" in scaling  # says where it was measured
    capacity = caption(svg_export, "renewal-capacity")
    assert "doubling, then bisection" in capacity and "emqlab sweep: keeps K = " in capacity
    assert "extrapolat" not in capacity

    assert "reaped at 32.5 s" in caption(svg_export, "reaper")
    fencing = caption(svg_export, "fencing")
    assert "late write lands" in fencing and "late write refused" in fencing

    stuck = caption(svg_export, "stuck-job-session-limit")
    assert "\nreadout · one session + 120 s limit:" in stuck and "pending at 122.5 s" in stuck
    link = caption(svg_export, "slow-link")
    assert "\nreadout · renew at TTL/2, 10 s link:" in link and "15 s after its lease had lapsed" in link
    assert "every run agrees with the rule" in caption(svg_export, "slow-link-boundary")


@pytest.mark.live
def test_the_failover_figures_come_from_real_servers(tmp_path):
    written = export_all(tmp_path, fmt="png", progress=False, only=FAILOVER)
    assert sorted(p.name for p in written) == sorted([f"{n}.png" for n in FAILOVER] + [f"{n}.txt" for n in FAILOVER])
    none = (tmp_path / "failover-no-guard.txt").read_text(encoding="utf-8")
    assert "\nreadout · no guard:" in none and "two holders at once" in none
    fenced = (tmp_path / "failover-fence-wait.txt").read_text(encoding="utf-8")
    assert "tokens rose across the failover, 34 then 35" in fenced
    # the storage refuses the holder's token only if the holder still writes after the contender first did;
    # a loaded machine can delay the promotion past the holder's last part (tests/scenarios/test_failover.py
    # asserts the refusal itself, run by run): here, the caption says which happened, and says it once
    at = fenced.index("readout · ")
    readout = fenced[at:fenced.index("\nstatic verdicts:", at)]  # the headline and its facts
    static = next(line for line in fenced.splitlines() if line.startswith("- fencing token confirmed by WAIT →"))
    refused = "storage refused the holder's token 34" in readout or "and refused it at" in readout
    assert refused == ("refused" in static)
    assert ("refused" in static) != ("storage takes both" in static)


def test_png_is_slide_resolution(tmp_path):
    from matplotlib.image import imread

    written = export_all(tmp_path, fmt="png", progress=False, only=["heartbeat-no-renewal"])
    assert [p.name for p in written] == ["heartbeat-no-renewal.png", "heartbeat-no-renewal.txt"]
    assert imread(written[0]).shape[:2] == (1080, 1920)


def test_the_same_run_gives_the_same_svg(tmp_path):
    a = export_all(tmp_path / "a", fmt="svg", progress=False, only=["heartbeat"])
    b = export_all(tmp_path / "b", fmt="svg", progress=False, only=["heartbeat"])
    assert a[0].read_bytes() == b[0].read_bytes()


def test_light_dims_every_other_mode(fake):
    from emqlab.view.figures import heartbeat_figure, heartbeat_modes

    drawing = heartbeat_figure(heartbeat_modes(fake))
    fig = drawing.figure

    def alphas():
        seen = {"none": [], "half": []}
        for artist in fig.findobj():
            kind, _, name = (artist.get_gid() or "").partition(":")
            if kind == "mode":
                seen[name].append(1.0 if artist.get_alpha() is None else artist.get_alpha())
        return seen

    before = alphas()
    drawing.light("none")
    after = alphas()
    assert before["half"] and after["half"] == pytest.approx([a * style.DIM_ALPHA for a in before["half"]])
    assert before["none"] and after["none"] == before["none"]
    assert drawing.readout_text == drawing.words.modes["none"].text
    drawing.light("half")  # lighting is not cumulative: the other mode comes back to full strength
    assert alphas()["none"] == pytest.approx([a * style.DIM_ALPHA for a in before["none"]])
    assert alphas()["half"] == before["half"]
    drawing.light(None)
    assert alphas() == before and drawing.readout_text == drawing.words.prompt
    with pytest.raises(KeyError, match="no mode 'sometimes'"):
        drawing.light("sometimes")


@pytest.mark.slow
def test_figure_one_on_either_store(backend, tmp_path):
    written = export_all(tmp_path, fmt="png", backend=backend, progress=False,
                         only=["heartbeat-no-renewal", "heartbeat-renew-half"])
    assert len(written) == 4
    none = (tmp_path / "heartbeat-no-renewal.txt").read_text(encoding="utf-8")
    half = (tmp_path / "heartbeat-renew-half.txt").read_text(encoding="utf-8")
    # exact on the virtual clock; live, the lapse is the server's and never before the 30 s lease (its stamp
    # is a PTTL read from the server, placed at its reply's midpoint: a tenth early at most), and how late a wake-up on a
    # loaded machine makes it is more than this run at LIVE_SCALE can bound: its order only
    lapsed = float(re.search(r"lapsed at (\d+(?:\.\d+)?) s", none).group(1))
    assert (lapsed >= 29.9) if backend.live else (lapsed == 30)
    assert "twice" in none
    assert "finished once" in half and "lapsed" not in half


def test_out_must_be_a_folder(tmp_path, capsys):
    a_file = tmp_path / "slides.txt"
    a_file.write_text("")
    assert cli.main(["figures", "--out", str(a_file)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("emqlab: error: ") and "--out" in err and "is a file" in err and err.count("\n") == 1
    with pytest.raises(BadParameter, match="format must be one of png, svg"):
        export_all(tmp_path, fmt="gif")


def test_an_export_with_a_mark_the_legend_leaves_out_is_refused(fake, tmp_path):
    from emqlab.view.export import FigureProblem

    drawing = figures.heartbeat_figure(figures.heartbeat_modes(fake))
    export_figure(drawing, tmp_path / "fine", "png")  # every course figure passes (tests/cli/test_course.py exports them all)
    # a mark of the table, drawn after the legend was built: the grammar holds it, the legend leaves it out
    style.marker(drawing.figure.axes[0], "crash", [10], [0.5])
    crash = style.MARKS["crash"].meaning
    with pytest.raises(FigureProblem, match=rf"^broken\.png was drawn with a fault a reader would see: "
                                            rf"drawn but not in the legend: {re.escape(crash)}$"):
        export_figure(drawing, tmp_path / "broken", "png")
    drawing.figure.axes[0].plot([12], [0.5], marker="*", linestyle="none", label="a star")  # no mark of the table
    with pytest.raises(FigureProblem, match=r"a star: a mark the table \(emqlab\.core\.marks\) does not hold"):
        export_figure(drawing, tmp_path / "ghost", "png")
