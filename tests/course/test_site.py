"""The course as a static site (`emqlab site`), built from the saved lessons: a page for every lesson and
an index; every figure that lights in the lab lights on its page, embedded once; nothing is fetched;
each page says where and when its runs were made; the exercises fold their answers away. What the
pages do in a browser is tests/browser/test_site.py's."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import nbformat
import pytest

from emqlab.cli.command import main
from emqlab.course import exercises
from emqlab.course.notebooks import NOTEBOOKS, lessons
from emqlab.course.site import ANSWER_TAG, DOCS, INDEX, build, figure_outputs
from emqlab.view.interactive import FIGURE_MIME, light_script, light_style

WIDGET = "application/vnd.jupyter.widget-view+json"
PAGE_MAX, SITE_MAX = 3_000_000, 25_000_000  # bytes
FIGURE = re.compile(r'<figure\b[^>]*\bdata-figure="([^"]*)"')
TAG = re.compile(r"<(\w+)\b[^>]*>", re.S)
FETCHED = re.compile(r"""\b(?:src|href|xlink:href|srcset|poster|data|action)\s*=\s*["']?\s*(?:https?:|//)""", re.I)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    return build(out, NOTEBOOKS)


@pytest.fixture(scope="module")
def saved():
    return {path.stem: nbformat.read(path, as_version=4) for path in lessons(NOTEBOOKS)}


def page_of(site, stem: str) -> str:
    return (site.out / f"{stem}.html").read_text(encoding="utf-8")


def is_explorer(out) -> bool:
    """A figure that lights in the lab: a live widget saved with its image (a prediction is words)."""
    data = out.get("data", {})
    return WIDGET in data and "image/png" in data


def doc_pages() -> list[str]:
    return [f"docs-{doc.stem}.html" for doc in sorted(DOCS.glob("*.md"))]


def test_a_page_for_every_lesson_and_an_index_linking_them_in_order(site, saved):
    assert [p.name for p in site.pages] == [INDEX] + [f"{stem}.html" for stem in saved] + doc_pages()
    index = (site.out / INDEX).read_text(encoding="utf-8")
    linked = re.findall(r'<td><a href="([^"]+)">', index)  # the course map: lesson 00 above it, then a lesson a row
    assert index.index('href="00-start-here.html"') < index.index("<table")
    assert linked == [f"{stem}.html" for stem in saved if not stem.startswith("00-")]
    assert re.findall(r'<li><a href="([^"]+)">', index) == doc_pages()  # the reference, after it
    for stem, nb in saved.items():
        title = re.search(r"^#+\s+(.+)$", nb.cells[0].source, re.M).group(1)
        page = page_of(site, stem)
        assert f"<title>{html.escape(title)} · " in page and title in index
        assert f'href="{INDEX}"' in page  # back to the index, from every page
    stems = list(saved)
    for before, after in zip(stems, stems[1:]):
        assert f'rel="next" href="{after}.html"' in page_of(site, before)
        assert f'rel="prev" href="{before}.html"' in page_of(site, after)


def test_every_figure_that_lights_in_the_lab_lights_on_its_page_once(site, saved):
    total = 0
    for stem, nb in saved.items():
        explorers = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs if is_explorer(out)]
        assert all(FIGURE_MIME in out["data"] for out in explorers), \
            f"{stem}: an explorer saved without its interactive figure: re-save the lessons (`./run notebooks`)"
        fragments = figure_outputs(nb)
        assert len(fragments) == len(explorers)
        page = page_of(site, stem)
        names = [FIGURE.search(f).group(1) for f in fragments]
        assert FIGURE.findall(page) == names  # one interactive figure per saved one, in the lesson's order
        for fragment in fragments:
            assert page.count(fragment) == 1  # embedded as the lab's explorer wrote it
        # one copy of the style and the script, and only where a figure needs the script
        assert page.count(light_style()) == 1
        assert page.count(light_script()) == (1 if fragments else 0)
        total += len(fragments)
    assert site.figures == total
    assert total >= sum(1 for nb in saved.values() for cell in nb.cells
                        if cell.cell_type == "code" and "ModeExplorer(" in cell.source)


def test_pages_and_the_site_stay_small(site):
    sizes = {p.name: p.stat().st_size for p in site.pages}
    assert max(sizes.values()) <= PAGE_MAX, sizes
    assert sum(sizes.values()) == site.bytes <= SITE_MAX


def test_nothing_on_a_page_is_fetched_from_elsewhere(site):
    for path in site.pages:
        page = path.read_text(encoding="utf-8")
        for tag in TAG.finditer(page):
            if tag.group(1).lower() != "a":  # a link is followed only when clicked: it fetches nothing
                assert not FETCHED.search(tag.group(0)), f"{path.name}: {tag.group(0)[:200]}"
        assert not re.search(r"<link\b|<script\b[^>]*\bsrc=|@import|url\(\s*['\"]?(?!data:|#)", page), path.name
    assert any('<a href="https://' in p.read_text(encoding="utf-8") for p in site.pages)  # the check can see links


def test_every_page_says_which_store_and_when_its_runs_were_made(site, saved):
    for stem, nb in saved.items():
        record = nb.metadata.get("emqlab", {})
        assert record.get("store") and record.get("saved_at"), f"{stem}: saved without its store and date"
        made = html.unescape(re.search(r'<p class="made">(.*?)</p>', page_of(site, stem)).group(1))
        assert record["store"] in made and f'datetime="{record["saved_at"]}"' in made


def test_the_exercises_fold_each_answer_away_with_the_saved_run_and_how_to_run_it(site, saved):
    answers = {stem: [c for c in nb.cells if ANSWER_TAG in c.metadata.get("tags", [])] for stem, nb in saved.items()}
    assert sum(len(cells) for cells in answers.values()) == len(exercises.EXERCISES) == 7
    for stem, cells in answers.items():
        if not cells:
            continue
        for cell in cells:
            assert cell.metadata["jupyter"] == {"source_hidden": True, "outputs_hidden": True}  # folded in the lab
            assert re.fullmatch(r'exercises\.answer\("[\w-]+", be\)', cell.source)
            assert "✔ Right." in cell.outputs[0]["data"]["text/plain"]  # the saved run confirmed it
        page = page_of(site, stem)
        folded = re.findall(r'<details class="answer"><summary>Show the answer</summary>(.*?)</details>', page, re.S)
        assert len(folded) == len(cells)
        for cell, body in zip(cells, folded):
            said = cell.outputs[0]["data"]["text/plain"]
            assert html.escape(said.splitlines()[0]) in body and "✔ Right." in body
            assert "./run lab" in body and 'lab.use("valkey")' in body
        # the question comes first: the lesson's first check sits before its first folded answer
        assert re.search(r"check_\w+", page).start() < page.index("<summary>Show the answer")


def test_the_command_writes_the_site_and_says_what_it_wrote(tmp_path, capsys, saved):
    out = tmp_path / "a" / "site"
    assert main(["site", "--out", str(out), "--lessons", str(NOTEBOOKS), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["out"] == str(out) and said["pages"] == [str(out / INDEX)] + [str(out / f"{s}.html") for s in saved] \
        + [str(out / page) for page in doc_pages()]
    assert said["figures"] == sum(len(figure_outputs(nb)) for nb in saved.values())
    assert said["bytes"] == sum(Path(p).stat().st_size for p in said["pages"])


def test_the_index_shows_the_course_map_and_every_reference_page_renders(site):
    from emqlab.course import map as course_map

    index = html.unescape((site.out / INDEX).read_text(encoding="utf-8"))
    for e in course_map.entries():
        if e.number == course_map.START_HERE:
            line = re.search(rf'<a href="{re.escape(e.file[:-6])}\.html">.*?</p>', index, re.S).group(0)
            assert f"{e.minutes} min: {e.outcome}." in line, line
            continue
        row = re.search(rf'<tr>\s*<td><a href="{re.escape(e.file[:-6])}\.html">.*?</tr>', index, re.S).group(0)
        assert e.outcome.replace("`", "") in re.sub(r"</?code>", "", row), row
        assert re.search(rf"<td[^>]*>{e.minutes}</td>", row), row
    for doc in sorted(DOCS.glob("*.md")):
        page = (site.out / f"docs-{doc.stem}.html").read_text(encoding="utf-8")
        title = doc.read_text(encoding="utf-8").split("\n", 1)[0].lstrip("# ")
        assert "<h1 " in page and ".md" not in "".join(re.findall(r'href="([^"]+)"', page)), doc.name
        shown = re.sub(r"</?code>", "", html.unescape(page))
        assert re.search(rf'<h1 id="[\w-]+">{re.escape(title.replace("`", ""))}</h1>', shown), doc.name


@pytest.mark.parametrize("args, says", [
    (["--out", "/proc/emqlab-site"], "cannot be created"),
    (["--out", "{file}"], "is a file, not a folder"),
    (["--out", "{dir}", "--lessons", "/nonexistent/lessons"], "no folder of lessons"),
    (["--out", "{dir}", "--lessons", "{dir}"], "holds no saved lessons"),
    ([], "the following arguments are required: --out"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, args, says):
    (tmp_path / "a-file").write_text("x")
    argv = [a.format(file=tmp_path / "a-file", dir=tmp_path) for a in args]
    assert main(["site", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("emqlab: error: ") and says in err, err
    assert "Traceback" not in err
