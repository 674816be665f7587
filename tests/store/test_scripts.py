"""The Lua scripts' shared blocks, written once in `emqlab/lua/includes/` and taken in with
`--- @include "includes/<name>"`: the resolver, the rule that no block is written twice, and every
resolved script loading and running on both stores."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path

import fakeredis
import pytest

import emqlab
from emqlab.core.errors import StaleToken
from emqlab.queue.jobs import Queue
from emqlab.scenarios.run_harness import run_on
from emqlab.classroom.server import ops
from emqlab.store.scripts import (ANY, INCLUDE_RE, LEASE, QUEUE, SCRIPTS as REGISTRY, IncludeError,
                                   ScriptRegistry, family, resolve, source)

PACKAGE = Path(emqlab.__file__).parent
LUA = PACKAGE / "lua"
INCLUDES = LUA / "includes"
SCRIPTS = sorted(REGISTRY)
WINDOW = 6  # a block of this many code lines written twice is a duplicate
LEASE_MS = 30_000


def own_text(name: str) -> str:
    """A script as its file reads, includes unresolved."""
    return (LUA / f"{name}.lua").read_text(encoding="utf-8")


def include_names() -> list[str]:
    return sorted(p.stem for p in INCLUDES.glob("*.lua"))


def read_package_include(inc: str) -> str | None:
    path = INCLUDES / f"{inc}.lua"
    return path.read_text(encoding="utf-8") if path.is_file() else None


def code_lines(text: str) -> list[str]:
    """The lines that do something: white space folded, blank and comment-only lines dropped (an
    `--- @include` line is a comment too)."""
    folded = (" ".join(line.split()) for line in text.splitlines())
    return [line for line in folded if line and not line.startswith("--")]


def windows(text: str) -> set[tuple[str, ...]]:
    lines = code_lines(text)
    return {tuple(lines[i:i + WINDOW]) for i in range(len(lines) - WINDOW + 1)}


def included_by(text: str) -> list[str]:
    return [m.group(1) for line in text.splitlines() if (m := INCLUDE_RE.match(line))]


# -- the resolver, on given text ----------------------------------------------------------------
def reader(files: dict[str, str]):
    return files.get


def test_an_include_line_is_replaced_by_the_include_text_recursively():
    files = {"outer": "local a = 1\n--- @include \"includes/inner\"\n", "inner": "local b = 2\n"}
    text = 'local x = 0\n--- @include "includes/outer"\nreturn x\n'
    assert resolve("s", text, reader(files)) == "local x = 0\nlocal a = 1\nlocal b = 2\nreturn x\n"


def test_an_include_is_taken_once_per_script():
    files = {"a": "local a = 1\n", "b": '--- @include "includes/a"\nlocal b = 2\n'}
    text = '--- @include "includes/a"\n--- @include "includes/b"\n--- @include "includes/a"\nreturn a + b\n'
    assert resolve("s", text, reader(files)) == "local a = 1\nlocal b = 2\nreturn a + b\n"


def test_a_missing_include_names_the_script_and_the_include():
    with pytest.raises(IncludeError, match=r"script claim: no include named 'nowhere'"):
        resolve("claim", 'local x = 1\n--- @include "includes/nowhere"\n', reader({}))
    # deeper down, the message says through which includes it was reached
    with pytest.raises(IncludeError, match=r"script claim -> outer: no include named 'nowhere'"):
        resolve("claim", '--- @include "includes/outer"\n', reader({"outer": '--- @include "includes/nowhere"\n'}))


def test_a_cyclic_include_is_refused():
    files = {"a": '--- @include "includes/b"\n', "b": '--- @include "includes/a"\n', "me": '--- @include "includes/me"\n'}
    with pytest.raises(IncludeError, match=r"script s -> a -> b: include cycle: includes/a -> includes/b -> includes/a"):
        resolve("s", '--- @include "includes/a"\n', reader(files))
    with pytest.raises(IncludeError, match=r"include cycle: includes/me -> includes/me"):
        resolve("s", '--- @include "includes/me"\n', reader(files))


@pytest.mark.parametrize("line", ['--- @include "includes/a.lua"', "--- @include includes/a", '--- @include "a"',
                                  '--- @include "includes/../a"'])
def test_a_malformed_include_line_is_refused(line):
    with pytest.raises(IncludeError, match="malformed include line"):
        resolve("s", line + "\n", reader({"a": "local a = 1\n"}))


def test_the_resolver_reads_from_a_folder(tmp_path):
    (tmp_path / "clock.lua").write_text("local now = 1\n")

    def from_folder(inc):
        path = tmp_path / f"{inc}.lua"
        return path.read_text() if path.is_file() else None

    assert resolve("s", '--- @include "includes/clock"\nreturn now\n', from_folder) == "local now = 1\nreturn now\n"
    with pytest.raises(IncludeError, match="no include named 'missing'"):
        resolve("s", '--- @include "includes/missing"\n', from_folder)


# -- the package's scripts and includes ------------------------------------------------------------
def test_the_registry_knows_every_script_file():
    assert sorted(p.stem for p in LUA.glob("*.lua")) == SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_scripts_key_count_is_the_highest_key_it_reads(name):
    """The count the registry declares is the script's own: its highest `KEYS[n]` (ANY: it reads no fixed key,
    walks all it is given)."""
    text = source(name)
    highest = max((int(n) for n in re.findall(r"KEYS\[(\d+)\]", text)), default=0)
    if REGISTRY[name].keys == ANY:
        assert highest == 0 and re.search(r"ipairs\(KEYS\)|#KEYS", text)
    else:
        assert highest == REGISTRY[name].keys


def test_each_package_runs_only_its_own_familys_scripts_and_the_queue_all_of_its():
    """emqlab.lease runs lease scripts, emqlab.queue queue scripts; the class server loads exactly the queue's."""
    called = re.compile(r'scripts(?:\.sha)?\("([a-z_]+)"')
    runs = {pkg: {m for path in (PACKAGE / pkg).rglob("*.py") for m in called.findall(path.read_text())}
            for pkg in ("lease", "queue")}
    assert runs["lease"] and {REGISTRY[n].family for n in runs["lease"]} == {LEASE}
    assert runs["queue"] == set(family(QUEUE))
    assert set(family(LEASE)) | set(family(QUEUE)) == set(SCRIPTS)
    assert ops() == family(QUEUE)


def test_a_call_with_the_wrong_number_of_keys_fails_before_the_server():
    scripts = ScriptRegistry(fakeredis.FakeRedis(decode_responses=True))
    with pytest.raises(TypeError, match="script claim takes 2 key"):
        scripts("claim", ["only-one"], [])
    with pytest.raises(KeyError, match="no script family 'cache'"):
        family("cache")


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_include_of_every_script_resolves_and_is_taken_once(name):
    taken = Counter()

    def counting(inc):
        taken[inc] += 1
        return read_package_include(inc)

    resolved = resolve(name, own_text(name), counting)
    assert resolved == source(name)  # what the registry, the class server and the lessons read
    assert "@include" not in resolved
    assert all(n == 1 for n in taken.values()), taken
    for inc in taken:  # the include's own first line stands once in what the server runs
        first = read_package_include(inc).splitlines()[0]
        assert resolved.count(first) == 1, (inc, first)


@pytest.mark.parametrize("inc", include_names())
def test_every_include_says_what_it_expects_and_defines_and_is_used(inc):
    text = read_package_include(inc)
    header = []
    for line in text.splitlines():
        if not line.startswith("--") or INCLUDE_RE.match(line):
            break
        header.append(line)
    assert header and header[0].startswith(f"-- includes/{inc}:"), f"includes/{inc} opens with its name and purpose"
    assert "expects:" in "\n".join(header) and "defines:" in "\n".join(header), header
    assert not any("KEYS" in line or "ARGV" in line for line in code_lines(text)), "the script unpacks KEYS/ARGV"
    users = [n for n in SCRIPTS if inc in included_by(own_text(n))]
    users += [i for i in include_names() if inc in included_by(read_package_include(i))]
    assert users, f"includes/{inc}.lua is included by no script"


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_script_keeps_its_header_and_its_unpacking(name):
    text = own_text(name)
    assert text.startswith(f"-- {name}:")
    assert re.search(r"^-- Reply ", text, re.M), "the reply is documented in the script's own header"
    assert any("ARGV" in line or "KEYS" in line for line in code_lines(text)), "a script unpacks its own KEYS/ARGV"


@pytest.mark.parametrize("name", SCRIPTS)
def test_no_script_writes_out_an_include_again(name):
    own = windows(own_text(name))
    for inc in include_names():
        again = own & windows(read_package_include(inc))
        assert not again, f"{name}.lua repeats {WINDOW} lines of includes/{inc}.lua: {sorted(again)[0]}"


def test_no_block_of_six_lines_stands_in_two_scripts_or_includes():
    texts = {f"{n}.lua": own_text(n) for n in SCRIPTS} | {f"includes/{i}.lua": read_package_include(i)
                                                          for i in include_names()}
    where: dict[tuple[str, ...], list[str]] = {}
    for name, text in texts.items():
        lines = code_lines(text)
        for i in range(len(lines) - WINDOW + 1):
            where.setdefault(tuple(lines[i:i + WINDOW]), []).append(name)
    repeated = {block: names for block, names in where.items() if len(names) > 1}
    assert not repeated, next(iter(repeated.items()))


def test_the_server_clock_is_read_in_one_place():
    for name in SCRIPTS:
        assert "redis.call('TIME')" not in own_text(name), f"{name}.lua: take --- @include \"includes/server_now\""
    users = {n for n in SCRIPTS if "server_now" in included_by(own_text(n))}
    assert users == {n for n in SCRIPTS if "redis.call('TIME')" in source(n)}


def test_the_class_server_reads_the_resolved_scripts():
    from emqlab.classroom.server import queue_commands

    # SADD and LLEN are run only inside includes (settle_done, wake): a learner's ACL must still allow them
    assert {"sadd", "llen", "rpush", "hmget", "hdel"} <= set(queue_commands())


# -- on both stores ---------------------------------------------------------------------------------
def test_every_resolved_script_is_registered_and_loads(backend):
    for name in SCRIPTS:
        assert backend.scripts.sha(name) == hashlib.sha1(source(name).encode()).hexdigest(), name
    backend.scripts.load_all()  # the live server compiles each one here
    assert all(backend.client.script_exists(*(backend.scripts.sha(n) for n in SCRIPTS)))


class Recording:
    """The backend's script registry, noting which scripts ran."""

    def __init__(self, scripts):
        self.inner, self.ran = scripts, set()

    def __call__(self, name, keys, args=(), client=None):
        self.ran.add(name)
        return self.inner(name, keys, args, client=client)

    def sha(self, name):
        return self.inner.sha(name)


def wait(backend, ms: float) -> None:
    backend.clock.run(until=backend.clock.now_ms + ms)


def test_every_script_runs_in_a_short_round_trip(backend, monkeypatch):
    recording = Recording(backend.scripts)
    monkeypatch.setattr(backend, "scripts", recording)
    with run_on(backend, "lua-includes-test", {}) as run:
        q = Queue(backend, "orders", prefix=run.prefix)
        # enqueue (idempotent), promote, claim, the batched extend, complete
        assert q.enqueue("A1", "pay") is True
        assert q.enqueue("A1", "again") is False
        assert q.enqueue("D1", "later", delay_ms=1_000) is True
        wait(backend, 2_000)
        assert q.promote() == 1
        claimed = {j.id: j for j in q.claim(LEASE_MS, 2)}
        assert sorted(claimed) == ["A1", "D1"] and {j.attempts for j in claimed.values()} == {1}
        assert claimed["A1"].payload == "pay"
        assert q.extend([("A1", 1), ("D1", 1)], LEASE_MS).lost == ()
        q.complete("A1", 1)
        assert q.job("A1")["state"] == "done"
        with pytest.raises(StaleToken):
            q.complete("A1", 1)
        # retry, a lapsed lease reaped, a fenced effect settling the job
        q.retry("D1", 1)
        assert q.job("D1")["state"] == "pending"
        [again] = q.claim(1_000)
        assert (again.id, again.attempts) == ("D1", 2)
        wait(backend, 2_000)
        assert q.reap() == ["D1"]
        with pytest.raises(StaleToken):
            q.record_effect("D1", 2)
        [third] = q.claim(LEASE_MS)
        assert q.record_effect("D1", third.attempts) == 1
        assert q.job("D1")["state"] == "done"
        # a worker's session: open, claim under it, renew, close only once it holds nothing
        session = q.open_session("w1", LEASE_MS)
        assert q.enqueue("S1", "held") is True
        [held] = q.claim(LEASE_MS, session=session)
        assert q.held_by("w1") == ["S1"]
        session = q.renew_session(session, LEASE_MS)
        assert session.held
        assert q.close_session(session) == -1
        q.complete("S1", held.attempts)
        assert q.held_by("w1") == [] and q.job("S1")["state"] == "done"
        assert q.close_session(session) == 1
        # the lease scripts, on keys under the run's prefix
        mine, theirs = run.prefix + "lease:mine", run.prefix + "lease:theirs"
        backend.client.set(mine, "tok", px=60_000)
        backend.client.set(theirs, "other", px=60_000)
        assert int(backend.scripts("extend_lease", [mine], ["tok", 60_000])) > 0  # not an event count: its PTTL reply
        # extend_leases takes any number of keys (one per lease): the registry's call checks no count for it
        assert list(backend.scripts("extend_leases", [mine, theirs], [60_000, "tok", "tok"])) == [2]
        assert int(backend.scripts("release_lease", [theirs], ["tok"])) == 0
        assert int(backend.scripts("release_lease", [mine], ["tok"])) == 1
    assert recording.ran == set(REGISTRY)
