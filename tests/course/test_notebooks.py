"""The course as a reader without a kernel meets it: the saved lessons carry their outputs, every
figure as an image, and those outputs came from today's sources (`./run notebooks` saves them)."""

from __future__ import annotations

import html
import json
import re
import sys

import nbformat
import pytest

from emqlab.course import exercises
from emqlab.course import notebooks as course
from realtime import timeout_s

LESSONS = course.lessons()
WIDGET = "application/vnd.jupyter.widget-view+json"


def is_figure(out) -> bool:
    """A live explorer or a static image; a prediction widget is words, not a figure."""
    data = out.get("data", {})
    prediction = "".join(data.get("text/plain", "")).startswith("Predict first.")
    return "image/png" in data or (WIDGET in data and not prediction)


def figure_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and any(is_figure(o) for o in c.outputs)]


def test_saved_outputs_come_from_todays_sources():
    assert course.stale() == [], "saved outputs are stale: run `./run notebooks` and commit the lessons"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_every_figure_is_saved_as_an_image(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            assert out.get("output_type") != "error", f"{path.name}: a saved cell raised:\n{cell.source}"
            if is_figure(out):
                assert out["data"].get("image/png"), f"{path.name}: a live figure without its image:\n{cell.source}"


@pytest.mark.slow
@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_nbconvert_html_shows_every_figure(path):
    from nbconvert import HTMLExporter

    nb = nbformat.read(path, as_version=4)
    body, _ = HTMLExporter().from_notebook_node(nb)
    images = len(re.findall(r"<img\b[^>]*src=\"data:image/png;base64,", body))
    assert images >= len(figure_cells(nb)), f"{path.name}: {images} images for {len(figure_cells(nb))} figures"


WITH_EXERCISES = [p for p in LESSONS if any("answer" in c.metadata.get("tags", [])
                                             for c in nbformat.read(p, as_version=4).cells)]


def test_every_exercise_is_in_a_lesson_once():
    names = [re.fullmatch(r'exercises\.answer\("([\w-]+)", be\)', c.source).group(1)
             for p in WITH_EXERCISES for c in nbformat.read(p, as_version=4).cells
             if "answer" in c.metadata.get("tags", [])]
    assert sorted(names) == sorted(exercises.EXERCISES)


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name[:2])
def test_nbconvert_html_folds_each_exercise_answer_away(path):
    """nbconvert ignores the lab's `source_hidden`/`outputs_hidden`: an answer's own HTML form folds it, so a
    reader of the saved lesson as HTML meets each answer closed, under its exercise, and opens it on purpose."""
    from nbconvert import HTMLExporter

    nb = nbformat.read(path, as_version=4)
    answers = [c for c in nb.cells if "answer" in c.metadata.get("tags", [])]
    body, _ = HTMLExporter().from_notebook_node(nb)
    folded = re.findall(r"<details><summary>Show a right answer</summary><pre>(.*?)</pre></details>", body, re.S)
    assert answers and len(folded) == len(answers)
    for cell, text in zip(answers, folded):
        plain = "".join(o["data"]["text/plain"] for o in cell.outputs if "text/plain" in o.get("data", {}))
        assert html.unescape(text) == plain  # the whole answer, and nothing of it outside the fold
        assert html.escape(plain.splitlines()[0]) not in body.replace(text, "")


ASKS_A_KERNEL = re.compile(r"\b(point at(?! a time)|click|hover|run (?:the|this) cell again)\b", re.I)


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_a_saved_lesson_asks_to_point_click_or_rerun_only_where_it_says_for_whom(path):
    """A reader of a still copy (GitHub, nbconvert) cannot point, click or run: a paragraph that asks it says it
    is for the lab (or the course site), where that works."""
    nb = nbformat.read(path, as_version=4)
    paragraphs = [p for c in nb.cells if c.cell_type == "markdown" for p in re.split(r"\n\s*\n", c.source)]
    asking = [p for p in paragraphs if ASKS_A_KERNEL.search(p) and not p.lstrip().startswith("|")]
    assert [p for p in asking if not re.search(r"\bin the lab\b", p, re.I)] == [], path.name


RUN_PREFIX = re.compile(r"-[0-9a-f]{16}:")  # a run's random prefix: `emqlab:lesson05-0069ccda7e304c07:`
# a raw dict, list or tuple; None, True, False; an object's default repr (`<… object>`, `<Joined …>`); a quoted str
PYTHON_REPR = re.compile(r"\{'|\{\"|\['|\('|\bNone\b|\bTrue\b|\bFalse\b|<[\w.]+ object\b|^<[A-Z]\w* [^>]*>$"
                         r"|^'[^']*'$|^\"[^\"]*\"$")


def saved_text(cell) -> list[str]:
    """The lines a reader sees under a code cell: printed text and each output's plain form."""
    texts = []
    for out in cell.outputs:
        if "text" in out:
            texts.append(out["text"])
        texts.append(out.get("data", {}).get("text/plain", ""))
    return [line for text in texts for line in text.splitlines()]


def python_in_prose(cell) -> list[str]:
    """Lines under `cell` that show the reader a random run prefix or a Python value's repr (a raw dict
    or list, None, True). A cell that prints a script (`lab.script`, `lab.excerpt`, `source`) shows code,
    which may quote."""
    lines = saved_text(cell)
    shown = [line for line in lines if RUN_PREFIX.search(line)]
    if not re.search(r"\b(lab\.script|lab\.excerpt|source)\(", cell.source):
        shown += [line for line in lines if PYTHON_REPR.search(line)]
    return shown


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_no_saved_output_shows_a_run_prefix_or_a_python_repr(path):
    nb = nbformat.read(path, as_version=4)
    found = [(i, line) for i, cell in enumerate(nb.cells) if cell.cell_type == "code" for line in python_in_prose(cell)]
    assert found == [], f"{path.name}: say it in words (lab.plain, lab.facts), not as Python prints it"


def test_the_scan_finds_a_prefix_a_dict_a_flag_an_object_and_a_quoted_string():
    cell = nbformat.v4.new_code_cell("print(x)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text) for text in (
        "emqlab:lesson05-0069ccda7e304c07:emq:{orders}:pending\n", "{'lost': 0}\n", "refused: True\n",
        "attempts: 1 · where: pending\n", "<IPython.core.display.Image object>\n", "<Joined ada (l01) working>\n",
        "'fakeredis (in-process), virtual clock'\n", "ada joined in seat l01: working\n")]
    assert len(python_in_prose(cell)) == 6


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_nbval_reads_its_marks_from_cell_tags_not_from_the_learners_code(path):
    """What nbval checks is in each cell's tags (`nbval-check-output`, …), which a reader never sees; a
    `# NBVAL_…` line would sit in the code the learner reads and runs."""
    from nbval.plugin import find_metadata_tags

    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [c.source for c in code if re.search(r"#\s*NBVAL_", c.source)], path.name
    for cell in code:
        marks = [t for t in cell.metadata.get("tags", []) if t.startswith("nbval-")]
        assert len(dict(find_metadata_tags({"tags": marks}))) == len(marks), f"{path.name}: a tag nbval does not read"


SETS_STATE = re.compile(r"\.sliders\[[^]]+\]\.value\s*=|\.(pin|select)\(")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_a_cell_that_moves_an_explorer_saves_the_figure_it_moved_to(path):
    """A reader without a kernel sees only saved images: a cell that moves a slider (or pins a mode) and
    prints what came of it must leave that figure too, not just its words."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and SETS_STATE.search(cell.source):
            assert any("image/png" in out.get("data", {}) for out in cell.outputs), \
                f"{path.name}: this cell moves an explorer but saves no figure of it:\n{cell.source}"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_a_question_shows_no_figure_and_its_answer_names_every_option_then_draws_the_run_once(path):
    """Predict on paper: the question and its options are saved as text with no image; the next code cell
    saves the answer, a line for every option (why it is right or wrong), and then the run's figure."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        plain = [o.get("data", {}).get("text/plain", "") for o in cell.outputs]
        if not any(p.startswith("Predict first.") for p in plain):
            continue
        assert not any("image/png" in o.get("data", {}) for o in cell.outputs), f"{path.name}: a figure by the question"
        html = next(o["data"]["text/html"] for o in cell.outputs if "text/html" in o.get("data", {}))
        options = html.count("<li>")
        assert options >= 2, f"{path.name}: the question's options are not saved as text"
        answer = code[i + 1]
        assert ".answer(" in answer.source, f"{path.name}: the cell after the question is not its answer"
        words = answer.outputs[0]["data"]["text/plain"].splitlines()
        marks = [line.split(":")[0] for line in words[1:]]
        assert words[0].startswith("The run: ") and len(marks) == options and "✓ right" in marks \
            and set(marks) <= {"✓ right", "✗ wrong"}, f"{path.name}: the answer does not name every option: {words}"
        images = [o for o in answer.outputs if "image/png" in o.get("data", {})]
        assert len(images) <= 1 and all(not o["data"]["text/plain"].startswith("Drawn: ") for o in images)


def test_no_saved_image_is_another_s_and_no_lesson_draws_a_run_twice():
    """Byte for byte, no image is saved twice in the course; within a lesson, no two images say the same
    words (a figure's words are its caption and each run's verdict: the same words, the same runs drawn)."""
    seen: dict[str, str] = {}
    for path in LESSONS:
        words: dict[str, int] = {}
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if "image/png" not in data:
                    continue
                png = data["image/png"].strip()
                assert png not in seen, f"{path.name} cell {i} saves the image {seen.get(png)} saved"
                seen[png] = f"{path.name} cell {i}"
                said = data.get("text/plain", "")
                assert said not in words, f"{path.name}: cells {words.get(said)} and {i} draw the same runs"
                words[said] = i


# -- a lesson's kernel at start-up: a taken port is tried again, any other death says why ------------------
@pytest.mark.slow
def test_a_kernel_given_a_taken_port_starts_on_new_ports(monkeypatch):
    import socket

    from jupyter_client.connect import LocalPortCache
    from nbval.kernel import start_new_kernel

    from support.processes import kernel_start_retried_on_a_taken_port

    held = socket.socket()  # a port some other process holds by the time the kernel binds
    held.bind(("127.0.0.1", 0))
    held.listen()
    ports = LocalPortCache.instance()
    find, given = ports.find_available_port, []

    def first_the_taken_one(ip):
        given.append(held.getsockname()[1] if not given else find(ip))
        return given[-1]

    monkeypatch.setattr(ports, "find_available_port", first_the_taken_one)
    km, kc = kernel_start_retried_on_a_taken_port(start_new_kernel)(kernel_name="python3")
    try:
        assert given[0] == held.getsockname()[1] and km.shell_port != given[0]  # started again, on new ports
        assert kc.execute_interactive("x = 6 * 7", timeout=timeout_s(30))["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        held.close()


@pytest.mark.slow
def test_a_kernel_that_dies_for_another_reason_is_not_started_again_and_says_why(tmp_path, monkeypatch):
    from nbval.kernel import start_new_kernel

    from support.processes import kernel_start_retried_on_a_taken_port

    spec = tmp_path / "kernels" / "dies"
    spec.mkdir(parents=True)
    code = "import sys; sys.stderr.write('no such module: lesson_helpers\\n'); sys.exit(1)"
    (spec / "kernel.json").write_text(json.dumps({"argv": [sys.executable, "-c", code, "{connection_file}"],
                                                  "display_name": "dies", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    tries = []

    def counted(*args, **kwargs):
        tries.append(1)
        return start_new_kernel(*args, **kwargs)

    with pytest.raises(RuntimeError, match="no such module: lesson_helpers"):
        kernel_start_retried_on_a_taken_port(counted)(kernel_name="dies", startup_timeout=timeout_s(30))
    assert len(tries) == 1


STEPS = re.compile(r'<script type="application/json" data-modes>(.*?)</script>', re.S)
LONG_NUMBER = re.compile(r"\d{10,}")
PYTHON_WORD = re.compile(r"\b(True|False|None)\b")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_every_saved_stepper_tells_a_story_a_person_reads_aloud(path):
    """A stepper's steps are exactly the run's events of the kinds it walks (recomputed from the run's
    events saved beside them), in model seconds within the run, at most 25 a run, with no epoch
    milliseconds and no Python literals in their words."""
    from emqlab.view.interactive import FIGURE_MIME, step_kinds

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            fragment = out.get("data", {}).get(FIGURE_MIME)
            for found in STEPS.finditer(fragment or ""):
                for name, mode in json.loads(found.group(1))["modes"].items():
                    if "steps" not in mode:
                        continue  # a figure with no stepper
                    steps = mode["steps"]
                    assert len(steps) <= 25, f"{path.name}: {name} walks {len(steps)} steps"
                    for t, text in steps:
                        assert 0 <= t <= 10_000 and text.startswith(f"t = {t:g} s · "), (path.name, name, text)
                        assert not LONG_NUMBER.search(text) and not PYTHON_WORD.search(text), (path.name, name, text)
                    # the steps are the run's events of the kinds the stepper walks, recomputed from the run
                    kinds = step_kinds(mode["run"]["scenario"])
                    chosen = [(t, kind.replace("_", " ")) for t, kind, *idle in mode["events"] if kind in kinds and not idle]
                    assert [(t, text.split(" · ")[2]) for t, text in steps] == chosen, (path.name, name)
                    span = [t for t, *_ in mode["events"]]
                    assert all(min(span) <= t <= max(span) for t, _ in steps), (path.name, name)


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_every_saved_image_says_what_it_shows_in_words(path):
    """An image's text (the site's alt, a screen reader's, a diff's) is its caption and, for a figure of
    runs, a line per run: never a Python repr, a prompt to point at it, or nothing."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "image/png" not in data:
                continue
            text = data.get("text/plain", "")
            assert text.strip() and not PYTHON_REPR.search(text.splitlines()[0]), f"{path.name}: {text!r}"
            assert "Point at" not in text and text != "a figure", f"{path.name}: {text!r}"
