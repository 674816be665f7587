"""The generic lease on both stores: SET NX PX with a token, token-checked extend and release."""

import time

import pytest

from emqlab.core.errors import BadParameter, LeaseLost, StaleToken
from emqlab.lease.leases import Leases, new_token


def test_tokens_are_fresh_and_random():
    tokens = {new_token() for _ in range(1000)}
    assert len(tokens) == 1000
    assert all(len(t) == 32 for t in tokens)


def lag_ms(backend, since_real_s: float) -> float:
    """How far a TTL read now may fall short of what was set at `since_real_s` (time.monotonic()), in model ms:
    on the virtual clock one server millisecond of rounding, exactly; on a real clock also the real time this
    host took since (the clock's own `now_ms` moves only when a run steps it, so it cannot say). Call it after
    the read."""
    server_ms = 1.0 + ((time.monotonic() - since_real_s) * 1000.0 if backend.clock.real else 0.0)
    return backend.clock.from_server_ms(server_ms)


def test_acquire_is_exclusive_and_reports_the_servers_ttl(backend):
    leases, key = Leases(backend), backend.key("t", "lock-acquire")
    sent = time.monotonic()
    grant = leases.acquire(key, 30_000)
    assert grant is not None
    assert backend.client.get(key) == grant.token
    # the TTL is what the server reported, in model ms (real mode: scaled back from real ms), short of the
    # 30 s asked by no more than the time the call took on this host
    assert 30_000 - lag_ms(backend, sent) <= grant.ttl_ms <= 30_000  # not an event count: a TTL, model ms
    assert leases.acquire(key, 30_000) is None
    leases.release(key, grant.token)


def test_extend_with_the_token_pushes_the_lease_out(backend):
    leases, key = Leases(backend), backend.key("t", "lock-extend")
    grant = leases.acquire(key, 30_000)  # long enough on a real clock that the extend finds it held on any host
    sent = time.monotonic()
    extended = leases.extend(key, grant.token, 60_000)
    assert 60_000 - lag_ms(backend, sent) <= extended.ttl_ms <= 60_000  # not an event count: a TTL, model ms
    read_back = leases.ttl_ms(key)  # read before the lag is taken: the lag must cover the read
    assert 60_000 - lag_ms(backend, sent) <= read_back <= 60_000  # not an event count: a TTL read back
    leases.release(key, grant.token)


def test_extend_with_a_stale_token_replies_0_and_changes_nothing(backend):
    leases, key = Leases(backend), backend.key("t", "lock-stale-extend")
    grant = leases.acquire(key, 30_000)
    before = backend.client.pttl(key)
    with pytest.raises(LeaseLost) as lost:
        leases.extend(key, "not-the-token", 90_000)
    assert lost.value.key == key and lost.value.token == "not-the-token"
    assert "replied 0" in str(lost.value)
    assert backend.client.get(key) == grant.token
    assert backend.client.pttl(key) <= before  # not pushed out
    # the raw script reply is 0
    assert backend.scripts("extend_lease", [key], ["not-the-token", 90_000]) == 0
    leases.release(key, grant.token)


def test_release_with_a_stale_token_changes_nothing_and_says_so(backend):
    leases, key = Leases(backend), backend.key("t", "lock-stale-release")
    grant = leases.acquire(key, 30_000)
    with pytest.raises(StaleToken, match="refused") as refused:
        leases.release(key, new_token())
    assert refused.value.key == key
    assert backend.client.get(key) == grant.token
    leases.release(key, grant.token)
    assert backend.client.exists(key) == 0
    with pytest.raises(StaleToken):  # a second release of the same token: the key is gone
        leases.release(key, grant.token)


def test_extend_after_the_key_expired_is_lease_lost(fake):
    leases, key = Leases(fake), fake.key("t", "lock")
    grant = leases.acquire(key, 30_000)
    fake.clock.run(until=fake.clock.now_ms + 30_001)
    with pytest.raises(LeaseLost):
        leases.extend(key, grant.token, 30_000)


@pytest.mark.parametrize("ttl", [0, -5, float("nan"), float("inf"), "30"])
def test_bad_ttl_is_refused_before_the_server(fake, ttl):
    rt = fake.counter.round_trips
    with pytest.raises(BadParameter, match="from 1 to"):
        Leases(fake).acquire(fake.key("t", "lock"), ttl)
    assert fake.counter.round_trips == rt


def test_ownership_is_checked_in_one_round_trip(backend):
    leases, key = Leases(backend), backend.key("t", "lock")
    grant = leases.acquire(key, 30_000)
    rt = backend.counter.round_trips
    leases.extend(key, grant.token, 30_000)
    leases.release(key, grant.token)
    assert backend.counter.round_trips - rt == 2  # one EVALSHA each: no GET-then-PEXPIRE
