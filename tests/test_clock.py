"""Clocks: virtual is instant and exact; real is SimPy real time, scaled."""

import time

import pytest

from emqlab.clock import RealClock, VirtualClock, make_clock
from emqlab.errors import BadParameter


def test_virtual_clock_is_instant_and_exact():
    clock = VirtualClock()
    seen = []

    def proc():
        yield clock.timeout(75_000)
        seen.append(clock.now_ms)

    clock.process(proc())
    started = time.perf_counter()
    clock.run()
    assert seen == [75_000] and clock.now == 75.0
    assert time.perf_counter() - started < 0.5
    assert clock.to_server_ms(30_000) == 30_000 and clock.from_server_ms(123) == 123


def test_real_clock_scales_durations_for_the_server():
    clock = RealClock(scale=0.01)
    assert clock.to_server_ms(30_000) == 300
    assert clock.from_server_ms(300) == 30_000
    assert clock.to_server_ms(10) == 1  # never 0: a zero PX would be an error on the server


@pytest.mark.realtime
def test_a_reused_real_clock_does_not_wait_out_earlier_runs():
    clock = RealClock(scale=0.01)  # 10 000 model ms = 0.1 s
    for _ in range(3):
        def wait():
            yield clock.timeout(10_000)

        clock.process(wait())
        started = time.perf_counter()
        clock.run()
        assert 0.09 <= time.perf_counter() - started < 0.6


@pytest.mark.parametrize("scale", [0, -1, float("nan"), float("inf")])
def test_bad_scale_is_refused(scale):
    with pytest.raises(BadParameter, match="scale must be a number > 0"):
        RealClock(scale)


def test_unknown_clock_is_refused():
    with pytest.raises(BadParameter, match="allowed: virtual, real"):
        make_clock("sundial")
