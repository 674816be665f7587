"""Issues 21 and 35: python-redis-lock (emqlab.tools.python_redis_lock_run). A holder frozen past its expiry
loses the lock to a second holder; thawed, it is told only by its release, after it wrote the effect (its
renewal thread's NotAcquired dies with that thread); an expire above three times the freeze keeps one holder at
a time even when the freeze starts just before an extend. Live through `emqlab tools python-redis-lock --json`;
the words on recorded runs; the library pinned."""

from __future__ import annotations

import time

import pytest
import redis

from emqlab.core.words import seconds
from emqlab.tools import python_redis_lock_run
from support.words import verdicts_read_again


def fix_expire(k: int) -> int:
    """The fix's expire: three times the story's freeze + 2 s (its default) at k = 1, 2 s more for each step of k, so
    even at the worst moment the third of expire left outlasts the freeze (whole seconds, as the library takes it)."""
    return 3 * int(python_redis_lock_run.PAUSE_S) + 2 * k


def _params(expire: int, task: float | None = None, fix: bool = False):
    """A run's Params as `python_redis_lock` makes them: the freeze at the worst moment, the task long enough."""
    mod = python_redis_lock_run
    at = mod.worst_pause_at(expire)
    return mod.Params(fix=fix, task=task or max(mod.TASK_S, at + mod.PAUSE_S + mod.AFTER_RESUME_S + 0.001), expire=expire,
                      pause_at=at)


def longest(k: int) -> float:
    """The longest of this file's runs, real seconds: the failure with the job k × the story's 5 s, the old advice
    (expire 5 s) and the fix with `fix_expire(k)`, each frozen at its worst moment."""
    mod = python_redis_lock_run
    return max(_params(mod.EXPIRE_S, k * mod.TASK_S).span(), _params(5).span(), _params(fix_expire(k), fix=True).span())


def _frozen_after_acquire(run: dict) -> float:
    acquired = next(e["t"] for e in run["events"] if e["actor"] == "holder" and e["kind"] == "acquire")
    return run["verdict"]["frozen"][0][0] - acquired


@pytest.mark.live
@pytest.mark.realtime
def test_a_frozen_holder_loses_the_lock_and_is_told_only_at_release(library_run, run_stretch):
    # the job outlasts the freeze by 1.5 s at k = 1: thawed, the renewal thread dies while the holder still works
    mod = python_redis_lock_run
    k = run_stretch(longest, mod.TASK_S)
    task = ("--task", f"{k * mod.TASK_S:g}")
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
    # an expire merely above the freeze (5 s for a 3 s freeze) fails at the worst moment: frozen just before the
    # renewal thread's first extend, with a third of expire left on the key, the second holder gets in
    old = library_run("python-redis-lock", "--timeout", "5")
    assert old["params"]["freeze_at"] == mod.worst_pause_at(5)
    assert old["verdict"]["holders_at_once"] == 2, old["verdict"]
    # the fix, at its own worst moment: one holder at a time. The second holder waits out the holder's job in
    # BLPOPs of `expire` seconds each, past redis-py 8's default 5 s read timeout, which the run turns off
    fixed_run = library_run("python-redis-lock", "--fix", "--timeout", str(fix_expire(k)))
    fixed = fixed_run["verdict"]
    assert fixed_run["params"]["freeze_at"] == mod.worst_pause_at(fix_expire(k))
    assert _frozen_after_acquire(fixed_run) < mod.renewal_every(fix_expire(k))  # frozen before the first extend
    # one holder at a time: the holder's release is stamped when it let go, before the second's acquire
    assert (fixed["holders_at_once"], fixed["runs"], fixed["effects"], fixed["told"]) == (1, 1, 1, None), fixed
    assert fixed["lapsed_at"] is None and fixed["release_error"] is None


def test_a_pause_outside_the_story_is_one_line(capsys):
    from emqlab.cli import command

    for argv, said in ((["--pause-at", "200"], "tools_pause_at must be a number from 0.1 to 60"),
                       (["--pause-at", "9", "--task", "6"], "--task at least 13.5 s, got 6 s")):
        assert command.main(["tools", "python-redis-lock", "--backend", "valkey", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert said in err and len(err.splitlines()) == 1, err
    assert command.main(["tools", "celery", "--backend", "valkey", "--pause-at", "2"]) == 2
    assert "celery's run takes no --pause-at" in capsys.readouterr().err


def test_the_words_say_only_what_the_recorded_runs_hold(recorded_run):
    for _, v in verdicts_read_again(recorded_run, python_redis_lock_run, "python-redis-lock", "python-redis-lock_fix"):
        assert f"python-redis-lock {v.version}" in v.text and seconds(v.renewal_every) in v.text
    failure = recorded_run("python-redis-lock").verdict
    assert failure.holder_told is False and failure.release_error == "NotAcquired"
    # told, but only at its release, after the effect: the words never say "never told"
    assert "never told" not in failure.text and "learned it only at its release" in failure.headline
    assert "only its release() raised NotAcquired, after the effect" in failure.text
    assert failure.static == "2 holders, told only at release, runs twice"


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
    # the lesson's price of a long expire, up to about twice it for a dead holder: a blocked acquire retries its
    # SET NX only when its BLPOP of `expire` seconds times out, and only release() (not an expiring key) pushes
    # the signal that wakes it
    assert "blpop_timeout = timeout or self._expire or 0" in inspect.getsource(redis_lock.Lock.acquire)
    assert b"lpush" in redis_lock.UNLOCK_SCRIPT and b"lpush" not in redis_lock.EXTEND_SCRIPT
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
