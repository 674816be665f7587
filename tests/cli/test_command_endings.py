"""Every ending cleans up. SIGTERM, SIGHUP and Ctrl-C (SIGINT to the whole process group, as a
terminal sends it) end a run in one line, exit 128 + signal, with its keys deleted and its workers
and server stopped; SIGKILL takes the embedded server and the workers with it, and `emqlab clean`
then removes the dead run's keys — while a live run beside it keeps its own."""

from __future__ import annotations

import glob
import os
import signal
import tempfile

import pytest

from emqlab.store.embedded import FOLDER_PREFIX, EmbeddedValkey

from realtime import timeout_s
from support.processes import consumers, descendants, gone, keys_under, run_json, run_leases, servers, start, wait_for

LEASE_S = "3"  # a short run-lease, so a killed run's lease lapses within a test's patience
LONG_CHAOS = ["chaos", "--procs", "on", "--jobs", "4000", "--workers", "2", "--progress", "off"]
ENDINGS = {"SIGTERM": (signal.SIGTERM, False), "SIGHUP": (signal.SIGHUP, False),
           "SIGINT-to-group": (signal.SIGINT, True), "SIGKILL": (signal.SIGKILL, False)}


@pytest.fixture
def server():
    with EmbeddedValkey() as s:
        yield s


def _booted(proc, want_server: bool) -> list[int]:
    """The run's descendants once its consumers (and its embedded server) are up."""
    def ready():
        assert proc.poll() is None, proc.communicate()
        kids = descendants(proc.pid)
        ok = len(consumers(kids)) >= 2 and (servers(kids) or not want_server)
        return kids if ok else None

    return wait_for("the run's consumers to boot", ready, timeout=90)


def _end(proc, sig: int, group: bool) -> tuple[int, str]:
    if group:
        os.killpg(os.getpgid(proc.pid), sig)
    else:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=timeout_s(90))
    return proc.returncode, err


def _check_one_line(code: int, err: str, sig: int) -> None:
    if sig == signal.SIGKILL:
        assert code == -signal.SIGKILL
        return
    assert code == 128 + sig, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0] and "Traceback" not in err, err


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.parametrize("ending", list(ENDINGS))
def test_any_ending_on_a_url_backend_leaves_no_process_and_clean_leaves_no_key(server, ending):
    sig, group = ENDINGS[ending]
    url = server.url
    beside = start(*LONG_CHAOS, "--backend", url, EMQLAB_RUN_LEASE=LEASE_S)  # a live run that must survive
    try:
        _booted(beside, want_server=False)
        (beside_prefix,) = run_leases(url)
        victim = start(*LONG_CHAOS, "--backend", url, EMQLAB_RUN_LEASE=LEASE_S)
        try:
            kids = _booted(victim, want_server=False)
            (prefix,) = run_leases(url) - {beside_prefix}
            assert keys_under(url, prefix)
            code, err = _end(victim, sig, group)
        finally:
            if victim.poll() is None:
                victim.kill()
        _check_one_line(code, err, sig)
        assert gone(kids) == [], "a worker of the ended run is still running"
        if sig != signal.SIGKILL:  # it cleaned up itself
            assert keys_under(url, prefix) == []
        # clean removes the dead run's keys once its lease lapses, and never the live run's
        wait_for("the dead run's lease to lapse", lambda: prefix not in run_leases(url), timeout=30)
        cleaned = run_json("clean", "--backend", url)
        assert cleaned["live_runs"] == 1 and cleaned["runs_removed"] == (1 if sig == signal.SIGKILL else 0)
        assert keys_under(url, prefix) == []
        assert beside.poll() is None and beside_prefix in run_leases(url)
        assert len(keys_under(url, beside_prefix)) > 1  # not an event count: the live run's keys, not just its lease
    finally:
        beside.send_signal(signal.SIGTERM)
        beside.communicate(timeout=timeout_s(90))
    assert beside.returncode == 128 + signal.SIGTERM
    assert keys_under(url) == []


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.parametrize("ending", list(ENDINGS))
def test_any_ending_on_the_embedded_server_takes_server_and_workers_with_it(ending):
    sig, group = ENDINGS[ending]
    proc = start(*LONG_CHAOS, "--backend", "valkey")
    try:
        kids = _booted(proc, want_server=True)
        (server_pid,) = servers(kids)
        folders = set(glob.glob(os.path.join(tempfile.gettempdir(), f"{FOLDER_PREFIX}{proc.pid}-*")))
        assert folders, "the server's folder carries its owner's pid"
        code, err = _end(proc, sig, group)
    finally:
        if proc.poll() is None:
            proc.kill()
    _check_one_line(code, err, sig)
    assert gone(kids) == [], f"left running: {gone(kids, 0)} (server {server_pid})"
    if sig == signal.SIGKILL:  # nobody was left to remove it: the next server started sweeps it
        with EmbeddedValkey():
            pass
    assert not any(os.path.exists(f) for f in folders)


@pytest.mark.live
def test_sigkill_of_emqlab_valkey_takes_its_server():
    proc = start("valkey")
    try:
        server_pid = wait_for("the server", lambda: (servers(descendants(proc.pid)) or [None])[0], timeout=30)
        proc.kill()
        proc.communicate(timeout=timeout_s(30))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert gone([server_pid]) == []
