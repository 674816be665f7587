"""A lesson's prose takes the numbers that describe its runs from the runs themselves.

A markdown cell writes such a number as a placeholder, `{{ expr }}`, where `expr` is a Python expression
over the lesson's own variables (a run's verdict field, an event's time). `./run notebooks` executes the
lesson, evaluates every placeholder in its kernel after the last cell, and saves the cell filled in, keeping
what it was filled from in the cell's metadata (`metadata.emqlab.template`, and `values`: {expr: the words
it gave}). A reader sees plain prose; an author edits the template (a cell whose source holds `{{` becomes
its template when the lesson is saved).

`mismatches(nb)` is what a test holds every saved lesson to: each templated cell reads exactly its template
filled with the values the runs gave. The templates are part of the lesson's digest
(`emqlab.course.notebooks.outputs_of`), so a changed template, like a changed run, leaves the lesson stale
until it is saved again, and saving fills it from the runs anew.
"""

from __future__ import annotations

import json
import re
from typing import Any

PLACEHOLDER = re.compile(r"\{\{\s*(.+?)\s*\}\}")
MARK = "emqlab-prose-values:"  # the probe cell prints this, then the values as JSON


def said(value: Any) -> str:
    """A value as prose writes it: text as it is, a whole number plainly, any other number to a tenth at most,
    as the course quotes times ("14.5", "8.1", "34"), yes/no for a flag."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{round(value, 1):g}"
    return str(value)


def template_of(cell) -> str | None:
    """The template a markdown cell is filled from, or None: its recorded template while its source is still
    what the last save filled in; its source, if an author has written a placeholder in it since."""
    if cell.cell_type != "markdown":
        return None
    record = cell.metadata.get("emqlab", {})
    if PLACEHOLDER.search(cell.source):
        return cell.source
    if "template" in record and cell.source == fill(record["template"], record.get("values", {})):
        return record["template"]
    return None


def expressions(nb) -> list[str]:
    """Every placeholder's expression in the notebook, once each, in order."""
    found: dict[str, None] = {}
    for cell in nb.cells:
        template = template_of(cell)
        for expr in PLACEHOLDER.findall(template or ""):
            found.setdefault(expr, None)
    return list(found)


def probe(exprs: list[str]) -> str:
    """The code of a cell that, run after the lesson's last cell, prints each expression's words (or, for one
    that fails, what failed)."""
    return f"from emqlab.course.prose import report as _report\n_report({exprs!r}, globals())"


def report(exprs: list[str], namespace: dict[str, Any]) -> None:
    """Print each expression's words, evaluated in `namespace` (a lesson's kernel), for `values_from`."""
    out: dict[str, Any] = {}
    for expr in exprs:
        try:
            out[expr] = said(eval(expr, namespace))  # noqa: S307 (the lesson's own expression, in its own kernel)
        except Exception as e:  # noqa: BLE001 (said back to the save, which names the expression)
            out[expr] = {"error": f"{expr}: {type(e).__name__}: {e}"}
    print(MARK + json.dumps(out))


def values_from(outputs: list) -> dict[str, str]:
    """The values a probe cell printed (`outputs`: its outputs), or ValueError saying what went wrong."""
    for out in outputs:
        if out.get("output_type") == "stream" and MARK in out.get("text", ""):
            values = json.loads(out["text"].split(MARK, 1)[1])
            failed = [v["error"] for v in values.values() if isinstance(v, dict)]
            if failed:
                raise ValueError(f"a placeholder failed: {failed[0]}")
            return values
        if out.get("output_type") == "error":
            raise ValueError(f"a placeholder failed: {out.get('ename')}: {out.get('evalue')}")
    raise ValueError("the placeholders' probe printed nothing")


def fill(template: str, values: dict[str, str]) -> str:
    """`template` with each placeholder replaced by its value; KeyError names a placeholder with none."""
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def fill_notebook(nb, values: dict[str, str]) -> int:
    """Fill every templated cell of `nb` from `values`, recording its template and the values it used;
    returns how many cells were filled."""
    filled = 0
    for cell in nb.cells:
        template = template_of(cell)
        if template is None:
            cell.metadata.get("emqlab", {}).pop("template", None)
            cell.metadata.get("emqlab", {}).pop("values", None)
            if not cell.metadata.get("emqlab", True):
                cell.metadata.pop("emqlab")
            continue
        used = {expr: values[expr] for expr in dict.fromkeys(PLACEHOLDER.findall(template))}
        cell.source = fill(template, used)
        cell.metadata.setdefault("emqlab", {}).update(template=template, values=used)
        filled += 1
    return filled


def edit(cell, change) -> None:
    """Apply `change` (text -> text) to a markdown cell as the course's tools edit it (the glossary's links,
    the map's lines): to its template too, when it has one, so the saved prose stays its template filled.
    Placeholders are hidden from `change` (a glossary term inside an expression is no use of it)."""
    record = cell.metadata.get("emqlab", {})
    if "template" not in record or cell.source != fill(record["template"], record.get("values", {})):
        cell.source = change(cell.source)
        return
    hidden: list[str] = []

    def hide(m: re.Match) -> str:
        hidden.append(m.group(0))
        return f"\u27e6{len(hidden) - 1}\u27e7"

    changed = change(PLACEHOLDER.sub(hide, record["template"]))
    record["template"] = re.sub("\u27e6(\\d+)\u27e7", lambda m: hidden[int(m.group(1))], changed)
    cell.source = fill(record["template"], record.get("values", {}))


def mismatches(nb) -> list[str]:
    """Where a saved lesson's prose does not read as its template filled with the values its runs gave
    (a number edited by hand, a value changed without a save, a placeholder left unfilled). []: all true."""
    problems = []
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        if PLACEHOLDER.search(cell.source):
            problems.append(f"cell {k}: a placeholder was never filled: {PLACEHOLDER.search(cell.source).group(0)}")
            continue
        record = cell.metadata.get("emqlab", {})
        if "template" not in record:
            continue
        try:
            expected = fill(record["template"], record.get("values", {}))
        except KeyError as missing:
            problems.append(f"cell {k}: no value recorded for {missing}")
            continue
        if cell.source != expected:
            problems.append(f"cell {k}: its prose is not its template filled with its runs' values")
    return problems


def templates(nb) -> str:
    """Every placeholder's expression in the notebook, for its digest: a changed expression leaves the lesson
    stale (the words around it, which the glossary and the map also edit, need no new run)."""
    return "\n".join(expressions(nb))
