"""Every number has a range (issue 11, item 7), every path and URL is checked before a run, and a
fencing token is exact (item 6); the library keeps to its prefix (item 5).

The numeric flags are read FROM THE PARSER: every option of every verb whose type is numeric or
whose name is in `emqlab.core.ranges.RANGES` must have a range entry, and each is tried below its
range, above it, as NaN, inf and a non-number: one line `emqlab: error: …`, exit 2, within 10 s.
A new numeric flag without a range entry fails `test_every_numeric_flag_has_a_range`."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import pytest

from emqlab.cli import command as cli
from emqlab.core import ranges
from emqlab.core.errors import BadParameter
from emqlab.lease.leases import Leases
from emqlab.queue.jobs import Queue, check_attempts
from emqlab.scenarios.run_harness import positive, run_on
from realtime import timeout_s

CLI = [sys.executable, "-m", "emqlab.cli"]
NUMERIC_TYPES = {int, float}
SKIP_DESTS = {"help", "json", "func", "verb", "extra"}


def verbs() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _name(action: argparse.Action) -> str:
    return ranges.ALIASES.get(action.dest, action.dest)


def _is_numeric(action: argparse.Action) -> bool:
    typ = action.type
    return (typ in NUMERIC_TYPES or getattr(typ, "__name__", "").endswith(" number")
            or _name(action) in ranges.RANGES)


def numeric_flags() -> list[tuple[str, str, str]]:
    """(verb, flag, range name) for every numeric option of every verb, read from the parser."""
    found = []
    for verb, parser in verbs().items():
        for action in parser._actions:
            if action.dest in SKIP_DESTS or not action.option_strings or not _is_numeric(action):
                continue
            found.append((verb, action.option_strings[-1], _name(action)))
    return found


def test_every_numeric_flag_has_a_range():
    flags = numeric_flags()
    assert len(flags) >= 20  # scale on every run verb, and the verbs' own numbers
    missing = [(v, f) for v, f, name in flags if name not in ranges.RANGES]
    assert not missing, f"numeric flags without a range in emqlab/core/ranges.py: {missing}"
    for verb, flag, name in flags:
        action = next(a for a in verbs()[verb]._actions if flag in a.option_strings)
        assert ranges.get(name).text() in (action.help or "").replace("\n", " "), (verb, flag, action.help)


def _bad_values(name: str) -> list[str]:
    rng = ranges.get(name)
    step = 1 if rng.whole else max(rng.low * 0.5, 1e-3)
    below = rng.low - step if rng.low > 0 else (rng.low - 1 if rng.low < 0 else -1)  # a range may go below 0
    return [rng.template.format(v) for v in (f"{below:g}", f"{rng.high * 2 + 1:g}", "nan", "inf", "abc")]


CASES = [(verb, flag, value) for verb, flag, name in numeric_flags() if name in ranges.RANGES
         for value in _bad_values(name)]


def _refused(argv: list[str]) -> str:
    start = time.monotonic()
    proc = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=timeout_s(10))
    assert time.monotonic() - start < 10
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (argv, proc.stdout, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("emqlab: error: "), (argv, proc.stderr)
    assert proc.stdout == ""
    return lines[0]


@pytest.mark.parametrize(("verb", "flag", "value"), CASES, ids=[f"{v} {f} {x}" for v, f, x in CASES])
def test_every_bad_number_is_one_line_exit_2(verb, flag, value, capsys):
    # in-process (the parser refuses before anything starts); a sample below runs as a subprocess
    assert cli.main([verb, f"{flag}={value}"] if verb != "present" else [verb, "heartbeat", f"{flag}={value}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("emqlab: error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("argv", [
    ["renewal-cost", "--jobs", "10000000"], ["renewal-cost", "--ticks", "1000000000"],
    ["renewal-cost", "--jobs", "100000", "--ticks", "10000"],
    ["heartbeat", "--renew", "1e-9"], ["heartbeat", "--job", "1e9"], ["heartbeat", "--lease", "1e-9"],
    ["heartbeat", "--lease", "1e300"], ["heartbeat", "--scale", "inf"],
    ["heartbeat", "--clock", "real", "--scale", "1e-320"],
    ["heartbeat", "--job", "3600", "--lease", "0.1", "--renew", "0.05"],
    ["heartbeat", "--clock", "real", "--scale", "1", "--job", "3600"],
    ["reaper", "--lease", "1e300"], ["reaper", "--beat", "1e-9"], ["reaper", "--beat", "0.1", "--lease", "3600"],
    ["chaos", "--job", "1e300"], ["chaos", "--jobs", "100000"], ["chaos", "--workers", "1", "--job", "3600"],
    ["chaos", "--plot", "/no/such/dir/x.png"], ["chaos", "--plot", "x.bogus"],
    ["heartbeat", "--backend", "redis://[::1"], ["heartbeat", "--backend", "redis://localhost:notaport"],
])
def test_absurd_input_from_the_issue_is_refused_fast(argv):
    _refused(argv)


def test_plot_naming_a_folder_and_out_under_a_file_are_refused(tmp_path):
    assert "is a folder" in _refused(["chaos", "--plot", str(tmp_path)])
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert "is a file" in _refused(["figures", "--out", str(blocker / "figs")])
    assert "is a file" in _refused(["figures", "--out", str(blocker)])
    assert not (tmp_path / f"{tmp_path.name}.png").exists() and not os.path.exists(f"{tmp_path}.png")


def test_upper_case_scheme_reads_as_lower_case():
    args = cli.build_parser().parse_args(["heartbeat", "--backend", "REDIS://localhost:6399/0"])
    assert args.backend == "redis://localhost:6399/0"


# -- the library: positive() and check_count() read the table --------------------------------------
@pytest.mark.parametrize("name", ["lease", "job", "beat", "poll", "crash_at", "late_at"])
@pytest.mark.parametrize("value", [0, -1, 1e-9, 1e300, float("nan"), float("inf"), True, "30", None])
def test_positive_enforces_the_range_by_name(name, value):
    with pytest.raises(BadParameter, match=f"{name} must be a number from"):
        positive(name, value)


def test_positive_keeps_good_values():
    assert positive("lease", 30) == 30.0 and positive("job", 0.1) == 0.1


# -- tokens are exact, on both stores -----------------------------------------------------------
BAD_TOKENS = [1.9, True, False, " 1", "1 ", 1.0000001, 1.0, "1e0", -1, "-1", 0, "0x1", "١", "", None, 2**63]


@pytest.mark.parametrize("token", BAD_TOKENS)
def test_check_attempts_refuses_every_other_shape(token):
    with pytest.raises(BadParameter, match="not a fencing token"):
        check_attempts(token)


def test_check_attempts_sends_the_canonical_string():
    assert check_attempts(1) == check_attempts("1") == check_attempts("01") == "1"


def test_wrong_shaped_tokens_are_refused_before_the_server(backend):
    with run_on(backend, "tokens", {}) as run:
        q = Queue(backend, "orders", prefix=run.prefix)
        q.enqueue("A1")
        job = q.claim(30_000)[0]
        assert job.attempts == 1
        rt = backend.counter.round_trips
        for token in BAD_TOKENS:
            for call in (lambda: q.complete("A1", token), lambda: q.retry("A1", token),
                         lambda: q.record_effect("A1", token), lambda: q.extend([("A1", token)], 30_000)):
                with pytest.raises(BadParameter):
                    call()
        assert backend.counter.round_trips == rt  # nothing reached the server
        assert q.job("A1")["state"] == "active"
        q.complete("A1", "1")  # the exact token, as a string of digits, still settles it
        assert q.where("A1") == ["done"]


# -- the lease API stays in its prefix ------------------------------------------------------------
def test_leases_refuse_keys_outside_the_prefix(backend):
    backend.client.set("user:1", "theirs")
    backend.client.set("emq:{orders}:lock", "theirs", px=600_000)
    try:
        with run_on(backend, "prefix", {}) as run:
            leases = Leases(backend, prefix=run.prefix)
            rt = backend.counter.round_trips
            for key in ("user:1", "user:2", "emq:{orders}:lock", "emqlab:other-run:lock", run.prefix, "", None):
                for call in (lambda: leases.acquire(key, 30_000), lambda: leases.release(key, "t"),
                             lambda: leases.extend(key, "t", 30_000), lambda: leases.ttl_ms(key)):
                    with pytest.raises(BadParameter):
                        call()
            assert backend.counter.round_trips == rt
            grant = leases.acquire("lock", 30_000)  # relative: under the run's prefix
            assert grant.key == run.prefix + "lock"
            leases.release(run.prefix + "lock", grant.token)  # the full key under the prefix is fine too
            assert leases.acquire(leases.key("job", "7"), 30_000).key == run.prefix + "job:7"
        assert backend.client.get("user:1") == "theirs" and not backend.client.exists("user:2")
        assert backend.client.pttl("emq:{orders}:lock") > 0  # not an event count: a TTL read back (PX 600 000)
    finally:
        backend.client.delete("user:1", "emq:{orders}:lock")


def test_a_backend_key_works_as_notebook_02_uses_it(fake):
    leases, key = Leases(fake), fake.key("lesson02", "lock")
    grant = leases.acquire(key, 30_000)
    assert grant.key == key
    leases.release(key, grant.token)


def test_a_lease_prefix_outside_the_backend_is_refused(fake):
    with pytest.raises(BadParameter, match="must lie under"):
        Leases(fake, prefix="user:")
