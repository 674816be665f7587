"""The slow link's rule, renewal at c × TTL holds while the one-way delay is under (1 − c) × TTL / 2,
checked against runs (emqlab.scenarios.slow_link, lab.latency_boundary), and the link drawn in figure 1:
each holder command a path to the store and back (its `trip` intervals)."""

from __future__ import annotations

import pytest

from emqlab.view import figures
from emqlab.course import lab
from emqlab.plot.legibility import overprints
from emqlab.scenarios.heartbeat import heartbeat
from emqlab.scenarios.slow_link import latency_bound, rule_says_held, rule_words
from support.records import REAL_SLACK_S, SLOW_SCALE


def test_the_bound_is_a_quarter_of_the_lease_at_half():
    assert latency_bound(30, 0.5) == 7.5
    assert latency_bound(40, 0.25) == 15.0
    assert rule_says_held(30, 0.5, 7) is True and rule_says_held(30, 0.5, 8) is False
    assert rule_says_held(30, 0.5, 7.5) is None  # on the line: the extend lands at the deadline itself


def test_every_trip_of_the_holder_is_recorded_exactly(fake):
    tl = heartbeat(renew="half", latency=10, backend=fake)
    trips = [(t.start, t.data["at"], t.end) for t in tl.spans("trip", "holder")]
    # the acquire: sent at 0, stamped at 10, reply at 20; the first extend: sent at 35, refused at 45, 0 at 55
    assert trips == [(0.0, 10.0, 20.0), (35.0, 45.0, 55.0)]
    assert not tl.spans("trip", "contender")  # the contender sits beside the server
    assert not heartbeat(renew="half", backend=fake).spans("trip")  # no link, nothing on the wire


def test_every_trip_keeps_when_the_server_acted_on_it_even_when_calls_overlap(fake):
    """Lesson 11's 8 s run at 0.3: the last extend's reply and the job's "done" meet at 91 s; each trip
    keeps its own `at` (the extend sent at 75 landed at 83 and set the deadline of 113)."""
    tl = heartbeat(renew=0.3, latency=8, backend=fake)
    trips = [(t.start, t.data["at"], t.end) for t in tl.spans("trip", "holder")]
    assert trips == [(0.0, 8.0, 16.0), (25.0, 33.0, 41.0), (50.0, 58.0, 66.0), (75.0, 83.0, 91.0),
                     (91.0, 99.0, 107.0), (107.0, 115.0, 123.0)]
    assert [e.data["at"] for e in tl.of("renew", "holder")] == [t[1] for t in trips[1:4]]


def test_a_lapse_after_the_work_is_said_as_one(fake):
    """The lease held while the holder worked; it lapsed at 113 s, after the job was done, before the late
    release reached the store. The words say so, not "the lease lapsed" as its fate."""
    tl = heartbeat(renew=0.3, latency=8, backend=fake)
    v = tl.verdict
    done = next(e.t for e in tl.of("work_done", "holder"))
    assert (done, v.lapsed_at, v.reclaimed_at, v.finished_by, v.released_at) == (91.0, 113.0, None, ["holder"], None)
    assert v.headline == ("renew every 0.3 × TTL, 8 s link: the 30 s lease held while the holder worked; "
                         "the job finished once, by the holder.")
    assert "it lapsed at 113 s, after the job was done, before the holder's release reached the store" in v.facts
    assert "lease lapsed at" not in v.text and "held while the holder worked" in v.static
    assert "pushed out every 25 s" in v.static  # 2 × 8 + 9: the timer restarts at each reply
    said = rule_words(tl)
    assert "renewing 9 s after each reply (c = 0.3)" in said and "they agree" in said


def test_a_zero_reply_after_the_work_adds_no_blind_time(fake):
    """Over an 8 s link the holder finished at 36 s; its extend was still on the wire, reached the store
    after the lease lapsed at 38 s and replied 0 at 47 s. The holder worked blind for no time: the words say
    the lease lapsed after the work, not 9 s of blind work, and the reply is told when it came."""
    tl = heartbeat(lease=30, job=20, renew=0.5, latency=8, backend=fake)
    v = tl.verdict
    assert (v.holder_done_at, v.lapsed_at, v.renew_lost_at, v.blind_s) == (36.0, 38.0, 47.0, 0.0)
    assert v.headline == ("renew at TTL/2, 8 s link: the 30 s lease held through the work; "
                         "the job finished twice, by the holder and the contender.")
    assert "it lapsed at 38 s, after the job was done, before the holder's release reached the store" in v.facts
    assert "the holder learned only at 47 s, when its extend replied 0" in v.facts
    assert "after its lease had lapsed" not in v.text


@pytest.mark.parametrize("latency, agrees, ran", [(5, "they agree", "held it while the job ran"),
                                                  (10, "they agree", "lapsed at 40 s")])
def test_the_rule_and_the_run_are_said_in_one_sentence(fake, latency, agrees, ran):
    said = rule_words(heartbeat(renew="half", latency=latency, backend=fake))
    assert "= 7.5 s" in said and agrees in said and ran in said


def test_on_the_line_the_words_claim_no_agreement(fake):
    said = rule_words(heartbeat(renew="half", latency=7.5, backend=fake))
    assert "exactly on the line" in said and "agree" not in said


def test_the_grid_of_runs_agrees_with_the_rule_on_the_virtual_clock(fake):
    lab.use("fake")
    try:
        b = lab.latency_boundary(cadences=[0.3, 0.5, 0.7], latencies=[2.75, 6.75, 8.25, 11.75])
    finally:
        lab.close()
    assert b["agrees"] and b["runs"] == 12
    held = {(c, d) for c, d, h in b["points"] if h}
    assert held == {(c, d) for c, d, _ in b["points"] if d < latency_bound(30, c)}
    assert {(0.5, 6.75), (0.5, 8.25)} & held == {(0.5, 6.75)}
    assert b["line"] == [(0.3, 10.5), (0.7, 4.5)]


@pytest.mark.live
@pytest.mark.realtime
def test_the_grid_agrees_on_live_valkey_with_every_point_off_the_line(valkey_url):
    """At SLOW_SCALE, on the points of a 2 × 2 grid 10 model s or more off the line (the two within
    2.5 s of it are left out): far more than a loaded machine of this host's speed is late."""
    lab.use(valkey_url, scale=SLOW_SCALE)
    try:
        b = lab.latency_boundary(cadences=[0.2, 0.8], latencies=[1.0, 13.0])
    finally:
        lab.close()
    assert [(c, d) for c, d, _ in b["points"]] == [(0.2, 1.0), (0.8, 13.0)]
    assert all(abs(d - latency_bound(30, c)) > REAL_SLACK_S / SLOW_SCALE for c, d, _ in b["points"])
    assert b["agrees"] and [held for *_, held in b["points"]] == [True, False], b["points"]


@pytest.mark.parametrize("size, dpi", [((12, 7.2), 80), ((15, 7.5), 120)])
def test_the_link_is_drawn_and_nothing_overprints(fake, size, dpi):
    modes = {"5 s link": heartbeat(renew="half", latency=5, backend=fake),
             "10 s link": heartbeat(renew="half", latency=10, backend=fake)}
    d = figures.heartbeat_figure(modes)
    d.fit(size, dpi)
    d.light("10 s link")
    ax = d.figure.axes[-1]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["holder", "contender", "store"]
    paths = [line for line in ax.get_lines() if list(line.get_xdata()) == [35.0, 45.0, 55.0]]
    assert paths, "the refused extend's trip is drawn to the store and back"
    assert not overprints(d.figure)
