"""The course as a static site: `emqlab site --out DIR` writes one page per saved lesson and an index.

A page is its saved lesson as a reader without a kernel meets it (prose, code, outputs), except that
every figure that lights in the lab lights here too: a saved explorer's output carries its interactive
fragment under `FIGURE_MIME` (`emqlab.view.interactive`), which the page embeds as it is, with one copy
of the style and the script. Nothing is fetched: images are `data:` URLs and the style and script are
inline, so the folder opens from file:// and from any static host. Each page says which store its runs
were made on and when (what `./run notebooks` recorded), and an exercise's answer (a cell tagged
`answer`, folded away in the lab) is a "Show the answer" disclosure. Every sentence about a run comes
from the saved outputs; this module only lays them out.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.errors import BadParameter
from ..view.interactive import FIGURE_MIME, page_head, page_script
from . import map as course_map
from .glossary import anchor
from .notebooks import NOTEBOOKS, lessons

INDEX = "index.html"
COURSE = "Keep the lease fresh"
ANSWER_TAG = "answer"  # a cell holding an exercise's right answer, hidden in the lab
LESSON_LINK = re.compile(r'href="(?:\.\./)?(?:notebooks/)?(\d\d-[\w-]+)\.ipynb(#[^"]*)?"')
DOC_LINK = re.compile(r'href="(?:\.\./)?(?:docs/)?([\w-]+)\.md(#[^"]*)?"')  # a link to a reference page
HEADING = re.compile(r"<h([1-6])>(.*?)</h\1>")
DOCS = NOTEBOOKS.parent / "docs"  # the reference pages the README links, rendered beside the lessons
STATIC_ALT = "a figure from the lesson; its words are drawn in it"  # for an image saved without words
PYTHON_REPR = re.compile(r"^<[\w.]+ object( at 0x[0-9a-f]+)?>$")  # text/plain that is no text at all
RUN_IT_LIVE = ("Checked by a real run when the lesson was saved (where and when: at the top of this page). "
               "To run it live, open the course with <code>./run lab</code> (or <code>emqlab lab</code>), "
               "open this lesson and run its cells; <code>lab.use(\"valkey\")</code> in the first cell runs "
               "them on live Valkey.")

STYLE = """
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b; margin: 0; }
main, header, footer { max-width: 62rem; margin: 0 auto; padding: 0 1rem; box-sizing: border-box; }
nav { display: flex; flex-wrap: wrap; gap: 0.4em 1.2em; padding: 0.8em 0; }
nav a { text-decoration: none; }
header .made { color: #444; font-size: 0.92em; border-left: 3px solid #0072B2; padding-left: 0.7em; }
h1, h2, h3 { line-height: 1.25; }
p, li, td, th, figcaption, summary { overflow-wrap: anywhere; }
a { color: #0060a0; }
code { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.92em; }
pre { overflow-x: auto; margin: 0; padding: 0.6em 0.8em; font-size: 0.88em; line-height: 1.4; }
.cell { margin: 0.8em 0; }
.source { background: #f5f6f8; border-left: 3px solid #9aa5b1; }
.source .highlight { background: none; }
.output { margin-top: 0.3em; }
.output pre { background: #fff; border-left: 3px solid #d9dde3; white-space: pre-wrap; overflow-wrap: anywhere; }
.output pre.stderr { background: #fff4f4; }
.output img { max-width: 100%; height: auto; display: block; }
.output .html { overflow-x: auto; }
table { border-collapse: collapse; display: block; overflow-x: auto; max-width: 100%; }
td, th { border: 1px solid #d9dde3; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
details.answer { border: 1px solid #9aa5b1; border-radius: 4px; padding: 0.4em 0.8em; margin: 0.8em 0; }
details.answer summary { cursor: pointer; font-weight: 600; color: #0060a0; }
details.answer .live { font-size: 0.92em; color: #444; }
ul.lessons { list-style: none; padding: 0; }
ul.lessons li { margin: 0.6em 0; }
ul.lessons a { font-weight: 600; }
"""


@dataclass(frozen=True)
class Lesson:
    """A saved lesson, as the site reads it."""

    path: Path
    nb: Any  # the notebook (nbformat)

    @property
    def page(self) -> str:
        return self.path.stem + ".html"

    @property
    def title(self) -> str:
        """The lesson's first heading ("01 · The lease lapses")."""
        for cell in self.nb.cells:
            found = re.search(r"^#+\s+(.+)$", cell.source, re.M) if cell.cell_type == "markdown" else None
            if found:
                return found.group(1).strip()
        return self.path.stem

    @property
    def blurb(self) -> str:
        """The index's one line: the lesson's first sentence of prose (not a heading, a list or a table)."""
        for cell in self.nb.cells:
            blocks = re.split(r"\n\s*\n", cell.source) if cell.cell_type == "markdown" else []
            for block in blocks:
                if block.strip() and not block.lstrip().startswith(("#", "**", "-", "|", ">", "`")):
                    text = " ".join(block.split())
                    return re.split(r"(?<=[.!?])\s+(?=[A-Z])", text, maxsplit=1)[0]
        return ""

    @property
    def record(self) -> dict[str, str]:
        return dict(self.nb.metadata.get("emqlab", {}))

    def made(self) -> str:
        """Where and when the saved runs were made, as `./run notebooks` recorded it."""
        store, saved = self.record.get("store"), self.record.get("saved_at")
        if not store or not saved:
            return ("Saved before emqlab recorded where and when a lesson's runs were made: "
                    "<code>./run notebooks</code> re-saves it with that record.")
        when = datetime.fromisoformat(saved)
        return (f"Runs made on {html.escape(store)}; saved "
                f"<time datetime=\"{html.escape(saved, quote=True)}\">{when.day} {when:%B %Y, %H:%M} UTC</time> "
                "by <code>./run notebooks</code>.")


@dataclass(frozen=True)
class Site:
    """What `build` wrote: the folder, its pages (the index first), how many interactive figures they
    hold, and their size in bytes."""

    out: Path
    pages: list[Path]
    figures: int
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {"out": str(self.out), "pages": [str(p) for p in self.pages], "figures": self.figures,
                "bytes": self.bytes}


def read_lessons(folder: Path | str = NOTEBOOKS) -> list[Lesson]:
    """The saved lessons in `folder` (files named NN-*.ipynb), in order."""
    import nbformat

    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise BadParameter(f"no folder of lessons at {folder}")
    found = lessons(folder)
    if not found:
        raise BadParameter(f"{folder} holds no saved lessons (files named like 01-the-lease-lapses.ipynb)")
    return [Lesson(path, nbformat.read(path, as_version=4)) for path in found]


def figure_outputs(nb) -> list[str]:
    """Every interactive fragment a saved notebook holds (one per explorer's output), in order."""
    return [out["data"][FIGURE_MIME] for cell in nb.cells if cell.cell_type == "code"
            for out in cell.outputs if FIGURE_MIME in out.get("data", {})]


def build(out: Path | str, lessons_from: Path | str = NOTEBOOKS) -> Site:
    """Write the site into `out` (which must exist): one page per saved lesson in `lessons_from`, an index
    with the course map, and a page for each reference page under docs/. Only the site's own files are
    written; nothing else in `out` is touched."""
    out = Path(out).expanduser()
    course = read_lessons(lessons_from)
    pages, figures = [out / INDEX], 0
    docs = sorted(DOCS.glob("*.md")) if DOCS.is_dir() else []
    (out / INDEX).write_text(_index(course, Path(lessons_from).expanduser(), docs), encoding="utf-8")
    for i, lesson in enumerate(course):
        before = course[i - 1] if i > 0 else None
        after = course[i + 1] if i + 1 < len(course) else None
        body, count = _lesson_page(lesson, before, after)
        (out / lesson.page).write_text(body, encoding="utf-8")
        pages.append(out / lesson.page)
        figures += count
    for doc in docs:  # the reference pages the README links (docs/), after the lessons
        (out / _doc_page(doc)).write_text(_doc(doc), encoding="utf-8")
        pages.append(out / _doc_page(doc))
    return Site(out, pages, figures, sum(p.stat().st_size for p in pages))


# -- pages ----------------------------------------------------------------------------------------------
def _page(title: str, nav: str, header: str, main: str, script: bool) -> str:
    return (page_head(title) + f"<style>{STYLE}{_code_style()}</style></head><body>"
            f"<header>{nav}{header}</header><main>{main}</main><footer>{nav}</footer>"
            + (page_script() if script else "") + "</body></html>")


def _index(course: list[Lesson], folder: Path, docs: list[Path]) -> str:
    try:  # the course map, as the lessons state it (emqlab.course.map): outcome, what comes before, minutes
        lessons_map = _markdown(course_map.markdown(course_map.entries(folder)))
    except BadParameter:  # a folder of lessons written without the map's lines: each lesson's first sentence
        lessons_map = '<ul class="lessons">' + "".join(
            f'<li><a href="{lesson.page}">{_inline(lesson.title)}</a><br>{_inline(lesson.blurb)}</li>'
            for lesson in course) + "</ul>"
    reference = "".join(f'<li><a href="{_doc_page(doc)}">{_inline(_doc_title(doc))}</a></li>' for doc in docs)
    header = (f"<h1>{html.escape(COURSE)}</h1><p>The emqlab course, lesson by lesson, as saved with its runs. "
              "Every figure from a run lights its modes when you point at them or reach them with Tab; "
              "nothing here needs a kernel or the network. Each lesson says which store its runs were made "
              "on, and when.</p>")
    main = lessons_map + (f'<h2>Reference</h2><ul class="docs">{reference}</ul>' if docs else "")
    return _page(COURSE, "", header, main, script=False)


def _doc_page(doc: Path) -> str:
    return f"docs-{doc.stem}.html"


def _doc_title(doc: Path) -> str:
    first = doc.read_text(encoding="utf-8").split("\n", 1)[0]
    return first.lstrip("#").strip() or doc.stem


def _doc(doc: Path) -> str:
    """A reference page under docs/, beside the lessons: its markdown, its links to other pages made the site's."""
    body = HEADING.sub(_anchored, _markdown(doc.read_text(encoding="utf-8")))
    nav = f'<nav><a href="{INDEX}">All lessons</a></nav>'
    return _page(f"{_doc_title(doc)} · {COURSE}", nav, "", body, script=False)


def _anchored(m: re.Match) -> str:
    """A rendered heading with the anchor GitHub gives it, which the lessons' glossary links name."""
    text = re.sub(r"<[^>]+>", "", html.unescape(m.group(2)))
    return f'<h{m.group(1)} id="{anchor(text)}">{m.group(2)}</h{m.group(1)}>'


def _lesson_page(lesson: Lesson, before: Lesson | None, after: Lesson | None) -> tuple[str, int]:
    links = [f'<a href="{INDEX}">All lessons</a>']
    if before is not None:
        links.append(f'<a rel="prev" href="{before.page}">← {_inline(before.title)}</a>')
    if after is not None:
        links.append(f'<a rel="next" href="{after.page}">{_inline(after.title)} →</a>')
    cells, figures = [], 0
    for cell in lesson.nb.cells:
        text, count = _cell(cell)
        cells.append(text)
        figures += count
    header = f'<p class="made">{lesson.made()}</p>'
    return _page(f"{lesson.title} · {COURSE}", f"<nav>{''.join(links)}</nav>", header, "".join(cells),
                 script=figures > 0), figures


# -- cells ----------------------------------------------------------------------------------------------
def _cell(cell) -> tuple[str, int]:
    if cell.cell_type == "markdown":
        return f'<section class="cell prose">{_markdown(cell.source)}</section>', 0
    if cell.cell_type != "code":
        return "", 0
    source = cell.source.strip("\n")
    answer = ANSWER_TAG in cell.metadata.get("tags", [])
    # an answer's own fold (its HTML form) would sit inside the page's: the page shows its text in one
    outputs = [_output(_plain(out) if answer else out) for out in cell.outputs]
    shown = "".join(text for text, _ in outputs)
    count = sum(n for _, n in outputs)
    code = f'<div class="source">{_python(source)}</div>' if source else ""
    body = code + (f'<div class="output">{shown}</div>' if shown else "")
    if answer:
        return (f'<details class="answer"><summary>Show the answer</summary>{body}'
                f'<p class="live">{RUN_IT_LIVE}</p></details>'), count
    return f'<div class="cell code">{body}</div>', count


def _plain(out):
    """A saved output without its HTML form."""
    data = {k: v for k, v in out.get("data", {}).items() if k != "text/html"}
    return {**out, "data": data} if "data" in out else out


def _output(out) -> tuple[str, int]:
    """One saved output as HTML, and 1 if it is an interactive figure."""
    from nbconvert.filters import strip_ansi

    kind = out.get("output_type")
    if kind == "stream":
        cls = "stderr" if out.get("name") == "stderr" else "stdout"
        return f'<pre class="{cls}">{html.escape(strip_ansi(out.get("text", "")))}</pre>', 0
    if kind == "error":
        trace = "\n".join(out.get("traceback", []))
        return f'<pre class="stderr">{html.escape(strip_ansi(trace))}</pre>', 0
    data = out.get("data", {})
    if FIGURE_MIME in data:  # the figure as the lab lights it; its PNG is for readers of the notebook file
        return data[FIGURE_MIME], 1
    if "text/html" in data:
        return f'<div class="html">{data["text/html"]}</div>', 0
    if "image/svg+xml" in data:
        return f'<div class="html">{data["image/svg+xml"]}</div>', 0
    plain = data.get("text/plain", "")
    for mime in ("image/png", "image/jpeg"):
        if mime in data:
            alt = plain if plain and not PYTHON_REPR.match(plain) else STATIC_ALT
            return f'<img src="data:{mime};base64,{data[mime].strip()}" alt="{html.escape(alt, quote=True)}">', 0
    if plain:
        return f"<pre>{html.escape(strip_ansi(plain))}</pre>", 0
    return "", 0  # a live widget alone: nothing a page without a kernel can show


# -- text -------------------------------------------------------------------------------------------------
def _markdown(source: str) -> str:
    """A lesson's prose as HTML (raw HTML in it is shown as text); a link to another lesson goes to its page."""
    import mistune

    render = mistune.create_markdown(escape=True, plugins=["table", "strikethrough"])
    body = LESSON_LINK.sub(lambda m: f'href="{m.group(1)}.html{m.group(2) or ""}"', render(source))
    return DOC_LINK.sub(lambda m: f'href="docs-{m.group(1)}.html{m.group(2) or ""}"', body)


def _inline(source: str) -> str:
    """One line of markdown (a title, a blurb) as inline HTML."""
    text = _markdown(source).strip()
    return text.removeprefix("<p>").removesuffix("</p>")


def _python(source: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return highlight(source, PythonLexer(), HtmlFormatter())


def _code_style() -> str:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter().get_style_defs(".highlight")
