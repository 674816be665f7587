"""The generic explorer, driven from Python as a cell drives it: pinning a mode, sliders that re-run
the scenario, the figure it sends to the browser (whose lighting is tested in Chromium, in
tests/browser/), predictions asked first. Also the lab helpers."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from matplotlib.text import Text

from emqlab.course import lab
from emqlab.core.errors import BadParameter
from emqlab.view.figures import heartbeat_figure
from emqlab.view.interactive import FIGURE_MIME
from emqlab.scenarios.heartbeat import heartbeat
from emqlab.view.widgets import LitFigure, ModeExplorer, Predict


def both(backend=None, lease=30):
    return {"none": heartbeat(lease=lease, renew="none", backend=backend),
            "half": heartbeat(lease=lease, renew="half", backend=backend)}


@pytest.fixture
def explorer(fake):
    x = ModeExplorer(heartbeat_figure, both(fake), stepper=True)
    yield x
    assert x.failures == []  # no callback may have failed quietly
    x.close()


def sent(x) -> dict:
    """What the browser is given: the figure's modes and words, read back from the fragment."""
    fragment = x.figure.html
    return {"name": re.search(r'data-figure="([^"]*)"', fragment).group(1),
            "lanes": re.findall(r'<g data-lane="([^"]*)"', fragment),
            "modes": json.loads(re.search(r"<script type=\"application/json\" data-modes>(.*?)</script>",
                                          fragment).group(1))["modes"],
            "readout": re.search(r"<div data-readout[^>]*>(.*?)</div>", fragment).group(1)}


def test_starts_with_nothing_pinned_so_hover_works_at_once(explorer):
    shown = sent(explorer)
    assert shown["lanes"] == ["none", "half"] and list(shown["modes"]) == ["none", "half"]
    assert explorer.lit is None and explorer.figure.pinned is None
    assert explorer.readout_text == explorer.drawing.words.prompt and "Point at" in shown["readout"]
    assert not explorer.is_dimmed("half") and not explorer.is_dimmed("none")
    for key, words in explorer.modes.items():  # the browser says the scenario's own words, nothing else
        assert shown["modes"][key]["label"] == words.label and words.html() in shown["modes"][key]["html"]
    assert "4 token-checked extends held the 30 s lease" in shown["modes"]["half"]["html"]


def test_pinning_from_a_cell_lights_the_mode_here_and_in_the_browser(explorer):
    explorer.pin("half")
    assert explorer.lit == "half" and explorer.figure.pinned == "half"
    assert explorer.is_dimmed("none") and not explorer.is_dimmed("half")
    assert explorer.readout_text == explorer.modes["half"].text
    explorer.pin(None)
    assert explorer.lit is None and explorer.figure.pinned is None and not explorer.is_dimmed("none")
    with pytest.raises(BadParameter, match="no mode 'sweep'; it has: none, half"):
        explorer.pin("sweep")


def test_the_browser_lights_without_asking_the_kernel():
    """The figure's only synced state is what the kernel sends (the figure and a pin); its front end,
    the one page script, never writes back: a hover or a pin in the browser sends no message."""
    import anywidget

    own = set(LitFigure.class_trait_names(sync=True)) - set(anywidget.AnyWidget.class_trait_names(sync=True))
    assert own == {"html", "pinned"}
    script = (Path(__file__).resolve().parents[2] / "emqlab/view/static/light.js").read_text()
    assert not re.search(r"model\.(set|save_changes|send)\b", script)


def test_the_stepper_walks_the_lit_timeline_in_the_browser(explorer):
    steps = {key: [text for _, text in m["steps"]] for key, m in sent(explorer)["modes"].items()}
    assert steps["none"] == [f"t = {e.t:g} s · " + text.split(" · ", 1)[1] for e, text in
                             zip(explorer.step_events("none"), steps["none"])]
    lapse = next(i for i, e in enumerate(explorer.step_events("none")) if e.kind == "lapse")
    assert steps["none"][lapse].startswith("t = 30 s · holder · lapse")
    assert steps["none"][lapse + 1].startswith("t = 30.5 s · contender · acquire")
    assert [e.kind for e in explorer.step_events("half")].count("renew") == 4


def test_sliders_rerun_the_scenario_and_send_a_new_figure(fake):
    x = ModeExplorer(heartbeat_figure, run=lambda lease: both(fake, lease), sliders={"lease": (10, 90, 5, 30)})
    try:
        assert "lapsed at 30 s" in x.modes["none"].text
        x.pin("none")
        first = x.figure.html
        x.sliders["lease"].value = 60
        assert "lapsed at 60 s" in x.modes["none"].text and "lapsed at 60 s" in sent(x)["modes"]["none"]["html"]
        assert x.figure.html != first and x.figure.pinned == "none"  # the pin outlives the new figure
        x.sliders["lease"].value = 90  # longer than the job: nothing lapses, even without renewal
        assert "finished once" in x.modes["none"].text
        assert x.failures == []
    finally:
        x.close()


def test_a_failing_callback_is_shown_not_swallowed(fake):
    def run(lease):
        if lease > 50:
            raise RuntimeError("the store went away")
        return both(fake, lease)

    x = ModeExplorer(heartbeat_figure, run=run, sliders={"lease": (10, 90, 5, 30)})
    try:
        x.sliders["lease"].value = 60
        assert len(x.failures) == 1 and "the store went away" in x.failures[0]
        assert any("the store went away" in o.get("text", "") for o in x.errors.outputs)
    finally:
        x.close()


def test_needs_something_to_draw():
    with pytest.raises(BadParameter, match="needs the data"):
        ModeExplorer(heartbeat_figure)


def test_a_saved_explorer_keeps_a_picture_and_the_interactive_figure(explorer):
    bundle = explorer._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "application/vnd.jupyter.widget-view+json" in data  # the live widget
    assert data["image/png"] and data[FIGURE_MIME] == explorer.figure.html  # a reader with no kernel; the site
    assert data["text/plain"].startswith(explorer.drawing.words.caption)
    explorer.pin("half")  # the picture shows what is pinned, its readout under it
    assert explorer.png() != data["image/png"]


@pytest.mark.live
def test_live_runs_drive_the_same_explorer(slow_live, fake):
    # at SLOW_SCALE: "finished once" needs each renewal within the 15 s its lease has left, which at
    # LIVE_SCALE is less than a loaded machine's slack
    x = ModeExplorer(heartbeat_figure, both(slow_live))
    try:
        x.pin("half")
        assert x.lit == "half" and "finished once" in x.readout_text
        words = ModeExplorer(heartbeat_figure, both(fake)).report()
        assert strip_times(x.report()) == strip_times(words)  # only the times may move on a real clock
    finally:
        x.close()


def strip_times(text):
    """The words with every time made T; on a real clock the renewals' spacing jitters too, so "every T s, twice
    after T s" (the gaps that differ from the usual one) reads as "every T s"."""
    text = re.sub(r"\b\d+(?:\.\d+)? s\b", "T s", text)
    return re.sub(r"every T s(?:, (?:once|twice|\w+ times) after T s)+", "every T s", text)


# -- lab helpers -----------------------------------------------------------------------------
@pytest.mark.live
def test_lab_backend_is_shared_and_switchable(valkey_url):
    try:
        first = lab.backend()
        assert first is lab.backend() and first.name == "fake" and "virtual clock" in lab.describe()
        first.client.set(first.key("dead-run", "x"), "1")  # a run that died without its lease: reset takes it
        held = lab.prefix("mine")
        first.client.set(held + "y", "1")  # a prefix this notebook holds: reset leaves it
        assert lab.reset() == 1 and first.client.exists(held + "y")
        assert lab.done("mine") == 1 and not first.client.exists(held + "y")
        live = lab.use(valkey_url)
        assert lab.backend() is live and live.live and "real clock" in lab.describe()
        with pytest.raises(Exception, match="unknown backend"):
            lab.use("nonsense")
        assert lab.backend() is live  # a bad switch leaves the working one in place
    finally:
        lab.close()


def test_lab_command_opens_the_first_lesson():
    argv = lab.lab_command(["--no-browser"])
    assert argv[1:3] == ["-m", "jupyterlab"]
    assert f"--ServerApp.root_dir={lab.NOTEBOOKS}" in argv
    assert "--LabApp.default_url=/lab/tree/00-start-here.ipynb" in argv
    assert argv[-1] == "--no-browser" or argv[-2:] == ["--no-browser", "--allow-root"]
    assert lab.lab_command(["--", "--no-browser"]).count("--no-browser") == 1
    # as root (containers), Jupyter must be told; otherwise nothing is added
    assert ("--allow-root" in argv) == (os.geteuid() == 0)
    # the course's own lab settings come first: they turn off the news prompt
    import json
    from pathlib import Path

    first = lab.lab_env({})["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0]
    page = json.loads((Path(first) / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"]["@jupyterlab/apputils-extension:announcements"] is True


# -- every figure with modes, through the same explorer ----------------------------------------------
def _renewal(be):
    from emqlab.view.figures import renewal_figure
    from emqlab.scenarios.renewal_cost import renewal_cost
    return renewal_figure, {d: renewal_cost(jobs=6, design=d, ticks=2, backend=be) for d in ("per-job", "sweep")}


def _queue_heartbeat(be):
    from emqlab.view.figures import queue_heartbeat_figure
    from emqlab.scenarios.queue_heartbeat import queue_heartbeat
    return queue_heartbeat_figure, {r: queue_heartbeat(renew=r, backend=be) for r in ("none", "half")}


def _fencing(be):
    from emqlab.view.figures import fencing_figure
    from emqlab.scenarios.fencing import fencing
    return fencing_figure, {m: fencing(fencing=m, backend=be) for m in ("off", "on")}


def _heartbeat(be):
    return heartbeat_figure, both(be)


@pytest.mark.parametrize("figure", [_heartbeat, _renewal, _queue_heartbeat, _fencing],
                         ids=["heartbeat", "renewal-cost", "queue-heartbeat", "fencing"])
def test_every_mode_figure_sends_a_lane_and_words_per_mode(fake, figure):
    draw, data = figure(fake)
    x = ModeExplorer(draw, data, stepper=True)
    try:
        names = list(x.modes)
        shown = sent(x)
        assert len(names) == 2 and set(x.drawing.lanes) == set(names) == set(shown["lanes"])
        assert sorted(set(re.findall(r'data-mode="([^"]*)"', x.figure.html))) == sorted(names)
        first, second = names
        assert x.modes[first].text != x.modes[second].text
        assert shown["modes"][second]["html"] != shown["modes"][first]["html"]
        x.pin(second)
        assert x.readout_text == x.modes[second].text and x.is_dimmed(first) and x.figure.pinned == second
        assert all(m["steps"] for m in shown["modes"].values())  # each lit run has events to walk
        assert x.failures == []
    finally:
        x.close()


def figure_texts(x) -> str:
    return " ".join(" ".join(t.get_text().split()) for t in x.fig.findobj(Text))


@pytest.mark.parametrize("figure", [_heartbeat, _renewal, _queue_heartbeat, _fencing],
                         ids=["heartbeat", "renewal-cost", "queue-heartbeat", "fencing"])
def test_a_figure_asked_first_keeps_every_verdict_back_until_the_answer(fake, figure):
    draw, data = figure(fake)
    x = ModeExplorer(draw, data)
    run = next(iter(data.values()))
    question = Predict("which?", {"the first": lambda v: True, "the second": lambda v: False}, run, explorer=x)
    try:
        verdicts = [" ".join(m.static.split()) for m in x.modes.values()]
        assert not x.revealed and not any(v in figure_texts(x) for v in verdicts)  # the question holds it back
        assert all(m.label in figure_texts(x) for m in x.modes.values())  # the panels still say what they are
        paper = question._repr_mimebundle_()
        assert "the first" in paper["text/html"] and "image/png" not in paper  # the question, on paper, no figure
        answer = question.answer({"the first": "it is, as {v.headline!r} says", "the second": lambda v: "it is not"})
        assert answer.figure is x and x.revealed and all(v in figure_texts(x) for v in verdicts)
        words = answer.words()["text/plain"].splitlines()
        assert words[0] == f"The run: {run.verdict.headline}"
        assert words[1] == f"✓ right: the first. it is, as {run.verdict.headline!r} says"
        assert words[2] == "✗ wrong: the second. it is not"
        assert x._repr_mimebundle_()["text/plain"].startswith(x.drawing.words.caption)
        assert x._repr_mimebundle_()["image/png"]  # the figure, once, after the answer
    finally:
        x.close()


def test_committing_in_the_lab_shows_the_figure_under_the_question_and_the_answer_only_its_words(fake):
    draw, data = _heartbeat(fake)
    x = ModeExplorer(draw, data)
    run = next(iter(data.values()))
    question = Predict("which?", {"a": lambda v: False, "b": lambda v: True}, run, explorer=x)
    try:
        assert question.shown.children == ()
        feedback = question.choose("a")
        assert feedback.startswith("You predicted: a. The run says otherwise. The next cell says why")
        assert question.shown.children == (x.widget,) and x.revealed
        answer = question.answer({"a": "no", "b": "yes"})
        assert answer.figure is None  # the figure already stands under the question
        words = answer.words()["text/plain"].splitlines()
        assert words[1:] == ["✓ right: b. yes", "✗ wrong: a. no", "The figure is under your prediction, above."]
        with pytest.raises(BadParameter, match="give a reason for every option: none for 'b'"):
            question.answer({"a": "no"})
        with pytest.raises(BadParameter, match="'c' is not one of the options"):
            question.answer({"a": "no", "b": "yes", "c": "?"})
        with pytest.raises(BadParameter, match="give a function of the run's verdict"):
            Predict("which?", {"a": (lambda v: True, "why"), "b": lambda v: False}, run)
    finally:
        x.close()


# -- the notebooks' shape --------------------------------------------------------------------------
NOTEBOOKS = sorted(lab.NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))


def test_all_nineteen_lessons_are_there_the_core_path_ending_with_its_recap():
    assert [p.name[:2] for p in NOTEBOOKS] == [f"{i:02d}" for i in range(19)]
    assert NOTEBOOKS[7].name == "07-recap-and-exercises.ipynb"


def _counted(source: str) -> list[str]:
    """A cell's non-blank lines, less a question's options and an answer's reasons: the lines between the
    `{` that opens them (on the `Predict(` or `.answer(` line, or `answers = {`) and the `}` that closes them."""
    lines = [ln for ln in source.splitlines() if ln.strip()]
    counted, inside = [], False
    for ln in lines:
        if inside and ln.lstrip().startswith("}"):
            inside = False
        if not inside:
            counted.append(ln)
        if ln.rstrip().endswith("{") and ("Predict(" in ln or ".answer(" in ln or ln.startswith("answers = {")):
            inside = True
    return counted


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_lesson_shape(path):
    """Outcomes first, "What to remember" last; short cells (a question's options aside)."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    prose = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert "**You will be able to**" in prose[0] and "## What to remember" in prose[-1]
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        lines = _counted(cell.source)
        assert 1 <= len(lines) <= 5, f"{path.name}: a cell of {len(lines)} lines:\n{cell.source}"
        assert "import *" not in cell.source


def test_importing_the_widgets_changes_no_global_matplotlib_state():
    import subprocess
    import sys

    code = ("import matplotlib; before = dict(matplotlib.rcParams); import emqlab.view.widgets, emqlab.plot.heartbeat; "
            "print([k for k in before if before[k] != matplotlib.rcParams[k]])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_lab_helpers_read_runs_in_words(fake, tmp_path):
    from emqlab.scenarios.heartbeat import heartbeat as run_heartbeat

    lapsed = run_heartbeat(renew="none", backend=fake)
    assert lab.facts(lapsed) == "lapsed: 30 s · runs: 2 · ran twice at once: yes · finished once: no"
    assert lab.facts(lapsed, "reclaimed_at", "renew_lost_at") == "reclaimed: 30.5 s · extend replied 0: never"
    assert lab.facts(lapsed, "holder_stopped_at") == "holder stopped: never"  # any other field: its name in words
    lines = lab.events(lapsed, actor="contender").splitlines()
    assert "acquire_failed" not in "".join(lines)
    assert [ln.split()[-1] for ln in lines] == ["acquire", "reclaim", "work_start", "lapse", "work_done",
                                                "release_refused"]
    assert lab.benchmark_rows() == lab.load_benchmark()["rows"]


def test_lab_boundary_agrees_with_the_rule_and_wait_is_exact(fake):
    try:
        lab.use("fake")
        result = lab.cadence_boundary(cadences=[0.3, 0.8], pauses=[5.5, 12.5, 27.5, 28.5])
        held = {(f, p): h for f, p, h in result["points"]}
        # pause at 20: every 9 s the last extend was at 18 (deadline 48); every 24 s, at 0 (deadline 30)
        assert held == {(0.3, 5.5): True, (0.3, 12.5): True, (0.3, 27.5): True, (0.3, 28.5): False,
                        (0.8, 5.5): True, (0.8, 12.5): False, (0.8, 27.5): False, (0.8, 28.5): False}
        assert result["agrees"] and result["runs"] == 8
        clock = lab.backend().clock
        before = clock.now_ms
        lab.wait(31)
        assert clock.now_ms == before + 31_000
    finally:
        lab.close()
