"""Two units of model time, and one place they meet: a duration is in model milliseconds where the clock or the
store takes it (`*_ms`) and in model seconds where a person reads it (`*_s`, a scenario's flag-named parameter
such as `lease` or `latency`, the timeline's `t`); outside `emqlab/store/` no code converts between them by hand (a `*` or `/` by 1000, 1e3, 1e-3
or MS_PER_S): it calls `to_ms`/`to_s`, `wall_ms_since` or the TIME-reply readers of `emqlab.store.clock`.
And no function takes durations in both units. Read from the package's AST; the planted snippets show each
rule can fail. What the walk does not see: a conversion by another factor (`3_600_000` for hours, `US_PER_MS` for a measured
cost in microseconds), a factor under another name, a bare millisecond literal passed as is (`px=30_000`),
`*args`/`**kwargs`, and a parameter named for neither unit (`local`, a wall-clock reading)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from emqlab.core.ranges import MODEL_S, RANGES
from emqlab.store.clock import MS_PER_S, RealClock, VirtualClock, time_reply_ms, time_reply_s, to_ms, to_s
from support.layers import PACKAGE, places

STORE = PACKAGE / "store"
FACTORS = {1000, 1e3, 1e-3}


def _is_factor(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value in FACTORS
    return (isinstance(node, ast.Name) and node.id == "MS_PER_S") or (isinstance(node, ast.Attribute)
                                                                      and node.attr == "MS_PER_S")


def hand_conversions(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, source) of each `*`, `/` or `//` with a second↔millisecond factor as an operand."""
    return [(node.lineno, ast.unparse(node)) for node in ast.walk(tree)
            if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, (ast.Mult, ast.Div, ast.FloorDiv))
            and any(_is_factor(side) for side in ((node.left, node.right) if isinstance(node, ast.BinOp)
                                                   else (node.value,)))]


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[str]:
    a = fn.args
    return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


# a scenario's flag-named parameters are in model seconds (`lease`, `job`, `beat`, `latency`, …): emqlab.core.ranges
FLAG_SECONDS = {name for name, r in RANGES.items() if r.unit == MODEL_S}


def _in_seconds(name: str) -> bool:
    return name.endswith("_s") or name == "seconds" or name in FLAG_SECONDS


def mixed_units(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of each function or lambda with a parameter in milliseconds and another in seconds."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            names = _params(node)
            if any(n.endswith("_ms") or n == "ms" for n in names) and any(_in_seconds(n) for n in names):
                found.append((node.lineno, getattr(node, "name", "<lambda>")))
    return found


def test_outside_the_store_no_code_converts_seconds_and_milliseconds_by_hand():
    found = places(hand_conversions, outside=STORE)
    assert not found, "convert with emqlab.store.clock (to_ms, to_s, wall_ms_since, time_reply_ms):\n" + "\n".join(found)


def test_no_function_takes_durations_in_two_units():
    found = places(mixed_units)
    assert not found, "one unit per API: milliseconds where the clock or store takes it, seconds where a person " \
                      "reads it:\n" + "\n".join(found)


@pytest.mark.parametrize("snippet", [
    "lease_ms = lease * 1000", "t = ms / 1000.0", "whole = ms // 1000",
    "timeout(beat_s * MS_PER_S)", "t = grant.ttl_ms / clock.MS_PER_S", "x *= 1000", "y = 1e3 * seconds", "t = ms * 1e-3",
])
def test_the_walk_finds_each_hand_conversion(snippet):
    assert hand_conversions(ast.parse(textwrap.dedent(snippet)))


def test_the_walk_lets_other_numbers_and_the_clocks_helpers_pass():
    tree = ast.parse("a = to_ms(lease_s)\nb = to_s(grant.ttl_ms) + 1000\nc = ms / 3_600_000\nd = n * 100\n"
                     "client.set(k, v, px=30_000)\ne = wall_ms_since(started)")
    assert not hand_conversions(tree)


@pytest.mark.parametrize("signature, mixed", [
    ("def f(lease_ms, beat_s): ...", True), ("def f(self, *, ms, seconds=1): ...", True),
    ("def f(lease_ms, beat_ms, work_ms): ...", False), ("def f(lease, job, beat): ...", False),
    ("def f(lease_s, *, timeout_s=5): ...", False), ("def f(lease_ms, job_ms, latency=0.0): ...", True),
    ("f = lambda beat, work_ms: 0", True),
])
def test_the_walk_finds_a_function_that_mixes_units(signature, mixed):
    assert bool(mixed_units(ast.parse(signature))) is mixed


def test_the_conversions_go_both_ways_and_keep_the_value():
    assert to_ms(30) == 30_000 and to_s(30_000) == 30.0 and to_s(to_ms(0.1)) == 0.1 and MS_PER_S == 1000
    assert time_reply_ms((1_700_000_000, 123_999)) == 1_700_000_000_123  # whole milliseconds, truncated
    assert time_reply_s((5, 250_000)) == 5.25
    for clock in (VirtualClock(), RealClock(0.01)):
        assert clock.to_s(clock.to_ms(12.5)) == 12.5  # the same helpers, for code below the store that holds a clock
