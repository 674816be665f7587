"""The glossary (docs/glossary.md), and a link to it where the course first uses each term.

The glossary is the one source: each `### heading` is a term, spelled as the heading's parts ("slot and
CROSSSLOT" is two spellings) and as the words set in bold in its entry ("Also called **renew**"). The
first time the lessons, read in order, use a spelling in their prose (not in a heading, code, a link,
italics or the lesson's own first lines; a code span that is the spelling itself counts), `write()`
makes that word a link to the term's entry; a spelling in capitals (TTL, WAIT) matches only in capitals.
`python -m emqlab.course.map` calls it, and a test fails when writing again would change a lesson.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import prose
from .notebooks import NOTEBOOKS, lessons

GLOSSARY = NOTEBOOKS.parent / "docs" / "glossary.md"
LINK_BASE = "../docs/glossary.md"
TERM = re.compile(r"^### (?P<heading>.+)$", re.M)
BOLD = re.compile(r"\*\*([^*]+)\*\*")
# what a link may not go into: code, a link, a heading, a title in italics, the lesson's own opening lines,
# the course map
PROTECTED = re.compile(r"`[^`\n]*`|\[[^\]\n]*\]\([^)\n]*\)|^#.*$|(?<!\*)\*[^*\n]+\*(?!\*)"
                       r"|^\*\*(?:You will be able to|Before this:)\*\*.*$"
                       r"|(?s:<!-- the course map.*?<!-- end of the course map -->)", re.M)
ENDINGS = r"(?:s|es|d|ed|ing)?"


def anchor(heading: str) -> str:
    """A heading's anchor as GitHub makes it (and `emqlab site` does too): lower case, punctuation
    dropped, spaces to hyphens: "slot and CROSSSLOT" → "slot-and-crossslot"."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@dataclass(frozen=True)
class Term:
    heading: str
    spellings: tuple[str, ...]

    @property
    def link(self) -> str:
        return f"{LINK_BASE}#{anchor(self.heading)}"

    def code_pattern(self) -> re.Pattern:
        words = "|".join(re.escape(s) for s in self.spellings)
        return re.compile(rf"`(?:{words})`", 0 if all(s != s.lower() for s in self.spellings) else re.I)

    def pattern(self) -> re.Pattern:
        words = "|".join(re.escape(s) for s in sorted(self.spellings, key=len, reverse=True))
        flags = 0 if all(s != s.lower() for s in self.spellings) else re.I
        return re.compile(rf"(?<![\w-])(?:{words}){ENDINGS}(?![\w-])", flags)


def terms(path: Path = GLOSSARY) -> list[Term]:
    text = path.read_text(encoding="utf-8")
    found = list(TERM.finditer(text))
    out = []
    for i, m in enumerate(found):
        body = text[m.end():found[i + 1].start() if i + 1 < len(found) else len(text)]
        body = body.split("\n## ", 1)[0]
        heading = m["heading"].strip()
        parts = [p.strip() for p in re.split(r",\s*|\s+and\s+", heading) if p.strip()]
        bold = [b.strip() for b in BOLD.findall(body)]
        out.append(Term(heading, tuple(dict.fromkeys(parts + bold))))
    return out


def first_use(source: str, term: Term) -> re.Match | None:
    """The first use of a term in a markdown source where a link may go: in prose, or a code span that
    is the term itself (`CROSSSLOT`)."""
    pattern, code = term.pattern(), term.code_pattern()
    at = 0
    for m in PROTECTED.finditer(source):
        found = pattern.search(source, at, m.start())
        if found:
            return found
        as_code = code.fullmatch(source, m.start(), m.end())
        if as_code:
            return as_code
        at = m.end()
    return pattern.search(source, at)


def linked(source: str, term: Term) -> bool:
    """Whether the source already links this term (its first use, linked by an earlier pass)."""
    return f"]({term.link})" in source


def link_first(text: str, term) -> str:
    """`text` with `term`'s first use linked to its glossary entry (unchanged if it has none)."""
    m = first_use(text, term)
    return text if m is None else f"{text[:m.start()]}[{m.group(0)}]({term.link}){text[m.end():]}"


def write(folder: Path = NOTEBOOKS, glossary: Path = GLOSSARY) -> list[Path]:
    """Link each term at its first use in the course; the lessons it changed."""
    import nbformat

    todo = terms(glossary)
    changed = []
    for path in lessons(folder):
        nb = nbformat.read(path, as_version=4)
        wrote = False
        for cell in (c for c in nb.cells if c.cell_type == "markdown"):
            for term in list(todo):
                if linked(cell.source, term):
                    todo.remove(term)
                    continue
                if first_use(cell.source, term) is None:
                    continue
                prose.edit(cell, lambda text, term=term: link_first(text, term))  # its template too, if it has one
                todo.remove(term)
                wrote = True
        if wrote:
            nbformat.write(nb, path)
            changed.append(path)
    return changed


def unused(folder: Path = NOTEBOOKS, glossary: Path = GLOSSARY) -> list[str]:
    """The terms no lesson uses (in prose a link may go into)."""
    import nbformat

    prose = "\n\n".join(c.source for p in lessons(folder) for c in nbformat.read(p, as_version=4).cells
                        if c.cell_type == "markdown")
    return [t.heading for t in terms(glossary) if not linked(prose, t) and first_use(prose, t) is None]
