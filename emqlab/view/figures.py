"""Each course figure, built: a scenario's runs, its words, and the drawing that shows them.

A builder pairs a drawing function of `emqlab.plot` with the `figure_words` of the scenario whose
runs it draws, so a figure can only say what its scenario wrote. Builders take the runs (one
Timeline, a list, or {mode: Timeline}) and an optional `fig`, and return a `Drawing`; that is the
shape `emqlab.view.widgets.ModeExplorer` expects, so a lesson writes `ModeExplorer(heartbeat_figure, runs)`.

The runs behind the exported figures and the dashboards are made here too (`heartbeat_modes`,
`renewal_designs`, `applied_runs`), so a projected figure and an exported one come from the same runs.
"""

from __future__ import annotations

from typing import Any

from ..store.backend import Backend
from ..core.errors import StoreError
from ..core.measured import load_benchmark
from ..plot import Drawing, as_modes
from ..plot.applied import draw_chaos, draw_queue_heartbeat, draw_reaper
from ..plot.fencing import draw_fencing
from ..plot.heartbeat import draw_boundary, draw_heartbeat
from ..plot.renewal import draw_capacity, draw_renewal_cost, draw_scaling
from ..lease.designs import design_names
from ..scenarios.chaos import figure_words as chaos_words
from ..scenarios.fencing import fencing as fencing_run
from ..scenarios.fencing import figure_words as fencing_words
from ..scenarios.heartbeat import boundary_words, heartbeat
from ..scenarios.heartbeat import figure_words as heartbeat_words
from ..scenarios.queue_heartbeat import figure_words as queue_heartbeat_figure_words
from ..scenarios.reaper import figure_words as reaper_figure_words, reaper
from ..scenarios.renewal_cost import capacity_words, renewal_cost, renewal_scaling, scaling_words
from ..scenarios.renewal_cost import figure_words as renewal_words

CADENCE_S = 15.0  # a 30 s lease renewed at TTL/2
SCALING_KS = (1, 6, 100, 1000)  # measured on the spot when the benchmark's results are absent


def _build(draw, words, key, what: str, timelines: Any, fig, labels, **kw: Any) -> Drawing:
    modes = as_modes(timelines, key, what)
    return draw(modes, words(modes, labels), fig=fig, **kw)


# -- builders: runs in, Drawing out -----------------------------------------------------------------
def heartbeat_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None, **kw: Any) -> Drawing:
    """Figure 1: the renewal heartbeat, one panel per run."""
    return _build(draw_heartbeat, heartbeat_words, lambda tl: tl.params.mode, "heartbeat_figure",
                  timelines, fig, labels, **kw)


def renewal_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None, **kw: Any) -> Drawing:
    """Figure 2: what each renewal design costs per tick."""
    return _build(draw_renewal_cost, renewal_words, lambda tl: tl.params.mode,
                  "renewal_figure", timelines, fig, labels, **kw)


def reaper_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None) -> Drawing:
    """The reaper lesson: crash, reap, re-claim, fence."""
    return _build(draw_reaper, reaper_figure_words,
                  lambda tl: tl.params.mode, "reaper_figure",
                  timelines, fig, labels)


def queue_heartbeat_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None) -> Drawing:
    """EchoMQ in detail: figure 1 again, on the queue."""
    return _build(draw_queue_heartbeat, queue_heartbeat_figure_words, lambda tl: tl.params.mode,
                  "queue_heartbeat_figure", timelines, fig, labels)


def fencing_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None) -> Drawing:
    """The fencing lesson: a stale worker's late write, without and with fencing."""
    return _build(draw_fencing, fencing_words, lambda tl: tl.params.mode, "fencing_figure",
                  timelines, fig, labels)


def chaos_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None) -> Drawing:
    """A chaos run: pending, active and done over time, with its faults."""
    return _build(draw_chaos, chaos_words, lambda tl: tl.params.mode, "chaos_figure",
                  timelines, fig, labels)


def stuck_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None) -> Drawing:
    """A stuck job under each design and with a hard deadline (runs of `scenarios.stuck.stuck`; see `stuck_modes`)."""
    from ..plot.stuck import draw_stuck
    from ..scenarios.stuck import figure_words as stuck_figure_words

    return _build(draw_stuck, stuck_figure_words,
                  lambda tl: tl.params.mode, "stuck_figure",
                  timelines, fig, labels)


def stuck_modes(backend: Backend, max_runtime: float = 120) -> dict[str, Any]:
    """The stuck-job figure's runs: none, sweep, session, and session with a hard deadline."""
    from ..scenarios.stuck import mode_name, stuck

    runs = [("none", None), ("sweep", None), ("session", None), ("session", max_runtime)]
    return {mode_name(d, m): stuck(design=d, max_runtime=m, backend=backend) for d, m in runs}


def scaling_figure(rows: list[dict[str, Any]], where: str, fig=None) -> Drawing:
    """Round trips and server µs per tick against K (log–log), one line per design: every design in
    `emqlab.lease.designs` that renews (per-job, sweep, session) and the peers, from the benchmark's rows."""
    return draw_scaling(rows, scaling_words(rows, where), fig=fig)


def capacity_figure(caps: list[dict[str, Any]], cadence_s: float = CADENCE_S, fig=None) -> Drawing:
    """The largest K each design keeps alive within the cadence."""
    return draw_capacity(caps, capacity_words(caps, cadence_s), cadence_s=cadence_s, fig=fig)


def boundary_figure(boundary: dict[str, Any], fig=None) -> Drawing:
    """The cadence lesson: held or lost over cadence × pause length."""
    return draw_boundary(boundary, boundary_words(boundary), fig=fig)


# -- the runs behind the exported figures and the dashboards ----------------------------------------
def link_delay_modes(backend: Backend, lease: float = 30, job: float = 75) -> dict[str, Any]:
    """The slow link's two runs: renew at TTL/2 over a 5 s and over a 10 s one-way link."""
    return {f"{d} s link": heartbeat(lease=lease, job=job, renew="half", latency=d, backend=backend) for d in (5, 10)}


def latency_boundary_figure(boundary: dict[str, Any], fig=None) -> Drawing:
    """Held or lost for each (cadence, one-way delay) of `lab.latency_boundary`, over the rule's line."""
    from ..plot.heartbeat import draw_latency_boundary
    from ..scenarios.slow_link import boundary_words as latency_boundary_words

    return draw_latency_boundary(boundary, latency_boundary_words(boundary), fig=fig)


def heartbeat_modes(backend: Backend, lease: float = 30, job: float = 75) -> dict[str, Any]:
    """Figure 1's two runs: no renewal, and renewal at TTL/2."""
    return {renew: heartbeat(lease=lease, job=job, renew=renew, backend=backend) for renew in ("none", "half")}


def renewal_designs(backend: Backend, jobs: int = 6, ticks: int = 4) -> dict[str, Any]:
    """Figure 2's runs: every registered design, for a worker holding `jobs` leases."""
    return {design: renewal_cost(jobs=jobs, design=design, ticks=ticks, backend=backend)
            for design in design_names(renewing=True)}


def fencing_modes(backend: Backend) -> dict[str, Any]:
    """The fencing lesson's runs: a worker paused past its lease, fencing off and on."""
    return {mode: fencing_run(fencing=mode, pause="5:30", backend=backend) for mode in ("off", "on")}


def applied_runs(backend: Backend) -> dict[str, Any]:
    """The reaper's crash recovery and fencing off / on (the reaper and fencing lessons)."""
    return {"reaper": reaper(lease=30, beat=5, job=20, crash_at=10, backend=backend),
            "fencing": fencing_modes(backend)}


def measured_scaling(backend: Backend) -> Drawing:
    """The scaling figure from the committed live benchmark, or measured on `backend` if it is absent."""
    bench = load_benchmark()
    if bench:
        when = bench["meta"].get("when", "see benchmarks/results/renewal_cost.md")
        return scaling_figure(bench["rows"], f"measured on live Valkey by benchmarks/renewal_cost.py ({when})")
    where = {"fake": "fakeredis (in-process)", "valkey": "an embedded valkey-server"}.get(backend.source,
                                                                                          backend.describe())
    return scaling_figure(renewal_scaling(backend, SCALING_KS), f"measured on {where} by `emqlab figures`")


def measured_capacity() -> Drawing:
    """The capacity figure, from the committed live benchmark's capacity search."""
    bench = load_benchmark()
    if not bench or not bench.get("capacity"):
        raise StoreError("the capacity figure draws the measured capacity search that ships with emqlab "
                         "(emqlab/data/renewal_cost.json); run `.venv/bin/python benchmarks/renewal_cost.py` to make it")
    return capacity_figure(bench["capacity"])


# -- the cluster lesson: a queue's keys on a three-node cluster --------------------------------
def cluster_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None) -> Drawing:
    """The cluster lesson: one queue's keys on the cluster's nodes, with and without the `{q}` hashtag."""
    from ..plot.cluster import draw_cluster
    from ..scenarios.cluster import figure_words as cluster_words

    return _build(draw_cluster, cluster_words, lambda tl: tl.params.mode,
                  "cluster_figure", timelines, fig, labels)


def cluster_modes(cluster: Any) -> dict[str, Any]:
    """The cluster lesson's runs on a live `emqlab.store.local_cluster.LocalCluster`: with the hashtag and without."""
    from ..scenarios.cluster import placement

    return {"hashtag": placement(cluster, hashtag=True), "none": placement(cluster, hashtag=False)}


# -- the failover lesson: a lease lost when the primary dies ----------------------------------------
def failover_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None, **kw: Any) -> Drawing:
    """A lease lost in a failover: one panel per guard (runs of `emqlab.scenarios.failover.failover`),
    lanes per server and per worker, the storage lane; light a guard with `Drawing.light(guard)`."""
    from ..plot.failover import draw_failover
    from ..scenarios.failover import figure_words as failover_words

    return _build(draw_failover, failover_words, lambda tl: tl.params.mode, "failover_figure",
                  timelines, fig, labels, **kw)


def failover_modes(guards: tuple[str, ...] = ("none", "wait", "fence", "fence-wait")) -> dict[str, Any]:
    """The failover lesson's runs, one per guard, each on a primary and a replica of its own (live
    servers it starts and stops itself, whatever the store setting: about 2 s a guard)."""
    from ..scenarios.failover import failover

    return {guard: failover(guard) for guard in guards}


# -- the reaper lesson: the beat lane ------------------------------------------------------------------------
def beats_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None) -> Drawing:
    """The reaper lesson: each consumer's beats step by step (reap → promote → drain → park), over the
    server's TIME at each beat against the lease scores (runs of `reaper` or `queue_heartbeat`)."""
    from ..plot.beats import draw_beats
    from ..scenarios.reaper import beats_figure_words

    return _build(draw_beats, beats_figure_words,
                  lambda tl: "processes" if tl.params.procs else tl.scenario, "beats_figure",
                  timelines, fig, labels)


# -- every interleaving (the explorer) -------------------------------------------------------------
def explore_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None, **kw: Any) -> Drawing:
    """A schedule step by step: an exploration's counterexample (`scenarios.explore.explore`) and its
    replay (`replay`), one panel each, the step where an invariant broke shaded."""
    from ..plot.explore import draw_schedule
    from ..scenarios.explore import ExploreVerdict
    from ..scenarios.explore import figure_words as explore_words

    modes = as_modes(timelines, lambda tl: tl.params.mode, "explore_figure")
    breaks = {}
    for name, tl in modes.items():
        v = tl.verdict
        step = (len(v.counterexample) if v.counterexample else None) if isinstance(v, ExploreVerdict) else v.broke_at
        if step:
            breaks[name] = (step, v.invariant)
    return draw_schedule(modes, explore_words(modes, labels), fig=fig, breaks=breaks, **kw)


def growth_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None, **kw: Any) -> Drawing:
    """How an exploration's space grows with depth: new states per depth and in all, one colour per run."""
    from ..plot.explore import draw_growth
    from ..scenarios.explore import growth_words

    modes = as_modes(timelines, lambda tl: tl.params.mode, "growth_figure")
    said = [tl.verdict.label for tl in modes.values()]
    if labels is None and len(set(said)) < len(said):  # the same world but for one number: name each by its key
        labels = {name: f"{name} · {tl.verdict.label}" for name, tl in modes.items()}
    return draw_growth(modes, growth_words(modes, labels), fig=fig, **kw)


# -- the state space, walkable ------------------------------------------------------------------------------
def space_figure(space: Any, fig=None, **kw: Any) -> Drawing:
    """The explored graph (`scenarios.explore.state_space`): states by depth, the steps between them, the shortest
    counterexample's path lit; each state a mode whose readout says its keys, what each worker believes and where
    each step leads on (`ModeExplorer(space_figure, state_space(fencing="off"), fold=True)`)."""
    from ..plot.explore import STATE, draw_space
    from ..scenarios.explore import space_words

    return draw_space(space, space_words(space, STATE), fig=fig, **kw)


def check_figure(checked: Any, fig=None, **kw: Any) -> Drawing:
    """A checked history (`scenarios.history.check`): each violation's window of events, one panel each."""
    from ..plot.explore import draw_schedule
    from ..scenarios.history import figure_words as check_words

    windows = checked.windows()
    breaks = {name: (None, tl.params["invariant"]) for name, tl in windows.items()}  # None: its last step
    return draw_schedule(windows, check_words(windows), fig=fig, breaks=breaks, **kw)


# -- the libraries lessons: the tools learners ship ---------------------------------------------------------
def tools_figure(timelines: Any, fig=None, labels: dict[str, str] | None = None, **kw: Any) -> Drawing:
    """One library's runs (`emqlab.tools`: its failure and its fix) beside emqlab's own design facing the same
    story: one panel per run, lanes per process and the server's; light a run with `Drawing.light(mode)`."""
    from ..plot.tools import draw_tools
    from ..tools import figure_words
    from ..tools.story import mode_of

    runs = list(timelines.values()) if isinstance(timelines, dict) else (
        [timelines] if not isinstance(timelines, (list, tuple)) else list(timelines))
    library = next((tl.counts.get("library") for tl in runs if tl.scenario.startswith("tools-")), None)
    if library is None:
        from ..core.errors import BadParameter

        raise BadParameter("tools_figure draws a library's runs (emqlab.tools); none was given")
    return _build(draw_tools, figure_words(library), mode_of, "tools_figure", timelines, fig, labels, **kw)


def tools_modes(library: str, backend: Backend | None = None, runs: dict[str, Any] | None = None) -> dict[str, Any]:
    """The lesson's runs of `library` (its failure and its fix, each on a server of its own: `runs` if they
    were made already) and emqlab's own design facing the same story, on `backend` (the lab's store)."""
    from ..tools import runs as library_runs
    from ..tools.counterpart import ours
    from ..tools.story import EMQLAB

    made = dict(runs) if runs is not None else library_runs(library)
    return {**made, EMQLAB: ours(library, backend)}


# -- how to read a figure ----------------------------------------------------------------------------------
KEY_CAPTION = ("How to read a figure: every mark in the course's one table, and what it means. Bands are told apart "
               "by their place as well: a lease above a worker's line, its work below it.")


def key_figure(fig=None, **kw: Any) -> Drawing:
    """Every mark of the course's grammar beside its meaning (lesson 00), drawn from `emqlab.core.marks`."""
    from ..core.words import FigureWords
    from ..plot.key import draw_key

    return draw_key(FigureWords(caption=KEY_CAPTION), fig=fig, **kw)
