"""The course notebooks, saved with their outputs: `./run notebooks` (= `python -m emqlab.course.notebooks`).

A reader without a kernel (GitHub, nbviewer, `jupyter nbconvert --to html`) sees what the saved
notebook holds, so every lesson is executed on fakeredis's virtual clock (the same runs every time)
and saved with its outputs: text, and a PNG beside every live figure. Each saved notebook records
which sources its outputs came from (`metadata.emqlab.outputs_of`: a digest of its own code cells
and of the emqlab package); `stale()` says which notebooks no longer match, and a test fails on them.
Numbers its prose gives about its runs are filled from the runs as it is saved (`emqlab.course.prose`).
It also records where and when its runs were made (`metadata.emqlab.store` and `saved_at`, an ISO UTC
time), which `emqlab site` prints on the lesson's page, and how long the lesson took to run (`ran_s`,
whole seconds on the machine that saved it: the test suite starts the longest lessons first); none of
them enters the digest.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

from ..core.environment import BACKEND_ENV, URL_ENV
from . import prose

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"  # beside the package, in a checkout
SOURCE_SUFFIXES = (".py", ".lua")
TIMEOUT_S = 600
# Where a saved lesson's runs are made: save() hands the kernel no EMQLAB_BACKEND or EMQLAB_URL, so the
# lab's store is always the embedded default; a cell that needs a real server starts one of its own.
STORE = ("fakeredis (in-process), virtual clock; cells that need a real server (a cluster, a failover, "
         "a class, a library's run) start an embedded valkey-server of their own")


def package_digest() -> str:
    """A digest of every emqlab source file (Python and Lua), path and content."""
    digest = hashlib.sha256()
    root = Path(str(resources.files("emqlab")))
    for path in sorted(p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def outputs_of(nb) -> str:
    """What a notebook's outputs depend on: its code cells, the expressions its prose is filled from
    (`emqlab.course.prose`), and the package."""
    digest = hashlib.sha256(package_digest().encode())
    for cell in nb.cells:
        if cell.cell_type == "code":
            digest.update(cell.source.encode())
    digest.update(prose.templates(nb).encode())
    return digest.hexdigest()[:16]


def lessons(folder: Path = NOTEBOOKS) -> list[Path]:
    return sorted(folder.glob("[0-9][0-9]-*.ipynb"))


def stale(folder: Path = NOTEBOOKS) -> list[str]:
    """The lessons whose saved outputs did not come from today's sources."""
    import nbformat

    out = []
    for path in lessons(folder):
        nb = nbformat.read(path, as_version=4)
        if nb.metadata.get("emqlab", {}).get("outputs_of") != outputs_of(nb):
            out.append(path.name)
    return out


def save(paths: list[Path] | None = None) -> list[Path]:
    """Execute each lesson on fakeredis (virtual clock) and save it with its outputs and digest."""
    import nbformat
    from nbclient import NotebookClient

    env = {k: v for k, v in os.environ.items() if k not in (BACKEND_ENV, URL_ENV)}
    saved = []
    for path in paths or lessons():
        nb = nbformat.read(path, as_version=4)
        previous = dict(os.environ)
        os.environ.clear()
        os.environ.update(env)  # the kernel inherits this: the saved run is always the embedded default
        began = time.monotonic()
        exprs = prose.expressions(nb)
        if exprs:  # after the last cell, the kernel says each placeholder's words (the cell is not saved)
            nb.cells.append(nbformat.v4.new_code_cell(prose.probe(exprs)))
        try:
            NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3",
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        finally:
            os.environ.clear()
            os.environ.update(previous)
        if exprs:
            probed = nb.cells.pop()
            try:
                values = prose.values_from(probed.outputs)
            except ValueError as e:
                raise RuntimeError(f"{path.name}: {e}") from None
            prose.fill_notebook(nb, values)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.metadata.pop("execution", None)  # timings change every run; keep diffs to what changed
        record = nb.metadata.setdefault("emqlab", {})
        record["outputs_of"] = outputs_of(nb)
        record["store"] = STORE
        record["saved_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        record["ran_s"] = max(1, round(time.monotonic() - began))
        nb.metadata.pop("widgets", None)  # widget state is a live kernel's; the PNG beside it is what stays
        nbformat.write(nb, path)
        saved.append(path)
        print(f"saved {path.name}", file=sys.stderr)
    return saved


if __name__ == "__main__":
    chosen = [Path(p) for p in sys.argv[1:]] or None
    save(chosen)
