"""The clock owns time: outside `emqlab/store/` no code does arithmetic with a scale (a `BinOp` or an augmented
assignment with a name or attribute called `scale` as an operand, or `getattr(…, "scale")`), the scale is
range-checked in one place (`store_spec`), and a run's store travels as one StoreSpec, never as loose keyword
arguments. Read from the package's AST; the planted snippets show each rule can fail."""

from __future__ import annotations

import ast
import inspect
import textwrap
from importlib import import_module

import pytest

from emqlab.scenarios import RECORDS
from support.layers import PACKAGE, places, trees

STORE = PACKAGE / "store"


def _is_scale(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "scale") or (isinstance(node, ast.Attribute) and node.attr == "scale")


def _holds_scale(node: ast.AST) -> bool:
    """A scale anywhere in an operand: `clock.scale`, and `float(clock.scale)` or `(clock.scale or 1)` alike."""
    return any(_is_scale(n) for n in ast.walk(node))


def scale_arithmetic(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, source) of each place `tree` computes with a scale, or copies one under another name (where an
    alias would hide it from the rest of the walk)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and (_holds_scale(node.left) or _holds_scale(node.right)):
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.AugAssign) and (_holds_scale(node.target) or _holds_scale(node.value)):
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Assign) and _is_scale(node.value) and not all(_is_scale(t) for t in node.targets):
            found.append((node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and node.args[1].value == "scale"):
            found.append((node.lineno, ast.unparse(node)))
    return found


def scale_checks(tree: ast.AST) -> list[int]:
    """Lines that range-check a scale: `within("scale", …)`, bare or as `ranges.within`."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and node.args[0].value == "scale":
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name == "within":
                lines.append(node.lineno)
    return lines


def test_no_code_outside_the_store_computes_with_a_scale():
    found = places(scale_arithmetic, outside=STORE)
    assert not found, "convert through the clock (real_s, model_s, to_server_ms, from_server_ms):\n" + "\n".join(found)


def test_the_scale_is_range_checked_in_one_place():
    found = [(path.relative_to(PACKAGE), line) for path, tree in trees() for line in scale_checks(tree)]
    assert len(found) == 1 and found[0][0].as_posix() == "store/backend.py", found
    spec_source = inspect.getsource(import_module("emqlab.store.backend").store_spec)
    assert 'within("scale"' in spec_source


@pytest.mark.parametrize("snippet", [
    "t = elapsed / clock.scale", "ms = 1000 * scale", "x *= self.scale", "f = getattr(clock, 'scale') or 1",
    "t = elapsed / float(clock.scale)", "t = elapsed / (clock.scale or 1)", "factor = run.clock.scale",
])
def test_the_walk_finds_each_kind_of_arithmetic(snippet):
    assert scale_arithmetic(ast.parse(textwrap.dedent(snippet)))


def test_the_walk_lets_a_scale_be_read_and_passed_on():
    tree = ast.parse("spec = store_spec(url, scale=backend.clock.scale)\nprint(f'{clock.scale:g}')\n"
                     "real = clock.real_s(model)")
    assert not scale_arithmetic(tree)
    assert scale_checks(ast.parse("within('scale', x)\nranges.within('scale', y)\nwithin('lease', z)")) == [1, 2]


# a scale of their own, each for its reason: a failover runs on servers it starts, at a scale slower than the
# common default (its lag); the search records the scale its replay will run at; the replay may run slower
OWN_SCALE = {"failover", "explore", "replay"}


def test_every_scenario_takes_its_store_as_one_argument():
    run_of = {"cluster": "placement"}  # the one scenario whose run is not named after its module
    modules = {module for module, _, _ in RECORDS.values()}
    runs = {module: getattr(import_module(f"emqlab.scenarios.{module}"), run_of.get(module, module))
            for module in modules}
    runs["replay"] = import_module("emqlab.scenarios.explore").replay
    assert len(runs) == len(modules) + 1  # each module's run, and the replay
    for name, run in [*runs.items(), ("run_on", import_module("emqlab.scenarios.run_harness").run_on)]:
        params = inspect.signature(run).parameters.values()
        assert inspect.Parameter.VAR_KEYWORD not in {p.kind for p in params}, f"{name} takes **kwargs"
        assert "clock" not in {p.name for p in params}, f"{name} takes a clock beside its store"
        assert name in OWN_SCALE or "scale" not in {p.name for p in params}, f"{name} takes a scale beside its store"


def test_a_consumer_process_is_given_no_scale_of_its_own():
    procs = PACKAGE / "queue" / "procs.py"
    texts = {n.value for n in ast.walk(ast.parse(procs.read_text(encoding="utf-8"))) if isinstance(n, ast.Constant)}
    assert "--scale" not in texts and "--spec" not in texts  # the spec travels in the child's environment
    assert "CHILD_STORE_ENV" in procs.read_text(encoding="utf-8")
