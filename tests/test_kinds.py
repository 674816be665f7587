"""Event kinds are named once, in `emqlab/core/kinds.py` (`Kind`; the classroom's orders: `Command`), and nowhere
spelled.

Every module of `emqlab` is read with `ast` (nothing is imported but the enums): the test fails on a string
constant equal to a `Kind` value (or a `Command`) that sits where an event's kind goes. The rule is keyed on the
*slot*, not the word (`crash` is also a mark, a Lua script, a CLI verb, an explore action, a fault):

- the kind argument of a recording call (`rec.event(actor, K)`, a reporter's `.event(K)`, `tl.add(t, actor, K)`,
  `Event(t, actor, K)`, `run.record(actor, K)`, `recorder.line(actor, K)`), and of a function that passes its
  parameter on to one (found by a fixpoint: `_event`, failover's `stop`);
- one side of a comparison whose other side is `kind`, `x.kind`, `x["kind"]` or `x.get("kind")` (also inside a
  tuple/list/set, or behind a name: a local, a module-level table, an imported one, a parameter's default, a
  caller's argument);
- the kind argument of a read: `.of(K)`, `.first(K)`, `.last(K)`, `.reported(K)`, and of a function that passes its
  parameter on to one (or compares it with a kind);
- the keys of a module-level table looked up by a kind (`TABLE[e.kind]`, `TABLE.get(kind)`, iterated into `.of`),
  and the tables named in `TABLES` (reached through a function: `step_kinds`, a recorder's filter);
- a count by kind (`kinds.count(K)` of a list of kinds, `recorder.counts.get(K)`);
- an order where the classroom's orders go: a comparison with `cmd` / `x.get("cmd")`, `board.order(name, O)`.

The JSON a run writes is not touched by the names (a `Kind` is its string): the last tests say so.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from emqlab.core.kinds import Command, Kind
from emqlab.core.timeline import Event, Timeline

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "emqlab"
HOME = "emqlab/core/kinds.py"
KINDS = frozenset(k.value for k in Kind)
ORDERS = frozenset(o.value for o in Command)

# tables of kinds reached only through a function (how: "elements" of a collection, "values" of a dict of them)
TABLES = {
    "emqlab/view/interactive.py": {"STEP_KINDS": "elements", "SCENARIO_STEPS": "values"},
    "emqlab/classroom/learner.py": {"ROUTINE": "elements", "NOTABLE": "elements", "LANE_KINDS": "elements"},
    "emqlab/queue/consumer.py": {"ROUTINE": "elements"},
    "emqlab/queue/invariants.py": {"REFUSALS": "elements", "ACCEPTED": "elements", "GIVEN_BACK": "elements"},
}

RECORDERS = {  # call name -> (fewest positional arguments, index of the kind)
    "event": [(2, 1), (1, 0)],  # Recorder.event(actor, kind); Reporter.event(kind, *, ts)
    "add": [(3, 2)],  # Timeline.add(t, actor, kind)
    "Event": [(3, 2)],
    "record": [(2, 1)],  # LibraryRun.record(actor, kind)
    "line": [(2, 1)],  # LaneRecorder.line(actor, kind)
}
READERS = {"of": 0, "first": 0, "last": 0, "reported": 0}


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _parsed(text: str, name: str) -> ast.Module:
    tree = ast.parse(text, name)
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child._up = node  # type: ignore[attr-defined]
    return tree


def _modules(extra: dict[str, str] | None = None) -> dict[str, ast.Module]:
    out = {_rel(path): _parsed(path.read_text(encoding="utf-8"), str(path)) for path in sorted(PKG.rglob("*.py"))}
    out.update({rel: _parsed(text, rel) for rel, text in (extra or {}).items()})
    return out


def _name(call: ast.Call) -> str | None:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _is_str(n) -> bool:
    return isinstance(n, ast.Constant) and isinstance(n.value, str)


def _keyed(e, key: str) -> bool:
    """`key`, `x.key`, `x["key"]`, `x.get("key")`."""
    if isinstance(e, ast.Name):
        return e.id == key
    if isinstance(e, ast.Attribute):
        return e.attr == key
    if isinstance(e, ast.Subscript):
        return _is_str(e.slice) and e.slice.value == key
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in ("get", "pop"):
        return bool(e.args) and _is_str(e.args[0]) and e.args[0].value == key
    return False


def _function(node):
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        node = getattr(node, "_up", None)
    return node


def _params(fn) -> list[str]:
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
    return names[1:] if names and names[0] in ("self", "cls") else names


class Walk:
    """Every kind slot of the package, and the string constants found in them."""

    def __init__(self, extra: dict[str, str] | None = None):
        self.mods = _modules(extra)  # `extra`: more modules, as {path: source} (the test of the rule itself)
        self.import_froms = {rel: [st for st in ast.walk(tree) if isinstance(st, ast.ImportFrom)]
                             for rel, tree in self.mods.items()}
        self._bound: dict[int, dict] = {}
        self._imports: dict[tuple[str, str], tuple[str, ast.AST] | None] = {}
        self.consts = {rel: self._constants(tree) for rel, tree in self.mods.items()}
        self.found: dict[tuple[str, int, int], tuple[ast.Constant, str, str]] = {}  # (rel, line, col) -> ...
        self.slots: dict[str, set[str]] = {}  # rel -> kinds of slot seen (the positive control)
        self.wrappers: dict[str, dict[str, tuple[int, str, str]]] = {}  # rel -> fn name -> (index, param, how)
        for _ in range(4):  # wrappers of wrappers
            before = sum(len(v) for v in self.wrappers.values())
            self._walk(collect=False)
            if sum(len(v) for v in self.wrappers.values()) == before:
                break
        self._walk(collect=True)

    # -- names -----------------------------------------------------------------------------------
    @staticmethod
    def _constants(tree) -> dict[str, ast.AST]:
        out = {}
        for st in tree.body:
            if isinstance(st, ast.Assign):
                for t in st.targets:
                    if isinstance(t, ast.Name):
                        out[t.id] = st.value
            elif isinstance(st, ast.AnnAssign) and st.value is not None and isinstance(st.target, ast.Name):
                out[st.target.id] = st.value
        return out

    def _imported(self, rel: str, name: str) -> tuple[str, ast.AST] | None:
        if (rel, name) not in self._imports:
            self._imports[rel, name] = self._import(rel, name)
        return self._imports[rel, name]

    def _import(self, rel: str, name: str) -> tuple[str, ast.AST] | None:
        for st in self.import_froms[rel]:
            if not isinstance(st, ast.ImportFrom) or not any((a.asname or a.name) == name for a in st.names):
                continue
            real = next(a.name for a in st.names if (a.asname or a.name) == name)
            if st.level:
                base = Path(rel).parent
                for _ in range(st.level - 1):
                    base = base.parent
                target = base.joinpath(*(st.module or "").split(".")) if st.module else base
            else:
                target = Path(*(st.module or "").split("."))
            for cand in (f"{target.as_posix()}.py", f"{target.as_posix()}/__init__.py"):
                if cand in self.consts and real in self.consts[cand]:
                    return cand, self.consts[cand][real]
        return None

    def literals(self, rel: str, expr, at, how: str, depth: int = 0):
        """(module, constant) pairs of the strings `expr` may be; a parameter it is becomes a wrapper of `how`."""
        if depth > 6 or expr is None:
            return
        if _is_str(expr):
            yield rel, expr
        elif isinstance(expr, ast.IfExp):
            yield from self.literals(rel, expr.body, at, how, depth + 1)
            yield from self.literals(rel, expr.orelse, at, how, depth + 1)
        elif isinstance(expr, ast.BoolOp):
            for v in expr.values:
                yield from self.literals(rel, v, at, how, depth + 1)
        elif isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            for v in expr.elts:
                yield from self.literals(rel, v, at, how, depth + 1)
        elif isinstance(expr, ast.Dict):
            for k in expr.keys:
                yield from self.literals(rel, k, at, how, depth + 1)
        elif isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            yield from self.literals(rel, expr.left, at, how, depth + 1)
            yield from self.literals(rel, expr.right, at, how, depth + 1)
        elif isinstance(expr, ast.Call) and _name(expr) in ("frozenset", "set", "tuple", "list") and expr.args:
            yield from self.literals(rel, expr.args[0], at, how, depth + 1)
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in ("keys", "items"):
            yield from self.literals(rel, expr.func.value, at, how, depth + 1)
        elif isinstance(expr, ast.Starred):
            yield from self.literals(rel, expr.value, at, how, depth + 1)
        elif isinstance(expr, ast.Name):
            yield from self._name_literals(rel, expr, at, how, depth)

    def _bindings(self, fn) -> dict[str, list[tuple[ast.AST, ast.AST]]]:
        """name -> (the value it is given, where) in `fn`: plain assignments, and the first name a loop binds."""
        got = self._bound.get(id(fn))
        if got is None:
            got = self._bound[id(fn)] = {}
            for st in ast.walk(fn):
                if isinstance(st, ast.Assign):
                    for t in st.targets:
                        if isinstance(t, ast.Name):
                            got.setdefault(t.id, []).append((st.value, st))
                elif isinstance(st, (ast.For, ast.comprehension)):
                    t = st.target
                    first = t.elts[0] if isinstance(t, ast.Tuple) and t.elts else t
                    if isinstance(first, ast.Name):
                        got.setdefault(first.id, []).append((st.iter, st))
        return got

    def _name_literals(self, rel, expr: ast.Name, at, how, depth):
        fn = _function(at)
        while fn is not None:
            if not isinstance(fn, ast.Lambda):
                bound = self._bindings(fn).get(expr.id)
                for value, where in bound or ():
                    yield from self.literals(rel, value, where, how, depth + 1)
                if bound:
                    return
                if expr.id in _params(fn):
                    self._wrapper(rel, fn, expr.id, how)
                    return
            fn = _function(getattr(fn, "_up", None))
        if expr.id in self.consts[rel]:
            yield from self.literals(rel, self.consts[rel][expr.id], self.consts[rel][expr.id], how, depth + 1)
            return
        got = self._imported(rel, expr.id)
        if got is not None:
            yield from self.literals(got[0], got[1], got[1], how, depth + 1)

    def _wrapper(self, rel, fn, param: str, how: str):
        if isinstance(fn, ast.Lambda) or (isinstance(getattr(fn, "_up", None), ast.ClassDef)
                                          and (fn.name in RECORDERS or fn.name in READERS)):
            return  # the recorders and readers themselves
        ps = _params(fn)
        self.wrappers.setdefault(rel, {}).setdefault(fn.name, (ps.index(param), param, how))
        if self.collecting:  # the parameter's default is a slot too
            args = fn.args
            pos = args.posonlyargs + args.args
            defaults = dict(zip([a.arg for a in pos][len(pos) - len(args.defaults):], args.defaults))
            defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
            if param in defaults:
                self._slot(rel, defaults[param], fn, f"default of {fn.name}({param})")

    def _wrappers_for(self, rel: str) -> dict[str, tuple[int, str, str]]:
        """Wrappers callable from `rel`: its own, and those it imports by name."""
        out = dict(self.wrappers.get(rel, {}))
        for st in self.import_froms[rel]:
            for a in st.names:
                for other, ws in self.wrappers.items():
                    if a.name in ws and other != rel and (st.module or "").split(".")[-1] in other:
                        out[a.asname or a.name] = ws[a.name]
        return out

    # -- slots -------------------------------------------------------------------------------------
    def _slot(self, rel, expr, at, how: str, words=KINDS):
        self.slots.setdefault(rel, set()).add(how.split(" ")[0])
        for where, c in self.literals(rel, expr, at, how):
            if self.collecting and c.value in words and where != HOME:
                self.found.setdefault((where, c.lineno, c.col_offset), (c, how, rel))

    def _walk(self, collect: bool):
        self.collecting = collect
        for rel, tree in self.mods.items():
            if rel == HOME:
                continue
            wrappers = self._wrappers_for(rel)
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    self._call(rel, node, wrappers)
                elif isinstance(node, ast.Compare):
                    chain = [node.left, *node.comparators]
                    for a, b in zip(chain, chain[1:]):
                        for side, other in ((a, b), (b, a)):
                            if _keyed(side, "kind") and not _keyed(other, "kind"):
                                self._slot(rel, other, node, "compare")
                            if _keyed(side, "cmd") and not _keyed(other, "cmd"):
                                self._slot(rel, other, node, "order", ORDERS)
                elif isinstance(node, ast.Subscript) and _keyed(node.slice, "kind") and isinstance(node.value, ast.Name):
                    self._table(rel, node.value, node)
                elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                        and node.value.attr == "counts" and "recorder" in ast.unparse(node.value):
                    self._slot(rel, node.slice, node, "count")
            for name, how in TABLES.get(rel, {}).items():
                value = self.consts[rel].get(name)
                if value is None:
                    continue
                if how == "values" and isinstance(value, ast.Dict):
                    for v in value.values:
                        self._slot(rel, v, v, "table")
                else:
                    self._slot(rel, value, value, "table")

    def _table(self, rel, name: ast.Name, at):
        if name.id in self.consts[rel] or self._imported(rel, name.id):
            self._slot(rel, name, at, "table")

    def _call(self, rel, call: ast.Call, wrappers):
        nm = _name(call)
        args = call.args
        if any(isinstance(a, ast.Starred) for a in args):
            return
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        if nm in RECORDERS:
            if nm == "line" and "recorder" not in ast.unparse(call.func):
                pass
            elif "kind" in kw:
                self._slot(rel, kw["kind"], call, "record")
            else:
                for fewest, idx in RECORDERS[nm]:
                    if len(args) >= fewest:
                        if nm != "event" or fewest == 2 or len(args) == 1:
                            self._slot(rel, args[idx], call, "record")
                        break
        if nm in READERS and isinstance(call.func, ast.Attribute) and (args or "kind" in kw):
            self._slot(rel, kw.get("kind", args[0] if args else None), call, "read")
        if nm == "order" and isinstance(call.func, ast.Attribute) and len(args) >= 2:
            self._slot(rel, args[1], call, "order", ORDERS)
        if nm == "count" and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
                and call.func.value.id == "kinds" and args:
            self._slot(rel, args[0], call, "count")
        if nm == "get" and isinstance(call.func, ast.Attribute) and args:
            target = call.func.value
            if _keyed(args[0], "kind") and isinstance(target, ast.Name):
                self._table(rel, target, call)
            if isinstance(target, ast.Attribute) and target.attr == "counts" and "recorder" in ast.unparse(target):
                self._slot(rel, args[0], call, "count")
        if nm in wrappers:
            idx, param, how = wrappers[nm]
            value = kw.get(param, args[idx] if idx < len(args) else None)
            if value is not None:
                self._slot(rel, value, call, how)
        # a function that passes its parameter on to a recorder or a reader is one (the fixpoint's step)
        fn = _function(call)
        if fn is not None and not isinstance(fn, ast.Lambda):
            for value, how in self._kind_args(call, nm, args, kw):
                if isinstance(value, ast.Name) and value.id in _params(fn):
                    self._wrapper(rel, fn, value.id, how)

    @staticmethod
    def _kind_args(call, nm, args, kw):
        if nm in RECORDERS:
            if "kind" in kw:
                yield kw["kind"], "record"
            for fewest, idx in RECORDERS[nm]:
                if len(args) >= fewest:
                    yield args[idx], "record"
                    break
        if nm in READERS and isinstance(call.func, ast.Attribute) and args:
            yield args[0], "read"


WALK = Walk()


def test_the_walk_sees_the_slots():
    # a positive control: the walk finds recorders, readers, comparisons and wrappers, so an empty walk cannot pass
    assert "record" in WALK.slots["emqlab/queue/consumer.py"]
    assert "read" in WALK.slots["emqlab/plot/applied.py"]
    assert "compare" in WALK.slots["emqlab/classroom/board.py"]
    assert "order" in WALK.slots["emqlab/classroom/learner.py"]
    assert "_event" in WALK.wrappers["emqlab/scenarios/explore/world.py"]
    assert "wait_until_reaped" in WALK.wrappers["emqlab/classroom/practice.py"]
    for rel, names in TABLES.items():
        assert set(names) <= set(WALK.consts[rel]), f"{rel}: a table named in TABLES is gone"


def test_the_walk_would_catch_a_spelled_kind():
    # the rule itself, on a module written to break it in every slot it knows (and to keep to it elsewhere)
    probe = (
        "TABLE = {'claim': 1}\n"
        "def f(rec, tl, e, kind, order):\n"
        "    rec.event('worker', 'crash')\n"
        "    tl.add(1.0, 'worker', 'reap')\n"
        "    tl.first('effect', 'worker')\n"
        "    if e.kind in ('complete', 'mark-only') or e['kind'] == 'renew' or kind == 'lease':\n"
        "        return TABLE.get(e.kind)\n"
        "    style.marker(ax, 'crash'); scripts('claim'); plan = [(1.0, 'crash', 0)]\n"
        "    return order.get('cmd') == 'pause'\n"
        "def note(rec, kind):\n"  # a wrapper: its callers' argument is a kind, and so is a default compared with one
        "    rec.event('worker', kind)\n"
        "def g(rec, tl, skip=('stall',)):\n"
        "    note(rec, 'killed')\n"
        "    return [e for e in tl.events if e.kind not in skip]\n")
    walk = Walk({"emqlab/_probe_kinds.py": probe})
    got = sorted(c.value for (rel, _, _), (c, _, _) in walk.found.items() if rel == "emqlab/_probe_kinds.py")
    assert got == ["claim", "complete", "crash", "effect", "killed", "pause", "reap", "renew", "stall"]


def test_no_kind_is_spelled_outside_kinds_py():
    bad = [f"{rel}:{line}:{col + 1}: {c.value!r} in a {how} slot (seen from {seen})"
           for (rel, line, col), (c, how, seen) in sorted(WALK.found.items())]
    assert not bad, "spell these as Kind./Command. members (emqlab/core/kinds.py):\n" + "\n".join(bad)


def test_no_module_shadows_the_names_it_imports():
    # `from ..core.kinds import Kind` and then a class, function or assignment of that name would hide the enum
    bad = []
    for rel, tree in WALK.mods.items():
        names = {a.asname or a.name for st in tree.body if isinstance(st, ast.ImportFrom)
                 and (st.module or "").endswith("kinds") for a in st.names}
        for st in ast.walk(tree):
            bound = [st.name] if isinstance(st, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) else \
                [t.id for t in st.targets if isinstance(t, ast.Name)] if isinstance(st, ast.Assign) else []
            bad += [f"{rel}:{st.lineno}: {n}" for n in bound if n in names]
    assert not bad, bad


def test_kinds_py_imports_nothing_but_enum():
    tree = ast.parse((ROOT / HOME).read_text(encoding="utf-8"))
    imported = {a.name for st in ast.walk(tree) if isinstance(st, ast.Import) for a in st.names}
    imported |= {st.module for st in ast.walk(tree) if isinstance(st, ast.ImportFrom)}
    assert imported == {"enum"}


def test_a_kind_is_its_string():
    assert Kind.PAUSE_START == "pause_start" and str(Kind.CLAIM) == "claim" and f"{Kind.REAP}" == "reap"
    assert all(k.name == k.value.upper() for k in Kind) and len({k.value for k in Kind}) == len(Kind)
    assert json.dumps({"kind": Kind.CLAIM, Kind.CLAIM: 1}) == '{"kind": "claim", "claim": 1}'
    assert "claim" in {Kind.CLAIM} and Kind.CLAIM in {"claim"} and {"claim": 1}[Kind.CLAIM] == 1
    assert json.dumps(Command.CRASH) == '"crash"' and set(Command) == {"crash", "pause"}


def _tl() -> Timeline:
    tl = Timeline("probe", {})
    tl.add(1.0, "a", Kind.CLAIM, job="j1")
    tl.add(2.0, "b", Kind.CLAIM, job="j2")
    tl.add(3.0, "a", Kind.CLAIM, job="j3")
    tl.add(4.0, "a", Kind.REAP, jobs=["j1"])
    return tl


def test_first_and_last():
    tl = _tl()
    assert tl.first(Kind.CLAIM).data["job"] == "j1"
    assert tl.first("claim", "b").data["job"] == "j2"  # a plain string is a kind too (a history's)
    assert tl.first(Kind.CLAIM, where=lambda e: e.t > 1.5).data["job"] == "j2"
    assert tl.first(Kind.CLAIM, "a", where=lambda e: e.t > 1.5).data["job"] == "j3"
    assert tl.first(Kind.CRASH) is None and tl.first(Kind.CLAIM, "c") is None
    assert tl.first(Kind.CLAIM, where=lambda e: False) is None
    assert tl.last(Kind.CLAIM).data["job"] == "j3" and tl.last(Kind.CLAIM, "b").data["job"] == "j2"
    assert tl.last(Kind.CLAIM, where=lambda e: e.t < 2.5).data["job"] == "j2"
    assert Timeline("empty", {}).first(Kind.CLAIM) is None and Timeline("empty", {}).last(Kind.CLAIM) is None


def test_first_stops_at_the_first_hit():
    tl = _tl()
    seen = []
    tl.first(Kind.CLAIM, where=lambda e: seen.append(e) or True)
    assert len(seen) == 1


def test_a_timeline_s_json_spells_kinds_as_before():
    tl = _tl()
    tl.finish()
    text = tl.to_json(sort_keys=True)
    assert '"kind": "claim"' in text and "Kind" not in text
    again = Timeline.from_json(text)
    assert again.to_json(sort_keys=True) == text
    assert all(type(e.kind) is str for e in again.events)  # loaded kinds stay plain strings, never coerced
    assert Event.from_dict({"t": 0, "actor": "x", "kind": "anything_a_history_says"}).kind == "anything_a_history_says"


@pytest.mark.parametrize("path", sorted((ROOT / "tests/tools/runs").glob("*.json")), ids=lambda p: p.name)
def test_a_recorded_run_round_trips_unchanged(path):
    d = json.loads(path.read_text(encoding="utf-8"))
    tl = Timeline.from_dict(d)
    assert json.loads(tl.to_json()) == d  # read back and written again: the same JSON
    assert tl.to_json() == json.dumps(d)  # ... byte for byte


def test_a_run_writes_its_kinds_as_the_strings_they_were(fake):
    # a run records members; its JSON is what the same run with plain strings wrote, byte for byte
    from emqlab.scenarios.reaper import reaper

    tl = reaper(backend=fake)
    assert {Kind.CLAIM, Kind.CRASH, Kind.REAP} <= {e.kind for e in tl.events}
    assert all(isinstance(e.kind, Kind) for e in tl.events)
    d = tl.to_dict()
    plain = dict(d, events=[dict(e, kind=e["kind"].value) for e in d["events"]])
    assert all(type(e["kind"]) is str for e in plain["events"])
    assert tl.to_json() == json.dumps(plain) and tl.to_json(sort_keys=True) == json.dumps(plain, sort_keys=True)
    assert Timeline.from_json(tl.to_json()).to_json() == tl.to_json()
