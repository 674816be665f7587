"""The package's imports point one way: model → scenarios → plot → widgets / figures / present → cli.

Every module of `emqlab` is read with `ast` (no import is executed): each `import` and
`from … import …`, at the top or inside a function, relative ones resolved, becomes an edge between
two emqlab modules. The test fails, printing the offending edges, on a cycle, on an edge that points
from a lower rank to a higher one, and on the named arrows the design forbids outright.
"""

from __future__ import annotations

import ast
from pathlib import Path

import emqlab

PACKAGE = Path(emqlab.__file__).resolve().parent

MODEL = {"emqlab", "errors", "clock", "fakeclock", "embedded", "scripts", "backend", "timeline", "words", "lease",
         "renewal", "renewal_plane", "faults", "queue", "consumer", "reaper", "commandstats", "cluster", "procs",
         "measured", "runs", "ranges", "relay", "replica", "classroom",
         "renewal_base", "holder"}
COURSE = {"widgets", "figures", "export", "present", "lab", "exercises", "course", "practice", "classboard"}  # course: runs the notebooks


def rank(module: str) -> int | None:
    """0 model, 1 scenarios, 2 plot, 3 widgets/figures/export/present/lab/exercises/course, 4 cli; None:
    a module nobody gave a rank (give it one here, on purpose)."""
    parts = module.split(".")[1:]
    top = parts[0] if parts else "emqlab"
    if top == "scenarios":
        return 1
    if top == "plot":
        return 2
    if len(parts) <= 1:
        return 0 if top in MODEL else 3 if top in COURSE else 4 if top == "cli" or top.startswith("cli_") else None
    return None


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = ["emqlab", *rel.parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def edges(known: dict[str, Path]) -> set[tuple[str, str]]:
    """(importer, imported) for every import of one emqlab module by another."""
    found = set()
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod itself
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
            for target in targets:
                while target and target not in known and "." in target:
                    target = target.rpartition(".")[0]  # `import emqlab.plot.style as s` → that module
                if target in known and target != name:
                    found.add((name, target))
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def _show(what: str, bad) -> str:
    lines = [f"{what}:"] + [f"  {a} -> {b}" for a, b in sorted(bad)]
    print("\n".join(lines))
    return "\n".join(lines)


KNOWN = modules()
EDGES = edges(KNOWN)


def test_the_walk_sees_the_package():
    # the walk finds what it must, so a pass below cannot come from an empty graph
    assert {"emqlab.cli", "emqlab.procs", "emqlab.scenarios.reaper", "emqlab.plot.applied"} <= set(KNOWN)
    assert ("emqlab.cli", "emqlab.backend") in EDGES  # a top-level import
    assert ("emqlab.cli", "emqlab.scenarios.heartbeat") in EDGES  # an import inside a function
    assert ("emqlab.scenarios.reaper", "emqlab.scenarios.base") in EDGES  # a relative import
    assert ("emqlab.plot.applied", "emqlab.plot.style") in EDGES or ("emqlab.plot.applied", "emqlab.plot") in EDGES


def test_every_module_has_a_rank():
    unranked = sorted(m for m in KNOWN if rank(m) is None)
    assert not unranked, f"give these modules a rank in tests/test_layers.py: {unranked}"


def test_no_import_cycle():
    graph: dict[str, set[str]] = {}
    for a, b in EDGES:
        graph.setdefault(a, set()).add(b)
    found = cycles(graph)
    bad = {(a, b) for group in found for a, b in EDGES if a in group and b in group}
    assert not found, _show(f"import cycles {found}", bad)


def test_imports_point_down_or_sideways():
    bad = {(a, b) for a, b in EDGES
           if rank(a) is not None and rank(b) is not None and rank(b) > rank(a)}
    assert not bad, _show("imports from a lower rank to a higher one", bad)


def test_forbidden_arrows():
    def under(module: str, part: str) -> bool:
        return module == f"emqlab.{part}" or module.startswith(f"emqlab.{part}.")

    bad = {(a, b) for a, b in EDGES
           if (under(a, "scenarios") and under(b, "plot")) or (under(a, "plot") and under(b, "scenarios"))
           or (a == "emqlab.procs" and rank(b) != 0)}
    assert not bad, _show("scenarios -> plot, plot -> scenarios or procs -> beyond the model", bad)


def test_argparse_and_plotting_live_where_they_belong():
    """argparse only in the CLI (and the child-process argv of procs); the model and the scenarios
    never import matplotlib or ipywidgets."""
    bad = set()
    for name, path in KNOWN.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            if "argparse" in roots and not (name == "emqlab.procs" or name.split(".")[1].startswith("cli")):
                bad.add((name, "argparse"))
            for lib in roots & {"matplotlib", "ipywidgets", "ipympl"}:
                if rank(name) in (0, 1):
                    bad.add((name, lib))
    assert not bad, _show("argparse outside the CLI, or plotting in the model", bad)


def test_the_checks_catch_what_they_are_for(tmp_path):
    """The walk, on a small made-up package: an upward arrow inside a function, a relative cycle."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "procs.py").write_text("def run():\n    from .scenarios.reaper import x\n")
    (tmp_path / "scenarios" / "reaper.py").write_text("from ..procs import run\nfrom . import base\n")
    (tmp_path / "scenarios" / "base.py").write_text("import emqlab.scenarios.reaper as r\n")
    known = {"emqlab.procs": tmp_path / "procs.py", "emqlab.scenarios.reaper": tmp_path / "scenarios" / "reaper.py",
             "emqlab.scenarios.base": tmp_path / "scenarios" / "base.py"}
    found = edges(known)
    assert found == {("emqlab.procs", "emqlab.scenarios.reaper"), ("emqlab.scenarios.reaper", "emqlab.procs"),
                     ("emqlab.scenarios.reaper", "emqlab.scenarios.base"),
                     ("emqlab.scenarios.base", "emqlab.scenarios.reaper")}
    graph: dict[str, set[str]] = {}
    for a, b in found:
        graph.setdefault(a, set()).add(b)
    assert cycles(graph) == [["emqlab.procs", "emqlab.scenarios.base", "emqlab.scenarios.reaper"]]
    assert rank("emqlab.procs") < rank("emqlab.scenarios.reaper")  # procs -> scenarios points up
    assert rank("emqlab.brand_new") is None  # a new module must be given a rank
