"""The course map (emqlab.course.map) and the reading formula under it (emqlab.course.reading): the map in
lesson 00, the README and each lesson's first cell says what the lessons say, and the minutes are the
formula's over the lessons as saved."""

from __future__ import annotations

import re
import shutil

import nbformat
import pytest

from emqlab.course import map as course_map
from emqlab.course import reading
from emqlab.course.notebooks import NOTEBOOKS, lessons

ROOT = NOTEBOOKS.parent


def test_the_formula_counts_prose_output_code_and_images(tmp_path):
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("a = 1\n\nprint(a)\n")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="one two three\n"),
                    nbformat.v4.new_output("display_data", data={"image/png": "iVBOR", "text/plain": "a caption"})]
    nb.cells = [nbformat.v4.new_markdown_cell(" ".join(["word"] * 360)), code]
    path = tmp_path / "01-x.ipynb"
    nbformat.write(nb, path)
    r = reading.reading(path)
    assert (r.prose_words, r.output_words, r.code_lines, r.images) == (360, 5, 2, 1)
    # 360 words at 180 a minute, 5 at 250, two lines at 6 s and one image at 45 s
    assert r.minutes == pytest.approx(2 + 5 / 250 + (12 + 45) / 60)
    assert reading.minutes(path) == 3


def test_every_copy_of_the_map_says_what_the_lessons_say(tmp_path):
    """Writing the map again into copies of the lessons and the README changes nothing."""
    folder = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, folder, ignore=shutil.ignore_patterns("*.py", "*.cfg", "__pycache__"))
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    assert course_map.write(folder, readme) == [], "run `python -m emqlab.course.map` and commit what it writes"


def test_the_map_names_every_lesson_with_its_outcome_and_minutes():
    course = course_map.entries()
    assert [e.file for e in course] == [p.name for p in lessons()]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for e in course:
        assert e.outcome and not e.outcome.endswith(".") and e.minutes == reading.minutes(NOTEBOOKS / e.file)
        row = f"[{e.name}](notebooks/{e.file}), {e.minutes} min: {e.outcome}." if e.number == "00" else \
            f"| [{e.name}](notebooks/{e.file}) | {e.outcome} |"
        assert row in readme
        assert all(n < e.number for n in e.before), f"{e.name} stands on a lesson after it: {e.before}"
    print("\n".join(f"{e.name}: {e.minutes} min" for e in course))
    print(f"all lessons: {sum(e.minutes for e in course)} min")


def test_the_core_path_reads_in_an_hour_and_every_lesson_in_a_quarter():
    """The page we teach is the core path, lessons 01 to the recap; lesson 00 is not counted in it."""
    course = course_map.entries()
    path = course_map.core(course)
    assert [e.number for e in path] == list(course_map.CORE) and path[-1].title == "Recap and exercises"
    long = [f"{e.name}: {e.minutes} min" for e in course if e.minutes > reading.LESSON_MAX_MIN]
    assert not long, f"lessons over {reading.LESSON_MAX_MIN} min: {long}"
    total = sum(e.minutes for e in path)
    assert total <= reading.CORE_MAX_MIN, f"the core path reads in {total} min"
    assert f"**The core path**, {total} min" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_each_lesson_links_the_previous_and_the_next_at_its_end():
    paths = lessons()
    for i, path in enumerate(paths):
        nb = nbformat.read(path, as_version=4)
        last = [c for c in nb.cells if c.cell_type == "markdown"][-1].source.rstrip().splitlines()[-1]
        links = re.findall(r"\]\(([\w-]+\.ipynb)\)", last)
        expected = [p.name for p in paths[max(0, i - 1):i + 2] if p != path]
        assert links == expected, f"{path.name} ends with {last!r}"


def test_a_lesson_without_the_maps_lines_is_refused_in_one_line(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 01 · A lesson\n\nNo outcome here.")]
    nbformat.write(nb, tmp_path / "01-a-lesson.ipynb")
    with pytest.raises(Exception, match=r"01-a-lesson.ipynb: its first cell needs"):
        course_map.entries(tmp_path)


def test_the_readme_opens_with_the_two_commands_and_the_course_map_in_two_minutes():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 120, f"README.md is {len(lines)} lines"
    first_block = text.split("```")[1]
    assert "./run lab" in first_block and "./run test" in first_block
    assert text.index(course_map.START) < text.index("## Reference")
    pages = re.findall(r"\]\((docs/[\w-]+\.md)\)", text)
    assert sorted(pages) == sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")), "a page the README does not link"
