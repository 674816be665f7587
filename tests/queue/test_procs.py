"""Consumer processes held at a gate: booted and connected, consuming only once opened."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager

import pytest

from emqlab.core.errors import StoreError
from emqlab.queue.jobs import Queue
from emqlab.queue.procs import ProcessPool
from emqlab.scenarios.run_harness import run_on
from realtime import timeout_s

OPTS = dict(lease_ms=30_000, beat_ms=5_000, work_ms=1_000)


def _kinds(live, key, actor):
    return [json.loads(e)["kind"] for e in live.client.lrange(key, 0, -1) if json.loads(e)["actor"] == actor]


@contextmanager
def one_gated_child(live):
    """A queue holding job J1, and one consumer process booted behind its gate: (queue, events key, pool)."""
    with run_on(live, "gate", {}) as run:
        q = Queue(live, "orders", prefix=run.prefix)
        q.enqueue("J1")
        events = q.base + "events"
        with ProcessPool(live, q, t0_wall=time.time(), events_key=events) as pool:
            pool.spawn("worker-1", gated=True, **OPTS)
            pool.wait_ready(["worker-1"], timeout_s(60))
            yield q, events, pool


@pytest.mark.live
def test_a_gated_child_boots_then_waits_and_consumes_once_opened(live):
    with one_gated_child(live) as (q, events, pool):
        time.sleep(0.3)  # thirty of its beats at this scale, were it consuming
        assert q.where("J1") == ["pending"] and _kinds(live, events, "worker-1") == []
        pool.open("worker-1")
        deadline = time.time() + timeout_s(30)
        while q.where("J1") != ["done"] and time.time() < deadline:
            time.sleep(0.01)
        assert q.where("J1") == ["done"]
        pool.stop_all()
        assert pool.procs["worker-1"].returncode == 0
        kinds = _kinds(live, events, "worker-1")
    assert kinds[0] == "started" and "claim" in kinds and "complete" in kinds


@pytest.mark.live
def test_a_gated_child_never_opened_stops_gracefully_having_done_nothing(live):
    with one_gated_child(live) as (q, events, pool):
        pool.stop_all()
        assert pool.procs["worker-1"].returncode == 0
        assert q.where("J1") == ["pending"] and _kinds(live, events, "worker-1") == []


@pytest.mark.live
def test_waiting_for_a_child_that_never_says_ready_ends_in_one_line(live):
    with run_on(live, "gate", {}) as run:
        q = Queue(live, "orders", prefix=run.prefix)
        with ProcessPool(live, q, t0_wall=time.time(), events_key=q.base + "events") as pool:
            pool.spawn("worker-1", **OPTS)  # not gated: it never pushes a ready line
            with pytest.raises(StoreError, match=r"^worker-1 did not boot within 0.5 s \(real time\)$"):
                pool.wait_ready(["worker-1"], 0.5)


@pytest.mark.live
def test_booted_names_each_child_once_as_it_connects_without_waiting(live):
    with run_on(live, "gate", {}) as run:
        q = Queue(live, "orders", prefix=run.prefix)
        with ProcessPool(live, q, t0_wall=time.time(), events_key=q.base + "events") as pool:
            assert pool.booted() == []  # nobody yet, and the call returns at once
            for name in ("worker-1", "worker-2"):
                pool.spawn(name, gated=True, **OPTS)
            seen: list[str] = []
            deadline = time.time() + timeout_s(60)
            while len(seen) < 2 and time.time() < deadline:
                seen += pool.booted()
                time.sleep(0.01)
            assert sorted(seen) == ["worker-1", "worker-2"]
            assert pool.booted() == []  # each name is handed out once
            pool.stop_all()
