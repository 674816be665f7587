"""Backends: the prefix is a fence, reset never flushes, round trips are counted, servers stop."""

import os

import pytest
import redis

from emqlab.backend import connect, parse_backend, redact
from emqlab.errors import BackendUnavailable, BadParameter, ForeignKeys
from emqlab.scenarios import heartbeat


def test_parse_backend_accepts_what_the_contract_names():
    assert parse_backend("fake") == ("fake", None)
    assert parse_backend("valkey") == ("valkey", None)
    assert parse_backend("redis://:pw@127.0.0.1:6379/0") == ("url", "redis://:pw@127.0.0.1:6379/0")
    assert parse_backend("rediss://user:pw@example.test:6380") == ("url", "rediss://user:pw@example.test:6380")
    assert parse_backend("unix:///tmp/valkey.sock") == ("url", "unix:///tmp/valkey.sock")


def test_environment_chooses_when_nothing_is_named(monkeypatch):
    monkeypatch.setenv("EMQLAB_BACKEND", "valkey")
    assert parse_backend(None) == ("valkey", None)
    monkeypatch.setenv("EMQLAB_URL", "redis://127.0.0.1:7000")
    assert parse_backend(None) == ("url", "redis://127.0.0.1:7000")
    assert parse_backend("fake") == ("fake", None)  # an explicit choice wins


def test_redact_hides_passwords():
    assert redact("redis://:s3cret@h:1/0") == "redis://:***@h:1/0"
    assert redact("rediss://alice:s3cret@h:1") == "rediss://alice:***@h:1"
    assert redact("redis://h:1") == "redis://h:1"


def test_round_trips_count_packed_sends(fake):
    rt, cmds = fake.counter.snapshot()
    fake.client.set(fake.key("a"), 1)
    pipe = fake.client.pipeline(transaction=False)
    for i in range(10):
        pipe.incr(fake.key("a"))
    pipe.execute()
    assert fake.counter.round_trips - rt == 2
    assert fake.counter.commands - cmds == 11


def test_scripts_are_loaded_up_front_so_a_first_call_is_one_round_trip(backend):
    rt = backend.counter.round_trips
    assert backend.scripts("release_lease", [backend.key("nothing")], ["tok"]) == 0
    assert backend.counter.round_trips - rt == 1  # EVALSHA, never NOSCRIPT → SCRIPT LOAD → EVALSHA


def test_delete_prefix_refuses_keys_outside_emqlab(fake):
    with pytest.raises(BadParameter, match="only touches keys under 'emqlab:'"):
        fake.delete_prefix("orders:")


@pytest.mark.live
def test_a_live_run_never_touches_foreign_keys_and_reset_refuses(live, valkey_url):
    other = redis.Redis.from_url(valkey_url, decode_responses=True)
    other.set("orders:42", "precious")
    other.set("emqlab:leftover", "x")
    try:
        heartbeat(renew="none", backend=live)
        assert other.get("orders:42") == "precious"
        with pytest.raises(ForeignKeys, match="refusing to reset.*orders:42"):
            live.reset()
        assert other.get("emqlab:leftover") == "x"  # refused means nothing was deleted
        other.delete("orders:42")
        assert live.reset() == 1
        assert other.dbsize() == 0
    finally:
        other.delete("orders:42", "emqlab:leftover")
        other.close()


def test_reset_on_fake_deletes_only_emqlab_keys(fake):
    fake.client.set(fake.key("x"), 1)
    fake.client.set(fake.key("y", "z"), 1)
    assert fake.reset() == 2 and fake.keys() == []


@pytest.mark.live
def test_embedded_valkey_starts_and_stops_with_its_backend():
    be = connect("valkey")
    pid = be._server.pid
    assert be.client.ping() and be.clock.real and be.name == "valkey"
    be.close()
    with pytest.raises(ProcessLookupError):
        for _ in range(100):
            os.kill(pid, 0)
            import time

            time.sleep(0.05)


def test_unreachable_url_is_backend_unavailable():
    with pytest.raises(BackendUnavailable, match="cannot reach the store at redis://127.0.0.1:1"):
        connect("redis://127.0.0.1:1")


def test_bad_prefix_is_refused():
    with pytest.raises(BadParameter, match="key prefix"):
        connect("fake", prefix="bad prefix")
