"""Issue 14 items 1, 3, 5: `emqlab class serve|join|status|enqueue|crash|pause|fence` end to end on
loopback, and `lab.join`. No password on any command line or in any output; the join files are
0600; after Ctrl-C on serve no class key, user, file or process remains."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest
import redis

from emqlab.course import lab
from emqlab.classroom.board import Board, lane_bands, lane_story
from realtime import premise, timeout_s
from support.processes import cmdlines, wait_for

pytestmark = pytest.mark.live
CLI = [sys.executable, "-m", "emqlab.cli", "class"]


def cli(*args, **kw):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout_s(60), **kw)


def passwords(join: str) -> list[str]:
    lines = open(join).read().split() + open(join + ".instructor").read().split()
    return [line.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1] for line in lines]
@pytest.fixture
def served(tmp_path):
    join = str(tmp_path / "join")
    serve = subprocess.Popen([*CLI, "serve", "--learners", "4", "--join-file", join, "--no-dashboard"],
                             stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        first = serve.stdout.readline()
        assert "Ctrl-C ends the class" in first
        yield serve, join, first
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()


def test_a_class_end_to_end(served):
    serve, join, first = served
    assert stat.S_IMODE(os.stat(join).st_mode) == 0o600 == stat.S_IMODE(os.stat(join + ".instructor").st_mode)
    lines = open(join).read().split()
    assert len(lines) == 4 and all(x.startswith("redis://class-") and "@127.0.0.1:" in x for x in lines)
    secrets = passwords(join)
    port = int(lines[0].rsplit(":", 1)[1].split("/")[0])
    # credentials are on: the default user is off
    with pytest.raises(redis.RedisError):
        redis.Redis(port=port).set("emqlab:x", 1)
    # an address is never taken on a command line
    refused = cli("join", lines[0])
    assert refused.returncode == 2 and "never the URL itself" in refused.stderr
    assert not any(s in refused.stderr + refused.stdout for s in secrets)

    env = {**os.environ, "EMQLAB_CLASS_URL": lines[2]}
    joiners = [subprocess.Popen([*CLI, "join", join, "--line", "1", "--name", "ada", "--work", "0.3"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
               subprocess.Popen([*CLI, "join", "-", "--name", "bob", "--work", "1"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
               subprocess.Popen([*CLI, "join", "--name", "cy", "--work", "0.3"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    joiners[1].stdin.write(lines[1] + "\n")
    joiners[1].stdin.close()
    joiners[1].stdin = None  # communicate() must not flush it again
    notebook = lab.join(lines[3], "dee", work_s=0.3)
    board = Board.connect(open(join + ".instructor").read().strip())
    try:
        wait_for("4 learners", lambda: board.status()["learners"] == 4)
        assert {s["name"] for s in board.learners()} == {"ada", "bob", "cy", "dee"}
        # the orders come before the jobs: a worker that takes an order waits up to 5 s for a job in hand
        # (bob for a fresh one), so the jobs must come within 5 s of the take. Both orders are given at once and
        # the jobs right after both were taken, from here: a command's start-up alone (seconds on a slow host)
        # would let that window pass, and after a command-line burst the other learners can drain the queue
        # first (bob then paused holding nothing: no late write). 10 s of pause against a 2 s lease: 8 s in
        # which a classmate's beat (every ~0.5 s) must find it lapsed and take the job
        assert "enqueued 1 job(s)" in cli("enqueue", "1", "--join-file", join).stdout  # the verb, on its own
        orders = [subprocess.Popen([*CLI, "pause", "bob", "10", "--backend", join + ".instructor"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
                  subprocess.Popen([*CLI, "crash", "ada", "--join-file", join], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)]
        said = [order.communicate(timeout=timeout_s(60)) for order in orders]
        assert [order.returncode for order in orders] == [0, 0], said
        assert [out.strip() for out, _ in said] == ["ordered bob (seat l02) to pause 10 s",
                                                    "ordered ada (seat l01) to crash"], said  # both taken
        board.enqueue(59)
        wait_for("ada's crash", lambda: joiners[0].poll() is not None)
        assert joiners[0].returncode == -signal.SIGKILL
        assert not any(s in cmdlines() for s in secrets)  # no password on any command line, workers running
        wait_for("every job done", lambda: board.status()["completed"] == 60)
        # bob may hold the last job while paused: the class is done before bob wakes and tries its late write
        try:
            wait_for("bob's late write", lambda: any(e["kind"] == "complete_refused" for lane in board.lanes()
                                                     if lane["name"] == "bob" for e in lane["notes"]))
        except AssertionError as missed:
            raise AssertionError(f"{missed}; bob: {lane_story('bob', board.lanes())}") from None
        done = cli("status", "--join-file", join, "--json")
        status = json.loads(done.stdout)
        assert set(status) == {"learners", "enqueued", "completed", "lost", "duplicate_effects", "reaped",
                               "invariants_ok"}
        assert (status["enqueued"], status["completed"], status["lost"], status["duplicate_effects"]) == (60, 60, 0, 0)
        lanes = board.lanes()
        ada_held = [j for lane in lanes if lane["name"] == "ada" for e in lane["notes"] if e["kind"] == "crash"
                    for j in e["holding"]]
        bob_refused = [e for lane in lanes if lane["name"] == "bob" for e in lane["notes"]
                       if e["kind"] == "complete_refused"]
        # before the status was read: ada died holding a job that is now done (the attempt it held was reaped),
        # and bob's late write was refused (the attempt it held was reaped): two attempts, two reaps
        premise(bool(ada_held) and bool(bob_refused) and status["completed"] == 60,
                "ada crashed holding a job, bob's late write was refused, and every job is done")
        assert status["invariants_ok"] and status["reaped"] >= 2, [lane_story(n, lanes) for n in ("ada", "bob")]
        notes = [e for lane in lanes for e in lane["notes"]]
        bobs = [(e["kind"], e.get("job")) for lane in lanes if lane["name"] == "bob" for e in lane["events"]][-40:]
        assert "its late write was refused" in lane_story("bob", lanes), (lane_story("bob", lanes), bobs)
        assert any(e["kind"] == "complete_refused" and e["actor"] == "bob" for e in notes), bobs  # bob's stale write
        assert "crashed holding" in lane_story("ada", lanes) and "reaped it" in lane_story("ada", lanes)
        bob = lane_bands(next(lane for lane in lanes if lane["name"] == "bob")["events"])
        assert bob["pauses"] and any(b["ended"] == "refused" for b in bob["leases"])
        assert all(b["deadline"] - b["start"] == pytest.approx(2.0, abs=0.01) for b in bob["leases"])
        assert abs(board.server_ms() / 1000 - time.time()) < 5
        assert notebook.alive and notebook.lane()["name"] == "dee"
        assert cli("fence", "off", "--join-file", join).returncode == 0 and not board.fenced()
    finally:
        board.close()
    left = notebook.stop()
    assert left["name"] == "dee" and not notebook.alive
    serve.send_signal(signal.SIGINT)
    out, err = serve.communicate(timeout=timeout_s(60))
    outputs = first + out + err
    for p in joiners[1:]:
        o, e = p.communicate(timeout=timeout_s(30))
        outputs += o + e
        assert p.returncode == 0 and "the class ended" in o
    assert "class ended: 5 user(s)" in err
    assert not any(s in outputs for s in secrets)
    assert not os.path.exists(join) and not os.path.exists(join + ".instructor")
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=port, socket_connect_timeout=2).ping()


def test_serve_on_a_given_server_cleans_it_and_refuses_an_open_lan(valkey_url, tmp_path):
    join = str(tmp_path / "j")
    wide = cli("serve", "--backend", valkey_url, "--host", "10.9.8.7", "--join-file", join)
    assert wide.returncode == 2 and "needs no password" in wide.stderr
    assert cli("serve", "--host", "0.0.0.0", "--join-file", join).returncode == 2
    admin = redis.Redis.from_url(valkey_url, decode_responses=True)
    users = set(admin.acl_users())
    serve = subprocess.Popen([*CLI, "serve", "--backend", valkey_url, "--learners", "2", "--join-file", join,
                              "--no-dashboard"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert "Ctrl-C ends the class" in serve.stdout.readline()
        assert len(set(admin.acl_users()) - users) == 3
        assert any(k.startswith("emqlab:class-") for k in admin.scan_iter("emqlab:class-*"))
        serve.send_signal(signal.SIGTERM)
        serve.communicate(timeout=timeout_s(60))
    finally:
        if serve.poll() is None:
            serve.kill()
    assert set(admin.acl_users()) == users
    assert not list(admin.scan_iter("emqlab:class-*"))
    assert not [lib for lib in admin.function_list() if "emqlab_class" in str(lib)]
    admin.close()
