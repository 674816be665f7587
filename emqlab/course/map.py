"""The course map: each lesson, what a learner can do after it, what it stands on, and how long it reads.

The lessons are the one source. Each lesson's first cell says, in two lines of its own, what the learner
will be able to do (`**You will be able to** …`) and which lessons come before it (`**Before this:** …`);
the minutes are the reading formula's (`emqlab.course.reading`) over the lesson as saved. `write()` puts
the map where a reader meets it (lesson 00, the README, the site's index reads `entries()` itself), the
minutes into each lesson's first cell, and links to the previous and next lessons at each lesson's end;
`./run notebooks` calls it after saving, and a test fails when any copy differs from what the lessons say.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadParameter
from . import prose
from .notebooks import NOTEBOOKS, lessons
from .reading import minutes

README = NOTEBOOKS.parent / "README.md"
START = "<!-- the course map: `python -m emqlab.course.map` writes it from the lessons; edit them, not this -->"
END = "<!-- end of the course map -->"
OUTCOME = re.compile(r"^\*\*You will be able to\*\* (?P<outcome>.+?)$", re.M)
BEFORE = re.compile(r"^\*\*Before this:\*\* (?P<before>.+?) · \*\*Reading time:\*\* \d+ min$", re.M)
LINKS = re.compile(r"\n*(?:← )?\[\d\d · [^]]+\]\([\w-]+\.ipynb\)(?: →)?(?: · .*)?\s*\Z")  # a lesson's last line
TITLE = re.compile(r"^# (?P<number>\d\d) · (?P<title>.+)$", re.M)
LESSON = re.compile(r"\[(\d\d) · ")  # a lesson named by its link: [01 · The lease lapses](…)
START_HERE = "00"
CORE = ("01", "02", "03", "04", "05", "06", "07")  # the page we teach, in order, ending with its recap


@dataclass(frozen=True)
class Entry:
    """One lesson on the map."""

    number: str  # "01"
    title: str  # "The lease lapses"
    file: str  # "01-the-lease-lapses.ipynb"
    outcome: str  # what the learner can do after it, one line
    before: tuple[str, ...]  # the lessons it stands on, by number
    minutes: int  # by the reading formula, as saved

    @property
    def name(self) -> str:
        return f"{self.number} · {self.title}"

    def link(self, folder: str = "") -> str:
        return f"[{self.name}]({folder}{self.file})"


def entry(path: Path) -> Entry:
    """A lesson's entry, read from its first cell and measured as saved."""
    import nbformat

    head = nbformat.read(path, as_version=4).cells[0].source
    title, outcome, before = TITLE.search(head), OUTCOME.search(head), BEFORE.search(head)
    if not (title and outcome and before):
        raise BadParameter(f"{path.name}: its first cell needs '# NN · Title', '**You will be able to** …' and "
                           "'**Before this:** … · **Reading time:** N min'")
    needs = tuple(dict.fromkeys(LESSON.findall(before["before"])))
    return Entry(title["number"], title["title"].strip(), path.name, outcome["outcome"].strip().rstrip("."),
                 needs, minutes(path))


def entries(folder: Path = NOTEBOOKS) -> list[Entry]:
    return [entry(path) for path in lessons(folder)]


def table(course: list[Entry], folder: str = "") -> str:
    """Lessons as a markdown table: lesson, what you will be able to do, what comes before, minutes."""
    rows = ["| lesson | after it you can … | before it | minutes |", "|---|---|---|---:|"]
    rows += [f"| {e.link(folder)} | {e.outcome} | {', '.join(e.before) or '–'} | {e.minutes} |" for e in course]
    return "\n".join(rows)


def core(course: list[Entry]) -> list[Entry]:
    return [e for e in course if e.number in CORE]


def further(course: list[Entry]) -> list[Entry]:
    return [e for e in course if e.number not in CORE and e.number != START_HERE]


def markdown(course: list[Entry], folder: str = "") -> str:
    """The map: where to start, the core path with its total, then the lessons that go further."""
    start = [e for e in course if e.number == START_HERE]
    lines = [f"**Start here:** {e.link(folder)}, {e.minutes} min: {e.outcome}.\n" for e in start]
    path = core(course)
    lines += [f"**The core path**, {sum(e.minutes for e in path)} min: the page we teach, in order.", "",
              table(path, folder), "",
              "**Going further**: each lesson stands on the ones it names, in any order after them.", "",
              table(further(course), folder)]
    return "\n".join(lines)


def block(course: list[Entry], folder: str = "") -> str:
    return f"{START}\n{markdown(course, folder)}\n{END}"


def _replace_block(text: str, new: str, where: str) -> str:
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise BadParameter(f"{where} has no course map to write (the lines {START!r} … {END!r})")
    return text[:start] + new + text[end + len(END):]


def before_line(e: Entry, course: dict[str, Entry]) -> str:
    needs = " · ".join(course[n].link() for n in e.before) or "nothing"
    return f"**Before this:** {needs} · **Reading time:** {e.minutes} min"


def links_line(i: int, course: list[Entry]) -> str:
    """Links to the previous and next lessons, as a lesson's last line: relative `.ipynb` links work in
    JupyterLab and on GitHub, and `emqlab site` turns them into its own pages."""
    parts = []
    if i > 0:
        parts.append(f"← {course[i - 1].link()}")
    if i + 1 < len(course):
        parts.append(f"{course[i + 1].link()} →")
    return " · ".join(parts)


def write(folder: Path = NOTEBOOKS, readme: Path = README) -> list[Path]:
    """Write the map into lesson 00 and the README, each lesson's minutes into its first cell and the
    previous/next links at its end (markdown only: no output changes). The files it changed. What it writes
    changes what a lesson holds to read, so it writes again until a pass changes nothing (two at most)."""
    changed: list[Path] = []
    for _ in range(3):
        wrote = _write_once(folder, readme)
        if not wrote:
            return changed
        changed += [p for p in wrote if p not in changed]
    raise BadParameter("the course map did not settle in three passes: a lesson's minutes keep changing")


def _write_once(folder: Path, readme: Path) -> list[Path]:
    import nbformat

    course = entries(folder)
    by_number = {e.number: e for e in course}
    changed = []
    for i, (path, e) in enumerate(zip(lessons(folder), course)):
        nb = nbformat.read(path, as_version=4)
        was = [c.source for c in nb.cells if c.cell_type == "markdown"]
        line = before_line(e, by_number)
        # each edit reaches a cell's template too, if its prose is filled from its runs (emqlab.course.prose)
        prose.edit(nb.cells[0], lambda text: BEFORE.sub(lambda _: line, text))
        last = [c for c in nb.cells if c.cell_type == "markdown"][-1]
        prose.edit(last, lambda text: LINKS.sub("", text).rstrip() + "\n\n" + links_line(i, course))
        if i == 0:
            holder = next(c for c in nb.cells if c.cell_type == "markdown" and START in c.source)
            prose.edit(holder, lambda text: _replace_block(text, block(course), path.name))
        if [c.source for c in nb.cells if c.cell_type == "markdown"] != was:
            nbformat.write(nb, path)
            changed.append(path)
    text = readme.read_text(encoding="utf-8")
    new = _replace_block(text, block(course, "notebooks/"), readme.name)
    if new != text:
        readme.write_text(new, encoding="utf-8")
        changed.append(readme)
    return changed


if __name__ == "__main__":
    from . import glossary

    for path in glossary.write():
        print(f"linked the glossary's terms at their first use in {path.name}", file=sys.stderr)
    for path in write():
        print(f"wrote the course map into {path.name}", file=sys.stderr)
