"""Issue 21: python-redis-lock (emqlab.tools.python_redis_lock_run). A holder frozen past its expiry loses the
lock to a second holder; thawed, it is never told (its renewal thread's NotAcquired dies with that thread, its
release raises only after it wrote the effect); an expire above the freeze keeps one holder at a time. Live
through `emqlab tools python-redis-lock --json`; the words on recorded runs; the library pinned."""

from __future__ import annotations

import time

import pytest
import redis

from emqlab.core.words import seconds
from emqlab.tools import python_redis_lock_run
from support import verdicts_read_again


def fix_expire(k: int) -> int:
    """The fix's expire: the story's freeze + 2 s (its default) at k = 1, 2 s more for each step of k, so the
    renewal the freeze delayed lands well before the lock runs out (whole seconds, as the library takes it)."""
    return int(python_redis_lock_run.FREEZE_S) + 2 * k


def longest(k: int) -> float:
    """The longer of this file's runs, real seconds: the failure with the job k × the story's 5 s (it outlasts the
    3 s freeze), the fix with that job and `fix_expire(k)`."""
    mod = python_redis_lock_run
    return max(mod.Params(task=k * mod.TASK_S, expire=mod.EXPIRE_S).span(),
               mod.Params(fix=True, task=k * mod.TASK_S, expire=fix_expire(k)).span())


@pytest.mark.live
@pytest.mark.realtime
def test_a_frozen_holder_loses_the_lock_and_is_never_told(library_run, run_stretch):
    # the job outlasts the freeze by 1.5 s at k = 1: thawed, the renewal thread dies while the holder still works
    k = run_stretch(longest, python_redis_lock_run.TASK_S)
    task = ("--task", f"{k * python_redis_lock_run.TASK_S:g}")
    failure = library_run("python-redis-lock", *task)
    v = failure["verdict"]
    assert v["holders_at_once"] == 2 and v["told"] is False
    assert v["runs"] == 2 and v["effects"] == 2 and v["effect_after_loss"]
    assert v["renewal_thread_error"] == "NotAcquired" and v["release_error"] == "NotAcquired"
    assert v["lapsed_at"] <= v["second_acquired_at"]
    # thawed, the renewal thread dies while the holder still works its job: the holder's code goes on to write
    died, effect = (next(e["t"] for e in failure["events"] if e["actor"] == "holder" and e["kind"] == kind)
                    for kind in ("renewal_thread_died", "effect"))
    assert v["frozen"][0][1] <= died < effect
    # the second holder waits out the holder's job in BLPOPs of `expire` seconds each, 5 s or more: past redis-py 8's
    # default 5 s read timeout, which the run turns off for its holders (a TimeoutError there would end the run)
    fixed = library_run("python-redis-lock", "--fix", "--timeout", str(fix_expire(k)), *task)["verdict"]
    # one holder at a time: the holder's release is stamped when it let go, before the second's acquire
    assert (fixed["holders_at_once"], fixed["runs"], fixed["effects"], fixed["told"]) == (1, 1, 1, None), fixed
    assert fixed["lapsed_at"] is None and fixed["release_error"] is None


def test_the_words_say_only_what_the_recorded_runs_hold(recorded_run):
    for _, v in verdicts_read_again(recorded_run, python_redis_lock_run, "python-redis-lock", "python-redis-lock_fix"):
        assert f"python-redis-lock {v.version}" in v.told and seconds(v.renewal_every) in v.told
    told = recorded_run("python-redis-lock").verdict.told
    assert "never told" in told and "only its release() raised NotAcquired, after the effect" in told


@pytest.mark.live
def test_python_redis_lock_still_behaves_as_the_lesson_says(valkey_url):
    """Pinned: the version, one renewal thread per lock every 2/3 of expire, whole-second expiry, and
    NotAcquired from extend and release once the lock is gone."""
    import inspect
    from importlib import metadata

    import redis_lock

    assert metadata.version("python-redis-lock").startswith("4.0.")
    assert "float(expire) * 2 / 3 if auto_renewal" in inspect.getsource(redis_lock.Lock.__init__)
    assert "threading.Thread(" in inspect.getsource(redis_lock.Lock._start_lock_renewer)
    client = redis.StrictRedis.from_url(valkey_url)
    lock = redis_lock.Lock(client, "emqlab:tools-pin:python-redis-lock", expire=1)
    try:
        assert lock.acquire(blocking=False)
        assert 0 < client.pttl("lock:emqlab:tools-pin:python-redis-lock") <= 1000  # not an event count: a TTL
        time.sleep(1.1)
        with pytest.raises(redis_lock.NotAcquired):
            lock.extend()
        with pytest.raises(redis_lock.NotAcquired):
            lock.release()
    finally:
        client.delete("lock:emqlab:tools-pin:python-redis-lock", "lock-signal:emqlab:tools-pin:python-redis-lock")
        client.close()
