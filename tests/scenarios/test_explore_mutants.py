"""Mutants of the shipped scripts (benchmarks/mutants.py), and the explorer killing a few of them.

The benchmark (benchmarks/explore.py) runs every mutant and reports the share killed and why each survivor
survives; here, the generator makes mutants that are one-line, valid-Lua changes of the real source, and a
handful of representative mutants (a dropped write, a shifted clock, a flipped fence, a limit off by one, a
halved lease, a hard deadline's index left behind) are killed in a small world by the invariant that names
what they break. Each search is exact (a script is
replaced) and shallow, so the file runs in seconds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from emqlab.scenarios.explore import explore
from emqlab.store.backend import connect
from emqlab.store.scripts import source

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import mutants as mut  # noqa: E402

MUTANTS = mut.all_mutants()


def pick(script: str, operator: str, before: str, after: str) -> mut.Mutant:
    """The one mutant of `script` by `operator` whose line held `before` and now holds `after`."""
    found = [m for m in MUTANTS if m.script == script and m.operator == operator and before in m.before and after in m.after]
    assert len(found) == 1, [m.name for m in found]
    return found[0]


def test_each_mutant_is_one_changed_line_of_code_in_the_real_source():
    assert len(MUTANTS) > 100
    assert {m.script for m in MUTANTS} == set(mut.SCRIPTS)
    assert {m.operator for m in MUTANTS} == {"comparison", "dropped write", "constant", "lease math", "check removed"}
    assert len({m.text for m in MUTANTS}) == len(MUTANTS)  # no two alike
    for m in MUTANTS:
        original = source(m.script).split("\n")
        mutated = m.text.split("\n")
        assert m.text != source(m.script)
        assert len(mutated) == len(original)
        differ = [k for k, (a, b) in enumerate(zip(original, mutated), start=1) if a != b]
        assert differ == [m.line], m.name
        assert original[m.line - 1].strip() == m.before and mutated[m.line - 1].strip() == m.after
        assert not m.before.startswith("--")  # code, never a comment
        # the string literals of the line are untouched (a key name, a command, a field)
        if m.operator in ("comparison", "constant", "lease math"):
            assert m.before.count("'") == m.after.count("'"), m.name


def test_every_mutant_is_valid_lua():
    """So no mutant is 'killed' by a syntax error: each loads on the store as a script."""
    with connect("fake") as backend:
        for m in MUTANTS:
            backend.client.script_load(m.text)
        text, probes = mut.instrumented("reap")
        backend.client.script_load(text)
    assert probes  # the instrumented copy has its probes


def test_coverage_tells_which_world_runs_which_line():
    none = mut.cover(mut.World("none"), depth=4)
    claim = source("claim").split("\n")
    popped = next(k for k, line in enumerate(claim, start=1) if "ZPOPMIN" in line)
    token = next(k for k, line in enumerate(claim, start=1) if "redis.call('HGET', base .. 'session_tokens'" in line)
    assert ("claim", popped) in none
    assert ("claim", token) not in none  # a session's token check: only design session runs it


KILLS = [
    # (script, operator, before, after, design, a hard deadline (s), depth, invariant): each a defect in our own words
    ("record_effect", "dropped write", "SADD', done_key", "SADD dropped", "none", 0, 4, "never_lost"),  # done, nowhere
    ("record_effect", "dropped write", "return redis.call('HINCRBY'", "HGET", "none", 0, 4, "done_has_effect"),  # no work
    ("reap", "dropped write", "ZREM', active_key, unpack(expired)", "ZREM dropped", "none", 0, 4, "one_place"),
    ("reap", "lease math", "ZRANGEBYSCORE', active_key", "(now + 5000)", "none", 0, 4, "lease_kept"),  # 5 s early
    ("reap", "constant", "ZRANGEBYSCORE', active_key", "'LIMIT', 1, limit", "none", 0, 4, "progress"),  # never reaps it
    ("record_effect", "comparison", "current ~= attempts", "current == attempts", "none", 0, 4, "no_resurrection"),
    ("claim", "dropped write", "ZADD', base .. 'held:'", "ZADD dropped", "session", 0, 3, "sessions_agree"),
    ("claim", "lease math", "local deadline = now + lease_ms", "lease_ms / 2", "none", 0, 3, "lease_granted"),  # half
    # a session job reaped at its hard deadline stays in its worker's `held:` index
    ("reap", "dropped write", "ZREM', base .. 'held:' .. worker, id)", "ZREM dropped", "session", mut.HARD, 6,
     "sessions_agree"),
    ("reap", "dropped write", "INCRBY', reaped_key", "INCRBY dropped", "none", 0, 4, "reap_told"),  # uncounted
    ("reap", "constant", "reply[#reply + 1] = id", "+ 2", "none", 0, 4, "reap_told"),  # the reply loses the id
    # the hard deadline kept from extend_active: a renewal carries the hung job past its limit
    ("claim", "dropped write", "HSET', job_key, 'hard', hard", "HSET dropped", "per-job", mut.HARD, 6, "limit_kept"),
    # a session opened with half its lease: the start itself breaks, before any step
    ("session_open", "lease math", "tonumber(ARGV[3])", "/ 2", "session", 0, 3, "lease_granted"),
]


@pytest.mark.parametrize("script,operator,before,after,design,hard,depth,invariant", KILLS,
                         ids=[f"{k[0]}-{k[7]}" for k in KILLS])
def test_a_mutant_is_killed_by_the_invariant_it_breaks(script, operator, before, after, design, hard, depth, invariant):
    m = pick(script, operator, before, after)
    v = explore(workers=2, jobs=1, depth=depth, design=design, fencing="on", scripts=m.scripts,
                max_runtime=hard).verdict
    assert v.invariant == invariant, (m.name, v.invariant, v.broken)
    assert v.counterexample is not None and len(v.counterexample) <= depth


def test_the_shipped_scripts_pass_in_the_same_small_worlds():
    """The kills above are the mutants', not the worlds': the same exact searches with the package's own text
    in place find nothing."""
    for design, depth in (("none", 4), ("session", 3)):
        v = explore(workers=2, jobs=1, depth=depth, design=design, fencing="on",
                    scripts={"reap": source("reap"), "record_effect": source("record_effect"),
                             "claim": source("claim")}).verdict
        assert v.complete and v.violations == 0, (design, v.invariant, v.broken)
