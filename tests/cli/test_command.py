"""The `emqlab` command as users script it: JSON contract, one-line errors, servers always stopped."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emqlab.scenarios.chaos import chaos
from emqlab.scenarios.heartbeat import heartbeat
from emqlab.scenarios.reaper import reaper
from realtime import timeout_s

EMQLAB = [sys.executable, "-m", "emqlab.cli"]
ROOT = Path(__file__).resolve().parents[2]  # the checkout


def emqlab(*args, timeout=120, env=None):
    """Run the command; `.pid` is kept so a test can look for servers it left behind."""
    run_env = {k: v for k, v in os.environ.items() if k not in ("EMQLAB_BACKEND", "EMQLAB_URL")}
    run_env.update(env or {})
    with subprocess.Popen([*EMQLAB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          cwd=ROOT, env=run_env) as proc:
        out, err = proc.communicate(timeout=timeout_s(timeout))
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    done.pid = proc.pid
    return done


def orphans_of(*pids: int) -> set[int]:
    """valkey-server processes whose parent was one of `pids` (now gone) and were handed to init."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            comm = stat.read_text().split("(", 1)[1].rsplit(")", 1)[0]
        except OSError:
            continue
        state, ppid = fields[0], int(fields[1])
        pid = int(stat.parent.name)
        if "valkey" in comm and state != "Z" and (ppid in pids or ppid == 1):
            found.add(pid)
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_heartbeat_json_contract_no_renewal():
    proc = emqlab("heartbeat", "--renew", "none", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {"scenario", "params", "backend", "clock", "events", "verdict"} <= out.keys()
    assert out["backend"] == "fake" and out["clock"] == "virtual"
    assert all({"t", "actor", "kind"} <= e.keys() for e in out["events"])
    v = out["verdict"]
    assert {"lapsed_at", "renewals", "reclaimed_at", "runs", "double_run", "finished_once", "summary"} <= v.keys()
    assert v["lapsed_at"] == 30 and 30 < v["reclaimed_at"] <= 31
    assert v["runs"] == 2 and v["double_run"] is True


def test_heartbeat_json_contract_renew_half():
    v = json.loads(emqlab("heartbeat", "--renew", "half", "--json").stdout)["verdict"]
    assert v["lapsed_at"] is None and v["renewals"] == 4 and v["runs"] == 1 and v["finished_once"] is True


@pytest.mark.parametrize("verb,args,run", [
    ("heartbeat", ["--renew", "half"], lambda: heartbeat(renew="half")),
    ("reaper", ["--crash-at", "5"], lambda: reaper(crash_at=5)),
    ("chaos", ["--jobs", "40", "--workers", "2", "--progress", "off"], lambda: chaos(jobs=40, workers=2, progress="off")),
])
def test_the_cli_prints_the_scenarios_own_readout(verb, args, run):
    """Without --json a verb prints the readout its scenario wrote, word for word: the CLI composes none."""
    proc = emqlab(verb, *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == run().text + "\n"
    with_json = json.loads(emqlab(verb, *args, "--json").stdout)
    verdict = with_json["verdict"]  # --json keeps the headline and each fact, apart
    assert "\n".join([verdict["summary"], *(f"· {f}" for f in verdict.get("facts", []))]) == proc.stdout.strip()


@pytest.mark.parametrize("args,says", [
    (["--lease", "0"], "lease must be a number from 0.1 to 3600"),
    (["--lease", "-30"], "lease must be a number from 0.1 to 3600"),
    (["--job", "0"], "job must be a number from 0.1 to 3600"),
    (["--job", "abc"], "invalid float value"),
    (["--pause", "20:0"], "pause must be a number from 0.1 to 3600"),
    (["--pause", "20:-5"], "pause must be a number from 0.1 to 3600"),
    (["--pause=-1:5"], "pause_at must be a number from 0 to 3600"),
    (["--pause", "20"], "must be AT:SECONDS"),
    (["--renew", "0"], "renewal cadence must be a fraction of the lease from 0.05 to 2"),
    (["--renew", "-0.5"], "renewal cadence must be a fraction of the lease from 0.05 to 2"),
    (["--renew", "often"], "unknown renewal cadence"),
    (["--backend", "memcached"], "unknown backend 'memcached'"),
    (["--backend", "http://localhost:6379"], "scheme 'http' is not supported"),
    (["--backend", "redis://"], "names no host"),
    (["--backend", "redis://localhost:notaport"], "bad port"),
    (["--backend", "redis://localhost:6379/zero"], "a database is a number"),
    (["--clock", "sundial"], "invalid choice"),
    (["--scale", "0"], "scale must be a number from 0.0001 to 1"),
    (["--backend", "valkey", "--clock", "virtual"], "virtual clock runs only on the fake backend"),
    (["--clock-jump", "20"], "must be AT:SECONDS"),
    (["--clock-jump", "20:0"], "a clock jump of 0 s moves nothing"),
    (["--clock-jump", "20:5000"], "clock_jump must be a number from -3600 to 3600"),
    (["--clock-jump=-1:60"], "clock_jump_at must be a number from 0 to 3600"),
    (["--clock-jump", "80:60"], "a clock jump must come while the job runs"),
    (["--clock-jump", "20:60", "--clock", "real"], "fakeredis needs its virtual clock"),
    (["--clock-jump", "20:60", "--backend", "redis://127.0.0.1:1"], "will not move the clock of a server it did not start"),
])
def test_bad_input_is_one_line_exit_2(args, says):
    proc = emqlab("heartbeat", *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("emqlab: error: ") and says in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_a_password_never_appears_in_an_error():
    proc = emqlab("heartbeat", "--backend", "redis://:hunter2@localhost:notaport")
    assert proc.returncode == 2 and "hunter2" not in proc.stderr and "***" in proc.stderr


def test_unreachable_server_is_one_line_exit_1():
    proc = emqlab("heartbeat", "--backend", "redis://127.0.0.1:1")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("emqlab: error: cannot reach the store")
    assert "Traceback" not in proc.stderr


@pytest.mark.live
@pytest.mark.realtime
def test_heartbeat_on_embedded_valkey_same_verdicts_and_no_server_left():
    before = orphans_of()
    none_run = emqlab("heartbeat", "--backend", "valkey", "--renew", "none", "--json")
    half_run = emqlab("heartbeat", "--backend", "valkey", "--renew", "half", "--json")
    none, half = json.loads(none_run.stdout), json.loads(half_run.stdout)
    assert none["backend"] == "valkey" and none["clock"] == "real"
    assert none["verdict"]["runs"] == 2 and none["verdict"]["double_run"] is True
    assert 29.9 <= none["verdict"]["lapsed_at"] <= 33.0
    assert half["verdict"]["lapsed_at"] is None and half["verdict"]["renewals"] == 4
    assert half["verdict"]["finished_once"] is True
    assert not orphans_of(none_run.pid, half_run.pid) - before


@pytest.mark.live
def test_an_error_after_the_server_started_still_stops_it():
    before = orphans_of()
    proc = emqlab("heartbeat", "--backend", "valkey", "--lease", "0")
    assert proc.returncode == 2
    assert not orphans_of(proc.pid) - before


@pytest.mark.live
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_emqlab_valkey_serves_until_stopped_and_then_stops_its_server(sig):
    proc = subprocess.Popen([*EMQLAB, "valkey"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("redis://127.0.0.1:")
        pid_line = proc.stderr.readline()
        server_pid = int(pid_line.split("pid ")[1].split(";")[0])
        assert alive(server_pid)
        import redis

        assert redis.Redis.from_url(url).ping() is True
        proc.send_signal(sig)
        proc.wait(timeout=timeout_s(20))
        deadline = time.monotonic() + timeout_s(10)
        while alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(server_pid), "the embedded valkey-server outlived the command"
    finally:
        if proc.poll() is None:
            proc.kill()


def test_lab_opens_the_first_lesson_and_passes_jupyter_options_through(monkeypatch):
    from emqlab.cli import command as cli
    from emqlab.course.lab import launcher

    seen = {}
    monkeypatch.setattr(launcher.os, "chdir", lambda path: seen.setdefault("cwd", path))
    monkeypatch.setattr(launcher.os, "execve", lambda path, argv, env: seen.update(argv=argv, env=env))
    assert cli.main(["lab", "--no-browser", "--port", "8891"]) == 0
    argv = seen["argv"]
    assert argv[1:3] == ["-m", "jupyterlab"] and "--LabApp.default_url=/lab/tree/00-start-here.ipynb" in argv
    assert argv[-3:] == ["--no-browser", "--port", "8891"] or argv[-4:-1] == ["--no-browser", "--port", "8891"]
    assert "labconfig-course" in seen["env"]["JUPYTER_CONFIG_PATH"]  # the course's news-prompt setting
    assert Path(seen["cwd"]).name == "notebooks"


@pytest.mark.parametrize("args, says", [
    (["--clock-jump", "30:60"], "a clock jump must come while the job runs"),
    (["--clock-jump", "10:60", "--procs", "--backend", "valkey"], "leave out --procs"),
    (["--clock-jump", "10:60", "--backend", "redis://127.0.0.1:1"], "will not move the clock of a server it did not start"),
    (["--clock-jump", "10:x"], "must be AT:SECONDS"),
])
def test_a_bad_clock_jump_on_the_reaper_is_one_line_exit_2(args, says):
    proc = emqlab("reaper", *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("emqlab: error: ") and says in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
