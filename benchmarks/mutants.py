"""Mutants of the shipped Lua scripts, made mechanically, and the explorer's verdict on each.

A mutant is one script (`emqlab.store.scripts.source(name)`: the text the server runs, includes resolved)
with one small change on one line, by one of five operators:

- `comparison`: one comparison operator flipped (`<=`/`<`, `>=`/`>`, `==`/`~=`);
- `dropped write`: one write command left out (`ZREM`, `ZADD`, `HSET`, `HDEL`, `SADD`, `INCRBY`): a
  statement is removed; a write whose reply is used is replaced by the read of what it would have
  replied (`HINCRBY` -> the `HGET` plus the increment, `ZPOPMIN` -> the `ZRANGE` of what it would pop);
- `constant`: one integer literal shifted by one (`+ 1` -> `+ 2`, `LIMIT 0` -> `LIMIT 1`, ...);
- `lease math`: one lease length or time added to `now` halved (`now + lease_ms` -> `now + lease_ms / 2`),
  or the server's time, where a script compares a score with it, moved 5 s later (`now` -> `(now + 5000)`:
  more than the explorer's `near`, 2 s at lease 30 / beat 20; less than a lease);
- `check removed`: one condition of an `if` or `while` made to pass (an `==` atom made `true`, a `~=`
  atom made `false`, a bare condition made `true`): a missing state check.

Only code is changed, never a comment or a string. The scripts are those the explorer's world calls
(`emqlab.scenarios.explore.world`): claim, reap, record_effect, complete, extend_active, session_open,
session_renew (enqueue runs once, before the search; session_close is never called by the world).

Each mutant is judged on the worlds where its script runs (`WORLDS`; then `HARD_WORLDS`: the same with a
hung job's limit, a hard deadline 45 s after each claim, so the scripts' hard-deadline lines run; then for reap
`SLICE_WORLDS`: 2 jobs and a reap limit of 1, so its slices fill and its bounds bind): 2 workers × 1 job,
fencing on, each design that calls the script; complete runs only with fencing off, so its world is
fencing off, judged by the invariants the shipped scripts keep there (every one but current_fence and
one_effect). Of those, only the worlds that run the mutated line (`coverage`: each world searched once with
every script instrumented; a mutant of a line a world never runs changes nothing there). `judge` runs
`explore` with the mutant in place of the script (states compared exactly: a script is replaced), every
world to depth 6 first, then deeper.

Importable from the benchmark (benchmarks/explore.py) and from a test (tests/scenarios/test_explore_mutants.py).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from emqlab.queue.jobs import REAP_LIMIT
from emqlab.scenarios.explore import CHECKS, explore
from emqlab.store.scripts import source

SCRIPTS = ("claim", "reap", "record_effect", "complete", "extend_active", "session_open", "session_renew")

# script -> the worlds it runs in, cheapest first: (design, fencing, the invariants judged; None: all)
SHIPPED_OFF_BREAKS = ("current_fence", "one_effect")  # what the shipped scripts break with fencing off
OFF_KEPT = tuple(n for n in CHECKS if n not in SHIPPED_OFF_BREAKS)
WORLDS: dict[str, tuple[tuple[str, str, tuple[str, ...] | None], ...]] = {
    "claim": (("none", "on", None), ("per-job", "on", None), ("session", "on", None)),
    "reap": (("none", "on", None), ("per-job", "on", None), ("session", "on", None)),
    "record_effect": (("none", "on", None), ("per-job", "on", None), ("session", "on", None)),
    # per-job and sweep call extend_active alike while a worker holds one job: per-job stands for both
    "extend_active": (("per-job", "on", None),),
    "session_open": (("session", "on", None),),
    "session_renew": (("session", "on", None),),
    "complete": (("none", "off", OFF_KEPT), ("session", "off", OFF_KEPT)),
}

# the worlds with a hung job's limit (`explore(max_runtime=HARD)`): a hard deadline 1.5 leases after each claim, so
# the scripts' hard-deadline lines run (the worlds above never set one); like those, each judges only the lines it runs
HARD = 45.0
HARD_WORLDS: dict[str, tuple[tuple[str, str, tuple[str, ...] | None], ...]] = {
    # per-job: the claim's `hard` field is read by extend_active alone, which only a renewing design calls
    "claim": (("none", "on", None), ("per-job", "on", None), ("session", "on", None)),
    "reap": (("none", "on", None), ("session", "on", None)),
    "extend_active": (("per-job", "on", None),),
}

# reap with its slices filled: 2 jobs, one job a call (the course's LIMIT is 100: one job and two sessions never fill it)
SLICE = 1
SLICE_DEPTH = 8
SLICE_WORLDS: dict[str, tuple[tuple[str, str, tuple[str, ...] | None, float], ...]] = {
    "reap": (("none", "on", None, 0.0), ("session", "on", None, 0.0), ("session", "on", None, HARD)),
}


@dataclass(frozen=True)
class World:
    """One world a mutant is judged on: the design, fencing, the invariants judged (None: all), a hung job's
    limit (0: none), how many jobs and the reap call's limit (2 workers always)."""

    design: str
    fencing: str = "on"
    invariants: tuple[str, ...] | None = None
    max_runtime: float = 0.0
    jobs: int = 1
    reap_limit: int = REAP_LIMIT
    deepest: int = 12  # searched no deeper (2 jobs, exact states: depth 8 is 4,000-13,000 states, 10-45 s)

    @property
    def label(self) -> str:
        """The world in a few words: "session, fencing on, hard deadline 45 s, 2 jobs, reap limit 1"."""
        return (f"{self.design}, fencing {self.fencing}" + (f", hard deadline {self.max_runtime:g} s" if self.max_runtime
                                                               else "")
                + (f", {self.jobs} jobs, reap limit {self.reap_limit}" if self.reap_limit != REAP_LIMIT else ""))

    @property
    def short(self) -> str:
        """The design, and what sets the world apart: "session (hard deadline, reap limit 1)"."""
        extra = [w for w, on in (("hard deadline", self.max_runtime), (f"reap limit {self.reap_limit}",
                                                                        self.reap_limit != REAP_LIMIT)) if on]
        return self.design + (f" ({', '.join(extra)})" if extra else "")

    def explore(self, **kw: Any):
        return explore(workers=2, jobs=self.jobs, design=self.design, fencing=self.fencing,
                       invariants=self.invariants, max_runtime=self.max_runtime, reap_limit=self.reap_limit, **kw)


WRITES = ("ZREM", "ZADD", "HSET", "HDEL", "SADD", "INCRBY", "HINCRBY", "ZPOPMIN")
FLIP = {"<=": "<", "<": "<=", ">=": ">", ">": ">=", "==": "~=", "~=": "=="}
SHIFT_MS = 5000  # the `now` shift: 5 s


@dataclass(frozen=True)
class Mutant:
    """One script with one change: `line` (1-based, in the resolved source) read `before` and now reads `after`."""

    script: str
    operator: str
    line: int
    before: str
    after: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.script}:{self.line} {self.operator}: {self.change}"

    @property
    def change(self) -> str:
        """The change in a few words: the words of the line that differ, with a word either side."""
        a, b = self.before.split(), self.after.split()
        i = 0
        while i < min(len(a), len(b)) and a[i] == b[i]:
            i += 1
        j = 0
        while j < min(len(a), len(b)) - i and a[-1 - j] == b[-1 - j]:
            j += 1
        lo = max(0, i - 1)
        old, new = " ".join(a[lo:len(a) - j + (1 if j else 0)]), " ".join(b[lo:len(b) - j + (1 if j else 0)])
        if self.operator == "dropped write" and new.startswith("do end"):
            return f"`{self.before}` dropped"
        return f"`{old}` -> `{new}`"

    @property
    def scripts(self) -> dict[str, str]:
        return {self.script: self.text}


# -- reading Lua: code outside strings and comments ------------------------------------------------------------
def code_spans(line: str) -> list[tuple[int, int]]:
    """The (start, end) spans of `line` that are code: outside a string literal and before a comment."""
    spans, start, i, quote = [], 0, 0, None
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
                start = i + 1
        elif c in "'\"":
            spans.append((start, i))
            quote = c
        elif line.startswith("--", i):
            spans.append((start, i))
            return [s for s in spans if s[1] > s[0]]
        i += 1
    if quote is None:
        spans.append((start, len(line)))
    return [s for s in spans if s[1] > s[0]]


def _in_code(line: str, pos: int, end: int) -> bool:
    return any(a <= pos and end <= b for a, b in code_spans(line))


def _sub(line: str, pos: int, end: int, new: str) -> str:
    return line[:pos] + new + line[end:]


# -- the operators: each yields (operator, new line) for one line ---------------------------------------------------
CMP_RE = re.compile(r"<=|>=|==|~=|(?<![<>=~-])<(?![=<])|(?<![<>=~-])>(?![=>])")


def _comparisons(line: str):
    for m in CMP_RE.finditer(line):
        if _in_code(line, m.start(), m.end()):
            yield "comparison", _sub(line, m.start(), m.end(), FLIP[m.group()])


CALL_RE = re.compile(r"redis\.call\('(\w+)'")


def _call_end(line: str, start: int) -> int | None:
    """The index past the `)` closing the `redis.call(` at `start` (None: it closes on another line)."""
    depth, i, quote = 0, line.index("(", start), None
    while i < len(line):
        c = line[i]
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _dropped(line: str):
    for m in CALL_RE.finditer(line):
        cmd = m.group(1)
        if cmd not in WRITES or not _in_code(line, m.start(), m.start() + 1):
            continue
        end = _call_end(line, m.start())
        if end is None:
            continue
        call = line[m.start():end]
        before = line[:m.start()].strip()
        after = line[end:].strip()
        if before == "" and after == "":  # a statement: left out
            yield "dropped write", line[:m.start()] + "do end  -- mutant: " + cmd + " dropped"
            continue
        args = [a.strip() for a in call[len("redis.call("):-1].split(",")]
        if cmd == "HINCRBY" and len(args) == 4:  # its reply read, nothing written
            read = f"((tonumber(redis.call('HGET', {args[1]}, {args[2]})) or 0) + {args[3]})"
        elif cmd == "ZPOPMIN" and len(args) == 3:
            read = f"redis.call('ZRANGE', {args[1]}, 0, {args[2]} - 1, 'WITHSCORES')"
        else:
            continue
        yield "dropped write", _sub(line, m.start(), end, read)


INT_RE = re.compile(r"(?<![\w.\[])\d+(?![\w.])")


def _constants(line: str):
    for m in INT_RE.finditer(line):
        if _in_code(line, m.start(), m.end()):
            yield "constant", _sub(line, m.start(), m.end(), str(int(m.group()) + 1))


LEASE_RE = re.compile(r"now \+ (lease_ms|max_ms|tonumber\(ARGV\[3\]\))")
NOW_RE = re.compile(r"(?<![\w.])now(?![\w])")


def _lease_math(line: str):
    for m in LEASE_RE.finditer(line):
        if _in_code(line, m.start(), m.end()):
            yield "lease math", _sub(line, m.start(), m.end(), f"now + {m.group(1)} / 2")
    if line.lstrip().startswith("local now =") or "local deadline = now" in line or "hard = now" in line:
        return
    # the server's time where it is compared with a score (ZRANGEBYSCORE's bound, a comparison)
    if "ZRANGEBYSCORE" in line or CMP_RE.search(line):
        for m in NOW_RE.finditer(line):
            if _in_code(line, m.start(), m.end()):
                yield "lease math", _sub(line, m.start(), m.end(), f"(now + {SHIFT_MS})")


COND_RE = re.compile(r"^(\s*)(if|elseif|while)\s+(.*?)\s+(then|do)(\s*(?:--.*)?)$")
ATOM_RE = re.compile(r"((?:[\w.\[\]'#]|\([^()]*\))+)\s*(==|~=)\s*((?:[\w.\[\]'#]|\([^()]*\))+)")


def _checks(line: str):
    m = COND_RE.match(line)
    if not m:
        return
    indent, word, cond, tail, rest = m.groups()
    atoms = list(ATOM_RE.finditer(cond))
    for a in atoms:
        value = "true" if a.group(2) == "==" else "false"
        new = cond[:a.start()] + value + cond[a.end():]
        yield "check removed", f"{indent}{word} {new} {tail}{rest}"
    if not atoms and word == "if" and " and " not in cond and " or " not in cond:
        yield "check removed", f"{indent}{word} true {tail}{rest}"


OPERATORS = (_comparisons, _dropped, _constants, _lease_math, _checks)


def mutants_of(script: str) -> list[Mutant]:
    """Every mutant of `script` (its resolved source), one change each, in line order; no two alike, none the
    source itself. The `server_now` lines every script shares (TIME to ms) are left alone."""
    text = source(script)
    lines = text.split("\n")
    out, seen = [], set()
    for k, line in enumerate(lines):
        if line.lstrip().startswith("--") or "tonumber(t[1]) * 1000" in line:
            continue
        for op in OPERATORS:
            for operator, new in op(line):
                if new == line:
                    continue
                mutated = "\n".join(lines[:k] + [new] + lines[k + 1:])
                if mutated in seen:
                    continue
                seen.add(mutated)
                out.append(Mutant(script, operator, k + 1, line.strip(), new.strip(), mutated))
    return out


def all_mutants(scripts: tuple[str, ...] = SCRIPTS) -> list[Mutant]:
    return [m for s in scripts for m in mutants_of(s)]


# -- which lines each world runs -----------------------------------------------------------------------------
COVER_KEY = "__emqlab_mutant_cover"  # outside every queue's keys: no state the search reads or writes back
STARTS = re.compile(r"^\s*(local\s|redis\.call\(|if\s|for\s|while\s|return\b|[A-Za-z_][\w.]*(\[[^\]]*\])?\s*=[^=]|"
                    r"[A-Za-z_]\w*\()")


def _balanced(text: str) -> bool:
    depth = 0
    for a, b in code_spans(text):
        depth += text[a:b].count("(") + text[a:b].count("{") - text[a:b].count(")") - text[a:b].count("}")
    return depth == 0


def _opens(code: str) -> int:
    """How many blocks a line of code opens, less those it closes (`if … then`, `for/while … do`, `function`,
    a lone `do`; `end`)."""
    words = re.findall(r"[A-Za-z_]\w*", code)
    opened = sum(w in ("then", "do", "function") for w in words) - words.count("elseif")
    return opened - words.count("end")


def instrumented(script: str) -> tuple[str, dict[int, int]]:
    """`script`'s source with a probe (an SADD of "script:line" to COVER_KEY) before each line that starts a
    statement, and inside each `elseif`'s condition (`(probe and false) or (condition)`); and each line's probe:
    the line whose probe says it ran (a continuation line its statement's; a comment, an `else` or an `end`
    none)."""
    lines = source(script).split("\n")
    out, probe_of, blocks = [], {}, []  # blocks: the line that opened each open block
    pending = ""  # a statement still open (its parentheses not closed)
    owner = None
    for k, line in enumerate(lines, start=1):
        code = "".join(line[a:b] for a, b in code_spans(line))
        stripped = line.strip()
        if pending:
            probe_of[k] = owner
            pending += " " + line
            if _balanced(pending):
                pending = ""
            out.append(line)
            continue
        if not stripped or stripped.startswith("--"):
            out.append(line)
            continue
        word = stripped.split()[0]
        if word == "elseif":  # its condition is evaluated only when the branches above it were not taken
            at = line.index("elseif") + len("elseif")
            out.append(f"{line[:at]} (redis.call('SADD', '{COVER_KEY}', '{script}:{k}') and false) or ({line[at:].strip()[:-len('then')].strip()}) then")
            probe_of[k] = k
            continue
        if word == "else":
            probe_of[k] = None
            out.append(line)
            continue
        if word == "end":
            for _ in range(-_opens(code)):
                if blocks:
                    blocks.pop()
            out.append(line)
            continue
        if STARTS.match(line):
            indent = line[:len(line) - len(line.lstrip())]
            out.append(f"{indent}redis.call('SADD', '{COVER_KEY}', '{script}:{k}')")
            probe_of[k] = k
            owner = k
            if not _balanced(line):
                pending = line
        else:
            probe_of[k] = owner
        n = _opens(code)
        if n > 0:
            blocks += [k] * n
        else:
            for _ in range(-n):
                if blocks:
                    blocks.pop()
        out.append(line)
    return "\n".join(out), probe_of


def cover(world: World, depth: int = 12) -> set[tuple[str, int]]:
    """The (script, line) pairs the world runs: every script instrumented (`instrumented`) on one store,
    searched on the package's canonical form (the probes touch no key of the queue, so the form is as
    sound for them as for the package's scripts), each line counted when its probe ran."""
    from emqlab.scenarios.run_harness import run_on
    from emqlab.scenarios.explore import explore_params, search
    from emqlab.store.backend import connect

    texts, probes = {}, {}
    for name in SCRIPTS:
        texts[name], probes[name] = instrumented(name)
    p = explore_params(workers=2, jobs=world.jobs, depth=depth, design=world.design, fencing=world.fencing,
                       invariants=world.invariants, max_runtime=world.max_runtime, reap_limit=world.reap_limit)
    with connect("fake", scripts=texts) as backend:
        with run_on(backend, "explore", p, cost=p.cost()) as run:
            search(backend, run.prefix, p)
        ran = {tuple(x.rsplit(":", 1)) for x in backend.client.smembers(COVER_KEY)}
        backend.client.delete(COVER_KEY)
    ran = {(s, int(n)) for s, n in ran}
    return {(name, k) for name, table in probes.items() for k, probe in table.items()
            if probe is not None and (name, probe) in ran}


def all_worlds(script: str) -> list[World]:
    """The worlds `script` is judged on, cheapest first: its `WORLDS`, then its `HARD_WORLDS` with a hung job's
    limit of `HARD` seconds, then its `SLICE_WORLDS` (2 jobs, a reap limit of `SLICE`)."""
    return ([World(d, f, inv) for d, f, inv in WORLDS[script]]
            + [World(d, f, inv, HARD) for d, f, inv in HARD_WORLDS.get(script, ())]
            + [World(d, f, inv, mr, 2, SLICE, SLICE_DEPTH) for d, f, inv, mr in SLICE_WORLDS.get(script, ())])


def coverage() -> dict[World, set[tuple[str, int]]]:
    """Each world of `all_worlds` -> the lines it runs."""
    worlds = {w for script in SCRIPTS for w in all_worlds(script)}
    return {w: cover(w, depth=w.deepest) for w in sorted(worlds, key=str)}


# -- judging one ---------------------------------------------------------------------------------------------
DEPTHS = (6, 12)  # each world searched to depth 6 first (every kill the benchmark has seen is within 6 steps), then 12
STATES = 40_000  # the state budget of each search: the range's largest


def judge_world(m: Mutant, world: World, depth: int, states: int = STATES) -> dict[str, Any]:
    """One search of the world with the mutant in place: what it found, or the error the call raised (a Lua
    error, or a reply the caller cannot read)."""
    started = time.perf_counter()
    try:
        v = world.explore(depth=depth, scripts=m.scripts, states=states).verdict
    except Exception as e:  # the mutant breaks the call itself: the search cannot go on
        return {"world": world, "depth": depth, "invariant": None,
                "error": f"{type(e).__name__}: {e}"[:200], "steps": None, "states": None, "complete": False,
                "seconds": round(time.perf_counter() - started, 2)}
    return {"world": world, "depth": depth, "invariant": v.invariant, "error": None,
            "broken": v.broken, "steps": None if v.counterexample is None else len(v.counterexample),
            "states": v.states, "complete": v.complete, "seconds": round(time.perf_counter() - started, 2)}


def worlds_of(m: Mutant, cov: dict[World, set[tuple[str, int]]] | None) -> list[World]:
    """The worlds of the mutant's script (`all_worlds`) that run its line (`cov`, from `coverage`; None: every
    world)."""
    return [w for w in all_worlds(m.script) if cov is None or (m.script, m.line) in cov[w]]


def judge(m: Mutant, cov: dict | None = None, depths: tuple[int, ...] = DEPTHS, states: int = STATES) -> dict[str, Any]:
    """The mutant on each world that runs its line (`worlds_of`), cheapest first, each depth of `depths` in
    turn over all those worlds, until a search breaks. `killed`: the invariant that broke, or "script error"
    (the call itself failed); None when it survived (`reached` False: no world runs its line, nothing was
    searched; `depth`: the deepest every world was searched to, `complete` whether each search was whole)."""
    runs = []
    worlds = worlds_of(m, cov)
    for depth in depths:
        for world in worlds:
            if any(x["world"] == world and x["depth"] >= min(depth, world.deepest) for x in runs):
                continue  # searched as deep as this world goes already
            r = judge_world(m, world, min(depth, world.deepest), states)
            runs.append(r)
            if r["invariant"] or r["error"]:
                return {"mutant": m, "killed": r["invariant"] or "script error", "world": world.label,
                        "steps": r["steps"], "error": r["error"], "broken": r.get("broken"), "runs": runs,
                        "reached": True, "depth": r["depth"], "seconds": round(sum(x["seconds"] for x in runs), 2)}
    deepest = [max((r for r in runs if r["world"] == w), key=lambda r: r["depth"]) for w in worlds]
    return {"mutant": m, "killed": None, "world": None, "steps": None, "runs": runs, "reached": bool(worlds),
            "depth": max(depths) if worlds else None, "complete": all(r["complete"] for r in deepest),
            "seconds": round(sum(x["seconds"] for x in runs), 2)}


# -- many, each in a process of its own (a mutant may loop for ever inside its script) -------------------------
def _child(conn, m: Mutant, kw: dict) -> None:
    try:
        conn.send(judge(m, **kw))
    except BaseException as e:  # noqa: BLE001 - reported, not raised: the parent records it
        conn.send({"mutant": m, "killed": None, "error": f"{type(e).__name__}: {e}"[:200], "runs": [], "seconds": 0})
    finally:
        conn.close()


def judge_all(mutants: list[Mutant], timeout: float = 300.0, progress: Any = None, **kw: Any) -> list[dict[str, Any]]:
    """`judge` each mutant in a forked process of its own; one that runs past `timeout` seconds (a script
    that never returns) is stopped and recorded as `hung`. `progress(i, result)`: called after each."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    out = []
    for i, m in enumerate(mutants):
        started = time.perf_counter()
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(child, m, kw), daemon=True)
        proc.start()
        child.close()
        if parent.poll(timeout):
            r = parent.recv()
        else:
            r = {"mutant": m, "killed": None, "hung": True, "runs": [], "seconds": round(timeout, 2)}
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
        parent.close()
        r["wall"] = round(time.perf_counter() - started, 2)
        out.append(r)
        if progress is not None:
            progress(i, r)
    return out
