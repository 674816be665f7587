"""The glossary (docs/glossary.md) covers the course's words, and each term is linked where the course,
read in order, first uses it (`emqlab.course.glossary`, written by `python -m emqlab.course.map`)."""

from __future__ import annotations

import shutil

import nbformat

from emqlab.course import glossary
from emqlab.course.notebooks import NOTEBOOKS, lessons
from emqlab.queue.invariants import INVARIANTS

# the words the course leans on that a newcomer has to look up
NEEDED = ["tick", "beat", "cadence", "grace", "session", "sweep", "per-job limit", "reap", "fencing value", "slot",
          "CROSSSLOT", "WAIT", "visibility timeout", "model seconds", "real seconds", "lease", "TTL", "token",
          "extend", "lapse", "reaper", "attempts", "hashtag", "failover", "interleaving", *INVARIANTS]


def _prose(folder=NOTEBOOKS) -> str:
    return "\n\n".join(c.source for p in lessons(folder) for c in nbformat.read(p, as_version=4).cells
                       if c.cell_type == "markdown")


def test_the_glossary_has_every_word_the_course_leans_on_and_the_course_uses_each():
    spelled = {s for t in glossary.terms() for s in t.spellings}
    assert [w for w in NEEDED if w not in spelled] == []
    assert glossary.unused() == []


def test_each_term_is_linked_at_its_first_use_and_nowhere_earlier():
    prose = _prose()
    for term in glossary.terms():
        at = prose.find(f"]({term.link})")
        assert at >= 0, f"{term.heading!r} is linked nowhere: run `python -m emqlab.course.map`"
        plain = glossary.first_use(prose, term)
        assert plain is None or plain.start() > at, f"{term.heading!r} is used unlinked before its link: " \
            f"…{prose[max(0, plain.start() - 60):plain.end() + 20]}…"


def test_linking_again_changes_nothing(tmp_path):
    folder = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, folder, ignore=shutil.ignore_patterns("*.py", "*.cfg", "__pycache__"))
    assert glossary.write(folder) == []


def test_a_link_goes_into_prose_only_and_capitals_match_capitals(tmp_path):
    term = glossary.Term("WAIT", ("WAIT",))
    source = "# WAIT\n`WAIT 1 0` and [WAIT](x.md), then we wait; then WAIT blocks."
    m = glossary.first_use(source, term)
    assert source[m.start():].startswith("WAIT blocks")
    lease = glossary.Term("lease", ("lease",))
    assert glossary.first_use("**Before this:** a lease\nLeases lapse.", lease).group(0) == "Leases"
