"""Issue 21: RQ (emqlab.tools.rq_run). A worker killed mid-job leaves the job in the started registry until its
heartbeat's expiry (the interval + RQ's fixed 60 s), then RQ moves it to the failed registry as abandoned:
never run. With Retry the abandoned job runs once; when the worker was only slow, twice. Live through
`emqlab tools rq --json` (RQ waits a minute: the two runs go side by side); the words on recorded runs; RQ's
heartbeat and cleaning pinned."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from emqlab.core.words import seconds
from emqlab.tools import rq_run
from support.records import REAL_SLACK_S
from support.words import verdicts_read_again

RUN_SECONDS = 65  # about how long this file runs on a quiet 2-core machine: the suite starts the longest first

# RQ scores in whole seconds, and cleans once a second here; and a loaded machine of this host's speed is late
SLACK_S = 1.0 + REAL_SLACK_S  # 1.5 s on the fast host


def longest(k: int) -> float:
    """This file's runs with the task k × the story's 2 s (the job outlasts the kill 0.5 s in), real seconds."""
    return rq_run.Params(fix=True, task=k * rq_run.TASK_S).span()


@pytest.mark.live
@pytest.mark.realtime
@pytest.mark.slow
def test_a_killed_workers_job_is_abandoned_and_retry_runs_it_once(library_run, run_stretch):
    k = run_stretch(longest, rq_run.TASK_S)  # the 2 s job, longer on a slower host: still killed mid-job
    task = ("--task", f"{k * rq_run.TASK_S:g}")
    with ThreadPoolExecutor(2) as pool:  # each on a server of its own; a minute each, mostly waiting
        failure, fix = pool.submit(library_run, "rq", *task), pool.submit(library_run, "rq", "--fix", *task)
        failure, fix = failure.result(), fix.result()
    for out in (failure, fix):
        v = out["verdict"]
        assert out["library"] == "rq" and out["version"].startswith("2.12.") and v["fate"] == "killed"
        # the entry stayed until its heartbeat's expiry, RQ's 60 s after RQ took the job, no sooner: RQ scores
        # in whole seconds rounded down (the interval's 1 s makes up for that), and the body reports its start
        # a little after RQ scored it (54 ms on a busy machine, with the score's second rounded down by 0.99 s)
        began = next(e["t"] for e in out["events"] if e["kind"] == "start")
        assert v["heartbeat_deadline"] >= began + rq_run.FIXED_S - SLACK_S
        assert v["heartbeat_deadline"] - 0.05 <= v["abandoned_at"] <= v["heartbeat_deadline"] + SLACK_S
    v = failure["verdict"]
    assert v["lost"] is True and v["runs"] == 0 and v["effects"] == 0 and v["in_failed_registry"]
    assert v["final_status"] == "failed" and not v["retried"]
    v = fix["verdict"]
    assert v["lost"] is False and v["runs"] == 1 and v["effects"] == 1 and v["retried"] and v["started"] == 2
    assert v["final_status"] == "finished" and v["finished_in"] != v["workers"][:1]


def test_the_words_say_only_what_the_recorded_runs_hold(recorded_run):
    for _, v in verdicts_read_again(recorded_run, rq_run, "rq", "rq_fix", "rq_fix_fate_slow"):
        assert seconds(v.abandoned_at) in v.headline and f"rq {v.version}" in v.text
    slow = recorded_run("rq_fix_fate_slow").verdict
    assert slow.runs == 2 and slow.effects == 2 and slow.holders_at_once == 2 and slow.holder_told is False
    assert "twice" in slow.headline


def test_rq_still_behaves_as_the_lesson_says():
    """Pinned: the heartbeat's expiry (the interval + 60 s), the defaults the lesson quotes, and a cleaning that
    retries an abandoned job with retries left, and fails it otherwise."""
    import inspect
    from importlib import metadata

    from rq import defaults
    from rq.registry import StartedJobRegistry
    from rq.worker import Worker

    assert metadata.version("rq").startswith("2.12.")
    assert defaults.DEFAULT_JOB_MONITORING_INTERVAL == rq_run.DEFAULTS["job_monitoring_interval"] == 30
    assert defaults.DEFAULT_MAINTENANCE_TASK_INTERVAL == rq_run.DEFAULTS["maintenance_interval"] == 600
    # the library's own method, called on a stand-in worker: nothing of RQ is changed
    worker = SimpleNamespace(job_monitoring_interval=1, current_job_working_time=0)
    assert Worker.get_heartbeat_ttl(worker, SimpleNamespace(timeout=600)) == 1 + rq_run.FIXED_S
    assert Worker.get_heartbeat_ttl(worker, SimpleNamespace(timeout=None)) == 1 + rq_run.FIXED_S
    # the lesson's worst case with the defaults (about 15 min): an idle worker looks for cleaning only when its
    # blocking dequeue times out, after worker_ttl - 15 s, and cleans once maintenance_interval has passed
    from rq.queue import Queue

    assert defaults.DEFAULT_WORKER_TTL == 420 and Worker.dequeue_timeout.fget(SimpleNamespace(worker_ttl=420)) == 405
    assert Queue.DEFAULT_TIMEOUT == 180  # job_timeout's default, which the lesson names
    assert "timedelta(seconds=self.maintenance_interval)" in inspect.getsource(Worker.should_run_maintenance_tasks.fget)
    cleanup = inspect.getsource(StartedJobRegistry.cleanup)
    assert "AbandonedJobError" in cleanup and "job.retries_left" in cleanup and "job.retry(" in cleanup
