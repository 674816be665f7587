"""Issue 21: redis-py's Lock (emqlab.tools.redis_lock_run). `extend(t)` adds t to what is left, so a holder that
extends on a cadence grows its TTL; with `replace_ttl=True` the TTL stays at the lease, a stretch longer than
it lets the lock go, and the holder learns only at its next touch (LockNotOwnedError). Live through
`emqlab tools redis-lock --json`; the words on recorded runs; redis-py's extend pinned on the session's server."""

from __future__ import annotations

import math
import time

import pytest
import redis
from redis.exceptions import LockNotOwnedError

from emqlab.core.words import seconds
from emqlab.core.ranges import TOOLS_SECONDS_LIMIT, get
from emqlab.tools import redis_lock_run
from support.records import REAL_SLACK_S
from support.words import verdicts_read_again

# a PTTL read right after the extend, on loopback (0.05 s was enough on a quiet fast machine), by a holder that a
# loaded machine of this host's speed may deschedule in between
MARGIN_S = REAL_SLACK_S


def lease_s() -> float:
    """The lock's timeout for the live runs: the story's 1 s, or three margins where that is longer (each extend
    then adds 0.6 of it, well apart from a late reading), with the long stretch twice it, as in the story;
    but no longer than a library run's budget allows (past it, the margin is a larger part of the lease)."""
    def allowed(lease: float) -> bool:
        run = redis_lock_run.Params(task=2 * lease, lease=lease)
        return run.task <= get("task").high and run.span() <= TOOLS_SECONDS_LIMIT

    lease = max(redis_lock_run.LEASE_S, math.ceil(30 * MARGIN_S) / 10)
    while lease > redis_lock_run.LEASE_S and not allowed(lease):
        lease = round(lease - 0.1, 1)
    return lease


@pytest.mark.live
@pytest.mark.realtime
def test_extend_grows_the_ttl_and_replace_ttl_keeps_it_at_the_lease(library_run):
    lease = lease_s()
    times = ("--timeout", f"{lease:g}", "--task", f"{2 * lease:g}")
    grown = library_run("redis-lock", *times)["verdict"]
    assert grown["lease"] == lease
    assert grown["pttl_after_fifth"] > 2 * lease and grown["grew"]  # 1 + 5 × 0.6 = 4 leases, less what ran late
    assert grown["pttl_after_extends"][:5] == sorted(grown["pttl_after_extends"][:5])  # tick by tick
    assert grown["runs"] == 1 and grown["lapsed_at"] is None and grown["told"] is None
    kept = library_run("redis-lock", "--fix", *times)["verdict"]
    assert all(abs(x - kept["lease"]) <= MARGIN_S for x in kept["pttl_after_extends"][:5]) and not kept["grew"]
    assert kept["lapsed_at"] is not None and kept["contender_acquired_at"] >= kept["lapsed_at"]
    assert kept["told"] is True and kept["told_how"].startswith("LockNotOwnedError")
    assert kept["release_error"] == "LockNotOwnedError" and kept["runs"] == 1 and kept["effects"] == 1


def test_the_words_say_only_what_the_recorded_runs_hold(recorded_run):
    for tl, v in verdicts_read_again(recorded_run, redis_lock_run, "redis-lock", "redis-lock_fix"):
        assert seconds(v.pttl_after_fifth) in v.headline and f"redis-py {v.version}" in v.text
        assert ("with replace_ttl" in v.label) == tl.params.fix


@pytest.mark.live
def test_redis_py_lock_still_behaves_as_the_lesson_says(valkey_url):
    """Pinned on a real server: extend adds to what is left unless replace_ttl; a lapsed lock's extend and
    release raise LockNotOwnedError."""
    client = redis.Redis.from_url(valkey_url)
    name = "emqlab:tools-pin:redis-lock"
    try:
        lock = client.lock(name, timeout=30, thread_local=False)
        assert lock.acquire(blocking=False)
        lock.extend(30)
        # added: about 30 s left + 30 s, where a replaced TTL would be 30 s at most (15 s to spare on any host)
        assert client.pttl(name) > 45_000  # not an event count: a TTL read back
        lock.extend(1, replace_ttl=True)
        assert client.pttl(name) <= 1000
        time.sleep(1.1)
        with pytest.raises(LockNotOwnedError):
            lock.extend(1)
        with pytest.raises(LockNotOwnedError):
            lock.release()
    finally:
        client.delete(name)
        client.close()
