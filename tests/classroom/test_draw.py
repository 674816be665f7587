"""Issue 14 item 4: the class figure. A snapshot of a class is plain data (what `Board.lanes()` and
`Board.status()` read from the server, events as the workers write them): drawn at notebook and at
slide size, each learner lit, no text prints over another and none is too small; the words are the
scenario's (`class_words`, `lane_story`). One live test draws a real class's lanes."""

from __future__ import annotations

import json
import time

import pytest

from emqlab.classroom import draw
from emqlab.core.words import HEADLINE_WORDS, headline_words
from emqlab.plot.legibility import figure_problems, overprints, small_texts
from emqlab.classroom.board import class_lanes, class_words, lane_settled, lane_verdict, lane_words
from realtime import host, timeout_s

SIZES = [((12, 7.2), 80, 12), ((15, 7.5), 120, 18)]
T0 = 1_800_000_000.0


def ev(t, actor, kind, **data):
    return {"t": round(T0 + t, 3), "actor": actor, "kind": kind, **data}


def job(actor, t, name, attempts=1, work=0.3, lease=2.0):
    ms = int((T0 + t) * 1000)
    return [ev(t, actor, "claim", job=name, attempts=attempts, now=ms, score=ms + int(lease * 1000)),
            ev(t + work, actor, "effect", job=name, attempts=attempts, applied=1),
            ev(t + work + 0.001, actor, "complete", job=name, attempts=attempts)]


def snapshot(n=6, seats=None):
    names = ["ada", "bob", "cy", "dee", "eve", "fay"] + [f"p{i:02d}" for i in range(7, 40)]
    lanes, k = [], 0
    for i in range(seats or n):
        name = names[i] if i < n else None
        events, notes = [], []
        if name:
            for step in range(12):
                k += 1
                events += job(name, 0.35 * step + 0.01 * i, f"j{k}")
        lanes.append({"slot": f"l{i + 1:02d}", "name": name, "alive": bool(name), "order": {},
                      "events": events, "notes": notes})
    ada, bob, dee = lanes[0], lanes[1], lanes[3]
    crash = ev(5.0, "bob", "crash", holding=["j500"], order=True)
    bob["events"] += [*job("bob", 4.9, "j500")[:1], crash]
    bob["notes"].append(crash)
    bob["alive"], bob["order"] = False, {"cmd": "crash", "seconds": "0", "at": str(T0 + 4.9)}
    reap = ev(7.1, "ada", "reap", jobs=["j500"])
    ada["events"] += [reap, *job("ada", 7.2, "j500", attempts=2)]
    ada["notes"].append(reap)
    pause = [ev(5.5, "dee", "pause_start", seconds=4.0, holding=["j600"], order=True),
             ev(9.5, "dee", "pause_end", seconds=4.0, started=T0 + 5.5),
             ev(9.6, "dee", "complete_refused", job="j600", attempts=1)]
    dee["events"] += [job("dee", 5.4, "j600")[0], *pause]
    dee["notes"] += pause
    totals = {"learners": n - 1, "seats": seats or n, "enqueued": k + 2, "completed": k + 2, "lost": 0,
              "duplicate_effects": 0, "reaped": 2, "fencing": True, "invariants_ok": True,
              "invariants": {"one_place": [], "never_lost": [], "attempts_grow": [], "one_effect": [], "no_resurrection": []}}
    return {"lanes": lanes, "totals": totals, "server_ms": int((T0 + 12) * 1000), "local": T0 + 12}


@pytest.mark.parametrize(("inches", "dpi", "px"), SIZES, ids=["notebook", "slide"])
@pytest.mark.parametrize("n", [6, 30])
def test_the_class_figure_reads_from_the_back_of_the_room(inches, dpi, px, n):
    snap = snapshot(n, seats=n + 2)  # two empty seats: not drawn
    d = draw.class_figure(snap, figsize=inches)
    d.figure.set_dpi(dpi)
    d.fit()
    assert list(d.lanes) == [f"l{i + 1:02d}" for i in range(n)]
    for lit in [None, "l02", "l04"]:
        d.light(lit)
        clashes = [f"{a.role} {a.text!r} × {b.role} {b.text!r}" for a, b in overprints(d.figure)]
        assert not clashes, (inches, lit, clashes)
    assert not small_texts(d.figure, px)
    assert figure_problems(d.figure) == []  # the legend names exactly what the lanes draw
    assert all(headline_words(m.headline) <= HEADLINE_WORDS for m in d.words.modes.values())


def test_the_words_tell_each_learner_what_happened():
    snap = snapshot()
    words = class_words(snap)
    assert "jobs enqueued" in words.prompt and "invariants hold" in words.prompt and "fencing on" in words.prompt
    # the class's caption names the marks its lanes draw: ada's reap among them, and no late effect landed
    assert words.caption.startswith("A class on one server: one lane per learner's worker.")
    assert "purple diamond a reap" in words.caption and "sky plus" not in words.caption
    assert words.modes["l02"].headline == ("bob finished 12 jobs; it crashed once; classmates took over "
                                          "and finished the job it held.")
    assert words.modes["l04"].headline.endswith("; it was paused once.")  # its job finished before anyone reaped it
    assert words.modes["l02"].facts == ("it crashed holding j500: ada reaped it and completed it",)
    assert "was paused 4 s holding j600" in words.modes["l04"].text
    assert "its late write was refused" in words.modes["l04"].text
    views = {v["slot"]: v for v in class_lanes(snap)}
    assert views["l02"]["state"] == "crashed" and views["l02"]["leases"][-1]["ended"] == "crashed"
    refused = views["l04"]["leases"][-1]
    assert refused["ended"] == "refused" and refused["end"] > refused["deadline"]  # held past its lease
    # on the server's clock, before now: the lease's deadline is the one the server stamped
    assert refused["deadline"] == pytest.approx(5.4 + 2.0 - 12, abs=1e-3)
    taken = [b for b in views["l01"]["leases"] if b["attempts"] == 2]
    assert len(taken) == 1 and views["l01"]["reaps"][0]["jobs"] == ["j500"]


def test_a_late_effect_that_landed_is_a_duplicate_not_a_job_finished():
    """Issue 35 (audit 13-2, 13-3): ada crashes, is frozen with fencing on (its fenced effect is refused: no
    effect event, then complete_refused) and again with fencing off (its effect lands, then its completion is
    refused). One late write was refused, one late effect landed a second time; the jobs it finished are
    the completions the store accepted, not that effect."""
    ada = [*job("ada", 0.0, "j1"), *job("ada", 0.5, "j2"), *job("ada", 1.0, "j3")]
    notes = [ev(1.6, "ada", "crash", holding=["j11"], order=True),
             ev(3.0, "ada", "pause_start", seconds=4.0, holding=["j38"], order=True),
             ev(7.0, "ada", "pause_end", seconds=4.0, started=T0 + 3.0),
             ev(7.1, "ada", "complete_refused", job="j38", attempts=1),  # fenced: nothing written
             ev(9.0, "ada", "pause_start", seconds=4.0, holding=["j100"], order=True),
             ev(13.0, "ada", "pause_end", seconds=4.0, started=T0 + 9.0),
             ev(13.2, "ada", "complete_refused", job="j100", attempts=1)]  # unfenced: after its effect landed
    events = [*ada, job("ada", 1.5, "j11")[0], job("ada", 2.9, "j38")[0], job("ada", 8.9, "j100")[0],
              ev(13.1, "ada", "effect", job="j100", attempts=1, applied=2), *notes]
    mate = [ev(6.0, "cy", "reap", jobs=["j11", "j38"]), *job("cy", 6.1, "j11", attempts=2),
            *job("cy", 6.5, "j38", attempts=2), ev(12.0, "cy", "reap", jobs=["j100"]),
            *job("cy", 12.1, "j100", attempts=2)]
    lanes = [{"slot": "l01", "name": "ada", "alive": True, "order": {}, "events": events, "notes": notes},
             {"slot": "l02", "name": "cy", "alive": True, "order": {}, "events": mate,
              "notes": [e for e in mate if e["kind"] == "reap"]}]
    settled = lane_settled(lanes[0])
    assert settled == {"finished": {("j1", 1), ("j2", 1), ("j3", 1)}, "refused": {("j38", 1)},
                       "duplicated": {("j100", 1)}}
    views = {v["slot"]: v for v in class_lanes({"lanes": lanes, "server_ms": int((T0 + 14) * 1000),
                                                 "local": T0 + 14})}
    verdict = lane_verdict(lanes[0], views["l01"])
    assert views["l01"]["done"] == len(settled["finished"]) == 3
    assert verdict == ("working · 3 done · crashed holding j11 · 1 late write refused · "
                       "1 late effect landed (a duplicate)")
    headline, facts = lane_words("ada", lanes)
    assert headline.startswith(f"ada finished {len(settled['finished'])} jobs;")
    assert "holding j38: cy reaped it and completed it; its late write was refused" in facts[1]
    assert "holding j100: cy reaped it and completed it; its late effect landed anyway" in facts[2]
    # drawn as told (reader c, F2): the fenced late write ends in the refused cross, the unfenced one in the
    # effect's plus, not a cross; each pause says which job it held; the caption names only what is drawn
    ended = {b["job"]: b["ended"] for b in views["l01"]["leases"]}
    assert ended["j38"] == "refused" and ended["j100"] == "landed" and ended["j11"] == "crashed"
    assert [p["holding"] for p in views["l01"]["pauses"]] == [["j38"], ["j100"]]
    own = {"lanes": [lanes[0]], "totals": None, "server_ms": int((T0 + 14) * 1000), "local": T0 + 14}
    d = draw.learner_lane_figure(own)
    texts = [t.get_text() for ax in d.figure.axes for t in ax.texts]
    assert {"late write on j38 refused", "late effect on j100 landed", "paused (holding j38)",
            "paused (holding j100)"} <= set(texts), texts
    drawn = {line.get_label() for ax in d.figure.axes for line in ax.lines}
    assert {"refused: a stale write, extend or completion", "effect written"} <= drawn
    refused = [line for ax in d.figure.axes for line in ax.lines if line.get_label().startswith("refused")]
    assert len(refused) == 1  # j38's alone: j100's late effect landed
    caption = d.words.caption
    assert caption.startswith("One learner's worker on the class server.") and "one lane per" not in caption
    assert "diamond" not in caption  # ada reaped nothing: no reap is drawn
    assert "sky plus a late effect that landed" in caption and "thin cross a stale write" in caption
    assert not overprints(d.figure) and figure_problems(d.figure) == []


def test_a_lane_that_kept_only_its_newest_events_says_so():
    """A busy lane keeps its newest LANE_KEEP events: its count of jobs finished is of those, and says so."""
    from emqlab.classroom.board import LANE_KEEP

    events = [e for k in range(LANE_KEEP // 3 + 1) for e in job("ada", 0.4 * k, f"j{k + 1}")][-LANE_KEEP:]
    lanes = [{"slot": "l01", "name": "ada", "alive": True, "order": {}, "events": events, "notes": []}]
    done = len(lane_settled(lanes[0])["finished"])
    assert lane_words("ada", lanes)[0] == f"ada finished {done} jobs in the newest {LANE_KEEP} events of its lane."
    lanes[0]["events"] = events[-30:]
    assert lane_words("ada", lanes)[0] == "ada finished 10 jobs."

def test_a_learner_draws_its_own_lane():
    snap = snapshot()
    mine = {"lanes": [snap["lanes"][1]], "totals": None, "server_ms": snap["server_ms"], "local": snap["local"],
            "fates": {"j500": {"state": "done", "attempts": 2, "worker": "ada"}}}
    d = draw.learner_lane_figure(mine)
    assert list(d.lanes) == ["l02"]
    assert "its lease ran out and ada took it over (attempt 2); it is now done" in d.words.prompt
    # its mode tells the same story: a learner sees no classmate's reap, and does not claim nobody reaped it
    assert d.words.modes["l02"].facts == (
        "it crashed holding j500: its lease ran out and ada took it over (attempt 2); it is now done",)
    assert not overprints(d.figure) and figure_problems(d.figure) == []


@pytest.mark.live
def test_a_real_class_is_drawn(tmp_path):
    """A class on loopback through the Python API: 3 workers, a burst, a crash; the figure and a
    learner's own lane from its `lab.join` handle."""
    from emqlab.course import lab
    from emqlab.classroom.server import Classroom, embedded_server
    from emqlab.classroom.board import Board, class_snapshot

    server, backend, port = embedded_server()
    room = Classroom(backend, 3, "127.0.0.1", port).open()
    handles, board = [], None
    try:
        # real seconds: the default 2 s lease and 0.5 s beat with 0.3 s of work on the reference host, longer on
        # a slower one (tests/realtime.py), so bob still holds a job when its crash lands
        k = host().scale_factor
        handles = [lab.join(room.address(s), n, lease_s=2.0 * k, beat_s=0.5 * k, work_s=0.3 * k)
                   for s, n in zip(room.slots, ["ada", "bob", "cy"])]
        board = Board.connect(room.address("instructor"))
        deadline = time.time() + timeout_s(60)
        while board.status()["learners"] < 3:
            assert time.time() < deadline
            time.sleep(0.2)
        board.enqueue(20)
        board.crash("bob")
        while board.status()["completed"] < 20:
            assert time.time() < deadline
            time.sleep(0.3)
        snap = class_snapshot(board)
        json.dumps(snap)  # plain data
        d = draw.class_figure(snap)
        assert len(d.lanes) == 3 and "20 completed" in d.words.prompt
        assert "reaped it" in d.words.modes["l02"].text
        assert not overprints(d.figure) and figure_problems(d.figure) == []
        own = draw.learner_lane_figure(handles[1])
        assert "crashed holding" in own.words.prompt and "took it over" in own.words.prompt, own.words.prompt
        from emqlab.classroom.dashboard import LearnerLane

        watch = LearnerLane(handles[1], start=False)  # what the learner's notebook shows, live
        assert 'data-lane="l02"' in watch.figure.html and "took it over" in watch.story.value
    finally:
        for h in handles:
            h.stop()
        if board is not None:
            board.close()
        room.close()
        backend.close()
        server.stop()
