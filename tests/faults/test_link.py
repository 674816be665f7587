"""A slow link eats the lease's margin (issue 12, item 4): `heartbeat(latency=…)` and
`emqlab heartbeat --latency SECONDS`. Exact on fakeredis and the virtual clock; within margins on
live Valkey, where the holder's connection runs through an `emqlab.faults.relay.Relay`."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import pytest
from realtime import timeout_s
from support.records import REAL_SLACK_S, SLOW_SCALE, slack

from emqlab.core import ranges
from emqlab.faults import relay
from emqlab.core.errors import BadParameter
from emqlab.scenarios.heartbeat import Params as HeartbeatParams
from emqlab.scenarios.heartbeat import heartbeat
from emqlab.store.clock import RealClock

RUN_SECONDS = 45  # about how long this file runs on a quiet 2-core machine: the suite starts the longest first

CLI = [sys.executable, "-m", "emqlab.cli"]
FACTS = ("lapsed_at", "renew_lost_at", "blind_s", "runs")


def facts(v) -> dict:
    return {k: v[k] if isinstance(v, dict) else getattr(v, k) for k in FACTS}  # a run's verdict, or the CLI's JSON


# -- exact, on fakeredis and the virtual clock -------------------------------------------------
def test_a_5_s_link_keeps_the_lease(fake):
    v = heartbeat(renew="half", latency=5, backend=fake).verdict
    assert facts(v) == {"lapsed_at": None, "renew_lost_at": None, "blind_s": None, "runs": 1}
    assert v.finished_by == ["holder"] and not v.double_run
    assert v.tightest_margin_s == 5.0  # each extend lands 25 s after the last stamp: 5 s of 30 left
    assert "over a link whose one-way delay is 5 s" in v.text
    assert "held the 30 s lease to the end" in v.text


def test_a_10_s_link_loses_it_and_the_holder_learns_15_s_late(fake):
    tl = heartbeat(renew="half", latency=10, backend=fake)
    v = tl.verdict
    assert facts(v) == {"lapsed_at": 40.0, "renew_lost_at": 55.0, "blind_s": 15.0, "runs": 2}
    # the server stamped the lease at 10 (deadline 40); the reply reached the holder at 20
    acquire = tl.of("acquire", "holder")[0]
    assert (acquire.t, acquire.data["deadline"]) == (20.0, 40.0)
    assert [e.t for e in tl.of("work_start", "holder")] == [20.0]
    assert v.holder_stopped_at == 55.0 and v.reclaimed_at == 40.5  # the contender ran it from just after 40
    assert v.double_run and v.overlap == [[40.5, 55.0]]
    assert ("over a link whose one-way delay is 10 s" in v.text
            and "the holder learned only at 55 s, 15 s after its lease had lapsed" in v.text)
    assert "blind 15 s" in v.static and v.label == "renew at TTL/2, 10 s link"
    assert fake.keys() == []


def test_no_latency_changes_nothing(fake):
    plain, zero = heartbeat(renew="half", backend=fake), heartbeat(renew="half", latency=0, backend=fake)
    assert plain.verdict == zero.verdict and zero.params.latency == 0 and "latency" not in zero.to_dict()["params"]
    assert [(e.t, e.kind) for e in plain.events] == [(e.t, e.kind) for e in zero.events]


def test_a_pause_does_not_stop_the_wire_but_the_reply_is_read_on_resuming(fake):
    tl = heartbeat(renew="half", latency=5, pause="32:6", backend=fake)
    v = tl.verdict
    first = tl.of("renew", "holder")[0]  # sent at 25, landed at 30, its reply came at 35 into the pause
    assert (first.data["at"], first.t, first.data["deadline"]) == (30.0, 38.0, 60.0)
    assert v.lapsed_at is None and v.finished_by == ["holder"]  # next extend: sent 53, lands 58 < 60
    lost = heartbeat(renew="half", latency=5, pause="30:12", backend=fake).verdict
    # read at 42: the next extend leaves at 57 and lands at 62, after the lapse at 60; its 0 reply comes at 67
    assert (lost.lapsed_at, lost.renew_lost_at, lost.blind_s) == (60.0, 67.0, 7.0)


def test_never_told_the_holder_works_blind_to_the_end(fake):
    v = heartbeat(renew="none", latency=10, backend=fake).verdict
    assert v.lapsed_at == 40.0 and v.renew_lost_at is None
    assert v.blind_s == 55.0  # worked from 20 to 95, the lease gone at 40
    assert "never told: it went on working until 55 s after its lease had lapsed" in v.text


@pytest.mark.parametrize("bad", [-1, 600.5, float("nan"), float("inf"), "5", True])
def test_bad_latency_is_refused(fake, bad):
    with pytest.raises(BadParameter, match="latency must be a number from 0 to 600"):
        heartbeat(renew="half", latency=bad, backend=fake)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "heartbeat", *args], capture_output=True, text=True, timeout=timeout_s(120))


@pytest.mark.parametrize("latency, expected", [
    ("5", {"lapsed_at": None, "renew_lost_at": None, "blind_s": None, "runs": 1}),
    ("10", {"lapsed_at": 40.0, "renew_lost_at": 55.0, "blind_s": 15.0, "runs": 2}),
])
def test_the_cli_json_says_the_same(latency, expected):
    proc = _cli("--renew", "half", "--latency", latency, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["params"]["latency"] == float(latency)
    assert facts(out["verdict"]) == expected


@pytest.mark.parametrize("bad", ["-1", "601", "nan", "inf", "abc", ""])
def test_the_cli_refuses_bad_latency_in_one_line(bad):
    proc = _cli("--renew", "half", "--latency", bad)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "latency" in lines[0], proc.stderr


def test_a_long_link_on_a_real_clock_is_bounded_by_the_whole_run_limit():
    params = HeartbeatParams(lease=30.0, job=2000.0, renew="half", cadence=0.5)
    ranges.check_run("this heartbeat run", *params.cost(), clock=RealClock(0.01))  # 40 real seconds: allowed
    with pytest.raises(BadParameter, match="at most 60 real seconds"):
        ranges.check_run("this heartbeat run", *params.but(latency=600.0).cost(), clock=RealClock(0.01))
    proc = _cli("--clock", "real", "--job", "2000", "--latency", "600")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


# -- live Valkey, real clock (scale 0.01): the holder's link runs through the relay ------------
@pytest.mark.live
@pytest.mark.realtime
def test_live_a_5_s_link_keeps_the_lease(slow_live):
    """Each extend lands with 5 model s of the lease left: at SLOW_SCALE that is 0.5 s of real time."""
    live = slow_live
    v = heartbeat(renew="half", latency=5, backend=live).verdict
    assert v.lapsed_at is None and v.runs == 1 and v.blind_s is None
    assert not relay.running() and not [t for t in threading.enumerate() if t.name.startswith("emqlab-")]
    assert live.keys() == []


@pytest.mark.live
@pytest.mark.realtime
def test_live_a_10_s_link_loses_it_and_the_holder_learns_late(slow_live):
    live, margin = slow_live, slack(slow_live, 4)
    v = heartbeat(renew="half", latency=10, backend=live).verdict
    assert v.lapsed_at == pytest.approx(40, abs=margin)
    assert v.renew_lost_at == pytest.approx(55, abs=margin)
    assert v.blind_s == pytest.approx(15, abs=margin)
    # the contender (beside the server) took it just after the lapse; on a real clock the lapse is the
    # server's stamp (midpoint of send and reply) + its PTTL, so the two are compared with a margin
    assert v.runs == 2 and v.reclaimed_at == pytest.approx(40.5, abs=margin)
    assert not relay.running() and not [t for t in threading.enumerate() if t.name.startswith("emqlab-")]
    assert live.keys() == []


@pytest.mark.live
@pytest.mark.realtime
def test_live_cli_json_within_margins():
    proc = _cli("--backend", "valkey", "--scale", str(SLOW_SCALE), "--renew", "half", "--latency", "10", "--json")
    assert proc.returncode == 0, proc.stderr
    v, margin = json.loads(proc.stdout)["verdict"], REAL_SLACK_S / SLOW_SCALE
    assert v["lapsed_at"] == pytest.approx(40, abs=margin) and v["renew_lost_at"] == pytest.approx(55, abs=margin)
    assert v["blind_s"] == pytest.approx(15, abs=margin)
