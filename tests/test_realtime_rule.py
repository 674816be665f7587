"""The rule for real-clock assertions (tests/realtime.py) is checked at collection: a planted lower bound on
real-time events without its premise fails before it runs; with its premise, or on the virtual clock, it runs.
And on a host the speed probe says is slower, each test's time limit is stretched by as much."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from realtime import LATENESS_ENV, NOT_A_COUNT, PROBE_ENV, REFERENCE_PROBE_S, lower_bounds_without_premise
from support.processes import ROOT

PLANTED = '''
import pytest
from realtime import premise


@pytest.mark.live
def test_planted_bound():
    run = {"kills": 3, "planned": 4}
    assert run["kills"] >= 3


@pytest.mark.live
def test_bound_after_its_premise():
    run = {"kills": 4, "planned": 4}
    premise(run["kills"] == run["planned"], "every planned crash landed")
    assert run["kills"] >= 3


@pytest.mark.realtime
def test_bound_on_something_else():
    assert len("abc") > 0  # not an event count: a string's length


def test_on_the_virtual_clock():
    assert 3 >= 3 and {"kills": 3}["kills"] > 0


def test_time_limit_stretched_on_a_slower_host(request):  # the run says the host is 3 times slower
    assert request.node.get_closest_marker("timeout").args[0] == 900


@pytest.mark.timeout(20)
def test_own_time_limit_stretched_too(request):
    assert request.node.get_closest_marker("timeout").args[0] == 60
'''

# the suite's own collection hook and rule fixture, loaded from tests/conftest.py into the planted folder
CONFTEST = f'''
import sys
from importlib.machinery import SourceFileLoader

sys.path.insert(0, {str(ROOT / "tests")!r})
_loader = SourceFileLoader("emqlab_suite_conftest", {str(ROOT / "tests" / "conftest.py")!r})
_suite = type(sys)("emqlab_suite_conftest")
_suite.__file__ = _loader.path
_loader.exec_module(_suite)
pytest_collection_modifyitems = _suite.pytest_collection_modifyitems
_real_time_rule = _suite._real_time_rule
'''


def test_a_planted_bound_without_its_premise_fails_before_it_runs(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_planted.py").write_text(PLANTED)
    (tmp_path / "pytest.ini").write_text("[pytest]\ntimeout = 300\nmarkers =\n    live: x\n    realtime: x\n")
    slower = {**os.environ, PROBE_ENV: str(3 * REFERENCE_PROBE_S), LATENESS_ENV: "0.01"}  # a host 3 times slower
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-rA",
                           str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=slower)
    out = done.stdout
    assert done.returncode == 1, out
    assert "ERROR test_planted.py::test_planted_bound" in out, out
    assert "test_planted.py:9: assert run[\"kills\"] >= 3" in out, out  # the line, named
    for name in ("test_bound_after_its_premise", "test_bound_on_something_else", "test_on_the_virtual_clock",
                 "test_time_limit_stretched_on_a_slower_host", "test_own_time_limit_stretched_too"):
        assert f"PASSED test_planted.py::{name}" in out, out
    assert "5 passed" in out and "1 error" in out, out


def test_the_check_reads_each_form_of_a_lower_bound():
    def found(body: str) -> list[int]:
        source = "def test_x(run):\n" + textwrap.indent(textwrap.dedent(body), "    ")
        return [line for line, _ in lower_bounds_without_premise(source)]

    assert found("assert run['n'] >= 3\nassert 0 < len(run)\nassert run.n > 0 and run.m == 1\n") == [2, 3, 4]
    assert found("assert run['t'] >= 2.5\nassert run['n'] == 3\nassert run['n'] <= 4\n") == []  # not lower bounds
    assert found(f"assert (\n    run['n']\n    >= 3  {NOT_A_COUNT} a size\n)\n") == []  # the reason may sit on any line
    assert found("assert run['n'] >= 3\npremise(run['ok'], 'why')\nassert run['m'] >= 3\n") == [2]  # only after it
