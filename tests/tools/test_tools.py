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
    assert list(tools.libraries()) == ["celery", "bullmq", "rq", "redis-lock", "python-redis-lock"]
    for library, entry in tools.libraries().items():
        mod = tools.module(library)
        assert mod.__name__ == f"emqlab.tools.{entry.run}_run" and callable(getattr(mod, entry.run))
        assert mod.LIBRARY.name == library and issubclass(mod.VERDICT, ToolVerdict)
        # the caption names emqlab's own run only in a figure that draws it
        assert tools.figure_words(library)({}).caption == mod.CAPTION.replace(mod.OURS, "")
        assert "emqlab" not in tools.figure_words(library)({}).caption and mod.OURS in mod.CAPTION


@pytest.mark.parametrize("path", sorted(RUNS.glob("*.json")), ids=lambda p: p.stem)
def test_a_recorded_run_reads_back_typed_with_the_json_the_issue_asks(path):
    data = json.loads(path.read_text())
    assert {"library", "version", "params", "events", "verdict"} <= set(data)
    assert {"runs", "effects", "lost", "holders_at_once", "told", "summary"} <= set(data["verdict"])
    tl = tools.load(data)
    assert isinstance(tl.verdict, tools.module(data["library"]).VERDICT)
    assert tl.verdict.to_dict() == data["verdict"] and tl.to_dict()["verdict"] == data["verdict"]
    assert tl.verdict.holder_told == data["verdict"]["told"] and tl.params.to_dict() == data["params"]


def test_a_runs_workers_are_named_in_the_order_they_took_the_job():
    """Issue 35: the worker that took the job first is worker-1, whichever process the library handed it to, so
    a figure's lanes and its words ("the first worker") agree; every event of a worker follows its new name."""
    from emqlab.core.timeline import Timeline
    from emqlab.tools.story import by_first_take

    tl = Timeline("tools-celery", {})
    for t, actor, kind in [(0.0, "producer", "send"), (0.1, "worker-2", "start"), (1.0, "worker-2", "crash"),
                           (5.2, "worker-1", "start"), (8.2, "worker-1", "end"), (8.3, "worker-3", "idle")]:
        tl.add(t, actor, kind)
    by_first_take(tl)
    assert [(e.actor, e.kind) for e in tl.events] == [
        ("producer", "send"), ("worker-1", "start"), ("worker-1", "crash"), ("worker-2", "start"),
        ("worker-2", "end"), ("worker-3", "idle")]
    tl = Timeline("tools-bullmq", {})
    tl.add(0.1, "worker-2", "start")  # the only worker that took it, the other never showed
    by_first_take(tl)
    assert [e.actor for e in tl.events] == ["worker-1"]
