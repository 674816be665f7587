"""`emqlab check` and `emqlab explore` as users script them: the JSON fields, exit 1 for a history that broke
an invariant (named, with its window of events), exit 0 for every fenced run the lessons make, and bad input
as one line with exit 2."""

from __future__ import annotations

import json

import pytest

from emqlab.cli.command import main
from emqlab.scenarios.fencing import fencing
from emqlab.scenarios.heartbeat import heartbeat
from emqlab.scenarios.reaper import queue_heartbeat, reaper
from emqlab.scenarios.stuck import stuck

EXPLORE_FIELDS = {"states", "transitions", "depth_reached", "complete", "violations", "counterexample", "invariant",
                  "seconds", "summary"}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


PLANTED = {"scenario": "by hand", "events": [
    {"t": 0, "actor": "w1", "kind": "claim", "job": "order-7", "attempts": 1},
    {"t": 2, "actor": "w1", "kind": "effect", "job": "order-7", "attempts": 1},
    {"t": 31, "actor": "w2", "kind": "reap", "jobs": ["order-7"]},
    {"t": 31, "actor": "w2", "kind": "claim", "job": "order-7", "attempts": 2},
    {"t": 33, "actor": "w2", "kind": "effect", "job": "order-7", "attempts": 2}]}


def test_a_planted_double_effect_exits_1_and_names_it(capsys, tmp_path):
    code, out, err = run(capsys, "check", write(tmp_path, "h.json", PLANTED))
    assert code == 1 and not err
    assert out.startswith("the by hand history: one_effect broke: job order-7's effect was applied twice (by w1, then w2).")
    assert "one_effect, events 1–4:" in out and "[4] t=33 w2 effect job=order-7 attempts=2" in out


def test_check_json_gives_each_violation_and_its_window(capsys, tmp_path):
    code, out, _ = run(capsys, "check", write(tmp_path, "h.json", PLANTED), "--json")
    data = json.loads(out)
    assert code == 1 and data["scenario"] == "by hand" and data["events"] == 5
    [v] = data["violations"]
    assert (v["invariant"], v["job"], v["first"], v["last"]) == ("one_effect", "order-7", 1, 4)
    assert [e["kind"] for e in data["windows"][0]] == ["effect", "reap", "claim", "effect"]


def test_check_plots_the_window(capsys, tmp_path):
    png = tmp_path / "window.png"
    code, _, _ = run(capsys, "check", write(tmp_path, "h.json", PLANTED), "--plot", str(png))
    assert code == 1 and png.stat().st_size > 10_000


def fenced_runs():
    """Every fenced run the lessons make (the sessions, reaper and fencing lessons; the first lesson's renewed one)."""
    runs = {"heartbeat half": heartbeat(lease=30, job=75, renew="half"),
            "reaper": reaper(lease=30, beat=5, job=20, crash_at=10),
            "queue heartbeat none": queue_heartbeat(renew="none"), "queue heartbeat half": queue_heartbeat(renew="half"),
            "fencing on": fencing(fencing="on", pause="5:30")}
    for design, max_runtime in (("none", None), ("sweep", None), ("session", None), ("session", 120)):
        runs[f"stuck {design} {max_runtime}"] = stuck(design=design, max_runtime=max_runtime)
    return runs


def test_every_fenced_run_the_lessons_make_exits_0(capsys, tmp_path):
    for name, tl in fenced_runs().items():
        code, out, _ = run(capsys, "check", write(tmp_path, "run.json", tl.to_dict()))
        assert code == 0, (name, out)
        assert "every invariant checked held" in out


def test_lesson_01s_no_renewal_run_names_the_double_run(capsys, tmp_path):
    tl = heartbeat(lease=30, job=75, renew="none")
    code, out, _ = run(capsys, "check", write(tmp_path, "run.json", tl.to_dict()))
    assert code == 1
    assert "the job ran to its end twice (by holder, then contender): a double run" in out


@pytest.mark.parametrize("content, says", [
    ("not json", "is not JSON"),
    ("[1, 2]", "is not a JSON object with an `events` list"),
    ('{"events": "none"}', "a history is a JSON object with an `events` list"),
    ('{"events": [{"t": 0, "actor": "w1"}]}', "event 0 of the history has no 'kind'"),
    ('{"events": [{"t": "noon", "actor": "w1", "kind": "claim"}]}', "t is a number of seconds"),
])
def test_a_malformed_history_is_one_line_exit_2(capsys, tmp_path, content, says):
    path = tmp_path / "bad.json"
    path.write_text(content)
    code, out, err = run(capsys, "check", str(path))
    assert code == 2 and not out and err.count("\n") == 1 and says in err and err.startswith("emqlab: error: ")


def test_a_missing_history_file_is_one_line_exit_2(capsys, tmp_path):
    code, _, err = run(capsys, "check", str(tmp_path / "none.json"))
    assert code == 2 and "no history file at" in err


def test_explore_json_has_the_issue_fields(capsys):
    code, out, _ = run(capsys, "explore", "--fencing", "off", "--depth", "8", "--json")
    data = json.loads(out)
    assert code == 0 and EXPLORE_FIELDS <= set(data)
    assert data["invariant"] == "one_effect" and len(data["counterexample"]) == 6 and data["replay"] is None
    assert data["params"]["fencing"] == "off" and data["complete"] is True


@pytest.mark.parametrize("argv, says", [
    (["--design", "bogus"], "argument --design: invalid choice: 'bogus'"),
    (["--depth", "25"], "depth must be a whole number from 1 to 24 steps, got 25"),
    (["--depth", "ten"], "invalid int value: 'ten'"),
    (["--script", "extend_active"], "--script takes NAME=FILE"),
    (["--script", "extend_active=/nowhere/x.lua"], "is not a readable file"),
])
def test_explore_bad_input_is_one_line_exit_2(capsys, argv, says):
    code, out, err = run(capsys, "explore", *argv)
    assert code == 2 and not out and err.count("\n") == 1 and says in err
