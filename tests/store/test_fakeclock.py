"""fakeredis on the virtual clock: expiry and TIME follow the SimPy clock exactly."""

import importlib
import time as real_time

import pytest

from emqlab.store import fakeclock
from emqlab.store.backend import connect


def test_the_adapter_still_fits_the_installed_fakeredis():
    fakeclock.ensure_supported()  # raises if an upgrade moved fakeredis's time reads
    fakeclock.install()
    for name in fakeclock.PATCHED_MODULES:
        assert importlib.import_module(name).time is fakeclock._PROXY


def test_expiry_is_exact_to_the_millisecond(fake):
    c, key = fake.client, fake.key("k")
    c.set(key, "v", px=30_000)
    start = fake.clock.now_ms
    fake.clock.run(until=start + 30_000)
    assert c.get(key) == "v"  # Redis expires a key when now > deadline
    assert c.pttl(key) == 0
    fake.clock.run(until=start + 30_001)
    assert c.get(key) is None


def test_time_command_follows_the_virtual_clock(fake):
    s0, us0 = fake.client.time()
    fake.clock.run(until=fake.clock.now_ms + 1_234)
    s1, us1 = fake.client.time()
    assert (s1 * 1_000_000 + us1) - (s0 * 1_000_000 + us0) == 1_234_000
    assert s0 * 1000 == fakeclock.EPOCH_MS + fake.clock.now_ms - 1_234 - (us0 // 1000)


def test_two_backends_keep_their_own_time():
    a, b = connect("fake"), connect("fake")
    try:
        a.clock.run(until=50_000)
        (sa, _), (sb, _) = a.client.time(), b.client.time()
        assert sa - sb == 50
    finally:
        a.close()
        b.close()


def test_outside_a_command_real_time_is_untouched(fake):
    fakeclock.install()
    fake.clock.run(until=3_600_000)  # an hour of model time: the store's clock is far from the wall's
    (s, _) = fake.client.time()
    assert s == (fakeclock.EPOCH_MS + 3_600_000) // 1000
    # the proxy answers the wall clock when no command runs, and the time module itself is not replaced
    wall_before = real_time.time()
    proxied = fakeclock._PROXY.time()
    wall_after = real_time.time()
    assert wall_before <= proxied <= wall_after
    assert real_time.time is not fakeclock._PROXY.time and importlib.import_module("time") is real_time


def test_a_30s_lease_lapses_at_exactly_30000_ms_and_time_follows(fake):
    c, key = fake.client, fake.key("lease")
    start = fake.clock.now_ms
    c.set(key, "holder", px=30_000)
    fake.clock.run(until=start + 29_999)
    assert c.get(key) == "holder" and c.pttl(key) == 1
    (s, us) = c.time()
    assert s * 1000 + us // 1000 == fakeclock.EPOCH_MS + start + 29_999
    fake.clock.run(until=start + 30_000)
    assert c.pttl(key) == 0  # the deadline itself: Redis expires a key only when now > deadline
    fake.clock.run(until=start + 30_001)
    assert c.get(key) is None and c.pttl(key) == -2
    (s, us) = c.time()
    assert s * 1000 + us // 1000 == fakeclock.EPOCH_MS + start + 30_001


def test_a_fakeredis_outside_the_tested_range_is_refused(monkeypatch):
    import fakeredis

    from emqlab.core.errors import BackendUnavailable

    monkeypatch.setattr(fakeredis, "__version__", "2.39.0")
    with pytest.raises(BackendUnavailable, match="tested on fakeredis 2.40, 2.41; found 2.39.0"):
        fakeclock.ensure_supported()


@pytest.mark.live
def test_a_live_backend_refuses_the_virtual_clock(valkey_url):
    from emqlab.core.errors import BadParameter

    with pytest.raises(BadParameter, match="virtual clock runs only on the fake backend"):
        connect(valkey_url, clock="virtual")
