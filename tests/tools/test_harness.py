"""Issue 21: what every library's run shares (emqlab.tools.harness, emqlab.tools.story): no library is patched;
bad input, fakeredis and a missing extra are one line, exit 2, before anything starts; a Ctrl-C leaves
nothing running; the sampler keeps a reading only when the server says something new."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import emqlab.tools
from emqlab.cli import command as cli
from emqlab.core.errors import BadParameter
from emqlab.tools import harness, story

from realtime import timeout_s
from support.processes import EMQLAB, ROOT, cmdline, descendants, env, gone, start, wait_for

TOOLS = Path(emqlab.tools.__file__).resolve().parent
LIBRARY_ROOTS = {"celery", "kombu", "rq", "bullmq", "redis_lock", "redis", "billiard"}


# -- no library is patched -----------------------------------------------------------------------------
def library_names(tree: ast.AST) -> set[str]:
    """The names a module binds to a library or to something it took from one (`import celery`,
    `from rq import Queue`, `lock = redis_lock.Lock(...)`, `worker = Worker(...)`)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] in LIBRARY_ROOTS}
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in LIBRARY_ROOTS:
            names |= {a.asname or a.name for a in node.names}
    grew = True
    while grew:  # what is made from a library's object is the library's too
        grew = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Call, ast.Attribute, ast.Name)):
                root = node.value
                while isinstance(root, (ast.Call, ast.Attribute)):
                    root = root.func if isinstance(root, ast.Call) else root.value
                if isinstance(root, ast.Name) and root.id in names:
                    for target in node.targets:
                        if isinstance(target, ast.Name) and target.id not in names:
                            names.add(target.id)
                            grew = True
    return names


def patches(path: Path) -> list[str]:
    """Every place a module patches a library: mock or monkeypatch, an assignment to an attribute of a library
    or of an object it made, setattr on one."""
    source = path.read_text()
    tree = ast.parse(source, str(path))
    names = library_names(tree)
    found = [f"{path.name}: mentions {word}" for word in ("monkeypatch", "mock") if word in source.lower()]
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            root = target
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if target is not root and isinstance(root, ast.Name) and root.id in names:
                found.append(f"{path.name}:{node.lineno}: assigns {ast.unparse(target)}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr")
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in names):
            found.append(f"{path.name}:{node.lineno}: {node.func.id} on {node.args[0].id}")
    return found


def test_no_library_is_patched():
    modules = sorted(TOOLS.glob("*.py"))
    assert len(modules) >= 8
    found = [p for path in modules for p in patches(path)]
    assert found == [], "a library's run patches the library:\n" + "\n".join(found)


def test_the_patch_check_sees_a_patch(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import kombu.transport.redis as kr\nfrom rq import Worker\nfrom redis_lock import Lock\n"
                   "kr.Channel.visibility_timeout = 1\nWorker.get_heartbeat_ttl = lambda self, job: 1\n"
                   "lock = Lock(None, 'x')\nlock._lock_renewal_interval = 0.1\nsetattr(Worker, 'x', 1)\n"
                   "from unittest import mock\n")
    found = patches(bad)
    assert len(found) == 5, found  # three assignments, a setattr, and the word mock
    ok = tmp_path / "ok.py"
    ok.write_text("import threading\nthreading.excepthook = print\nfrom rq import Queue\nq = Queue('x')\n"
                  "q.enqueue('f')\nx = {}\nx['a'] = 1\n")
    assert patches(ok) == []


# -- bad input, fakeredis, a missing extra: one line, exit 2, nothing started -----------------------------
@pytest.mark.parametrize("argv, says", [
    (["tools", "sidekiq", "--backend", "valkey"], "invalid choice"),
    (["tools", "celery"], "--backend valkey"),  # the default store is fakeredis
    (["tools", "bullmq", "--backend", "fake"], "fakeredis"),
    (["tools", "rq", "--backend", "valkey", "--clock", "virtual"], "own clock"),
    (["tools", "celery", "--backend", "valkey", "--timeout", "0"], "timeout must be"),
    (["tools", "celery", "--backend", "valkey", "--timeout", "-1"], "timeout must be"),
    (["tools", "bullmq", "--backend", "valkey", "--task", "600"], "task must be"),
    (["tools", "rq", "--backend", "valkey", "--task", "20"], "may last at most"),  # longer than the run budget
    (["tools", "rq", "--backend", "valkey", "--timeout", "1.5"], "whole seconds"),
    (["tools", "python-redis-lock", "--backend", "valkey", "--timeout", "2.5"], "whole seconds"),
    (["tools", "bullmq", "--backend", "valkey", "--crash"], "takes no --crash"),
    (["tools", "celery", "--backend", "valkey", "--fate", "slow"], "takes no --fate"),
    (["tools", "rq", "--backend", "valkey", "--fate", "asleep"], "invalid choice"),
    (["tools", "celery", "--backend", "valkey", "--task", "nan"], "invalid float"),
])
def test_bad_input_is_one_line_exit_2(argv, says, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("emqlab: error: ") and len(err.strip().splitlines()) == 1 and says in err, err


@pytest.mark.parametrize("library, module", [("celery", "celery"), ("bullmq", "bullmq"), ("rq", "rq"),
                                             ("python-redis-lock", "redis_lock")])
def test_without_the_extra_it_says_which_to_install(library, module):
    code = (f"import sys; sys.modules[{module!r}] = None\n"  # the library is not importable, as when not installed
            "from emqlab.cli.command import main\n"
            f"sys.exit(main(['tools', {library!r}, '--backend', 'valkey']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env(),
                          timeout=timeout_s(60))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "pip install 'emqlab[tools]'" in lines[0] and "Traceback" not in done.stderr


def test_options_of_another_story_are_refused_in_python_too():
    with pytest.raises(BadParameter, match="takes no --fate"):
        emqlab.tools.run("bullmq", fate="slow")
    with pytest.raises(BadParameter, match="no library named"):
        emqlab.tools.run("sidekiq")


# -- the sampler's readings and the lanes ----------------------------------------------------------------
def test_a_deadline_read_a_few_ms_later_is_the_same_reading():
    assert harness.same({"lock_deadline": 10.000, "owner": "a"}, {"lock_deadline": 10.02, "owner": "a"})
    assert not harness.same({"lock_deadline": 10.0, "owner": "a"}, {"lock_deadline": 10.2, "owner": "a"})
    assert not harness.same({"lock_deadline": 10.0, "owner": "a"}, {"lock_deadline": 10.0, "owner": "b"})
    assert not harness.same({"queued": 1}, {"queued": 1.02})  # only deadlines have a tolerance
    assert harness.relative({"lock_deadline": 105.5, "stc": 2, "nested": {"visible_deadline": 101.0}}, 100.0) == \
        {"lock_deadline": 5.5, "stc": 2, "nested": {"visible_deadline": 1.0}}


def test_bodies_read_start_end_crash_and_stop():
    from emqlab.core.timeline import Timeline

    tl = Timeline("tools-x", story.ToolParams())
    tl.add(0.0, "a", "start", pid=1)
    tl.add(1.0, "a", "crash")
    tl.add(1.5, "b", "start", pid=2)
    tl.add(2.0, "c", "start", pid=3)
    tl.add(2.5, "c", "stop", pid=3)
    tl.add(3.5, "b", "effect", pid=2)
    tl.add(3.5, "b", "end", pid=2)
    runs = story.bodies(tl)
    assert [(b.actor, b.end, b.cut) for b in runs] == [("a", None, 1.0), ("b", 3.5, None), ("c", None, 2.5)]
    c = story.counts(tl)
    assert c["runs"] == 1 and c["started"] == 3 and c["finished_in"] == ["b"] and c["holders_at_once"] == 2
    story.add_work_lanes(tl)
    assert [i.data["ended"] for i in tl.spans("run")] == ["killed", "done", "stopped"]


# -- Ctrl-C mid-run: one line, and nothing left ----------------------------------------------------------------
@pytest.mark.live
def test_ctrl_c_mid_run_leaves_no_server_worker_or_pool_child():
    proc = start("tools", "celery", "--backend", "valkey")
    seen: set[int] = set()
    try:
        def workers_up():
            kids = descendants(proc.pid)
            seen.update(kids)
            workers = [p for p in kids if b"emqlab.tools.celery_run" in cmdline(p)]
            return len(workers) >= 4 and any(b"valkey-server" in cmdline(p) for p in kids)  # 2 workers + 2 pool children

        wait_for("the workers and their pool children", workers_up, timeout=90)
        time.sleep(1.0)  # into the boot or the story
        seen.update(descendants(proc.pid))
        os.killpg(os.getpgid(proc.pid), signal.SIGINT)
        _, err = proc.communicate(timeout=timeout_s(60))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGINT, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0] and "Traceback" not in err, err
    assert gone(sorted(seen)) == []
