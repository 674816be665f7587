"""`emqlab check` and `emqlab explore` as users script them: the JSON fields, exit 1 for a history that broke
an invariant (named, with its window of events), exit 0 for every fenced run the lessons make (each invariant
reported held or not evaluated, never all held when some were not), a history with nothing to judge and bad
input as one line with exit 2."""

from __future__ import annotations

import json

import pytest

from emqlab.cli.command import main
from emqlab.scenarios.fencing import fencing
from emqlab.scenarios.heartbeat import heartbeat
from emqlab.scenarios.queue_heartbeat import queue_heartbeat
from emqlab.scenarios.reaper import reaper
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


def test_every_fenced_run_the_lessons_make_exits_0_and_names_what_it_could_not_evaluate(capsys, tmp_path):
    from emqlab.core.words import HEADLINE_WORDS, headline_words

    for name, tl in fenced_runs().items():
        code, out, _ = run(capsys, "check", write(tmp_path, "run.json", tl.to_dict()), "--json")
        data = json.loads(out)
        assert code == 0 and not data["violations"], (name, data["summary"])
        statuses = data["statuses"]
        assert list(statuses) == data["checked"] and {s["status"] for s in statuses.values()} == {"held",
                                                                                                  "not evaluated"}
        # no run of these writes snapshot events: where each job is was never judged, and the words say so
        unseen = {"status": "not evaluated", "why": "no snapshot events"}
        assert statuses["one_place"] == statuses["never_lost"] == unseen
        held = [n for n, s in statuses.items() if s["status"] == "held"]
        assert "every invariant" not in data["summary"] and "not evaluated" in data["summary"], name
        assert f"held: {', '.join(held)}" in data["facts"]
        assert ("not evaluated (no snapshot events): one_place, never_lost, done_has_effect, lease_kept, "
                "sessions_agree") in data["facts"]
        assert headline_words(data["summary"]) <= HEADLINE_WORDS, data["summary"]
    code, out, _ = run(capsys, "check", write(tmp_path, "run.json", fenced_runs()["reaper"].to_dict()))
    assert out.startswith("the reaper history (")
    assert "attempts_grow, no_resurrection and current_fence held; " in out.splitlines()[0]


STALE = {"scenario": "stale", "events": [
    {"t": 0, "actor": "w1", "kind": "claim", "job": "J1", "attempts": 1},
    {"t": 31, "actor": "w2", "kind": "claim", "job": "J1", "attempts": 2},
    {"t": 32, "actor": "w1", "kind": "complete", "job": "J1", "attempts": 1},
    {"t": 33, "actor": "w1", "kind": "complete", "job": "J1", "attempts": 1}]}


def test_attempts_1_accepted_after_2_was_handed_out_exits_1_naming_the_fencing_rule(capsys, tmp_path):
    code, out, err = run(capsys, "check", write(tmp_path, "h.json", STALE))
    assert code == 1 and not err
    assert out.startswith("the stale history: current_fence broke: the store accepted job J1's holder of attempts 1 "
                          "after attempts 2 was handed out: a stale fencing value.")
    assert "current_fence, events 1–2:" in out
    code, out, _ = run(capsys, "check", write(tmp_path, "h.json", STALE), "--json")
    data = json.loads(out)
    assert code == 1 and data["statuses"]["current_fence"] == {"status": "broken", "why": None}
    assert data["statuses"]["attempts_grow"] == {"status": "held", "why": None}


def test_a_history_with_no_snapshot_events_never_says_every_invariant_held(capsys, tmp_path):
    events = STALE["events"][:2] + [{"t": 40, "actor": "w2", "kind": "complete", "job": "J1", "attempts": 2}]
    code, out, _ = run(capsys, "check", write(tmp_path, "h.json", {"scenario": "fenced", "events": events}))
    headline = out.splitlines()[0]
    assert code == 0 and "every" not in headline
    assert headline == ("the fenced history (3 events): attempts_grow and current_fence held; one_place, never_lost, "
                        "one_effect, no_resurrection, done_has_effect, lease_kept, sessions_agree, lease_granted, "
                        "reap_told and limit_kept not evaluated.")
    assert "· not evaluated (no effects recorded): one_effect" in out


def test_a_history_with_nothing_to_judge_is_one_line_exit_2(capsys, tmp_path):
    bare = {"scenario": "log", "events": [{"t": 0, "actor": "w1", "kind": "hello"},
                                          {"t": 1, "actor": "w1", "kind": "bye"}]}
    code, out, err = run(capsys, "check", write(tmp_path, "h.json", bare))
    assert code == 2 and not out and err.count("\n") == 1 and err.startswith("emqlab: error: ")
    assert "the log history (2 events) gives no invariant anything to judge: no snapshot events; " in err
    # the invariants asked for decide: one that this history cannot judge is refused the same way
    code, out, err = run(capsys, "check", write(tmp_path, "h.json", STALE), "--invariant", "one_place")
    assert code == 2 and not out and "gives no invariant anything to judge: no snapshot events (" in err


def test_a_snapshot_history_is_judged_by_every_invariant_it_carries(capsys, tmp_path):
    row = {"places": ["done"], "state": "done", "attempts": 1}
    events = [{"t": 0, "actor": "w1", "kind": "claim", "job": "J", "attempts": 1, "deadline": 30},
              {"t": 1, "actor": "w1", "kind": "complete", "job": "J", "attempts": 1},
              {"t": 1, "actor": "store", "kind": "snapshot", "jobs": {"J": row}, "effects": {}, "held": {},
               "sessions": []}]
    code, out, _ = run(capsys, "check", write(tmp_path, "h.json", {"scenario": "dropped", "events": events}), "--json")
    data = json.loads(out)
    assert code == 1 and [v["invariant"] for v in data["violations"]] == ["done_has_effect"]
    assert data["statuses"]["sessions_agree"]["status"] == "held"
    events[2]["effects"] = {"J": 1}
    code, out, _ = run(capsys, "check", write(tmp_path, "h.json", {"scenario": "kept", "events": events}))
    assert code == 0 and out.startswith("the kept history (3 events): one_place, never_lost, attempts_grow, ")
    assert "· not evaluated (no refusals): no_resurrection" in out
    events[2]["jobs"] = {"J": {"places": "done", "attempts": "one"}}
    code, out, err = run(capsys, "check", write(tmp_path, "h.json", {"scenario": "bad", "events": events}))
    assert code == 2 and not out and "snapshot event 2 of the history is not a snapshot" in err


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
    assert data["invariant"] == "current_fence" and len(data["counterexample"]) == 5 and data["replay"] is None
    assert data["params"]["fencing"] == "off" and data["complete"] is True
    assert data["margin"] == 2.0 and data["tried"] is None and data["progress_checked"] > 0
    assert {"exact", "symmetry", "sleep"} <= set(data["params"])


@pytest.mark.parametrize("argv, says", [
    (["--design", "bogus"], "argument --design: invalid choice: 'bogus'"),
    (["--depth", "25"], "depth must be a whole number from 1 to 24 steps, got 25"),
    (["--depth", "ten"], "invalid int value: 'ten'"),
    (["--script", "extend_active"], "--script takes NAME=FILE"),
    (["--script", "extend_active=/nowhere/x.lua"], "is not a readable file"),
    (["--states", "40001"], "states must be a whole number from 1 to 40000 states, got 40001"),
    (["--invariant", "liveness"], "argument --invariant: invalid choice: 'liveness'"),
    (["--exact=yes"], "argument --exact: ignored explicit argument 'yes'"),
    (["--max-runtime", "-3"], "max_runtime must be"),
    (["--reap-limit", "0"], "reap_limit must be a whole number from 1 to 1000 jobs, got 0"),
])
def test_explore_bad_input_is_one_line_exit_2(capsys, argv, says):
    code, out, err = run(capsys, "explore", *argv)
    assert code == 2 and not out and err.count("\n") == 1 and says in err


def test_a_lease_taken_before_its_granted_deadline_is_named_in_a_headline_read_in_one_breath(capsys, tmp_path):
    from emqlab.core.words import HEADLINE_WORDS, headline_words

    events = [{"t": 0, "actor": "w1", "kind": "claim", "job": "order-7", "attempts": 1, "deadline": 30},
              {"t": 15, "actor": "reaper", "kind": "reap", "jobs": ["order-7"]},
              {"t": 15, "actor": "store", "kind": "snapshot",
               "jobs": {"order-7": {"places": ["pending"], "state": "pending", "attempts": 1}}}]
    history = {"scenario": "a lease taken early", "events": events}
    code, out, _ = run(capsys, "check", write(tmp_path, "h.json", history), "--json")
    data = json.loads(out)
    assert code == 1 and [v["invariant"] for v in data["violations"]] == ["lease_kept"]
    assert data["violations"][0]["what"] == ("job order-7 was taken from w1 (attempts 1) 15 s before the deadline the "
                                             "store granted it: it is in pending")
    assert data["summary"] == "the a lease taken early history: lease_kept broke, for job order-7."  # the rest: facts
    assert data["facts"][0].startswith("lease_kept: job order-7 was taken from w1 (attempts 1) 15 s before")
    for history in (STALE, PLANTED):
        code, out, _ = run(capsys, "check", write(tmp_path, "h.json", history), "--json")
        assert headline_words(json.loads(out)["summary"]) <= HEADLINE_WORDS
