"""The course's own helpers: open the lab, and share one backend between a notebook's cells.

In a notebook, `lab.backend()` is the store every lesson runs on: fakeredis on the virtual clock
by default, or what EMQLAB_BACKEND / EMQLAB_URL name (`valkey` starts an embedded server, stopped
when the kernel exits). `lab.use("valkey")` switches with one line; `lab.reset()` deletes
what dead runs left behind (and nothing else).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import sys
from importlib import resources
from pathlib import Path

from ..store.backend import Backend, connect
from ..store.clock import DEFAULT_SCALE
from ..core import ranges
from ..core.errors import BadParameter, EmqlabError
from ..core.kinds import Kind
from ..core.measured import benchmark_rows, load_benchmark  # noqa: F401 - lessons call lab.benchmark_rows()
from ..core.words import plain, seconds
from ..view.picture import Picture, picture

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"  # beside the package, in a checkout
START = "00-start-here.ipynb"

_current: Backend | None = None
_held: dict = {}  # name -> RunLease of a prefix a notebook holds (see `prefix`)


SCALE_ENV = "EMQLAB_SCALE"  # the real clock's scale the lessons run at on a live store (default 0.01)


def backend() -> Backend:
    """The notebook's shared backend, opened on first use from EMQLAB_BACKEND / EMQLAB_URL (default fake),
    on a live store at EMQLAB_SCALE real seconds per model second (default 0.01)."""
    global _current
    if _current is None:
        _current = connect(None, scale=_scale())
        _close_at_exit()
    return _current


def _scale() -> float:
    text = os.environ.get(SCALE_ENV)
    if text is None:
        return DEFAULT_SCALE
    value = ranges.parse(text)
    if value is None:
        raise BadParameter(f"${SCALE_ENV} is {text!r}, not a number; {ranges.get('scale').rule()}")
    return value  # its range is checked where the clock is made


def use(spec: str | None = None, *, clock: str | None = None, scale: float = DEFAULT_SCALE) -> Backend:
    """Switch every following cell to another store: "fake", "valkey" (embedded) or a URL.

    The backend in use before is closed (an embedded server it started is stopped)."""
    global _current
    new = connect(spec, clock=clock, scale=scale)  # open first: a bad spec leaves the old one working
    close()
    _current = new
    _close_at_exit()
    return new


def describe() -> str:
    """Which store and clock the lessons run on, in one line."""
    be = backend()
    mode = "virtual clock (instant, deterministic)" if not be.clock.real else \
        f"real clock (1 model second = {be.clock.scale:g} real seconds)"
    return f"{be.describe()}, {mode}"


def reset() -> int:
    """Delete what dead runs left behind on the current store (keys under `emqlab:` of runs whose
    run-lease has lapsed); a live run's keys, this notebook's own included, and anything outside
    `emqlab:` are never touched. Returns how many keys went."""
    from ..lease.runs import clean

    return clean(backend()).keys_removed


def prefix(name: str) -> str:
    """A key prefix of this notebook's own, for cells that write keys outside a scenario run:
    unique on the server (two learners never meet), held by a run-lease while the kernel lives (so
    `emqlab clean` leaves it alone), and deleted by `done(name)` or when the kernel stops."""
    if name not in _held:
        from ..lease.runs import RunLease

        lease = RunLease(backend(), backend().run_prefix(name)).take()
        _held[name] = lease
    return _held[name].prefix


def message(error: BaseException) -> str:
    """An error's message as a lesson prints it: a key under one of this notebook's prefixes (`prefix`)
    named without it, since the prefix is random and says nothing to the reader."""
    text = str(error)
    for lease in _held.values():
        text = text.replace(lease.prefix, "")
    return text


def done(name: str) -> int:
    """Let go of `prefix(name)`: release its run-lease and delete its keys; how many keys went."""
    lease = _held.pop(name, None)
    if lease is None:
        return 0
    try:
        lease.release()
    finally:
        removed = lease.backend.delete_prefix(lease.prefix)
    return removed


def close() -> None:
    """Close the shared backend (stopping an embedded server); the next `backend()` opens a fresh one."""
    global _current
    for name in list(_held):
        done(name)
    current, _current = _current, None
    if current is not None:
        current.close()


_exit_hook = False  # registered when the first backend opens, not at import


def _close_at_exit() -> None:
    global _exit_hook
    if not _exit_hook:
        _exit_hook = True
        atexit.register(close)


def lab_command(extra_args: list[str] | None = None) -> list[str]:
    """The command `emqlab lab` runs: JupyterLab, serving the course folder, opened on lesson 00."""
    start = NOTEBOOKS / START
    if not start.is_file():
        raise EmqlabError(f"the course notebooks are not beside this installation (looked for {start}); "
                          "run `emqlab lab` from a checkout of the emqlab repository")
    if importlib.util.find_spec("jupyterlab") is None:
        raise EmqlabError("JupyterLab is not installed; install the lab extras: pip install -e '.[lab]'")
    extra = list(extra_args or [])
    if extra[:1] == ["--"]:  # `emqlab lab -- --no-browser`: the separator is argparse's, not Jupyter's
        extra = extra[1:]
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        extra.append("--allow-root")  # containers often run as root; Jupyter refuses it unless told
    course = [f"--LabApp.default_url=/lab/tree/{START}",  # the URL printed and opened lands on lesson 00
              "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if not any(a.startswith(("--ServerApp.root_dir", "--notebook-dir", "--ServerApp.notebook_dir")) for a in extra):
        course.insert(0, f"--ServerApp.root_dir={NOTEBOOKS}")  # serve the course folder, unless told otherwise
    return [sys.executable, "-m", "jupyterlab", *course, *extra]


def lab_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment `emqlab lab` runs JupyterLab in: the course's own lab settings come first on
    the config path, which turn off JupyterLab's news prompt for the course (and nothing else)."""
    env = dict(os.environ if env is None else env)
    course = str(resources.files("emqlab").joinpath("dashboards", "share", "labconfig-course"))
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in (course, env.get("JUPYTER_CONFIG_PATH", "")) if p)
    return env


def open_lab(extra_args: list[str] | None = None) -> None:
    """Replace this process with JupyterLab, opened on notebooks/00-start-here.ipynb."""
    argv = lab_command(extra_args)
    os.chdir(NOTEBOOKS)  # the file browser opens on the course
    os.execve(argv[0], argv, lab_env())


# -- small helpers the lessons call --------------------------------------------------------------
# how `facts` says a verdict field its name does not say well; any other is its name in words, a time's
# without its "_at" ("reclaimed_at": "reclaimed", "holders_at_once": "holders at once")
FACT_WORDS = {"renew_lost_at": "extend replied 0", "double_run": "ran twice at once"}


def facts(timeline, *keys: str) -> str:
    """A run's verdict as `name: value` pairs, each name in words (`FACT_WORDS`), times as every readout
    quotes them (`words.seconds`), every other field through `words.plain` (yes / no, n/a, no Python
    reprs). Default keys: lapsed_at, runs, double_run, finished_once."""
    keys = keys or ("lapsed_at", "runs", "double_run", "finished_once")
    shown = []
    for key in keys:
        got = getattr(timeline.verdict, key) if hasattr(timeline.verdict, key) else timeline.counts.get(key)
        name = FACT_WORDS.get(key, key.removesuffix("_at").replace("_", " "))
        shown.append(f"{name}: {seconds(got) if key.endswith('_at') else plain(got)}")
    return " · ".join(shown)


def events(timeline, actor: str | None = None, skip: tuple[str, ...] = (Kind.ACQUIRE_FAILED,)) -> str:
    """A run's events, one per line (polling noise left out)."""
    return "\n".join(f"{seconds(e.t):>8}  {e.actor:<10} {e.kind}" for e in timeline.events
                     if (actor is None or e.actor == actor) and e.kind not in skip)


def cadence_modes(lease: float = 30, job: float = 75, cadence: float = 0.5, pause_at: float = 20,
                  pause_for: float = 0) -> dict:
    """The cadence lesson's two modes: no renewal, and renewal at `cadence` × lease; optionally a pause."""
    from ..scenarios.heartbeat import heartbeat

    pause = f"{pause_at}:{pause_for}" if pause_for > 0 else None
    be = backend()
    return {"none": heartbeat(lease=lease, job=job, renew="none", pause=pause, backend=be),
            "chosen": heartbeat(lease=lease, job=job, renew=cadence, pause=pause, backend=be)}


def cadence_boundary(lease: float = 30, at: float = 20, cadences=None, pauses=None) -> dict:
    """Run the heartbeat over a grid of cadences × pause lengths and record held or lost.

    The rule to test: a pause that starts `at` survives if it ends before the deadline the last
    extend set, i.e. pause < lease − (at mod every). The default live grid keeps every point at
    least 6 model seconds (60 real ms) off that line, so a late wake-up on a busy machine cannot
    flip a point, and is smaller because each run takes real time."""
    from ..scenarios.heartbeat import heartbeat

    be = backend()
    if cadences is None:
        cadences = [0.2, 0.4, 0.6, 0.8] if be.live else [round(0.1 * i, 1) for i in range(1, 10)]
    if pauses is None:
        pauses = [4, 16, 35] if be.live else [1.5 + 2 * i for i in range(20)]
    points, agrees = [], True
    for fraction in cadences:
        for pause in pauses:
            tl = heartbeat(lease=lease, job=lease, renew=fraction, pause=f"{at}:{pause}", backend=be)
            held = tl.verdict.lapsed_at is None
            agrees &= held == (pause < lease - at % (fraction * lease))
            points.append((fraction, pause, held))
    return {"lease": lease, "at": at, "points": points, "runs": len(points), "agrees": agrees}


def link_modes(lease: float = 30, job: float = 75, cadence: float = 0.5, latency: float = 10) -> dict:
    """The slow link lesson's two modes: the holder beside the store, and over a link with a one-way `latency`."""
    from ..scenarios.heartbeat import heartbeat

    be = backend()
    return {"beside the store": heartbeat(lease=lease, job=job, renew=cadence, backend=be),
            "over the link": heartbeat(lease=lease, job=job, renew=cadence, latency=latency, backend=be)}


def latency_boundary(lease: float = 30, cadences=None, latencies=None) -> dict:
    """The held-or-lost grid of cadences × one-way delays on the lab's store
    (`emqlab.scenarios.slow_link.latency_boundary`)."""
    from ..scenarios.slow_link import latency_boundary as grid

    return grid(backend(), lease, cadences, latencies)


def show(drawing, dpi: int = 80) -> Picture:
    """A static figure (a Drawing, or a matplotlib Figure) as an image for the notebook, with its
    caption as the text a reader without images gets (the site's alt text, a screen reader's)."""
    return picture(drawing, dpi)


def wait(seconds: float) -> None:
    """Let `seconds` of model time pass on the current store's clock (instant on the virtual clock)."""
    clock = backend().clock
    clock.run(until=clock.now_ms + seconds * 1000)


# -- one timer per job, or one sweep: renewal cost against K ----------------------------------------
def renewal_scaling(ks=(1, 10, 100, 1000), ticks: int = 2, designs=None) -> list[dict]:
    """Run every renewal design (or those named) for each K on the current store; rows for
    `figures.scaling_figure`."""
    from ..scenarios.renewal_cost import renewal_scaling as measure

    return measure(backend(), ks, ticks, designs)


# -- one slot per queue: a three-node cluster -------------------------------------------------------
_cluster = None


def cluster():
    """A three-node Valkey cluster for the cluster lesson, started once and stopped with the kernel."""
    global _cluster
    if _cluster is None:
        from ..store.cluster import LocalCluster

        _cluster = LocalCluster().start()
        atexit.register(stop_cluster)
    return _cluster


def stop_cluster() -> None:
    global _cluster
    current, _cluster = _cluster, None
    if current is not None:
        current.stop()


def slots(keys) -> dict[str, int]:
    """The cluster slot of each key (CRC16 of the hashtag if there is one, else of the whole key)."""
    from redis.crc import key_slot

    return {key: key_slot(key.encode()) for key in keys}


def _cluster_queue(hashtag: bool):
    from ..store.cluster import ClusterBackend
    from ..queue.jobs import Queue

    cb = ClusterBackend(cluster())
    return cb, Queue(cb, "orders", prefix=cb.prefix + "slots:", hashtag=hashtag)


def enqueue_on_cluster(hashtag: bool = True, job_id: str = "ORD0NgWEfAEJfs") -> str:
    """Send the queue's enqueue script straight to the node that owns its first key, and say what
    the server replied: with the `{q}` hashtag all its keys share a slot; without it they do not.
    (The cluster client would refuse a cross-slot call itself; going to the node shows the server's word.)"""
    import redis

    from ..store.scripts import source

    cb, q = _cluster_queue(hashtag)
    keys = q.enqueue_keys(job_id)
    node = cluster().node_for(keys[0])
    try:
        reply = node.evalsha(node.script_load(source("enqueue")), len(keys), *keys, job_id, "pay", 0)
        return f"reply {reply}: all {len(keys)} keys live in slot {slots([keys[0]])[keys[0]]}"
    except redis.ResponseError as exc:
        return f"refused by the server: {exc}"
    finally:
        node.close()
        cb.delete_prefix(cb.prefix + "slots:")
        cb.close()


def queue_keys(hashtag: bool = True, job_id: str = "ORD0NgWEfAEJfs") -> list[str]:
    """The keys one enqueue touches, as the queue names them."""
    cb, q = _cluster_queue(hashtag)
    cb.close()
    return q.enqueue_keys(job_id)


def work_on_cluster(job_id: str = "ORD0NgWEfAEJfs") -> str:
    """Enqueue, claim and complete one job through the cluster client; where the job ends up."""
    cb, q = _cluster_queue(True)
    try:
        q.enqueue(job_id, "pay")
        [claimed] = q.claim(30_000)
        q.complete(job_id, claimed.attempts)
        return f"claimed with attempts {claimed.attempts}, completed; the job is now in: {', '.join(q.where(job_id))}"
    finally:
        cb.delete_prefix(cb.prefix + "slots:")
        cb.close()


def cluster_placements() -> dict:
    """The cluster figure's two runs on the lesson's cluster: the queue's keys with and without the hashtag."""
    from ..view.figures import cluster_modes

    return cluster_modes(cluster())


# -- the reaper --------------------------------------------------------------------------------------
class Script(str):
    """A Lua script's text as the package ships it; a notebook shows it as the file reads."""

    def __repr__(self) -> str:
        return str(self)


def script(name: str) -> Script:
    """The text of `emqlab/lua/<name>.lua`, read from the package itself (`emqlab.store.scripts.source`), so
    the lesson shows the script the queue runs, never a copy: `lab.script("reap")`."""
    from ..store.scripts import source

    return Script(source(name))


def excerpt(name: str, *needles: str) -> str:
    """The lines of `lab.script(name)` that hold any of `needles`, each with its line number: the lines a
    lesson talks about, read from the script the queue runs. The numbers count the script as the server gets
    it, its includes pasted in, so past an `@include` line they differ from the file's own."""
    return "\n".join(f"{n:3}  {line}" for n, line in enumerate(script(name).splitlines(), 1)
                     if any(needle in line for needle in needles))


def keyspace(queue, *job_ids: str) -> str:
    """A queue's keys as EchoMQ names them (`emq:{q}:pending`, …), one a line, from `emq:` on: what sits
    before it (the notebook's own prefix) differs from run to run and says nothing about the queue."""
    keys = [queue.pending, queue.active, *(queue.job_key(j) for j in job_ids), queue.schedule, queue.wake_key,
            queue.done, queue.dead]
    start = queue.base.rindex("emq:")
    return "\n".join(key[start:] for key in keys)


def beats(timeline, actor: str | None = None, moved_only: bool = False) -> str:
    """A run's beats, one step per line in the order they ran: beat number, time (from–to for a step that
    ran a while, such as a drain that ran its job), step, what it moved, and for a reap the server TIME it
    compared the scores with (on the run's time base, pinned at the run's first claim). `moved_only`: only
    the steps that moved something."""
    claim = timeline.first(Kind.CLAIM, where=lambda e: e.data.get("time_s") is not None)
    lines = []
    for e in timeline.of(Kind.STEP, actor):
        d = e.data
        if moved_only and not d.get("moved"):
            continue
        what = f"moved {d['moved']}" if "moved" in d else ("woke on a wake token" if d.get("woken") else "no wake token")
        if d.get("ended") == "crash":
            what += ", cut short by the crash"
        if d["step"] == "reap" and claim is not None:
            what += f", TIME {seconds(claim.t + d['time_s'] - claim.data['time_s'])}"
        # a step that ran a while (a drain that ran the job it claimed) says when it began and ended
        began = d.get("started")
        when = f"{seconds(began)}–{seconds(e.t)}" if began is not None and e.t - began >= 0.05 else f"at {seconds(e.t)}"
        lines.append(f"{e.actor:<9} beat {d['beat']:>2}  {d['step']:<6} {when}: {what}")
    return "\n".join(lines)


def join(address: str, name: str | None = None, **options):
    """Join the instructor's class as one worker: `address` is your line of the join file (keep it out
    of saved output). Returns a handle: `.lane()` your lane, `.stop()` leave (also when the kernel stops).
    options: lease_s, beat_s, work_s (real seconds)."""
    from ..classroom.learner import Joined

    return Joined(address, name, **options)


# -- the libraries lessons: the tools learners ship ---------------------------------------------------------
def in_background(function, *args, **kwargs):
    """Start `function(*args, **kwargs)` in a thread now and go on; `.result()` waits for it (and raises what it
    raised). For a library's runs that take long on the library's own clock (RQ waits a minute before it calls
    a job abandoned) while the lesson goes on. The runs start their own servers and processes and stop them;
    if the kernel exits first, every server and process they started is stopped with it."""
    import threading
    from concurrent.futures import Future

    future: Future = Future()

    def work() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(function(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
                future.set_exception(exc)

    threading.Thread(target=work, name="emqlab-background", daemon=True).start()
    return future


def versions() -> str:
    """The installed version of every library the libraries lessons run, in one line."""
    from ..tools import versions as installed

    return " · ".join(f"{name} {version}" for name, version in installed().items())
