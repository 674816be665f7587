"""Lesson 06's fencing scenario on both stores: a worker stopped past its lease writes late."""

from __future__ import annotations

import pytest

from emqlab.errors import BadParameter
from emqlab.scenarios.fencing import fencing


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
    assert v["reclaimed_at"] < v["stale_write_at"]
    assert v["stale_write_at"] >= v["woke_at"] - (0 if not backend.clock.real else 2)
    if not backend.clock.real:
        assert (v["reaped_at"], v["stale_write_at"]) == (32.5, 60.0)
    [pause] = tl.spans("pause", "worker-1")
    assert pause.start == pytest.approx(5, abs=0 if not backend.clock.real else 3)


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

    fig = draw_fencing({"off": fencing(fencing="off", backend=fake), "on": fencing(fencing="on", backend=fake)})
    check_protocol(fig, ["off", "on"])
    assert "lands" in fig.emqlab_modes["off"]["verdict"]
    assert "refused" in fig.emqlab_modes["on"]["verdict"]
    assert fig.emqlab_modes["on"]["label"] == "fenced by attempts"
