"""What the tests share, in one module (nothing here is a test; a test file imports from here, never
from another test file):

- records: a scenario's Params or Verdict holding only what a words test names (`record`);
- a renewal plane's holders stopped by a theft on the virtual clock (`stop_when_lost`);
- live runs: `emqlab` run as a process against a live server, its keys, its descendants, polls with
  deadlines (`start`, `run_json`, `wait_for`, `keys_under`, `gone`, …);
- what a figure and its words promise (`check_protocol`, `clauses`, the reaper's and the queue
  heartbeat's readout checks);
- a library's recorded runs, each verdict read again off its events (`verdicts_read_again`);
- the package read as text, its layers and its imports (`modules`, `imports`, `rank`, `upward`, …);
- a lesson's kernel started again when a port it was given was taken first (notebooks/conftest.py);
- the browser tests' servers and page helpers (their fixtures are in tests/browser/conftest.py).
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis

import emqlab
import realtime
from emqlab.core.children import descendants  # noqa: F401 - the tests read process trees with it
from emqlab.core.words import HEADLINE_WORDS, headline_words, plural, seconds, times
from emqlab.plot import Drawing


# -- records ---------------------------------------------------------------------------------------
R = TypeVar("R")


def record(cls: type[R], **given: Any) -> R:
    """A scenario's record (its Params or Verdict) holding what a test names; every other field the
    record needs is None. A words test reads only the facts it names, so a None it did not expect
    fails the test loudly."""
    needed = {f.name: None for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    return cls(**{**needed, **given})




# -- a renewal plane: its holders wait on their lost events, and a thief re-owns one key ------------
def stop_when_lost(backend, plane, holdings, stolen: str) -> dict[int, tuple[int, Exception]]:
    """On the virtual clock: a holder for each of `holdings` works up to 50 s unless its `lost` event fires first,
    a thief re-owns `stolen` at 20 s, and `plane` renews until its ticks are done. {index: (the clock's ms when
    the holder stopped, what its lost event carried)} for every holder that stopped."""
    clock = backend.clock
    stopped = {}

    def holder(h):
        result = yield clock.timeout(50_000) | h.lost
        if h.lost in result:
            stopped[h.index] = (clock.now_ms, result[h.lost])

    for h in holdings:
        clock.process(holder(h))

    def thief():
        yield clock.timeout(20_000)
        backend.client.set(stolen, "someone-else", px=30_000)

    clock.process(thief())
    plane.start()
    clock.run()
    return stopped


# -- real time: how late a loaded machine may be ---------------------------------------------------
# Sized from this host (tests/realtime.py, which states the rule a real-clock test follows): 0.5 s on the
# host the suite was first tuned on (a wake-up or a reply seen 0.31 s late there beside two CPU-bound loops),
# stretched by how much slower this host's speed probe is, plus the wake-up lateness measured at the start.
REAL_SLACK_S = realtime.real_slack_s()  # s
# `slow_live`: 0.1 s a model second on the reference host, slower on a slower one, so a 5 model s margin
# stays about REAL_SLACK_S of real time: the scale grows instead of the margin, up to SLOW_SCALE_MAX
SLOW_SCALE = realtime.slow_scale(0.1)


def slack(backend, model_s: float = 0.0) -> float:
    """A margin in model seconds for a run on `backend`: `model_s`, and on a real clock never less than
    REAL_SLACK_S of real time (at scale 0.01 that is 30 model seconds: claim the order of things there,
    and the numbers on the virtual clock or at SLOW_SCALE)."""
    return model_s if not backend.clock.real else max(model_s, REAL_SLACK_S / backend.clock.scale)


def reaped_past_its_lease(tl, job: str | None = None) -> bool:
    """The reap that moved `job` read a server TIME at or past the score its first claim set: "never
    reaped before its lease lapsed", on the one clock that decided it. (Each local record time trails
    the server's by its reply's trip back, and a descheduled process makes one trip long: compared
    on the local clock, a reap right at the deadline can look early.)"""
    job = job or tl.of("claim")[0].data["job"]  # by default the run's first job
    claim = next(e for e in tl.of("claim") if e.data.get("job") == job and e.data.get("attempts") == 1)
    reap = next(e for e in tl.of("reap") if job in e.data.get("jobs", []))
    return reap.data["time_s"] >= claim.data["score_s"]


def lease_on_the_server(tl, actor: str, job: str | None = None) -> tuple[int, int | None]:
    """`actor`'s hold on `job` (default: the first job it claimed) on the server's clock: (the server TIME of
    its first claim, the deadline its last renewal stamped if every renewal landed before the deadline it
    pushed out; None if one landed at or past it, or found the job gone: the lease, or the worker's session,
    had lapsed in between). A session's claim reports the session's deadline, and each renewal its next one."""
    job = job or tl.of("claim", actor)[0].data["job"]
    claim = next(e for e in tl.of("claim", actor) if e.data["job"] == job and e.data["attempts"] == 1)
    deadline = claim.data["score"]
    for r in tl.of("renew", actor):
        if job in r.data["jobs"]:
            if r.data["now"] >= deadline or job in r.data["lost"]:
                return claim.data["now"], None
            deadline = r.data["score"]
    return claim.data["now"], deadline


# -- live runs -------------------------------------------------------------------------------------
EMQLAB = [sys.executable, "-m", "emqlab.cli"]



ROOT = Path(__file__).resolve().parents[1]  # the checkout



def env(**extra: str) -> dict[str, str]:
    """The test's environment without a backend choice, plus `extra`."""
    run_env = {k: v for k, v in os.environ.items() if k not in ("EMQLAB_BACKEND", "EMQLAB_URL")}
    run_env.update(extra)
    return run_env



def start(*args: str, **extra_env: str) -> subprocess.Popen:
    """`emqlab ARGS` in a session (and process group) of its own, as a terminal would start it."""
    return subprocess.Popen([*EMQLAB, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=env(**extra_env), start_new_session=True)



def run(*args: str, timeout: float = 300, **extra_env: str) -> subprocess.CompletedProcess:
    """`emqlab ARGS` to its end; `timeout` is stretched on a slower host (`realtime.timeout_s`)."""
    return subprocess.run([*EMQLAB, *args], capture_output=True, text=True, cwd=ROOT, env=env(**extra_env),
                          timeout=realtime.timeout_s(timeout))



def run_json(*args: str, timeout: float = 300, **extra_env: str) -> dict:
    done = run(*args, "--json", timeout=timeout, **extra_env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)



def wait_for(what: str, check, timeout: float = 60.0, every: float = 0.05):
    """Poll `check()` until it returns something truthy; fail naming `what` at the deadline (`timeout`
    seconds, stretched on a slower host: `realtime.timeout_s`)."""
    timeout = realtime.timeout_s(timeout)
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)



def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False



def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""



def consumers(pids: list[int]) -> list[int]:
    return [p for p in pids if b"emqlab.queue.procs\0consumer" in cmdline(p)]



def servers(pids: list[int]) -> list[int]:
    return [p for p in pids if b"valkey-server" in cmdline(p)]



def run_leases(url: str) -> set[str]:
    """The run prefixes that hold a run-lease on the server at `url`."""
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        return {k[: -len("run-lease")] for k in client.scan_iter(match="emqlab:*:run-lease", count=1000)}
    finally:
        client.close()



def keys_under(url: str, prefix: str = "emqlab:") -> list[str]:
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        return list(client.scan_iter(match=prefix + "*", count=1000))
    finally:
        client.close()



def gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    """Wait (with a deadline, stretched on a slower host) for every pid to end; the ones still running."""
    deadline = time.monotonic() + realtime.timeout_s(timeout)
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]



def cmdlines() -> str:
    """Every process's command line on this machine, one a line (to look for a leaked secret)."""
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out.append(f.read().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass
    return "\n".join(out)



# -- figures and their words --------------------------------------------------------------------
def _gids(fig):
    return [a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()]



def check_protocol(drawing, names):
    """A Drawing of the applied form: one lane per mode, the mode's artists tagged, each panel
    titled with the mode's label and static verdict as the words say them, no emqlab_* attribute."""
    assert isinstance(drawing, Drawing)
    assert drawing.modes == names and list(drawing.timelines) == names
    gids = _gids(drawing.figure)
    titles = [ax.get_title(loc="left") for ax in drawing.figure.axes]
    for name in names:
        assert gids.count(f"lane:{name}") == 1
        assert f"mode:{name}" in gids
        words = drawing.words.modes[name]
        assert f"{words.label}\n{words.verdict}" in titles
        assert words.text == drawing.timelines[name].summary
    assert drawing.words.caption and drawing.words.prompt
    assert not [k for k in vars(drawing.figure) if k.startswith("emqlab_")]
    drawing.light(names[-1])
    assert drawing.is_dimmed(names[0]) == (len(names) > 1)



# -- the readouts: every clause true of the verdict ---------------------------------------------------
def clauses(text: str, expected: dict[str, bool]) -> None:
    """Each phrase is in `text` exactly when the verdict says it should be."""
    wrong = {phrase: should for phrase, should in expected.items() if (phrase in text) != should}
    assert not wrong, f"{text!r}: phrases present/absent against the verdict: {wrong}"



def says_only_what_the_reaper_verdict_holds(tl):
    v, p = tl.verdict, tl.params
    readout, static = v.told, v.static
    n = v.beats_before_reap
    clauses(readout, {"read a server TIME before that deadline and left the job alone":
                      bool(v.first_beat_past_score) and bool(n),
                      f"{plural(n or 0, 'beat')} read a server TIME": bool(v.first_beat_past_score) and bool(n),
                      "the first beat whose TIME had reached it": bool(v.first_beat_past_score)})
    suffix = "" if p.design == "none" else f" · {p.design}"
    story = ("a worker keeps working its job" if p.crash_at is None
             else "a worker dies holding the job" + (" (two OS processes, SIGKILL)" if p.procs else ""))
    step = p.clock_jump.seconds if p.clock_jump is not None else None
    jumped = "" if step is None else f" · server clock {'+' if step > 0 else '−'}{abs(step):g} s"
    assert v.label == story + suffix + jumped
    reaped = v.reaped_at is not None
    clauses(readout, {"never reaped": not reaped, "was refused": v.stale_complete_refused,
                      "ACCEPTED": v.stale_complete_accepted and reaped,
                      "was accepted": v.stale_complete_accepted and not reaped,
                      "no job lost" if v.lost == 0 else f"{v.lost} job": True})
    assert headline_words(v.summary) <= HEADLINE_WORDS, v.summary
    clauses(static, {"never reaped": not reaped, "refused": v.stale_complete_refused,
                     "ACCEPTED": v.stale_complete_accepted and reaped,
                     "late completion accepted": v.stale_complete_accepted and not reaped,
                     "no job lost" if v.lost == 0 else f"{v.lost} job": True})
    if reaped:
        for key in ("crashed_at", "lease_deadline", "reaped_at", "back_in_pending_after", "completed_at"):
            assert seconds(getattr(v, key)) in readout, key
        clauses(readout, {f"re-claimed it with attempts {v.reclaim_attempts}": v.reclaimed_by is not None,
                          "within one lease plus one beat": v.within_lease_plus_beat,
                          "later than one lease plus one beat": not v.within_lease_plus_beat,
                          "holding the job": v.died_holding, f"{v.reaped_by}'s beat": True})
        assert f"reaped at {seconds(v.reaped_at)}" in static



def says_only_what_the_queue_heartbeat_verdict_holds(tl):
    v, p = tl.verdict, tl.params
    readout, static = v.told, v.static
    reaped = v.reaped_at is not None
    assert headline_words(v.summary) <= HEADLINE_WORDS, v.summary
    clauses(readout, {f"ran {times(v.runs)}": reaped, "both runs overlapping": v.double_run and v.runs == 2,
                      "the first holder's completion was refused": v.first_holder_refused,
                      "to a second consumer": v.reclaimed_by == "worker-2",
                      "held the": not reaped and v.lapsed_at is None and v.renewals > 0,
                      "finished once": not reaped and v.completions == 1,
                      f"{v.renewals} batched extend": not reaped and v.renewals > 0})
    assert f"{v.runs} times" not in readout or v.runs > 2
    if reaped:
        assert seconds(v.reaped_at) in readout and f"runs {times(v.runs)}" in static
    if v.lapsed_at is not None:
        assert f"ran out at {seconds(v.lapsed_at)}" in readout and seconds(v.lapsed_at) in static
    assert readout.startswith(v.label + ": ") and seconds(p.lease) in readout and seconds(p.job) in readout
    lapsed_ok = v.accepted_after_lapse_by is not None
    clauses(readout, {"own lease ran out at": lapsed_ok,
                      "no consumer beat in between, so no reap took the job back and nobody claimed it again":
                      lapsed_ok and v.beats_in_gap == 0 and v.claims_in_gap == 0})
    if lapsed_ok:
        assert (f"ran out at {seconds(v.accepted_lapsed_at)}, yet its completion at {seconds(v.accepted_at)} "
                "was accepted") in readout
        assert f"attempt {v.accepted_attempts} was still the current one" in readout



# -- a library's recorded runs: the verdict read again off the events -----------------------------------
def verdicts_read_again(recorded, module, *names: str) -> list[tuple[Any, Any]]:
    """(run, verdict) for each recorded run named (`recorded`: the tools tests' `recorded_run`), every one
    checked first: `module.verdict` reads off its recorded events the verdict it was recorded with, and its
    headline keeps to the headline words and opens with its label."""
    read = []
    for name in names:
        tl = recorded(name)
        v = module.verdict(tl)
        assert v.to_dict() == tl.verdict.to_dict(), name  # the verdict is read off the recorded events
        assert headline_words(v.summary) <= HEADLINE_WORDS, v.summary
        assert v.summary.startswith(v.label), v.summary
        read.append((tl, v))
    return read


# -- the package, read as text ------------------------------------------------------------------
PACKAGE = Path(emqlab.__file__).resolve().parent



# bottom first: a package may import from itself and from the ones before it, never after
LAYERS = ("core", "store", "faults", "lease", "queue", "scenarios", "tools", "plot", "view", "classroom", "course", "cli")



MODEL = LAYERS[:LAYERS.index("tools") + 1]  # never imports matplotlib or ipywidgets



# the class on one server is one folder with its own small stack, bottom first
CLASSROOM = {"server": 0, "board": 1, "learner": 2, "draw": 2, "dashboard": 3, "practice": 3}



def rank(module: str) -> int | None:
    """The package's place in LAYERS; `emqlab` itself (its face) and `emqlab.__main__` sit on top.
    None: a module outside every layer (give its folder a place in LAYERS, on purpose)."""
    parts = module.split(".")[1:]
    if not parts or parts == ["__main__"]:
        return len(LAYERS)
    return LAYERS.index(parts[0]) if parts[0] in LAYERS else None



def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = ["emqlab", *rel.parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found



def imports(known: dict[str, Path]):
    """(importer, imported module, the names taken from it) for every import of one emqlab module by another."""
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [(alias.name, ()) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod itself
                targets = [(f"{source}.{a.name}", ()) if f"{source}.{a.name}" in known else (source, (a.name,))
                           for a in node.names]
            for target, names in targets:
                while target and target not in known and "." in target:
                    target = target.rpartition(".")[0]  # `import emqlab.plot.style as s` → that module
                if target in known and target != name:
                    yield name, target, names



def edges(known: dict[str, Path]) -> set[tuple[str, str]]:
    return {(a, b) for a, b, _ in imports(known)}



def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups



def upward(a: str, b: str) -> bool:
    """Whether the edge a -> b points up: to a later package, or inside classroom/ to a later module."""
    ra, rb = rank(a), rank(b)
    if ra is None or rb is None:
        return False
    if rb != ra:
        return rb > ra
    pa, pb = a.split("."), b.split(".")
    if pa[1] == pb[1] == "classroom" and len(pa) > 2 and len(pb) > 2:
        return CLASSROOM[pb[2]] > CLASSROOM[pa[2]]
    return False



# -- a lesson's kernel: started again only when a port it was given was taken ------------------------
PORT_TAKEN = "Address already in use"


def kernel_start_retried_on_a_taken_port(start):
    """`start` (nbval's `start_new_kernel`) with the kernel's stderr kept, not thrown away. jupyter_client
    gives a kernel five ports that it found free by binding port 0 and letting go; the kernel binds them
    a moment later, and on a busy machine another process can take one in between (a lesson's client
    connections to Valkey each take such a port): the kernel dies with "Address already in use" before it
    answers (jupyter/jupyter_client#487). That death alone is tried once more, on new ports; any other
    raises with what the kernel printed."""
    import tempfile

    def started(*args, **kwargs):
        for attempt in (1, 2):
            with tempfile.TemporaryFile("w+") as err:
                kwargs["stderr"] = err  # the kernel keeps its own handle on the file after this one closes
                try:
                    return start(*args, **kwargs)
                except RuntimeError as died:
                    err.seek(0)
                    said = err.read()
                    if attempt == 1 and PORT_TAKEN in said:
                        print(f"a kernel lost a port before it bound it ({PORT_TAKEN}): starting it again",
                              file=sys.stderr)
                        continue
                    raise RuntimeError(f"{died}; the kernel printed:\n{said[-3000:]}") from died
    return started


# -- the browser: servers started as a user starts them, and reading the page ----------------------
NOTEBOOKS = ROOT / "notebooks"



ARTIFACTS = ROOT / "test-artifacts"



CHROMIUM = os.environ.get("EMQLAB_CHROMIUM", "/usr/bin/chromium")



CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]



VIEWPORT = {"width": 1600, "height": 1000}
# the browser tests' waits, stretched on a slower host (`realtime.timeout_s`)
START_TIMEOUT = realtime.timeout_s(60)  # seconds for a server to answer on a loaded 2-core machine
UI_TIMEOUT = realtime.timeout_s(45_000)  # ms for the page to show what it should
# ms for Voila to send a dashboard: it runs the notebook's cells before the page loads (the failover's live
# primaries and replicas: 13 s on a quiet machine, past 45 s on a loaded one in CI)
RENDER_TIMEOUT = realtime.timeout_s(150_000)
# what says a Voila server is up: one of its static files. Its page ("/") is no probe: each request for it runs
# the dashboard in a kernel of its own, which stays until the server stops, so probing "/" ran every dashboard
# twice (once more for each poll that timed out waiting for the first byte on a loaded machine)
VOILA_READY = "/voila/static/voila.js"


# -- servers ------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



class Server:
    """A jupyter lab / voila process on a loopback port with a token; always stopped."""

    def __init__(self, argv: list[str], port: int, token: str, home: Path, ready_path: str,
                 env: dict[str, str] | None = None, quiet_news: bool = True):
        self.port, self.token, self.home = port, token, home
        self.log = home / "server.log"
        env = {k: v for k, v in (env or os.environ).items() if k not in ("EMQLAB_BACKEND", "EMQLAB_URL")}
        env.update(JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
                   IPYTHONDIR=str(home / "ipython"), JUPYTER_PLATFORM_DIRS="1")
        # the user's own settings must not change what the test sees; the news toast is turned off here
        # unless the command under test is meant to turn it off itself (the course lab does)
        labconfig = home / "config" / "labconfig"
        labconfig.mkdir(parents=True)
        if quiet_news:
            (labconfig / "page_config.json").write_text(json.dumps(
                {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=home,
                                         start_new_session=True)
        try:
            self._wait(ready_path)
        except BaseException:
            self.stop()
            raise

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"http://127.0.0.1:{self.port}{path}{sep}token={self.token}"

    def _wait(self, path: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the server exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url(path), timeout=2) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.25)
        pytest.fail(f"the server did not answer within {START_TIMEOUT} s:\n{self.tail()}")

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # the server shuts its kernels down on SIGTERM
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()



def _server_argv(kind: str, port: int, token: str, home: Path, target: Path) -> list[str]:
    if kind == "lab":  # the command `./run lab` runs (emqlab lab), with a port, a token and a copy of the course
        from emqlab.course.lab import lab_command

        return lab_command([f"--port={port}", "--no-browser", f"--IdentityProvider.token={token}",
                            "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={target}",
                            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: run cells, reach the kernel
                            f"--LabApp.workspaces_dir={home / 'workspaces'}",
                            f"--LabApp.user_settings_dir={home / 'settings'}"])
    from emqlab.course.present import voila_command

    argv = voila_command(target, port=port, open_browser=False)
    return [*argv, f"--token={token}", "--Voila.port_retries=0"]



def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text).strip("-")



# -- reading the page --------------------------------------------------------------------------------------
PANEL = """(path) => {
  for (const w of window.jupyterapp.shell.widgets('main')) if (w.context && w.context.path === path) return w;
  return null;
}"""



RUN_IN_KERNEL = """async ([path, code]) => {
  const panel = (""" + PANEL + """)(path);
  const kernel = panel.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, silent: false, store_history: false});
  let out = '', err = '';
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') out += msg.content.text;
    if (msg.header.msg_type === 'error') err += msg.content.ename + ': ' + msg.content.evalue;
  };
  await future.done;
  return {out, err};
}"""



def kernel_run(page, notebook: str, code: str) -> str:
    reply = page.evaluate(RUN_IN_KERNEL, [notebook, code])
    assert not reply["err"], reply["err"]
    return reply["out"]



def open_and_run(page, server: Server, notebook: str) -> None:
    # a workspace of its own: no tab from an earlier test is restored beside this one
    page.goto(server.url(f"/lab/workspaces/{secrets.token_hex(4)}/tree/{notebook}"))
    find = "(" + PANEL + ")(path)"
    page.wait_for_function(
        f"(path) => {{ const p = window.jupyterapp && {find};"
        " return p && p.sessionContext && p.sessionContext.session && p.sessionContext.session.kernel"
        " && p.context && p.context.isReady; }", arg=notebook)
    page.evaluate(f"""async (path) => {{
      const app = window.jupyterapp, panel = {find};
      app.shell.activateById(panel.id);
      await panel.sessionContext.ready;
      await app.commands.execute('notebook:run-all-cells');
    }}""", notebook)
    page.wait_for_function(
        f"(path) => {{ const p = {find};"
        " return p.content.widgets.every(c => c.model.type !== 'code' || (c.model.executionCount !== null"
        " && !c.node.querySelector('.jp-InputArea-prompt').textContent.includes('*'))); }",
        arg=notebook, timeout=realtime.timeout_s(120_000))
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, f"{notebook} raised while running:\n" + "\n".join(tracebacks)



COUNT_SENT = """(path) => {
  const panel = (""" + PANEL + """)(path);
  const kernel = panel.sessionContext.session.kernel;
  if (!window.emqlabSent) {
    window.emqlabSent = [];
    kernel.anyMessage.connect((_, m) => { if (m.direction === 'send') window.emqlabSent.push(m.msg.header.msg_type); });
  }
  window.emqlabSent.length = 0;
}"""


def figure_with(page, label: str):
    """The interactive figure on the page that has a mode labelled `label`, scrolled into view (JupyterLab
    may leave an output that is out of view undrawn), with its modes {key: label}."""
    page.wait_for_function("""(label) => [...document.querySelectorAll('[data-figure] script[data-modes]')]
      .some(s => Object.values(JSON.parse(s.textContent).modes).some(m => m.label.includes(label)))""",
                           arg=label, timeout=UI_TIMEOUT)
    name = page.evaluate("""(label) => [...document.querySelectorAll('[data-figure]')].find(f =>
      Object.values(JSON.parse(f.querySelector('script[data-modes]').textContent).modes)
        .some(m => m.label.includes(label))).dataset.figure""", label)
    figure = page.locator(f"[data-figure='{name}']")
    figure.wait_for(timeout=UI_TIMEOUT)
    figure.scroll_into_view_if_needed()
    modes = json.loads(figure.locator("script[data-modes]").text_content())["modes"]
    return figure, {key: m["label"] for key, m in modes.items()}


def lit_state(figure) -> dict:
    """What a person sees lit: the figure's lit mode, the modes whose marks are dimmed, the verdict line
    set in bold, and the readout's text."""
    return figure.evaluate("""(f) => ({
      lit: f.dataset.lit ?? null,
      dimmed: [...new Set([...f.querySelectorAll('[data-mode].emq-dim')].map(m => m.dataset.mode))].sort(),
      bold: [...f.querySelectorAll('[data-verdict]')].filter(li => Number(getComputedStyle(li).fontWeight) >= 600)
                .map(li => li.dataset.verdict),
      readout: f.querySelector('[data-readout]').innerText,
    })""")


def hover_lights(page, notebook: str, label: str, shot: str, let_go: bool = True) -> None:
    """Move the real pointer onto the lane of the mode labelled `label` and check what a learner sees:
    the readout names that mode, its verdict is the bold one, every other mode's marks fade — and the
    browser sends the kernel nothing while it happens. let_go: first click the figure's margin (a lesson
    may pin a mode); False: the lesson must leave nothing pinned, so the hover works with no click."""
    from playwright.sync_api import expect

    figure, modes = figure_with(page, label)
    target = next(key for key, text in modes.items() if label in text)
    other = next(key for key in modes if key != target)
    page.evaluate(COUNT_SENT, notebook)
    if let_go:
        box = figure.locator("svg").first.bounding_box()
        page.mouse.click(box["x"] + 3, box["y"] + 3)
    else:
        assert lit_state(figure)["lit"] is None, f"{notebook} leaves a mode lit"
    for key in (other, target):  # the other mode first, so that what the target hover changes is seen
        figure.locator(f"[data-lane='{key}']").hover(position={"x": 3, "y": 3})
        expect(figure).to_have_attribute("data-lit", key, timeout=UI_TIMEOUT)
        state = lit_state(figure)
        assert state["readout"].startswith(modes[key]), state
        assert state["dimmed"] == sorted(k for k in modes if k != key) and state["bold"] == [key], state
        page.screenshot(path=str(ARTIFACTS / f"{shot}-{key}.png"))
    sent = page.evaluate("() => window.emqlabSent.slice()")
    assert sent == [], f"hovering sent the kernel {sent}"


def lesson(prefix: str) -> str:
    found = sorted(p.name for p in NOTEBOOKS.glob(f"{prefix}-*.ipynb"))
    assert found, f"no lesson notebooks/{prefix}-*.ipynb in this checkout"
    return found[0]
