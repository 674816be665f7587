"""How a test on a real clock may assert, on any host: the rule, the host's speed it is sized from, and the
check that holds every test to it at collection time.

The rule. A test runs on a real clock when it carries the `live` or the `realtime` mark (by hand, or given at
collection because it reaches the session's Valkey). What it asserts is one of three kinds:

1. Exact on the virtual clock. A number a run produces (a lapse at 30 s, 4 round trips a tick) is asserted
   exactly on fakeredis; the same test on a real clock asserts (2) or (3) of it.
2. A margin sized from this host. `REAL_SLACK_S` is how late a loaded machine of this host's speed may be:
   the fast host's 0.5 s (a wake-up seen 0.31 s late there beside two CPU loops), times how much slower this
   host's speed probe is than that one's, plus the wake-up lateness measured when the session starts. A
   margin never exceeds about a third of what it bounds: where it would, the test runs at a slower scale
   (`LIVE_SCALE` and `SLOW_SCALE` grow with the host's slowness), never with a wider margin (they are
   multiplied by `Host.scale_factor`, the slowness to a whole number). The one limit: a run may last at
   most the whole-run bound's 60 real seconds, so `SLOW_SCALE` stops at the largest multiple that keeps
   its longest run inside it (`slow_scale`; 0.2), and on a host slower still its margins grow. A fixed timeout is a
   bound on waiting for what will happen: `timeout_s` stretches it the same way.
3. An ordering, or a count, made independent of the host's speed. A lower bound on how many real-time events
   happened ("at least 6 pauses", "some effect landed twice") is allowed only where the run guarantees those
   events by construction, and then the premise is asserted first, in the same test, through `premise` (for
   instance every planned fault landed, `kills == planned`, before `duplicate_effects > 0`).

The check (`lower_bounds_without_premise`, run by tests/conftest.py on every collected test). In each test
function that runs on a real clock, an `assert` whose comparison puts an integer below something (`x >= 3`,
`n > 0`, `1 <= len(...)`) is a lower bound; it must follow a `premise(...)` call of the same function, or say
on its line why it counts no real-time events (`# not an event count: a file's size`). It reads the test
function's own source: an assertion inside a helper the test calls, and `assert any(...)`, are not read.
"""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from functools import lru_cache

REFERENCE_PROBE_S = 0.25  # the speed probe on the host the margins were first sized on (0.18-0.25 s measured)
FAST_HOST_SLACK_S = 0.5  # s: how late a wake-up may be there, beside two CPU loops (0.31 s seen)
PROBE_ENV, LATENESS_ENV = "EMQLAB_HOST_PROBE_S", "EMQLAB_HOST_LATENESS_S"
NOT_A_COUNT = "# not an event count:"  # how a lower bound on something else says so on its line

PROBE_CODE = "import time; t = time.perf_counter()\nfor _ in range(10_000_000): pass\nprint(time.perf_counter() - t)"


def speed_probe() -> float:
    """Seconds for ten million turns of an empty loop, in a fresh interpreter: how fast the host is now."""
    done = subprocess.run([sys.executable, "-c", PROBE_CODE], capture_output=True, text=True, check=True)
    return float(done.stdout)


def wake_lateness(n: int = 40, nap_s: float = 0.005) -> float:
    """The latest of `n` wake-ups from a `nap_s` sleep, past when it was due (seconds)."""
    late = 0.0
    for _ in range(n):
        due = time.perf_counter() + nap_s
        time.sleep(nap_s)
        late = max(late, time.perf_counter() - due)
    return late


@dataclass(frozen=True)
class Host:
    """This host's speed: the probe (s), the wake-up lateness at the session's start (s), and how many times
    slower than the reference host it is (never below 1)."""

    probe_s: float
    lateness_s: float

    @property
    def factor(self) -> float:
        return max(1.0, self.probe_s / REFERENCE_PROBE_S)

    @property
    def scale_factor(self) -> int:
        """`factor` to the nearest whole number: what the live scales are multiplied by. A whole multiple of
        0.01 keeps a lease's milliseconds whole on the server (30 model s at 0.021 would be 630.0… ms, and a
        TTL read back would miss its model value by the rounding)."""
        return max(1, round(self.factor))


@lru_cache(maxsize=1)
def host() -> Host:
    """Measured once per test session: by `./run test` before pytest starts, or by the first process that
    asks; written to the environment so that the test processes started after it read the same numbers."""
    probe = float(os.environ.get(PROBE_ENV) or speed_probe())
    lateness = float(os.environ.get(LATENESS_ENV) or wake_lateness())
    os.environ[PROBE_ENV], os.environ[LATENESS_ENV] = f"{probe:.4f}", f"{lateness:.4f}"
    return Host(probe, lateness)


def longest_slow_run_s() -> float:
    """Model seconds of the longest run a test makes at SLOW_SCALE, by its own cost: the heartbeat whose
    holder is paused from 20 s for 40 s (tests/scenarios/test_heartbeat.py), 272 model seconds."""
    from emqlab.faults.pauses import Pause
    from emqlab.scenarios.heartbeat import Params

    return Params(lease=30.0, job=75.0, renew="half", cadence=0.5, pause=Pause.parse("20:40")).cost()[0]


def slow_scale(base: float, longest_run_s: float | None = None) -> float:
    """`base` (the reference host's scale) times `Host.scale_factor`, but never past the largest multiple of
    `base` at which the longest run made at it (model seconds by its cost; by default the heartbeat's,
    `longest_slow_run_s`) still fits the whole-run bound (REAL_SECONDS_LIMIT of real time): past that point
    the scale stops growing and the margins grow instead (`real_slack_s` keeps them sized from the host),
    since a run the bound refuses proves nothing."""
    from emqlab.core.ranges import REAL_SECONDS_LIMIT

    run_s = longest_slow_run_s() if longest_run_s is None else longest_run_s
    most = max(1, int(REAL_SECONDS_LIMIT / (run_s * base)))
    return round(base * min(host().scale_factor, most), 6)


def real_slack_s() -> float:
    """How late a loaded machine of this host's speed may be (real seconds)."""
    h = host()
    return FAST_HOST_SLACK_S * h.factor + h.lateness_s


def timeout_s(seconds: float) -> float:
    """A fixed timeout, stretched by how much slower this host is than the reference."""
    return seconds * host().factor


def premise(holds: bool, what: str) -> None:
    """Assert what makes a following lower bound on real-time events hold by construction (rule 3)."""
    assert holds, f"premise failed, so the bound after it says nothing: {what}"


# -- the check -------------------------------------------------------------------------------------------
def _lower_bound(node: ast.Compare) -> bool:
    sides = [node.left, *node.comparators]
    for op, left, right in zip(node.ops, sides, sides[1:]):
        if isinstance(op, (ast.Gt, ast.GtE)) and _int(right) and not _int(left):
            return True
        if isinstance(op, (ast.Lt, ast.LtE)) and _int(left) and not _int(right):
            return True
    return False


def _int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def lower_bounds_without_premise(source: str, first_line: int = 1) -> list[tuple[int, str]]:
    """(line, text) of each lower bound in the test function `source` that no `premise(...)` call of the
    function precedes and no `NOT_A_COUNT` comment on its line excuses."""
    source = textwrap.dedent(source)
    lines = source.splitlines()
    tree = ast.parse(source)
    premises = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                and getattr(n.func, "id", getattr(n.func, "attr", None)) == "premise"]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        bounds = [c for c in ast.walk(node.test) if isinstance(c, ast.Compare) and _lower_bound(c)]
        if not bounds:
            continue
        text = "\n".join(lines[node.lineno - 1:node.end_lineno])
        if NOT_A_COUNT in text or any(p < node.lineno for p in premises):
            continue
        found.append((first_line + node.lineno - 1, lines[node.lineno - 1].strip()))
    return found


def real_clock(item) -> bool:
    return any(item.get_closest_marker(m) for m in ("live", "realtime"))


def check_items(items) -> dict[object, list[str]]:
    """Each collected real-clock test that bounds a count from below without its premise: the item, and its
    bounds as 'path:line: text'. (Each item is judged: on xdist the test processes collect, not the parent.)"""
    problems: dict[object, list[str]] = {}
    found: dict[object, list[str]] = {}
    for item in items:
        fn = getattr(item, "function", None)
        if fn is None or not real_clock(item):
            continue
        if fn not in found:
            try:
                source, first = inspect.getsource(fn), fn.__code__.co_firstlineno
            except (OSError, TypeError):
                found[fn] = []
                continue
            found[fn] = [f"{item.path}:{line}: {text}" for line, text in lower_bounds_without_premise(source, first)]
        if found[fn]:
            problems[item] = found[fn]
    return problems
