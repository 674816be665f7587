"""The package's folders are its layers, and imports point one way: down the list in `LAYERS`.

Every module of `emqlab` is read with `ast` (no import is executed): each `import` and
`from … import …`, at the top or inside a function, relative ones resolved, becomes an edge between
two emqlab modules. The test fails, printing the offending edges, on a cycle, on an edge that points
from a lower package to a higher one (or, inside the vertical slice `classroom/`, from a lower
module to a higher one), on the arrows the design forbids outright, and on an import of another
module's `_private` name.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support.layers import CLASSROOM, LAYERS, MODEL, cycles, edges, imports, modules, rank, upward


def _show(what: str, bad) -> str:
    lines = [f"{what}:"] + [f"  {a} -> {b}" for a, b in sorted(bad)]
    print("\n".join(lines))
    return "\n".join(lines)


KNOWN = modules()
EDGES = edges(KNOWN)


def test_the_walk_sees_the_package():
    # the walk finds what it must, so a pass below cannot come from an empty graph
    assert {"emqlab.cli.command", "emqlab.queue.procs", "emqlab.scenarios.reaper", "emqlab.plot.applied"} <= set(KNOWN)
    assert ("emqlab.cli.command", "emqlab.store.backend") in EDGES  # a top-level import
    assert ("emqlab.cli.lease", "emqlab.scenarios.heartbeat") in EDGES  # an import inside a function
    assert ("emqlab.scenarios.reaper", "emqlab.scenarios.run_harness") in EDGES  # a relative import
    assert ("emqlab.plot.applied", "emqlab.plot.style") in EDGES or ("emqlab.plot.applied", "emqlab.plot") in EDGES
    assert {m.split(".")[1] for m in KNOWN if m.count(".")} >= set(LAYERS)  # every layer is a folder


def test_the_folders_are_the_layers():
    """Every module lives in a layer's folder (none flat beside them but the package's face), and every
    module of the classroom slice has its place in the slice."""
    flat = sorted(m for m in KNOWN if rank(m) is None)
    assert not flat, f"modules outside every layer's folder (give each a folder in LAYERS): {flat}"
    slice_ = {m.split(".")[2] for m in KNOWN if m.startswith("emqlab.classroom.")}
    assert slice_ == set(CLASSROOM), f"classroom modules without a place in CLASSROOM: {slice_ ^ set(CLASSROOM)}"


def test_no_import_cycle():
    graph: dict[str, set[str]] = {}
    for a, b in EDGES:
        graph.setdefault(a, set()).add(b)
    found = cycles(graph)
    bad = {(a, b) for group in found for a, b in EDGES if a in group and b in group}
    assert not found, _show(f"import cycles {found}", bad)


def test_imports_point_down_or_sideways():
    bad = {(a, b) for a, b in EDGES if upward(a, b)}
    assert not bad, _show("imports from a lower layer to a higher one", bad)


def test_forbidden_arrows():
    def under(module: str, part: str) -> bool:
        return module == f"emqlab.{part}" or module.startswith(f"emqlab.{part}.")

    bad = {(a, b) for a, b in EDGES
           if (under(a, "plot") and under(b, "scenarios"))
           or (a == "emqlab.queue.procs" and rank(b) > LAYERS.index("queue"))}
    assert not bad, _show("plot -> scenarios (a drawing reads Timelines), or procs -> beyond the model", bad)


def test_no_module_takes_another_modules_private_name():
    """`from x import _name` across modules reaches into x's insides: a name another module needs is public."""
    bad = {(a, f"{b}.{n}") for a, b, names in imports(KNOWN) for n in names if n.startswith("_")}
    assert not bad, _show("private names imported from another module", bad)


def test_no_module_calls_another_modules_private_attribute():
    """`obj._name` for a name the module does not define itself (`queue._reap_slice`, `c._server_s` in
    another module than the object's) reaches into another module's insides. `self._x`, a name the
    module defines (a function, a class, an attribute it sets, a slot) and dunder names are allowed."""
    bad = set()
    for name, path in KNOWN.items():
        tree = ast.parse(path.read_text(), str(path))
        own = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("_"):
                own.add(node.value)  # __slots__ entries
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and node.attr not in own and not (isinstance(node.value, ast.Name) and node.value.id == "self")):
                bad.add((name, f"{ast.unparse(node)} (line {node.lineno})"))
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "setattr")
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                    and str(node.args[1].value).startswith("_") and not str(node.args[1].value).startswith("__")):
                bad.add((name, f"{ast.unparse(node)} (line {node.lineno})"))  # the same reach, by name
    assert not bad, _show("private attributes reached from outside their object", bad)


def test_no_class_overrides_another_modules_private_method():
    """A subclass that redefines `_x` of a base class from another module depends on that module's
    insides: a method meant to be overridden is public and says so (as redis-py's `Lock.do_extend`)."""
    methods = {}  # (module, class) -> its method names
    for name, path in KNOWN.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                methods[(name, node.name)] = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
    taken = {(a, n): b for a, b, names in imports(KNOWN) for n in names}  # (importer, name) -> its module
    bad = set()
    for name, path in KNOWN.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                if not isinstance(base, ast.Name):
                    continue
                home = taken.get((name, base.id))
                inherited = methods.get((home, base.id), set())
                for f in methods[(name, node.name)] & inherited:
                    if f.startswith("_") and not f.startswith("__"):
                        bad.add((f"{name}.{node.name}.{f}", f"{home}.{base.id}"))
    assert not bad, _show("private methods of another module's class overridden", bad)


def test_argparse_and_plotting_live_where_they_belong():
    """argparse only in the CLI (and the child-process argv of queue.procs); the model and the
    scenarios never import matplotlib or ipywidgets."""
    bad = set()
    for name, path in KNOWN.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            if "argparse" in roots and not (name == "emqlab.queue.procs" or name.startswith("emqlab.cli")):
                bad.add((name, "argparse"))
            for lib in roots & {"matplotlib", "ipywidgets", "anywidget"}:
                if name.count(".") and name.split(".")[1] in MODEL:
                    bad.add((name, lib))
    assert not bad, _show("argparse outside the CLI, or plotting in the model", bad)


def test_the_checks_catch_what_they_are_for(tmp_path):
    """The walk, on a small made-up package: an upward arrow inside a function, a relative cycle, a
    private name taken across modules, an upward arrow inside the classroom slice."""
    for folder in ("queue", "scenarios", "classroom"):
        (tmp_path / folder).mkdir()
    (tmp_path / "queue" / "procs.py").write_text("def run():\n    from ..scenarios.reaper import x\n")
    (tmp_path / "scenarios" / "reaper.py").write_text("from ..queue.procs import run, _child\nfrom . import run_harness\n")
    (tmp_path / "scenarios" / "run_harness.py").write_text("import emqlab.scenarios.reaper as r\n")
    (tmp_path / "classroom" / "server.py").write_text("from .board import Board\n")
    (tmp_path / "classroom" / "board.py").write_text("x = 1\n")
    known = {"emqlab.queue.procs": tmp_path / "queue" / "procs.py",
             "emqlab.scenarios.reaper": tmp_path / "scenarios" / "reaper.py",
             "emqlab.scenarios.run_harness": tmp_path / "scenarios" / "run_harness.py",
             "emqlab.classroom.server": tmp_path / "classroom" / "server.py",
             "emqlab.classroom.board": tmp_path / "classroom" / "board.py"}
    found = edges(known)
    assert found == {("emqlab.queue.procs", "emqlab.scenarios.reaper"), ("emqlab.scenarios.reaper", "emqlab.queue.procs"),
                     ("emqlab.scenarios.reaper", "emqlab.scenarios.run_harness"),
                     ("emqlab.scenarios.run_harness", "emqlab.scenarios.reaper"),
                     ("emqlab.classroom.server", "emqlab.classroom.board")}
    graph: dict[str, set[str]] = {}
    for a, b in found:
        graph.setdefault(a, set()).add(b)
    assert cycles(graph) == [["emqlab.queue.procs", "emqlab.scenarios.reaper", "emqlab.scenarios.run_harness"]]
    assert upward("emqlab.queue.procs", "emqlab.scenarios.reaper")  # queue -> scenarios points up
    assert not upward("emqlab.scenarios.reaper", "emqlab.queue.procs")
    assert upward("emqlab.classroom.server", "emqlab.classroom.board")  # inside the slice, up
    assert rank("emqlab.brand_new") is None  # a new flat module has no layer
    taken = {(a, n) for a, b, names in imports(known) for n in names if n.startswith("_")}
    assert taken == {("emqlab.scenarios.reaper", "_child")}


def test_every_layer_has_tests_of_its_own_that_import_it():
    """tests/<folder>/ mirrors emqlab/<folder>/: each layer has a test folder whose files import the layer."""
    tests = Path(__file__).resolve().parent
    missing = []
    for layer in LAYERS:
        imported = set()
        for path in (tests / layer).glob("test_*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    imported.add(node.module)
                elif isinstance(node, ast.Import):
                    imported.update(a.name for a in node.names)
        if not any(m == f"emqlab.{layer}" or m.startswith(f"emqlab.{layer}.") for m in imported):
            missing.append(layer)
    assert not missing, f"layers with no test folder importing them: {missing}"
