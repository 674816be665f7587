"""The reaper lesson's beat lane: each consumer beat recorded step by step (reap → promote → drain → park)
against the server's TIME, its words, its figure, and the lab helpers that print them."""

from __future__ import annotations

import pytest
from emqlab.scenarios import load

from emqlab.queue.consumer import Consumer
from emqlab.core.errors import BadParameter
from emqlab.queue.jobs import Queue
from emqlab.scenarios.reaper import Params as ReaperParams
from emqlab.scenarios.queue_heartbeat import QueueHeartbeatParams, QueueHeartbeatVerdict, queue_heartbeat
from emqlab.scenarios.queue_heartbeat import words as queue_heartbeat_words
from emqlab.scenarios.reaper import ReaperVerdict, reaper
from emqlab.scenarios.reaper import words as reaper_words
from support.records import record
from support.words import check_protocol, says_only_what_the_queue_heartbeat_verdict_holds


# -- the reaper lesson: the beat, step by step, on the server's clock -------------------------------------------
def _beats(tl):
    """{(actor, beat): [steps in the order they were recorded]}"""
    beats: dict = {}
    for e in tl.of("step"):
        beats.setdefault((e.actor, e.data["beat"]), []).append(e)
    return beats


def test_each_beat_runs_reap_promote_drain_park_in_order(backend):
    from emqlab.queue.consumer import STEPS

    tl = reaper(lease=30, beat=5, job=20, crash_at=10, backend=backend)
    beats = _beats(tl)
    assert {actor for actor, _ in beats} == {"worker-1", "worker-2"}
    for (actor, n), steps in beats.items():
        names = [e.data["step"] for e in steps]
        assert names == list(STEPS[:len(names)]) and names[:2] == ["reap", "promote"], (actor, n, names)
        assert [e.t for e in steps] == sorted(e.t for e in steps)  # in time order too
        for e in steps:
            if e.data["step"] in ("drain", "park"):
                assert e.data["started"] <= e.t
        reap = steps[0]
        assert isinstance(reap.data["now"], int) and reap.data["moved"] == len(reap.data["jobs"])
        assert reap.data["time_s"] == round(backend.clock.from_server_ms(reap.data["now"]) / 1000, 3)
    for actor in ("worker-1", "worker-2"):  # beats are numbered 1, 2, 3, … per consumer
        numbers = sorted(n for a, n in beats if a == actor)
        assert numbers == list(range(1, len(numbers) + 1))
    # worker-1 dies in its first beat's drain, holding the job it claimed there
    [drain] = [e for e in tl.of("step", "worker-1") if e.data["step"] == "drain"]
    assert drain.data["ended"] == "crash" and drain.data["moved"] == 1 and drain.data["beat"] == 1
    # the claim carries the lease score the server stamped: its TIME + the lease
    claim = tl.of("claim", "worker-1")[0]
    assert claim.data["score"] - claim.data["now"] == backend.clock.to_server_ms(30_000)


def test_the_reap_comes_at_the_first_beat_whose_time_reached_the_score(backend):
    tl = reaper(lease=30, beat=5, job=20, crash_at=10, backend=backend)
    v = tl.verdict
    claim = tl.of("claim", "worker-1")[0]
    after = tl.events[tl.events.index(claim) + 1:]
    reaps = [e for e in after if e.kind == "step" and e.data["step"] == "reap"]
    k = next(i for i, e in enumerate(reaps) if e.data["moved"])
    # exact on both stores: the scores and the TIME readings come from the same server clock
    assert reaps[k].data["jobs"] == [claim.data["job"]] and reaps[k].data["now"] >= claim.data["score"]
    assert all(e.data["now"] < claim.data["score"] for e in reaps[:k])
    assert v.first_beat_past_score is True and v.beats_before_reap == k
    # the verdict tells the reap on the server clock, pinned at the claim like the lease's deadline
    assert v.reaped_at == v.reap_time_at and reaps[k].actor == v.reaped_by
    if not backend.clock.real:
        assert (v.lease_score_at, v.reap_time_at, v.beats_before_reap) == (30.0, 32.5, 6)
        assert [e.t for e in reaps[:k + 1]] == [2.5, 7.5, 12.5, 17.5, 22.5, 27.5, 32.5]
        assert reaps[k].t == v.reaped_at  # on the virtual clock the local and server times are one
    else:  # the model times shift on a loaded machine; the order and the bound hold
        assert v.lease_deadline == v.lease_score_at <= v.reaped_at <= v.lease_deadline + 5 + 3


def test_the_lapsed_but_unreaped_completion_is_told_as_it_happened(backend):
    tl = queue_heartbeat(renew="none", backend=backend)
    v = tl.verdict
    assert v.accepted_after_lapse_by == "worker-2" and v.accepted_attempts == 2
    assert v.beats_in_gap == 0 and v.claims_in_gap == 0
    lapse, done = v.accepted_lapsed_at, v.accepted_at
    # from the events themselves: no reap step between the lapse and the completion
    assert not [e for e in tl.of("step") if e.data["step"] == "reap" and lapse <= e.t < done]
    if not backend.clock.real:
        assert (lapse, done) == (62.5, 107.5)
    says_only_what_the_queue_heartbeat_verdict_holds(tl)
    assert queue_heartbeat(renew="half", backend=backend).verdict.accepted_after_lapse_by is None


def test_reaper_words_for_the_beats():
    base = record(ReaperVerdict, reaped_at=32.5, crashed_at=10.0, died_holding=True, lease_deadline=30.0,
                  reaped_by="worker-2", back_in_pending_after=32.5, within_lease_plus_beat=True,
                  reclaimed_by="worker-2", reclaim_attempts=2, completed_by="worker-2", completed_at=52.5,
                  stale_complete_refused=True, stale_complete_accepted=False, lost=0)
    p = record(ReaperParams, lease=30.0, beat=5.0)
    w = reaper_words(p, base.but(first_beat_past_score=True, beats_before_reap=6))
    assert w.facts[:3] == ("its 30 s lease ran out on the server clock at 30 s",
                           "6 beats read a server TIME before that deadline and left the job alone",
                           "the first beat whose TIME had reached it, worker-2's at 32.5 s, reaped it back to pending")
    w = reaper_words(p, base.but(first_beat_past_score=True, beats_before_reap=0))
    assert "read a server TIME" not in w.text and "\n· the first beat whose TIME had reached it, worker-2's" in w.text
    w = reaper_words(p, base.but(first_beat_past_score=False, beats_before_reap=6))
    assert "TIME" not in w.text and "worker-2's beat reaped it at 32.5 s" in w.headline


def test_queue_heartbeat_words_for_a_completion_after_the_lapse():
    v = record(QueueHeartbeatVerdict, lapsed_at=30.0, reaped_at=32.5, reclaimed_by="worker-2", renewals=0, runs=2,
               double_run=True, completions=1, completions_refused=1, first_holder_refused=True,
               accepted_after_lapse_by="worker-2", accepted_lapsed_at=62.5, accepted_at=107.5,
               accepted_attempts=2, beats_in_gap=0, claims_in_gap=0)
    p = record(QueueHeartbeatParams, renew="none", lease=30.0, job=75.0)
    w = queue_heartbeat_words(p, v)
    assert w.facts[-2:] == ("worker-2's own lease ran out at 62.5 s, yet its completion at 107.5 s was accepted",
                            "no consumer beat in between, so no reap took the job back and nobody claimed it again, "
                            "and attempt 2 was still the current one")
    w = queue_heartbeat_words(p, v.but(beats_in_gap=2))
    assert "no consumer beat" not in w.text and "2 beats and 0 claims came in between" in w.text
    w = queue_heartbeat_words(p, v.but(accepted_after_lapse_by=None))
    assert "own lease" not in w.text


def test_beats_figure_follows_the_figure_protocol(fake):
    from emqlab.view.figures import beats_figure
    from emqlab.scenarios.reaper import beats_figure_words

    tl = reaper(backend=fake)
    drawing = beats_figure(tl)
    assert drawing.readout_text == drawing.words.prompt
    check_protocol(drawing, ["reaper"])
    drawing.light("reaper")
    assert drawing.readout_text.startswith("worker-1 died at 10 s")
    assert "reap" in drawing.words.caption and "TIME" in drawing.words.caption
    qh = queue_heartbeat(renew="none", backend=fake)
    check_protocol(beats_figure({"none": qh}), ["none"])
    assert beats_figure_words([tl, qh]).modes.keys() == {"reaper", "queue-heartbeat"}
    old = load(tl.to_dict())  # a run recorded before the claims carried the server's TIME
    for e in old.of("claim"):
        e.data.pop("time_s")
    with pytest.raises(BadParameter, match="server's TIME"):
        beats_figure(old)


def test_consumer_validates_the_reap_limit(fake):
    for bad in (0, 1001, 2.5, True):
        with pytest.raises(BadParameter, match="reap limit"):
            Consumer(Queue(fake, "orders"), "w", lease_ms=30_000, beat_ms=5_000, work_ms=1_000, reap_limit=bad)


def test_lab_script_shows_the_package_own_lua_file():
    from pathlib import Path

    import emqlab
    from emqlab.course import lab
    from emqlab.queue.jobs import REAP_LIMIT

    from emqlab.store.scripts import source

    text = lab.script("reap")
    assert text == source("reap")  # the script the server runs: the file with its includes in place
    assert (Path(emqlab.__file__).parent / "lua" / "reap.lua").read_text(encoding="utf-8").startswith(text[:40])
    assert repr(text) == str(text)  # a notebook shows the file as it reads, not a quoted string
    for needle in ("redis.call('TIME')", "'ZRANGEBYSCORE', active_key, '-inf', now, 'LIMIT', 0, limit"):
        assert needle in text
    assert REAP_LIMIT == 100  # the bound the consumer passes as `limit` on every beat
    with pytest.raises(KeyError, match="no Lua script named"):
        lab.script("reaper")


def test_a_lesson_quotes_the_reap_script_s_lines_and_the_queue_s_keys_as_the_package_has_them(fake):
    from emqlab.course import lab

    lines = lab.excerpt("reap", "'TIME'", "unpack(expired)").splitlines()
    whole = lab.script("reap").splitlines()
    assert len(lines) >= 2 and all(whole[int(n) - 1] == text for n, text in (ln.split("  ", 1) for ln in lines))
    assert any("redis.call('TIME')" in ln for ln in lines)
    q = Queue(fake, "orders", prefix="emqlab:any-0123456789abcdef:")
    assert lab.keyspace(q, "J1").splitlines() == ["emq:{orders}:pending", "emq:{orders}:active", "emq:{orders}:job:J1",
                                                  "emq:{orders}:schedule", "emq:{orders}:wake", "emq:{orders}:done",
                                                  "emq:{orders}:dead"]
