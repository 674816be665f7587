"""Issue 21: BullMQ for Python (emqlab.tools.bullmq_run). A processor that blocks the event loop lets its job's
lock run out: the stalled checker runs the job again, and BullMQ fails it once it has stalled more than
maxStalledCount; with the work in a thread the lock is renewed and the job runs once. Live through
`emqlab tools bullmq --json`; the words on recorded runs; BullMQ's defaults and scripts pinned."""

from __future__ import annotations

import pytest

from emqlab.core.words import seconds
from emqlab.tools import bullmq_run
from realtime import premise
from support.words import verdicts_read_again


def longest(k: int) -> float:
    """This file's runs with the task k × the story's 3 s (its lockDuration half of it), real seconds."""
    task = k * bullmq_run.TASK_S
    return bullmq_run.Params(task=task, lock_duration=bullmq_run.default_timeout(task)).span()


@pytest.mark.live
@pytest.mark.realtime
def test_a_blocked_loop_loses_its_lock_and_the_job_runs_again_or_fails_as_stalled(library_run, run_stretch):
    k = run_stretch(longest, bullmq_run.TASK_S)  # the 3 s task and its 1.5 s lock, longer on a slower host
    out = library_run("bullmq", "--task", f"{k * bullmq_run.TASK_S:g}")
    v, p = out["verdict"], out["params"]
    assert out["library"] == "bullmq" and out["version"].startswith("3.4.")
    assert p["lock_duration"] == 1.5 * k and p["max_stalled_count"] == 1 and not p["fix"]
    # a completion refused for a missing (or another's) lock leaves the job active with no lock of its holder's;
    # it can then end only through the stalled checker (moveStalledJobsToWait), which counts each move in
    # `stc`: back to wait, where a worker runs it again, and once stc passes maxStalledCount (1: a second
    # stall, after a second run) marked to fail as stalled. The run ends once the job ended and every body
    # that started had ended
    premise(bool(v["refused"]) and v["final_state"] in ("completed", "failed") and v["runs"] == v["started"],
            "a worker's completion was refused for its lock, the job still ended, and every body that ran ended")
    assert v["lapsed_at"] is not None and v["stalled_count"] >= 1 and v["told"] is False
    # as the library decides: run again (twice or more), or failed as stalled; the verdict says which
    assert v["runs"] >= 2 or (v["final_state"] == "failed" and v["failed_reason"] == "job stalled more than allowable limit")
    assert v["effects"] == v["runs"] and not v["lost"]
    if v["final_state"] == "failed":
        assert "failed it as stalled" in v["summary"] or "failed the job as stalled" in v["summary"]
    assert v["refused"], "the blocked worker's completion should have been refused by the server"


@pytest.mark.live
@pytest.mark.realtime
def test_work_in_a_thread_keeps_the_lock_renewed_and_the_job_runs_once(library_run, run_stretch):
    # the renewal loop wakes every lockDuration / 4 (0.375 s at k = 1) and renews a lock older than that, so
    # renewals come up to lockDuration / 2 apart: the lock must not run out between two of them
    k = run_stretch(longest, bullmq_run.TASK_S)
    out = library_run("bullmq", "--fix", "--task", f"{k * bullmq_run.TASK_S:g}")
    v, p = out["verdict"], out["params"]
    assert v["runs"] == 1 and v["effects"] == 1 and v["final_state"] == "completed" and v["stalled_count"] == 0
    # `renewals` counts the moves of the lock's deadline that the sampler saw. One lock, released before the
    # deadline last seen and seen held for at least a lockDuration, was seen to move at least once: unmoved,
    # its first deadline (a lockDuration at most past the first reading) would have come first. More moves
    # seen (BullMQ's loop wakes every lockDuration / 4) take readings between them, which a stalled sampler skips
    locks = [(i["data"]["ended"], i["end"] - i["start"]) for i in out["intervals"] if i["kind"] == "lease"]
    premise(len(locks) == 1 and locks[0][0] == "released" and locks[0][1] >= p["lock_duration"],
            f"the sampler saw the one lock held, never lapsed, for at least a lockDuration, then released: {locks}")
    assert v["lapsed_at"] is None and v["renewals"] >= 1 and v["holders_at_once"] == 1 and v["told"] is None


def test_the_words_say_only_what_the_recorded_runs_hold(recorded_run):
    for tl, v in verdicts_read_again(recorded_run, bullmq_run, "bullmq", "bullmq_fix"):
        assert f"bullmq {v.version}" in v.text and f"lockDuration {seconds(tl.params.lock_duration)}" in v.text
        if v.lapsed_at is not None:
            assert seconds(v.lapsed_at) in v.text
    assert recorded_run("bullmq").verdict.final_state == "failed"
    assert all(i.data.get("loop") == "blocked" for i in recorded_run("bullmq").spans("run"))


def test_bullmq_still_behaves_as_the_lesson_says():
    """Pinned: the Worker's defaults the lesson quotes, how its lock is renewed, and what its stalled check does."""
    import inspect
    from importlib import metadata
    from pathlib import Path

    import bullmq
    from bullmq.lock_manager import LockManager
    from bullmq.worker import Worker

    assert metadata.version("bullmq").startswith("3.4.")
    source = inspect.getsource(Worker.__init__)
    for name, value in bullmq_run.DEFAULTS.items():  # lockDuration 30000, stalledInterval 30000, maxStalledCount 1
        assert f'"{name}": {value}' in source, name
    assert '"lockRenewTime"' in source and '["lockDuration"] // 2' in source
    # one renewal task on the event loop for every lock the worker holds: it wakes every lockRenewTime / 2 and
    # renews each lock taken or renewed more than lockRenewTime / 2 ago (a strict test), so a lock can be a whole
    # lockRenewTime old when it is renewed: the margin the lesson adds to the longest block
    loop = inspect.getsource(LockManager._renewal_loop)
    assert "asyncio.sleep(interval)" in loop and "self.lock_renew_time / 2" in loop
    assert "threshold = self.lock_renew_time / 2" in loop and "if ts + threshold < now:" in loop
    # a failed renewal is told to the worker (lockRenewalFailed); the processor's optional AbortSignal (a third
    # positional parameter) is aborted only by worker.cancelJob, which the renewal never calls
    extend = inspect.getsource(LockManager._extend_locks)
    assert 'emit("lockRenewalFailed"' in extend and "cancel_job" not in extend
    worker = inspect.getsource(bullmq.worker)
    assert "self.processor(job, token, controller.signal)" in worker and "def cancelJob(" in worker
    stalled = (Path(bullmq.__file__).parent / "commands" / "moveStalledJobsToWait-9.lua").read_text()
    assert "job stalled more than allowable limit" in stalled and 'rcall("EXISTS", jobKey .. ":lock") == 0' in stalled
