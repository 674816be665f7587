"""One word for one thing, held by reading the package's source (`ast`), never by importing it:

- a run's words have one name each (`headline`, `facts`, `text`, `static`): no Python name in `emqlab/` is
  `summary` (it is only the JSON key `Verdict.headline` is written under), and `told` names only what a holder
  was told (the `told` event, a holder's `told` field), never a run's text;
- every scenario module names its three functions the same way (`verdict`, `words`, `figure_words`), never
  after itself (`stuck_words`);
- one module-level `check` (the `emqlab check` verb's, `scenarios.history.check`);
- every environment variable spelled once, in `core/environment.py`;
- no two modules share a file name unless they are the same kind of thing in parallel packages: a scenario
  and its figure (`scenarios/X.py`, `plot/X.py`), a package and its figure or its verbs (`X/`, `plot/X.py`,
  `cli/X.py`), and the two `__main__.py` entry points.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import pytest

import emqlab

PACKAGE = Path(emqlab.__file__).resolve().parent
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@lru_cache(maxsize=1)
def _trees():
    """Every module of the package, parsed once for the whole file."""
    return [(p, ast.parse(p.read_text(), str(p))) for p in SOURCES]


def _names(tree: ast.AST):
    """Every Python name a module binds or reads: functions, classes, arguments, attributes, variables,
    keyword arguments, dataclass fields, imported names."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, node
        elif isinstance(node, ast.arg):
            yield node.arg, node
        elif isinstance(node, ast.Attribute):
            yield node.attr, node
        elif isinstance(node, ast.Name):
            yield node.id, node
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg, node
        elif isinstance(node, ast.alias):
            yield (node.asname or node.name).rsplit(".", 1)[-1], node


def test_summary_is_only_a_json_key():
    found = [f"{p.relative_to(PACKAGE)}:{n.lineno}" for p, tree in _trees() for name, n in _names(tree)
             if name == "summary"]
    assert found == [], f"`summary` as a Python name (a run's headline is `headline`, its full text `text`): {found}"


def test_told_names_only_what_a_holder_was_told():
    """A run's full text is `text` (`Verdict.text`, `ModeWords.text`, `Timeline.text`, `as_text`); `told` may
    only bind a variable holding a holder's `told`/`work_stopped` event or the holder-told field's JSON name."""
    bad = []
    for p, tree in _trees():
        for name, n in _names(tree):
            if name != "told":
                continue
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Load)):
                continue  # a local: the event that told the holder (checked by reading each below)
            bad.append(f"{p.relative_to(PACKAGE)}:{n.lineno} ({type(n).__name__})")
    assert bad == [], f"`told` as a function, attribute, argument or field: {bad}"


def test_the_locals_named_told_hold_a_told_event():
    """Each `told = …` in the package reads the timeline for the event that told a holder it lost its job."""
    for p, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "told" for t in node.targets):
                text = ast.unparse(node.value)
                assert any(k in text for k in ("Kind.TOLD", "Kind.WORK_STOPPED", "Kind.RENEW_LOST")), \
                    f"{p.relative_to(PACKAGE)}:{node.lineno}: `told = {text}` is not a holder being told"


SCENARIO_FUNCTIONS = ("verdict", "words", "figure_words")


def _scenario_modules() -> list[Path]:
    from emqlab.scenarios import RECORDS

    return sorted({PACKAGE / "scenarios" / f"{module}.py" for module, _, _ in RECORDS.values()
                   if (PACKAGE / "scenarios" / f"{module}.py").exists()})


@pytest.mark.parametrize("path", _scenario_modules(), ids=lambda p: p.stem)
def test_every_scenario_names_its_verdict_words_and_figure_words_the_same_way(path):
    tree = ast.parse(path.read_text())
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assert set(SCENARIO_FUNCTIONS) <= defined, f"{path.name} lacks {set(SCENARIO_FUNCTIONS) - defined}"
    own = [name for name in defined for f in SCENARIO_FUNCTIONS if name == f"{path.stem}_{f}"]
    assert own == [], f"{path.name} names a function after itself: {own}"


def test_the_explore_package_names_its_words_the_same_way():
    from emqlab.scenarios import explore

    assert callable(explore.words) and callable(explore.figure_words) and callable(explore.replay_words)


def test_one_module_level_check():
    checks = [str(p.relative_to(PACKAGE)) for p, tree in _trees() for n in tree.body
              if isinstance(n, ast.FunctionDef) and n.name == "check"]
    assert checks == ["scenarios/history.py"]


def test_every_environment_variable_is_spelled_once():
    spelled = defaultdict(list)
    for p, tree in _trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("EMQLAB_") \
                    and node.value.replace("_", "").isalnum() and node.value.isupper():
                spelled[node.value].append(str(p.relative_to(PACKAGE)))
    assert spelled, "no environment variable found: the walk is broken"
    assert {name: where for name, where in spelled.items() if where != ["core/environment.py"]} == {}


def _parallel(stem: str, paths: list[Path]) -> bool:
    """Same-named modules allowed: a scenario and its figure, a package and its figure or verbs, the entry points."""
    places = {str(p.relative_to(PACKAGE).parent) for p in paths}
    if stem == "__main__":
        return places == {".", "cli"}
    scenario = (PACKAGE / "scenarios" / f"{stem}.py").exists() or (PACKAGE / "scenarios" / stem).is_dir()
    package = (PACKAGE / stem).is_dir()
    allowed = ({"scenarios", "plot"} if scenario else set()) | ({"plot", "cli"} if package else set())
    return len(places) == len(paths) and places <= allowed


def test_no_two_modules_share_a_name_unless_parallel():
    by_name = defaultdict(list)
    for p in SOURCES:
        if p.name != "__init__.py":
            by_name[p.stem].append(p)
    shared = {stem: sorted(str(p.relative_to(PACKAGE)) for p in paths)
              for stem, paths in by_name.items() if len(paths) > 1 and not _parallel(stem, paths)}
    assert shared == {}


def test_the_parallel_rule_refuses_what_it_should():
    assert not _parallel("reaper", [PACKAGE / "queue" / "reaper.py", PACKAGE / "scenarios" / "reaper.py"])
    assert not _parallel("cluster", [PACKAGE / "store" / "cluster.py", PACKAGE / "scenarios" / "cluster.py"])
    assert _parallel("heartbeat", [PACKAGE / "plot" / "heartbeat.py", PACKAGE / "scenarios" / "heartbeat.py"])
    assert _parallel("tools", [PACKAGE / "plot" / "tools.py", PACKAGE / "cli" / "tools.py"])
