"""Clocks: virtual is instant and exact; real is SimPy real time, scaled.

No test here asserts speed: the real clock's waits are checked against a stand-in wall clock that
SimPy and emqlab read instead of the machine's, so a loaded machine cannot change an outcome."""

import time
import types

import pytest
import simpy.rt

import emqlab.store.clock
from emqlab.store.backend import StoreSpec, connect, store_spec
from emqlab.store.clock import RealClock, VirtualClock, make_clock
from emqlab.core.errors import BadParameter


class StandInWall:
    """The wall clock SimPy's real-time environment and `RealClock.now_ms` read; `sleep` moves it
    on by exactly what was asked, plus `late` seconds (a wake-up delayed by a loaded machine)."""

    def __init__(self, monkeypatch):
        self.t, self.late, self.slept = 1000.0, 0.0, []
        monkeypatch.setattr(simpy.rt, "monotonic", self.monotonic)
        monkeypatch.setattr(simpy.rt, "sleep", self.sleep)
        monkeypatch.setattr(emqlab.store.clock, "time", types.SimpleNamespace(monotonic=self.monotonic))

    def monotonic(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds + self.late


def test_virtual_clock_is_instant_and_exact(monkeypatch):
    def no_waiting(seconds):
        raise AssertionError(f"the virtual clock slept {seconds} s")

    monkeypatch.setattr(time, "sleep", no_waiting)
    monkeypatch.setattr(simpy.rt, "sleep", no_waiting)
    clock = VirtualClock()
    seen = []

    def proc():
        yield clock.timeout(75_000)
        seen.append(clock.now_ms)

    clock.process(proc())
    clock.run()
    assert seen == [75_000] and clock.now == 75.0
    assert clock.to_server_ms(30_000) == 30_000 and clock.from_server_ms(123) == 123


def test_real_clock_scales_durations_for_the_server():
    clock = RealClock(scale=0.01)
    assert clock.to_server_ms(30_000) == 300
    assert clock.from_server_ms(300) == 30_000
    assert clock.to_server_ms(10) == 1  # never 0: a zero PX would be an error on the server


def test_a_reused_real_clock_does_not_wait_out_earlier_runs(monkeypatch):
    wall = StandInWall(monkeypatch)
    clock = RealClock(scale=0.01)  # 10 000 model ms = 0.1 s of wall time
    for run in range(1, 4):
        def wait():
            yield clock.timeout(10_000)

        clock.process(wait())
        started = wall.t
        clock.run()
        # each run waits its own 0.1 s; a clock that kept run 1's wall origin would wait 0.2 s, then 0.3 s
        assert wall.t - started == pytest.approx(0.1), f"run {run}"
        assert clock.now_ms == 10_000 * run


def test_a_late_wake_up_delays_what_follows_instead_of_being_made_up(monkeypatch):
    wall = StandInWall(monkeypatch)
    wall.late = 0.05  # every wake-up comes 50 ms (5 000 model ms) after it was due
    clock = RealClock(scale=0.01)
    acted = []

    def worker():
        for _ in range(3):
            yield clock.timeout(10_000)
            acted.append(round(clock.now_ms))

    clock.process(worker())
    clock.run()
    # each step starts from when the worker really woke, as a real program's sleep does
    assert acted == [15_000, 30_000, 45_000]


@pytest.mark.realtime
def test_a_real_clock_never_runs_ahead_of_the_wall():
    clock = RealClock(scale=0.01)  # 10 000 model ms = 0.1 s
    stamps = []

    def wait():
        stamps.append(time.monotonic())
        yield clock.timeout(10_000)
        stamps.append(time.monotonic())

    clock.process(wait())
    clock.run()
    # a lower bound only: a loaded machine makes a wait longer, never shorter
    assert (stamps[1] - stamps[0] >= 0.1 * 0.99
            and clock.now_ms >= 10_000)  # not an event count: a wait's length, in seconds and model ms


@pytest.mark.parametrize("scale", [0, -1, float("nan"), float("inf"), 1e-320, 2, True])
@pytest.mark.parametrize("clock", ["virtual", "real"])
def test_bad_scale_is_refused_where_a_store_is_specified(scale, clock):
    # even on the virtual clock, where the scale is not used: a bad number is refused, not ignored
    with pytest.raises(BadParameter, match="scale must be a number from 0.0001 to 1"):
        store_spec("fake", clock=clock, scale=scale)
    with pytest.raises(BadParameter, match="scale must be a number from 0.0001 to 1"):
        connect("fake", clock=clock, scale=scale)


def test_a_real_clock_converts_between_model_and_real_seconds():
    clock = store_spec("fake", clock="real", scale=0.02).make_clock()
    assert clock.real and clock.real_s(30) == pytest.approx(0.6) and clock.model_s(0.6) == pytest.approx(30)
    assert clock.to_server_ms(30_000) == 600 and clock.from_server_ms(600) == 30_000


def test_a_spec_travels_whole_to_another_process():
    spec = store_spec("redis://:secret@127.0.0.1:6390/0", scale=0.05)
    back = StoreSpec.loads(spec.dumps())
    assert (back, back.source, back.url, back.clock, back.scale) == (spec, "url", spec.url, "real", 0.05)
    with pytest.raises(BadParameter, match="JSON StoreSpec.dumps"):
        StoreSpec.loads("0.05")
    with pytest.raises(BadParameter, match="scale must be a number from 0.0001 to 1"):  # its own words, not the JSON's
        StoreSpec.loads(spec.dumps().replace("0.05", "5"))
    assert "secret" not in repr(spec) and "secret" not in repr(back)  # a spec's repr never shows a password


def test_a_live_store_keeps_real_time():
    assert store_spec("valkey").clock == "real" and store_spec("fake").clock == "virtual"
    with pytest.raises(BadParameter, match="a virtual clock runs only on the fake backend"):
        store_spec("valkey", clock="virtual")


def test_unknown_clock_is_refused():
    with pytest.raises(BadParameter, match="allowed: virtual, real"):
        make_clock("sundial")
