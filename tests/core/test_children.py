"""emqlab.core.children: the processes emqlab starts die with it, are ended at exit by their kind's own way
(the exit hook goes in with the first child, not at import), and a process's tree is read from /proc."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys

import pytest

from emqlab.core.children import Children, child_setup, descendants, signal_each
from support.processes import gone, wait_for

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_descendants_finds_a_grandchild_and_signal_each_ends_the_tree():
    proc = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen([sys.executable, "
                             "'-c', 'import time; time.sleep(60)']); time.sleep(60)"], start_new_session=True)
    tree = [proc.pid]
    try:
        kids = wait_for("a grandchild", lambda: descendants(proc.pid))
        assert proc.pid not in kids and len(kids) == 1
        tree += kids
    finally:
        signal_each([*tree, 2 ** 22 + 7], signal.SIGKILL)  # a pid that is no one's is passed over
        proc.wait()
    assert gone(tree) == []


def test_children_hook_in_with_the_first_child_and_end_every_one_left_the_kind_s_way():
    ended: list[int] = []

    def end(proc: subprocess.Popen) -> None:
        proc.kill()
        proc.wait()
        ended.append(proc.pid)
        kind.discard(proc)

    kind = Children(end)
    hooks = atexit._ncallbacks()
    first = subprocess.Popen(SLEEP, preexec_fn=child_setup, start_new_session=True)
    second = subprocess.Popen(SLEEP, preexec_fn=child_setup, start_new_session=True)
    try:
        kind.add(first)
        assert atexit._ncallbacks() == hooks + 1 and first in kind
        kind.add(second)
        assert atexit._ncallbacks() == hooks + 1  # one hook per kind, however many children
        os.kill(second.pid, signal.SIGINT)  # a Ctrl-C meant for the parent: the child ignores it
        with pytest.raises(subprocess.TimeoutExpired):
            second.wait(timeout=0.5)
        end(second)
        kind.end_all()
        assert sorted(ended) == sorted([first.pid, second.pid]) and first not in kind and second not in kind
        assert first.returncode == -signal.SIGKILL
    finally:
        atexit.unregister(kind.end_all)
        for proc in (first, second):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
