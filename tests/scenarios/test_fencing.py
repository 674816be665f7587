"""The fencing lesson's scenario on both stores: a worker stopped past its lease writes late."""

from __future__ import annotations

import pytest

from emqlab.core.errors import BadParameter
from emqlab.scenarios.fencing import MODES, FencingVerdict, Params, fencing, figure_words, words
from support.records import record
from emqlab.core.words import seconds, times


@pytest.mark.parametrize("mode", ["off", "on"])
def test_paused_worker_late_write(backend_slow, mode):
    # the reap must land before worker-1 wakes at 45 s: a beat past the lease leaves 10 model seconds,
    # 1 real second at the slow scale (0.1 s at 0.01, less than a loaded machine's lateness)
    backend = backend_slow
    tl = fencing(fencing=mode, lease=30, job=20, pause="5:40", backend=backend)
    v = tl.verdict
    assert v.reclaim_attempts == 2
    assert tl.counts["completed"] == 1 and tl.counts["lost"] == 0
    if mode == "off":
        assert v.stale_write_landed is True and v.stale_write_refused is False
        assert v.effects_applied == 2 and tl.counts["duplicate_effects"] == 1 and v.duplicate_effect
        assert "landed" in tl.text
    else:
        assert v.stale_write_refused is True and v.stale_write_landed is False
        assert v.effects_applied == 1 and tl.counts["duplicate_effects"] == 0
        assert "refused" in tl.text
    # the stale write comes after the re-claim, from the paused worker, after it woke
    [pause] = tl.spans("pause", "worker-1")
    assert v.reclaimed_at < v.stale_write_at and pause.end <= v.stale_write_at
    if not backend.clock.real:  # exact on the virtual clock
        assert (pause.start, pause.end, v.reaped_at, v.stale_write_at) == (5.0, 45.0, 32.5, 60.0)
    else:  # a real clock's timers fire late on a loaded machine, never early
        assert pause.start >= 5 - 0.01 and pause.end - pause.start >= 40 - 0.01
    says_only_what_the_verdict_holds(tl)


def test_short_pause_leaves_the_lease_alone(fake):
    tl = fencing(fencing="off", pause="5:10", backend=fake)
    assert tl.verdict.reaped_at is None
    assert tl.counts["duplicate_effects"] == 0
    assert tl.verdict.effects_applied == 1


@pytest.mark.parametrize("kw,match", [({"fencing": "maybe"}, "fencing must be on or off"),
                                      ({"pause": "30:5"}, "pause must start inside the job"),
                                      ({"pause": "x"}, "AT:SECONDS"),
                                      ({"lease": -1}, "lease")])
def test_fencing_validates(fake, kw, match):
    with pytest.raises(BadParameter, match=match):
        fencing(backend=fake, **kw)


def test_draw_fencing_follows_the_figure_protocol(fake):
    from emqlab.plot.fencing import draw_fencing
    from support.words import check_protocol

    modes = {"off": fencing(fencing="off", backend=fake), "on": fencing(fencing="on", backend=fake)}
    drawing = draw_fencing(modes, figure_words(modes))
    check_protocol(drawing, ["off", "on"])
    assert "lands" in drawing.words.modes["off"].static
    assert "refused" in drawing.words.modes["on"].static
    assert drawing.words.modes["on"].label == MODES["on"] == "fenced by attempts"
    # a list is named by mode, in order
    assert list(figure_words([modes["on"], modes["off"]]).modes) == ["on", "off"]


# -- the readout: every clause true of the verdict -------------------------------------------------------
def says_only_what_the_verdict_holds(tl):
    from support.words import clauses

    v, p = tl.verdict, tl.params
    readout, static = v.text, v.static
    from emqlab.core.words import HEADLINE_WORDS, headline_words

    assert headline_words(v.headline) <= HEADLINE_WORDS, v.headline
    assert v.label == MODES[p.fencing] and readout.startswith(v.label + ": ")
    taken = v.reclaimed_at is not None
    clauses(readout, {"landed": v.stale_write_landed, "was refused": v.stale_write_refused,
                      "was not taken over": not taken, f"the effect was applied {times(v.effects_applied)}": True,
                      "re-claimed the job": taken, f"attempts {v.reclaim_attempts}": taken,
                      f"woke still holding attempts {v.stale_write_attempts}": v.stale_write_refused_by == "attempts",
                      f"already {v.stale_write_found_state}": v.stale_write_refused_by == "state",
                      "turned away, by the queue's own check": v.late_completion_turned_away})
    clauses(static, {"lands": v.stale_write_landed, "refused": v.stale_write_refused,
                     "no takeover": not taken, "job already": v.stale_write_refused_by == "state",
                     f"attempts {v.stale_write_attempts} ≠": v.stale_write_refused_by == "attempts"})
    assert (v.stale_write_refused_by is not None) is v.stale_write_refused
    if taken:
        assert seconds(v.reclaimed_at) in readout and seconds(v.paused_at) in readout
    if v.stale_write_at is not None:
        assert seconds(v.stale_write_at) in readout
    if v.stale_write_landed:  # a stale write that landed is a second effect
        assert v.duplicate_effect and v.effects_applied >= 2


@pytest.mark.parametrize("mode,pause", [("off", "5:40"), ("on", "5:40"), ("off", "5:10"), ("on", "5:10"),
                                        ("on", "15:60"), ("off", "5:30"), ("on", "5:30")])
def test_readout_says_only_what_the_verdict_holds(fake, mode, pause):
    tl = fencing(fencing=mode, pause=pause, backend=fake)
    says_only_what_the_verdict_holds(tl)
    v = tl.verdict
    if pause == "5:10":  # no takeover: worker-1's own write is not a stale one
        assert not v.stale_write_landed and not v.stale_write_refused
        assert tl.text == f"{MODES[mode]}: worker-1's lease was not taken over during its pause; " \
                             "the effect was applied once."
    if (mode, pause) == ("off", "5:40"):
        assert v.headline == "no fencing: worker-1's late write at 60 s landed, so the effect was applied twice."
        assert v.facts[-1] == "only the completion sent after it was turned away, by the queue's own check"
    if (mode, pause) == ("on", "5:40"):
        # 10 s longer than the lesson's pause: worker-2's fenced write settled the job done at 52.5 s, so
        # worker-1's write at 60 s meets a job no longer active; the state check turns it away before attempts
        assert v.headline == "fenced by attempts: worker-1's late write at 60 s was refused: the effect was applied once."
        assert (v.stale_write_found_state, v.stale_write_found_attempts, v.stale_write_refused_by) == ("done", 2, "state")
        assert v.facts[-1] == ("the job was already done (attempts 2), so the store refused worker-1's write on its "
                               "state, before comparing attempts 1")
        assert v.static == "late write refused (job already done) · effect applied once"
    if (mode, pause) == ("off", "5:30"):
        # the lesson's unfenced run: worker-1's write at 50 s lands before worker-2's at 52.5 s; its completion,
        # sent while worker-2 still holds the job, is turned away on attempts, not on state
        assert v.headline == "no fencing: worker-1's late write at 50 s landed, so the effect was applied twice."
        [turned] = [e for e in tl.of("completion", "store") if not e.data["accepted"]]
        assert (turned.t, turned.data["check"], turned.data["job_state"]) == (50.0, "attempts", "active")
    if (mode, pause) == ("on", "5:30"):
        # the lesson's fenced run: worker-1 wakes at 35 s and writes at 50 s, while worker-2 still holds the job
        # (attempts 2): only the attempts differ, and they refuse the write
        assert v.headline == ("fenced by attempts: worker-1's late write at 50 s was refused: "
                             "the effect was applied once.")
        assert (v.stale_write_found_state, v.stale_write_found_attempts, v.stale_write_refused_by) == \
            ("active", 2, "attempts")
        assert v.facts[-1] == "worker-1 woke still holding attempts 1; the job was at attempts 2 by then"
        assert v.static == "late write refused (attempts 1 ≠ 2) · effect applied once"


def test_words_say_nothing_of_a_write_that_did_not_happen():
    v = record(FencingVerdict, mode="no fencing", paused_at=5.0, woke_at=45.0, lease_deadline=30.0, reclaimed_at=32.5,
               reclaimed_by="worker-2", reclaim_attempts=2, stale_write_at=None, stale_write_attempts=None,
               stale_write_landed=False, stale_write_refused=False, effects_applied=1)
    w = words(record(Params, lease=30.0), v)
    assert w.headline == "no fencing: worker-1 wrote nothing after it woke; the effect was applied once."
    assert "landed" not in w.text and "refused" not in w.text
    assert w.static == "no late write · effect applied 1×"


# -- the storage lane: drawn from what the store answered ------------------------------------------------
def _lane_texts(drawing, mode):
    return [t.get_text() for t in drawing.figure.findobj(lambda a: hasattr(a, "get_text") and a.get_gid() == f"mode:{mode}")]


@pytest.mark.parametrize("mode", ["off", "on"])
def test_the_store_records_each_write_with_its_attempts(backend_slow, mode):
    """Each writer's write carries its own attempts and the store's answer. Their order is a matter of
    time: on the virtual clock worker-2's write comes exactly 7.5 model s before worker-1's late one; on a
    live store a loaded machine's late beats shift worker-2's re-claim by whole beats (every beat waits
    from when it really woke), so there only who wrote what is asserted, not which came first."""
    tl = fencing(fencing=mode, pause="5:40", backend=backend_slow)
    writes = tl.of("write", "store")
    by_writer = {w.data["writer"]: w for w in writes}
    assert len(writes) == 2 and {k: w.data["attempts"] for k, w in by_writer.items()} == {"worker-2": 2, "worker-1": 1}
    if not backend_slow.clock.real:
        assert [w.data["writer"] for w in writes] == ["worker-2", "worker-1"]
        assert [w.t for w in writes] == [52.5, 60.0]
    # the store's answers agree with what each worker recorded
    assert by_writer["worker-2"].data["accepted"] and writes[0].data["applied"] == 1
    assert by_writer["worker-1"].data["accepted"] is (mode == "off")
    assert tl.verdict.writes_refused == (mode == "on")
    assert [w["accepted"] for w in tl.verdict.store_writes] == [w.data["accepted"] for w in writes]
    landed = [e for e in tl.of("effect", "worker-1")]
    assert bool(landed) is (mode == "off")
    # a completion is only turned away after an unfenced write; a fenced write settles the job itself
    turned = [e for e in tl.of("completion", "store") if not e.data["accepted"]]
    assert [(e.data["writer"], e.data["check"]) for e in turned] == ([("worker-1", "state")] if mode == "off" else [])
    assert tl.verdict.late_completion_turned_away is (mode == "off")


@pytest.mark.parametrize("pause", ["5:30", "5:40"])  # the lesson's (refused on attempts), and one refused on state
def test_the_storage_lane_marks_match_the_store_events(fake, pause):
    from emqlab.view.figures import fencing_figure
    from emqlab.plot.fencing import store_marks

    modes = {mode: fencing(fencing=mode, pause=pause, backend=fake) for mode in ("off", "on")}
    drawing = fencing_figure(modes)
    for mode, tl in modes.items():
        marks = store_marks(tl)
        writes = [m for m in marks if m["kind"] == "write"]
        assert [(m["t"], m["attempts"], m["accepted"]) for m in writes] == \
            [(e.t, e.data["attempts"], e.data["accepted"]) for e in tl.of("write", "store")]
        texts = _lane_texts(drawing, mode)
        for m in writes:
            assert f"attempts {m['attempts']}" in texts and m["label"] in texts
        # a write's attempts sit on its writer's lane, at the arrow's tail: never on a lane the arrow crosses
        from matplotlib.text import Annotation

        from emqlab.plot.fencing import WORK_H, WORK_Y
        lanes = {"worker-1": 2.0, "worker-2": 1.0}
        tails = {a.get_text(): a.xy for a in drawing.figure.findobj(Annotation)
                 if a.get_gid() == f"mode:{mode}" and a.get_text().startswith("attempts ")}
        assert tails == {f"attempts {m['attempts']}": (m["t"], lanes[m["writer"]] + WORK_Y + WORK_H / 2)
                         for m in writes}
        refused = [t for t in texts if "refused" in t]
        # the one refusal in each panel says what refused it: the job's state, or its attempts
        [turned] = [e for e in tl.of("write" if mode == "on" else "completion", "store") if not e.data["accepted"]]
        state = turned.data["job_state"]
        assert state == ("active" if pause == "5:30" else "done")
        first, rest = ("not the", "current attempt") if state == "active" else ("job already", state)
        if mode == "off":  # nothing is marked as a refused write; the completion sent after it was refused
            assert refused == [f"completion refused:\n{first} {rest}"]
            assert not any(t.startswith("refused") for t in texts)
        else:
            assert refused == [f"refused: {first}\n{rest}"]


def test_the_lesson_fences_by_attempts(fake):
    """The fencing lesson's runs (its figure's): the late write reaches the store while worker-2 still holds the
    job, so the fenced run refuses it on attempts, the check a plain "is the job done?" would not make."""
    from emqlab.view.figures import fencing_figure, fencing_modes

    modes = fencing_modes(fake)
    on, off = modes["on"].verdict, modes["off"].verdict
    assert (on.stale_write_refused_by, on.stale_write_found_state) == ("attempts", "active")
    assert on.static == "late write refused (attempts 1 ≠ 2) · effect applied once"
    assert off.stale_write_landed and off.effects_applied == 2
    texts = _lane_texts(fencing_figure(modes), "on")
    assert "refused: not the\ncurrent attempt" in texts and not any("already" in t for t in texts)


def test_the_paused_worker_does_no_work_while_frozen(fake):
    from matplotlib.patches import Rectangle

    from emqlab.view.figures import fencing_figure
    from emqlab.plot import style

    tl = fencing(fencing="on", pause="5:40", backend=fake)
    drawing = fencing_figure({"on": tl})
    [pause] = tl.spans("pause", "worker-1")
    ax = drawing.figure.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_label() == style.MARKS["work"].meaning]
    worker1 = [(b.get_x(), b.get_x() + b.get_width()) for b in bars if b.get_y() > 1.5]
    assert worker1 == [(0.0, pause.start), (pause.end, 60.0)]

