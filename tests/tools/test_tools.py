"""Issue 21: the package's face (emqlab.tools): one registry of the libraries, each run's JSON read back typed,
the lesson's runs of a library named by mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import emqlab.tools as tools
from emqlab.tools.story import ToolVerdict

RUNS = Path(__file__).resolve().parent / "runs"  # recorded with `emqlab tools … --json`


def test_the_registry_names_each_library_once_and_its_module_runs_it():
    assert list(tools.LIBRARIES) == ["celery", "bullmq", "rq", "redis-lock", "python-redis-lock"]
    for library, entry in tools.LIBRARIES.items():
        mod = tools.module(library)
        assert mod.__name__ == f"emqlab.tools.{entry.module}" and callable(getattr(mod, entry.function))
        assert mod.LIBRARY == library and issubclass(mod.VERDICT, ToolVerdict)
        assert set(entry.runs) >= {"failure"} and any(mode.startswith("fix") for mode in entry.runs)
        assert tools.figure_words(library)({}).caption == mod.CAPTION


@pytest.mark.parametrize("path", sorted(RUNS.glob("*.json")), ids=lambda p: p.stem)
def test_a_recorded_run_reads_back_typed_with_the_json_the_issue_asks(path):
    data = json.loads(path.read_text())
    assert {"library", "version", "params", "events", "verdict"} <= set(data)
    assert {"runs", "effects", "lost", "holders_at_once", "told", "summary"} <= set(data["verdict"])
    tl = tools.load(data)
    assert isinstance(tl.verdict, tools.module(data["library"]).VERDICT)
    assert tl.verdict.to_dict() == data["verdict"] and tl.to_dict()["verdict"] == data["verdict"]
    assert tl.verdict.holder_told == data["verdict"]["told"] and tl.params.to_dict() == data["params"]
