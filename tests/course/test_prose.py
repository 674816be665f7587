"""A lesson's numbers about its runs come from the runs: placeholders filled when the lesson is saved
(`emqlab.course.prose`), held by a test on every saved lesson, and stale the moment a run or a template changes."""

from __future__ import annotations

import copy

import nbformat
import pytest

from emqlab.course import notebooks as course
from emqlab.course import prose

LESSONS = course.lessons()


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_every_saved_lessons_prose_reads_as_its_runs_gave_it(path):
    nb = nbformat.read(path, as_version=4)
    assert prose.mismatches(nb) == [], path.name


def test_the_course_fills_its_numbers_from_its_runs():
    filled = sum(bool(c.metadata.get("emqlab", {}).get("template")) for p in LESSONS
                 for c in nbformat.read(p, as_version=4).cells)
    assert filled >= 5  # the failover's stale write, the fencing values, …: numbers no hand retypes


def _lesson(value: str, sentence: str = "The stale write landed at {{ at }} s with token {{ token }}."):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"at = {value}\ntoken = 34"), nbformat.v4.new_markdown_cell(sentence)]
    return nb


def test_a_number_edited_by_hand_or_a_value_changed_is_caught():
    nb = _lesson("8.06")
    prose.fill_notebook(nb, {"at": "8.06", "token": "34"})
    assert nb.cells[1].source == "The stale write landed at 8.06 s with token 34." and prose.mismatches(nb) == []
    by_hand = copy.deepcopy(nb)
    by_hand.cells[1].source = by_hand.cells[1].source.replace("8.06", "8.1")  # a retyped number
    assert prose.mismatches(by_hand) != []
    planted = copy.deepcopy(nb)
    planted.cells[1].metadata["emqlab"]["values"]["token"] = "35"  # the run said something else
    assert prose.mismatches(planted) != []
    assert prose.mismatches(_lesson("1")) != []  # a placeholder left unfilled


def test_saving_fills_from_the_run_and_a_changed_run_leaves_the_lesson_stale(tmp_path):
    path = tmp_path / "99-probe.ipynb"
    nbformat.write(_lesson("8.06"), path)
    course.save([path])
    saved = nbformat.read(path, as_version=4)
    assert saved.cells[1].source == "The stale write landed at 8.1 s with token 34."
    assert [c.cell_type for c in saved.cells] == ["code", "markdown"]  # the probe cell is not saved
    assert saved.metadata["emqlab"]["outputs_of"] == course.outputs_of(saved)

    saved.cells[0].source = "at = 12.06\ntoken = 34"  # the run changes under the sentence
    assert saved.metadata["emqlab"]["outputs_of"] != course.outputs_of(saved)  # stale: a test fails on it
    nbformat.write(saved, path)
    course.save([path])
    assert nbformat.read(path, as_version=4).cells[1].source == "The stale write landed at 12.1 s with token 34."


def test_a_changed_expression_leaves_the_lesson_stale():
    nb = _lesson("8.06")
    prose.fill_notebook(nb, {"at": "8.06", "token": "34"})
    before = course.outputs_of(nb)
    nb.cells[1].source = "At {{ at }} s the storage took token {{ token }}."  # the words, not what they ask
    assert course.outputs_of(nb) == before
    nb.cells[1].source = "At {{ at }} s the storage took token {{ token + 1 }}."
    assert course.outputs_of(nb) != before


def test_a_placeholder_that_fails_stops_the_save_and_names_itself(tmp_path):
    path = tmp_path / "99-broken.ipynb"
    nbformat.write(_lesson("8.06", "At {{ run.verdict.stale_at }} s."), path)
    with pytest.raises(RuntimeError, match=r"99-broken\.ipynb: a placeholder failed: run\.verdict\.stale_at: NameError"):
        course.save([path])


def test_values_are_said_as_prose_says_them():
    assert [prose.said(v) for v in (14.5, 8.0625, 34, True, "token 35")] == ["14.5", "8.1", "34", "yes", "token 35"]


def test_the_courses_own_edits_keep_prose_filled_from_its_runs():
    """The glossary links a term and the map rewrites a line in a templated cell: the template follows, so the
    saved prose is still its template filled, and no term inside a placeholder's expression is linked."""
    from emqlab.course.glossary import link_first, terms

    nb = _lesson("8.06", "A lease held {{ at }} s, then the lease lapsed.\n\n← back")
    prose.fill_notebook(nb, {"at": "8.1", "token": "34"})
    lease = next(t for t in terms() if t.heading.lower().startswith("lease"))
    prose.edit(nb.cells[1], lambda text: link_first(text, lease))
    prose.edit(nb.cells[1], lambda text: text.replace("← back", "← [00 · Start here](00-start-here.ipynb)"))
    assert prose.mismatches(nb) == []
    record = nb.cells[1].metadata["emqlab"]
    assert record["template"].startswith(f"A [lease]({lease.link}) held {{{{ at }}}} s")
    assert nb.cells[1].source.startswith(f"A [lease]({lease.link}) held 8.1 s") and "00-start-here" in nb.cells[1].source
