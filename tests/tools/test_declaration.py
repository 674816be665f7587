"""Issue 39: a library declares itself once, in its module's record (`emqlab.tools.declaration.Library`), and
everything that lists the libraries reads the records: the verb's choices, flags and help, tools_repeat's cases,
the docs' table, the versions line, the `tools` extra."""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from pathlib import Path

import pytest

import emqlab.tools as tools
from emqlab.cli.command import build_parser
from emqlab.core.errors import BadParameter
from emqlab.tools.declaration import docs_table

ROOT = Path(__file__).resolve().parents[2]

DUMMY = '''
from emqlab.tools.declaration import Library, Option, Repeat

LIBRARY = Library(
    name="dummy-queue", title="Dummy Queue", place=99, run="dummy", imports="dummy_queue", distribution="dummy-queue",
    requires={"dummy-queue": "dummy-queue>=1,<2"}, task="4", timeout="ack_deadline (default 1)",
    options=(Option("wobble", "dummy-queue only: wobble the worker"),),
    counterpart=("fencing", {"fencing": "on"}),
    failure="a dummy failure cell", fix="a dummy fix cell",
    repeats=(Repeat((), "dummy claim holds", lambda v: v["runs"] == 1, ("runs",)),),
)


def dummy(fix=False, timeout=None, task=None, wobble=False):
    raise RuntimeError("not a real library")
'''


def repeat_module():
    spec = importlib.util.spec_from_file_location("tools_repeat", ROOT / "benchmarks" / "tools_repeat.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def with_dummy(tmp_path, monkeypatch):
    """One more library module on the package's path, `dummy_run.py`, holding only its record and its run
    function: nothing else in the project is edited."""
    (tmp_path / "dummy_run.py").write_text(DUMMY)
    monkeypatch.setattr(tools, "__path__", [*tools.__path__, str(tmp_path)])
    monkeypatch.setenv("COLUMNS", "400")  # argparse wraps the help to the terminal; a hyphen may break a line
    tools.libraries.cache_clear()
    yield
    tools.libraries.cache_clear()
    sys.modules.pop("emqlab.tools.dummy_run", None)
    if hasattr(tools, "dummy_run"):  # an imported submodule is an attribute of its package
        delattr(tools, "dummy_run")


def tools_help() -> tuple[str, str]:
    """(`emqlab tools --help`, `emqlab --help`), as the parser prints them."""
    parser = build_parser()
    sub = next(a for a in parser._subparsers._group_actions if a.choices and "tools" in a.choices)
    return sub.choices["tools"].format_help(), parser.format_help()


def test_a_new_record_is_in_the_help_the_choices_tools_repeat_and_the_docs_table(with_dummy):
    assert list(tools.libraries())[-1] == "dummy-queue"
    verb, top = tools_help()
    flat = " ".join(verb.split())
    assert "dummy-queue" in re.search(r"\{(celery,[^}]*)\}", verb).group(1).split(",")  # the verb's choices
    assert "--wobble" in flat and "dummy-queue only: wobble the worker" in flat
    assert "dummy-queue 4" in flat and "dummy-queue's ack_deadline (default 1)" in flat
    assert "Dummy Queue" in " ".join(top.split())
    args = build_parser().parse_args(["tools", "dummy-queue", "--wobble", "--backend", "valkey"])
    assert args.library == "dummy-queue" and args.tools_wobble is True
    assert ("dummy-queue", (), "dummy claim holds") in [c[:3] for c in repeat_module().cases()]
    assert "| `dummy-queue` | a dummy failure cell | a dummy fix cell |" in docs_table(tools.libraries()).splitlines()
    assert tools.versions()["dummy-queue"].startswith("not installed")
    with pytest.raises(BadParameter, match="celery's run takes no --wobble"):
        tools.run("celery", wobble=True)


def test_without_the_new_module_the_lists_are_the_five_again():
    assert list(tools.libraries()) == ["celery", "bullmq", "rq", "redis-lock", "python-redis-lock"]
    assert "dummy" not in tools_help()[0]


def test_the_docs_table_is_the_records_table():
    assert docs_table(tools.libraries()) in (ROOT / "docs" / "libraries.md").read_text(encoding="utf-8")


def test_the_tools_extra_is_the_records_requirements():
    """The one list outside the records: pyproject's `tools` extra (pip reads it), kept in step with them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = {r for lib in tools.libraries().values() for r in lib.requires.values()}
    pinned = {r for r in required if re.search(r"[<>=]", r)}
    assert set(project["optional-dependencies"]["tools"]) == pinned
    named = {tools.requirement_name(d) for d in project["dependencies"]}
    assert {r for r in required - pinned} <= named


def test_each_record_names_a_module_that_runs_it():
    for name, lib in tools.libraries().items():
        mod = tools.module(name)
        assert mod.LIBRARY is lib and callable(getattr(mod, lib.run))
        assert set(lib.runs) >= {"failure"} and any(mode.startswith("fix") for mode in lib.runs)
        assert lib.repeats and all(case.claim for case in lib.repeats)
