"""The package read as text: its layers (`LAYERS`, `MODEL`, `CLASSROOM`, `rank`), its modules, their ASTs and
their imports (`modules`, `trees`, `places`, `imports`, `edges`), and what breaks the layering (`cycles`, `upward`)."""

from __future__ import annotations

import ast
from pathlib import Path

import emqlab


# -- the package, read as text ------------------------------------------------------------------
PACKAGE = Path(emqlab.__file__).resolve().parent


# bottom first: a package may import from itself and from the ones before it, never after
LAYERS = ("core", "store", "faults", "lease", "queue", "scenarios", "tools", "plot", "view", "classroom", "course", "cli")


MODEL = LAYERS[:LAYERS.index("tools") + 1]  # never imports matplotlib or ipywidgets


# the class on one server is one folder with its own small stack, bottom first
CLASSROOM = {"server": 0, "board": 1, "learner": 2, "draw": 2, "dashboard": 3, "practice": 3}


def rank(module: str) -> int | None:
    """The package's place in LAYERS; `emqlab` itself (its face) and `emqlab.__main__` sit on top.
    None: a module outside every layer (give its folder a place in LAYERS, on purpose)."""
    parts = module.split(".")[1:]
    if not parts or parts == ["__main__"]:
        return len(LAYERS)
    return LAYERS.index(parts[0]) if parts[0] in LAYERS else None


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = ["emqlab", *rel.parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def trees():
    """(path, parsed AST) of every module of the package, in path order: what the AST walks of the tests read."""
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def places(walk, outside: Path | None = None) -> list[str]:
    """"path:line: what" for each (line, what) that `walk(tree)` finds in the package's modules, those under the
    folder `outside` left out."""
    return [f"{path.relative_to(PACKAGE.parent)}:{line}: {what}" for path, tree in trees()
            if outside is None or outside not in path.parents for line, what in walk(tree)]


def imports(known: dict[str, Path]):
    """(importer, imported module, the names taken from it) for every import of one emqlab module by another."""
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [(alias.name, ()) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod itself
                targets = [(f"{source}.{a.name}", ()) if f"{source}.{a.name}" in known else (source, (a.name,))
                           for a in node.names]
            for target, names in targets:
                while target and target not in known and "." in target:
                    target = target.rpartition(".")[0]  # `import emqlab.plot.style as s` → that module
                if target in known and target != name:
                    yield name, target, names


def edges(known: dict[str, Path]) -> set[tuple[str, str]]:
    return {(a, b) for a, b, _ in imports(known)}


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


def upward(a: str, b: str) -> bool:
    """Whether the edge a -> b points up: to a later package, or inside classroom/ to a later module."""
    ra, rb = rank(a), rank(b)
    if ra is None or rb is None:
        return False
    if rb != ra:
        return rb > ra
    pa, pb = a.split("."), b.split(".")
    if pa[1] == pb[1] == "classroom" and len(pa) > 2 and len(pb) > 2:
        return CLASSROOM[pb[2]] > CLASSROOM[pa[2]]
    return False
