"""`lab`: what a lesson imports (`from emqlab.course import lab`) to run on the course's store and say
what it saw, one call each.

In a notebook, `lab.backend()` is the store every lesson runs on: fakeredis on the virtual clock
by default, or what EMQLAB_BACKEND / EMQLAB_URL name (`valkey` starts an embedded server, stopped
when the kernel exits). `lab.use("valkey")` switches with one line; `lab.reset()` deletes
what dead runs left behind (and nothing else). Beside the store: the lessons' sets of runs
(`lab.cadence_modes`, …), a run as text (`lab.facts`, `lab.events`, `lab.script`, …), showing and
waiting (`lab.show`, `lab.wait`), the cluster lesson's own cluster, joining a class (`lab.join`),
and opening the course in JupyterLab (`emqlab lab`).

This file only names them; each lives in the module of its one idea.
"""

from ...core.measured import benchmark_rows, load_benchmark
from ...core.words import plain
from .classroom_join import join
from .cluster_lesson import (cluster, cluster_placements, enqueue_on_cluster, queue_keys, slots, stop_cluster,
                             work_on_cluster)
from .display import in_background, show, wait
from .launcher import NOTEBOOKS, START, lab_command, lab_env, open_lab, versions
from .listings import FACT_WORDS, Script, beats, events, excerpt, facts, keyspace, script
from .run_sets import cadence_boundary, cadence_modes, latency_boundary, renewal_scaling, slow_link_modes
from .session import SCALE_ENV, backend, close, describe, done, message, prefix, reset, use

__all__ = [
    # the notebook's store (session)
    "backend", "use", "describe", "reset", "prefix", "message", "done", "close", "SCALE_ENV",
    # the lessons' sets of runs (run_sets)
    "cadence_modes", "cadence_boundary", "slow_link_modes", "latency_boundary", "renewal_scaling",
    # a run as text (listings), and words and measured tables the lessons print
    "facts", "events", "beats", "keyspace", "Script", "script", "excerpt", "FACT_WORDS", "plain",
    "benchmark_rows", "load_benchmark",
    # showing, waiting (display)
    "show", "wait", "in_background",
    # the cluster lesson (cluster_lesson)
    "cluster", "stop_cluster", "slots", "enqueue_on_cluster", "queue_keys", "work_on_cluster", "cluster_placements",
    # a seat in a class (classroom_join)
    "join",
    # opening the course (launcher)
    "NOTEBOOKS", "START", "lab_command", "lab_env", "open_lab", "versions",
]
