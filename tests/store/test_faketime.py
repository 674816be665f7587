"""A live server's clock, stepped: an embedded valkey-server under libfaketime (emqlab.store.faketime).

The live tests start a server of their own (never the session's: a step forward is for good) and need
libfaketime on this machine; they install nothing. Where it is missing they fail if `./run install` would
have installed it here (apt-get as root or through sudo, or PyPI's copy on x86-64 Linux), and are skipped,
saying why, only where it could not have."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
import time

import pytest
import redis

from emqlab.core.errors import BackendUnavailable, BadParameter
from emqlab.store.backend import connect
from emqlab.store.faketime import FILE_NAME, FaketimeMissing, ServerClock, library
from realtime import premise, real_slack_s, timeout_s

# Valkey reads its wall clock about once a millisecond and serves the commands in between from that reading:
# what TIME shows may be that much older than the moment the command reached it (twice that, to be safe)
VALKEY_CLOCK_READ_S = 0.002
FORMAT_S = 1e-4  # TIME and the offset file both carry microseconds: rounding, not timing


def _run_install_could() -> bool:
    """Whether `./run install` would have installed libfaketime here: apt-get as root or with sudo, or
    PyPI's copy (an x86-64 Linux build) into the venv."""
    if shutil.which("apt-get"):
        if os.geteuid() == 0:
            return True
        if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
            return True
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


@pytest.fixture(scope="module")
def faketime_library() -> str:
    try:
        return library()
    except FaketimeMissing as exc:
        if _run_install_could():
            pytest.fail(f"{exc} -- `./run install` installs it on this machine: run it", pytrace=False)
        pytest.skip(f"libfaketime is missing and `./run install` cannot install it here: {exc}")


@pytest.fixture
def stepped(faketime_library):
    """A backend on an embedded server of its own under libfaketime, at scale 0.01 (the lab's)."""
    be = connect("valkey", clock="real", scale=0.01, server_clock=True)
    yield be
    be.close()


def _offset(client: redis.Redis) -> tuple[float, float]:
    """(lowest, highest) the server's clock offset from this machine's can be, by one TIME read: the server
    read its clock between a little before the command was sent and when its reply came back."""
    t0 = time.time()
    seconds, micros = client.time()
    t1 = time.time()
    shown = seconds + micros / 1e6
    return shown - t1 - FORMAT_S, shown - t0 + VALKEY_CLOCK_READ_S + FORMAT_S


def _step_seen(client: redis.Redis, before: tuple[float, float]) -> tuple[float, float]:
    """(lowest, highest) the step of the server's clock between `before` and now can be."""
    lo, hi = _offset(client)
    return lo - before[1], hi - before[0]


@pytest.mark.live
def test_a_forward_step_ends_a_lease_at_once_and_moves_time_by_the_step(stepped):
    c = stepped.client
    key = stepped.key("lease")
    c.set(key, "holder", px=30_000)  # 30 real seconds: no test here waits that long
    premise(c.exists(key) == 1, "the lease is there before the step")
    before = _offset(c)
    stepped.jump_server_clock(60_000 / 0.01)  # model ms at scale 0.01: 60 real seconds
    lo, hi = _step_seen(c, before)
    assert lo <= 60 <= hi, f"TIME moved by {lo:.4f}..{hi:.4f} s, not 60"
    assert c.exists(key) == 0  # its end (30 s on) is behind the server's new time: gone at the jump
    assert c.pttl(key) == -2


@pytest.mark.live
def test_a_fractional_step_at_the_labs_scale(stepped):
    """60 model seconds at scale 0.01 is 0.6 real seconds: libfaketime takes fractions ("+0.600000")."""
    c = stepped.client
    key = stepped.key("lease")
    before = _offset(c)
    stepped.jump_server_clock(60_000)
    lo, hi = _step_seen(c, before)
    assert lo <= 0.6 <= hi, f"TIME moved by {lo:.4f}..{hi:.4f} s, not 0.6"
    with open(stepped.server_clock.path) as f:
        assert f.read() == "+0.600000\n"
    # a lease of 30 model s (0.3 s) set now ends on the server's new clock, not the machine's
    c.set(key, "holder", px=300)
    before = _offset(c)
    stepped.jump_server_clock(30_000)  # 0.3 s more: its end is reached at the jump
    assert c.exists(key) == 0
    lo, hi = _step_seen(c, before)
    assert lo <= 0.3 <= hi
    assert stepped.server_clock.offset_s == pytest.approx(0.9)


@pytest.mark.live
def test_a_backward_step_keeps_a_lease_alive_past_its_ttl(stepped):
    c = stepped.client
    key = stepped.key("lease")
    ttl_s, back_s = 0.3, 60.0
    c.set(key, "crashed holder", px=int(ttl_s * 1000))
    set_at = time.monotonic()
    before = _offset(c)
    stepped.jump_server_clock(-back_s * 1000 / 0.01)  # 60 real seconds back
    lo, hi = _step_seen(c, before)
    assert lo <= -back_s <= hi, f"TIME moved by {lo:.4f}..{hi:.4f} s, not -60"
    time.sleep(ttl_s + real_slack_s())  # well past its TTL on the machine's clock
    waited = time.monotonic() - set_at
    premise(ttl_s < waited < ttl_s + back_s, "the wait outlasted the TTL and not the step")
    assert c.exists(key) == 1  # a holder dead for longer than its TTL still holds the lease
    # what is left of it: its TTL and the step, less the real time gone by (which the server's clock still counts)
    left_s = c.pttl(key) / 1000
    assert ttl_s + back_s - waited - real_slack_s() < left_s <= ttl_s + back_s - waited + VALKEY_CLOCK_READ_S + 0.001  # PTTL: whole ms


@pytest.mark.live
def test_steps_add_up_and_the_server_shows_each_before_the_call_returns(stepped):
    c = stepped.client
    total = 0.0
    for model_s in (60, -60, 1, -30, 90):  # 0.6, -0.6, 0.01, -0.3, 0.9 real seconds
        before = _offset(c)
        stepped.jump_server_clock(model_s * 1000)
        lo, hi = _step_seen(c, before)  # the very next command sees the step
        assert lo <= model_s * 0.01 <= hi, f"a {model_s} model s step showed as {lo:.4f}..{hi:.4f} s"
        total += model_s * 0.01
    assert stepped.server_clock.offset_s == pytest.approx(total)


@pytest.mark.live
def test_only_the_stepped_server_loads_libfaketime(stepped, faketime_library):
    def maps(pid: int) -> str:
        with open(f"/proc/{pid}/maps") as f:
            return f.read()

    assert os.path.realpath(faketime_library) in maps(stepped._server.pid)
    plain = connect("valkey", clock="real")
    try:
        assert plain.server_clock is None
        assert "libfaketime" not in maps(plain._server.pid)
        with pytest.raises(BadParameter, match="a server emqlab starts itself"):
            plain.jump_server_clock(1000)  # an embedded server started without its clock being ours
    finally:
        plain.close()


@pytest.mark.live
def test_the_offset_file_lives_and_goes_with_the_servers_folder(faketime_library):
    be = connect("valkey", clock="real", server_clock=True)
    path = be.server_clock.path
    assert os.path.dirname(path) == be._server.data_dir and os.path.basename(path) == FILE_NAME
    with open(path) as f:
        assert f.read() == "+0.000000\n"  # the server starts on the machine's time
    be.close()
    assert not os.path.exists(os.path.dirname(path))
    with pytest.raises(Exception, match="closed|stopped"):
        be.jump_server_clock(1000)


@pytest.mark.live
def test_a_server_emqlab_did_not_start_is_refused(valkey_url):
    with pytest.raises(BadParameter) as refused:
        connect(valkey_url, clock="real", server_clock=True)
    message = str(refused.value)
    assert "\n" not in message
    assert message == ("a clock jump needs a server emqlab starts itself (--backend valkey): emqlab will not "
                       "move the clock of a server it did not start")
    be = connect(valkey_url, clock="real")
    try:
        with pytest.raises(BadParameter, match="emqlab will not move the clock of redis://"):
            be.jump_server_clock(1000)
    finally:
        be.close()


@pytest.mark.parametrize("spec", ["redis://127.0.0.1:1/0", "unix:///nowhere.sock", "fake"])
def test_server_clock_is_refused_on_anything_but_valkey_before_any_connection(spec):
    with pytest.raises(BadParameter, match="^a clock jump needs a server emqlab starts itself"):
        connect(spec, server_clock=True)


def test_a_missing_library_is_one_line_naming_what_to_install(tmp_path):
    with pytest.raises(FaketimeMissing) as missing:
        library([str(tmp_path)])
    message = str(missing.value)
    assert "\n" not in message and "apt-get install faketime" in message
    assert isinstance(missing.value, BackendUnavailable) and missing.value.exit_code == 2
    (tmp_path / "libfaketime.so.1").write_text("not a library")  # a file that is no ELF for this machine
    with pytest.raises(FaketimeMissing):
        library([str(tmp_path)])


def test_without_the_library_no_server_starts(monkeypatch, tmp_path):
    # not marked live: EmbeddedValkey.start fails this test if it is reached (tests/conftest.py)
    monkeypatch.setenv("EMQLAB_LIBFAKETIME", str(tmp_path / "libfaketime.so.1"))
    with pytest.raises(FaketimeMissing, match="EMQLAB_LIBFAKETIME=.* apt-get install faketime"):
        connect("valkey", clock="real", server_clock=True)


def test_a_library_found_in_a_folder_or_by_a_pattern(faketime_library):
    folder = os.path.dirname(faketime_library)
    assert library([folder]) == faketime_library
    assert library(["/nowhere/*/libfaketime.so.1", os.path.join(folder, "libfaketime.so.*")]) == faketime_library


def test_the_servers_environment(tmp_path, faketime_library):
    clock = ServerClock(faketime_library)
    clock.attach(str(tmp_path))
    env = clock.environment({"PATH": "/bin", "LD_PRELOAD": "/lib/other.so", "FAKETIME": "+1d",
                             "FAKETIME_START_AFTER_SECONDS": "5"})
    assert env["PATH"] == "/bin"  # the rest of the environment is kept
    assert env["LD_PRELOAD"] == f"{faketime_library}:/lib/other.so"
    assert "FAKETIME" not in env and "FAKETIME_START_AFTER_SECONDS" not in env  # would change what the file means
    assert env["FAKETIME_TIMESTAMP_FILE"] == str(tmp_path / FILE_NAME)
    assert env["FAKETIME_NO_CACHE"] == "1" and env["FAKETIME_DONT_FAKE_MONOTONIC"] == "1"


def test_jumps_rewrite_the_file_in_libfaketimes_format(tmp_path, faketime_library):
    clock = ServerClock(faketime_library)
    path = clock.attach(str(tmp_path))
    assert open(path).read() == "+0.000000\n"
    assert clock.jump(0.6) == pytest.approx(0.6)
    assert open(path).read() == "+0.600000\n"
    clock.jump(-60.6)
    assert open(path).read() == "-60.000000\n"
    clock.jump(0.0000004)  # below a microsecond: the file keeps microseconds
    assert open(path).read() == "-60.000000\n"
    assert sorted(os.listdir(tmp_path)) == [FILE_NAME]  # no temporary file left beside it
    with pytest.raises(BadParameter):
        clock.jump(float("inf"))


def test_a_step_the_server_never_shows_is_an_error(tmp_path, faketime_library, monkeypatch):
    import emqlab.store.faketime as faketime

    monkeypatch.setattr(faketime, "SEEN_TIMEOUT_S", timeout_s(0.2))
    clock = ServerClock(faketime_library)
    clock.attach(str(tmp_path))
    with pytest.raises(Exception, match="did not move by \\+5.000 s"):
        clock.jump(5.0, server_time=time.time)  # a server whose clock libfaketime does not move
