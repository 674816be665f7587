"""Lesson 06's fencing scenario on both stores: a worker stopped past its lease writes late."""

from __future__ import annotations

import pytest

from emqlab.errors import BadParameter
from emqlab.scenarios.fencing import MODES, fencing, figure_words, words
from emqlab.words import seconds, times


@pytest.mark.parametrize("mode", ["off", "on"])
def test_paused_worker_late_write(backend, mode):
    tl = fencing(fencing=mode, lease=30, job=20, pause="5:40", backend=backend)
    v = tl.verdict
    assert v["reclaim_attempts"] == 2
    assert tl.counts["completed"] == 1 and tl.counts["lost"] == 0
    if mode == "off":
        assert v["stale_write_landed"] is True and v["stale_write_refused"] is False
        assert v["effects_applied"] == 2 and tl.counts["duplicate_effects"] == 1 and v["duplicate_effect"]
        assert "landed" in tl.summary
    else:
        assert v["stale_write_refused"] is True and v["stale_write_landed"] is False
        assert v["effects_applied"] == 1 and tl.counts["duplicate_effects"] == 0
        assert "refused" in tl.summary
    # the stale write comes after the re-claim, from the paused worker, after it woke
    [pause] = tl.spans("pause", "worker-1")
    assert v["reclaimed_at"] < v["stale_write_at"] and pause.end <= v["stale_write_at"]
    if not backend.clock.real:  # exact on the virtual clock
        assert (pause.start, pause.end, v["reaped_at"], v["stale_write_at"]) == (5.0, 45.0, 32.5, 60.0)
    else:  # a real clock's timers fire late on a loaded machine, never early
        assert pause.start >= 5 - 0.01 and pause.end - pause.start >= 40 - 0.01
    says_only_what_the_verdict_holds(tl)


def test_short_pause_leaves_the_lease_alone(fake):
    tl = fencing(fencing="off", pause="5:10", backend=fake)
    assert tl.verdict["reaped_at"] is None
    assert tl.counts["duplicate_effects"] == 0
    assert tl.verdict["effects_applied"] == 1


@pytest.mark.parametrize("kw,match", [({"fencing": "maybe"}, "fencing must be on or off"),
                                      ({"pause": "30:5"}, "pause must start inside the job"),
                                      ({"pause": "x"}, "AT:SECONDS"),
                                      ({"lease": -1}, "lease")])
def test_fencing_validates(fake, kw, match):
    with pytest.raises(BadParameter, match=match):
        fencing(backend=fake, **kw)


def test_draw_fencing_follows_the_figure_protocol(fake):
    from emqlab.plot.applied import draw_fencing
    from test_reaper import check_protocol

    modes = {"off": fencing(fencing="off", backend=fake), "on": fencing(fencing="on", backend=fake)}
    drawing = draw_fencing(modes, figure_words(modes))
    check_protocol(drawing, ["off", "on"])
    assert "lands" in drawing.words.modes["off"].verdict
    assert "refused" in drawing.words.modes["on"].verdict
    assert drawing.words.modes["on"].label == MODES["on"] == "fenced by attempts"
    # a list is named by mode, in order
    assert list(figure_words([modes["on"], modes["off"]]).modes) == ["on", "off"]


# -- the readout: every clause true of the verdict -------------------------------------------------------
def says_only_what_the_verdict_holds(tl):
    from test_reaper import clauses

    v, p = tl.verdict, tl.params
    readout, static = v["summary"], v["static"]
    assert v["label"] == MODES[p["fencing"]] and readout.startswith(v["label"] + ": ")
    taken = v["reclaimed_at"] is not None
    clauses(readout, {"landed": v["stale_write_landed"], "was refused": v["stale_write_refused"],
                      "was not taken over": not taken, f"the effect was applied {times(v['effects_applied'])}.": True,
                      "re-claimed the job": taken, f"attempts {v['reclaim_attempts']}": taken,
                      f"woke with attempts {v['stale_write_attempts']}": v["stale_write_refused"]})
    clauses(static, {"lands": v["stale_write_landed"], "refused": v["stale_write_refused"],
                     "no takeover": not taken})
    if taken:
        assert seconds(v["reclaimed_at"]) in readout and seconds(v["paused_at"]) in readout
    if v["stale_write_at"] is not None:
        assert seconds(v["stale_write_at"]) in readout
    if v["stale_write_landed"]:  # a stale write that landed is a second effect
        assert v["duplicate_effect"] and v["effects_applied"] >= 2


@pytest.mark.parametrize("mode,pause", [("off", "5:40"), ("on", "5:40"), ("off", "5:10"), ("on", "5:10"),
                                        ("on", "15:60")])
def test_readout_says_only_what_the_verdict_holds(fake, mode, pause):
    tl = fencing(fencing=mode, pause=pause, backend=fake)
    says_only_what_the_verdict_holds(tl)
    v = tl.verdict
    if pause == "5:10":  # no takeover: worker-1's own write is not a stale one
        assert not v["stale_write_landed"] and not v["stale_write_refused"]
        assert tl.summary == f"{MODES[mode]}: worker-1's lease was not taken over during its pause; " \
                             "the effect was applied once."
    if (mode, pause) == ("off", "5:40"):
        assert tl.summary.endswith("worker-1's late write at 60 s landed, so the effect was applied twice.")
    if (mode, pause) == ("on", "5:40"):
        assert tl.summary == ("fenced by attempts: worker-1 slept from 5 s to 45 s, past its 30 s lease; worker-2 "
                              "re-claimed the job (attempts 2) at 32.5 s; worker-1 woke with attempts 1 and its write "
                              "at 60 s was refused: the effect was applied once.")
        assert v["static"] == "late write refused (attempts 1 ≠ 2) · effect applied once"


def test_words_say_nothing_of_a_write_that_did_not_happen():
    v = {"mode": "no fencing", "paused_at": 5.0, "woke_at": 45.0, "lease_deadline": 30.0, "reclaimed_at": 32.5,
         "reclaimed_by": "worker-2", "reclaim_attempts": 2, "stale_write_at": None, "stale_write_attempts": None,
         "stale_write_landed": False, "stale_write_refused": False, "effects_applied": 1}
    w = words({"lease": 30.0}, v)
    assert w.readout.endswith("worker-1 wrote nothing after it woke; the effect was applied once.")
    assert "landed" not in w.readout and "refused" not in w.readout
    assert w.verdict == "no late write · effect applied 1×"
