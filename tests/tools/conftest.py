"""What the tests of a library's run share: the run made through the command line (`emqlab tools … --json`),
watched from outside so that every process it started is known and checked gone when it ends; and the
recorded runs in runs/ (made with the same command), read back typed, for the tests of the words and figures
that need no server."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from emqlab.core.ranges import TOOLS_SECONDS_LIMIT, get
from realtime import host, timeout_s
from support.processes import EMQLAB, ROOT, descendants, env, gone

RUNS = Path(__file__).resolve().parent / "runs"


def run_library(*args: str, timeout: float = 150) -> dict:
    """`emqlab tools ARGS --backend valkey --json`, as a user runs it; its JSON. Every process it started (its
    server, the library's workers, what they forked) is gone when it ends, and so is its server's folder."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([*EMQLAB, "tools", *args, "--backend", "valkey", "--json"], stdout=out, stderr=err,
                                cwd=ROOT, env=env(), start_new_session=True)
        seen: set[int] = set()
        timeout = timeout_s(timeout)
        deadline = time.monotonic() + timeout
        try:
            while proc.poll() is None:
                seen.update(descendants(proc.pid))
                if time.monotonic() > deadline:
                    raise AssertionError(f"emqlab tools {' '.join(args)} ran past {timeout:g} s")
                time.sleep(0.1)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        assert proc.returncode == 0, stderr
        left = gone(sorted(seen))
        assert left == [], f"left running after the run: {left}"
        assert not glob.glob(os.path.join(tempfile.gettempdir(), f"emqlab-valkey-{proc.pid}-*"))
        return json.loads(out.read())


@pytest.fixture
def library_run():
    return run_library


def stretch(span, task_s: float) -> int:
    """How many times longer than on the reference host a library's run is made here: `host().scale_factor`
    (tests/realtime.py), so its margins stay a small part of what they bound; but never past the largest k
    whose run `emqlab tools` allows: its task (k × the story's `task_s`) inside --task's range, and its length
    (`span(k)`, real seconds by the story's own Params.span) inside a library run's budget, TOOLS_SECONDS_LIMIT.
    On a host slower still, the margins grow instead."""
    k = host().scale_factor
    while k > 1 and (span(k) > TOOLS_SECONDS_LIMIT or k * task_s > get("task").high):
        k -= 1
    return k


@pytest.fixture
def run_stretch():
    return stretch


def recorded(name: str):
    """A run recorded with `emqlab tools … --json` (runs/<name>.json), read back typed."""
    from emqlab.tools import load

    return load(json.loads((RUNS / f"{name}.json").read_text()))


@pytest.fixture
def recorded_run():
    return recorded
