"""The queue's scripts on both stores: keyspace, validation, claim/complete/retry, reap, promote,
the batched extend, the fenced effect, and the no-resurrection interleaving."""

from __future__ import annotations

import pytest

from emqlab.core.errors import BadParameter, StaleToken, StoreError
from emqlab.queue.jobs import Queue
from emqlab.scenarios.run_harness import run_on

LEASE_MS = 30_000


def wait(backend, ms: float) -> None:
    """Let `ms` model milliseconds pass (instantly on the virtual clock, scaled on the real one)."""
    backend.clock.run(until=backend.clock.now_ms + ms)


@pytest.fixture
def q(backend):
    with run_on(backend, "queue-test", {}) as run:
        yield Queue(backend, "orders", prefix=run.prefix)


@pytest.fixture
def q_slow(backend_slow):
    """`q` with the live store at the slow scale: for a claim whose margin is a few model seconds."""
    with run_on(backend_slow, "queue-test", {}) as run:
        yield Queue(backend_slow, "orders", prefix=run.prefix)


def test_keyspace_keeps_the_hashtag_under_the_prefix(q):
    assert q.pending.endswith("emq:{orders}:pending")
    assert q.pending.startswith("emqlab:")
    assert q.job_key("A1") == q.base + "job:A1"
    assert q.base.startswith(q.backend.prefix)


@pytest.mark.parametrize("name", ["", "a:b", "{x}", "has space", "x" * 65, None, 7])
def test_bad_queue_names_are_refused(fake, name):
    with pytest.raises(BadParameter, match="queue name"):
        Queue(fake, name)


@pytest.mark.parametrize("job_id", ["", "a:b", "x}", "sp ace", "y" * 129])
def test_bad_job_ids_are_refused(q, job_id):
    with pytest.raises(BadParameter, match="job id"):
        q.enqueue(job_id)


def test_prefix_outside_emqlab_is_refused(fake):
    with pytest.raises(BadParameter, match="must lie under"):
        Queue(fake, "orders", prefix="other:")


def test_enqueue_is_idempotent(q):
    assert q.enqueue("A1", "first") is True
    assert q.enqueue("A1", "second") is False
    assert q.job("A1") == {"state": "pending", "attempts": "0", "payload": "first"}
    assert q.sizes()["pending"] == 1


def test_claim_bumps_attempts_and_scores_active_at_server_time_plus_lease(q):
    q.enqueue("A1", "pay")
    [job] = q.claim(LEASE_MS)
    assert (job.id, job.attempts, job.payload) == ("A1", 1, "pay")
    assert job.deadline - job.server_now == q.clock.to_server_ms(LEASE_MS)
    assert job.lease_ms == pytest.approx(LEASE_MS)
    assert q.backend.client.zscore(q.active, "A1") == job.deadline
    assert q.where("A1") == ["active"]
    assert q.claim(LEASE_MS) == []  # nothing else is ready


def test_claim_takes_oldest_first_and_respects_count(q):
    for i in range(5):
        q.enqueue(f"J{i}")
        wait(q.backend, 10)
    jobs = q.claim(LEASE_MS, count=3)
    assert [j.id for j in jobs] == ["J0", "J1", "J2"]
    assert q.sizes() == {"pending": 2, "active": 3, "schedule": 0, "done": 0, "dead": 0}


def test_complete_only_with_current_attempts(q):
    q.enqueue("A1")
    [job] = q.claim(LEASE_MS)
    with pytest.raises(StaleToken) as info:
        q.complete("A1", job.attempts + 1)
    assert info.value.key == q.job_key("A1")
    q.complete("A1", job.attempts)
    assert q.where("A1") == ["done"]
    with pytest.raises(StaleToken):  # a completion is accepted at most once
        q.complete("A1", job.attempts)
    with pytest.raises(StoreError, match="no such job") as missing:  # a runtime error (exit 1), not bad input
        q.complete("nope", 1)
    assert not isinstance(missing.value, BadParameter) and missing.value.exit_code == 1


def test_retry_returns_to_pending_or_schedule(q):
    q.enqueue("A1")
    [job] = q.claim(LEASE_MS)
    q.retry("A1", job.attempts)
    assert q.where("A1") == ["pending"]
    [job] = q.claim(LEASE_MS)
    assert job.attempts == 2
    with pytest.raises(StaleToken):
        q.retry("A1", 1)
    q.retry("A1", 2, delay_ms=5_000)
    assert q.where("A1") == ["schedule"] and q.job("A1")["state"] == "scheduled"


def test_a_job_that_fails_its_last_attempt_goes_to_the_dead_set_and_is_never_claimed_again(q):
    assert q.max_attempts == 3  # EchoMQ's consumer default
    q.enqueue("P1", "poison")
    for n in (1, 2):
        [job] = q.claim(LEASE_MS)
        assert (job.id, job.attempts) == ("P1", n)
        assert q.retry("P1", n, error=f"boom {n}") == "pending"
        assert q.job("P1")["last_error"] == f"boom {n}" and q.where("P1") == ["pending"]
    [job] = q.claim(LEASE_MS)
    assert q.retry("P1", job.attempts, error="boom 3") == "dead"
    assert q.where("P1") == ["dead"] and q.job("P1")["state"] == "dead"
    assert q.dead_jobs() == {"P1": "boom 3"} and q.sizes()["dead"] == 1
    assert q.claim(LEASE_MS, count=10) == [] and q.reap() == [] and q.promote() == 0  # nothing brings it back
    with pytest.raises(StaleToken):
        q.complete("P1", 3)  # nor can its last holder settle it done
    assert q.where("P1") == ["dead"] and q.job("P1")["attempts"] == "3"


def test_the_attempt_limit_is_the_queues_own_and_is_checked(backend):
    q = Queue(backend, "once", prefix=backend.run_prefix("deadset"), max_attempts=1)
    try:
        q.enqueue("A1")
        [job] = q.claim(LEASE_MS)
        assert q.retry("A1", job.attempts, delay_ms=5_000) == "dead"  # the delay does not outlive the limit
        assert q.where("A1") == ["dead"] and q.dead_jobs() == {"A1": ""}
    finally:
        backend.delete_prefix(q.base)
    for bad in (0, 1.5, "3", 10_000):
        with pytest.raises(BadParameter, match="max_attempts must be a whole number from 1 to 1000"):
            Queue(backend, "once", max_attempts=bad)


def test_a_late_retry_after_the_reap_is_refused_and_changes_nothing(q):
    """EchoMQ's retry checks the attempts alone, so a lapsed holder's failure report after the reap
    moves the job from pending to the schedule; here the state check refuses it."""
    q.enqueue("A1")
    [job] = q.claim(1_000)
    wait(q.backend, 1_500)
    assert q.reap() == ["A1"]
    before = (q.where("A1"), q.job("A1"))
    with pytest.raises(StaleToken, match="no longer the job's current active attempt"):
        q.retry("A1", job.attempts, delay_ms=5_000, error="late")
    assert (q.where("A1"), q.job("A1")) == before and "last_error" not in before[1]
    assert q.sizes()["schedule"] == 0


def test_reap_waits_for_the_server_clock(q_slow):
    # the first reap comes 21 model seconds before the lease lapses: 2.1 real seconds at the slow scale
    q = q_slow
    q.enqueue("A1")
    q.claim(LEASE_MS)
    wait(q.backend, LEASE_MS * 0.3)
    assert q.reap() == []
    wait(q.backend, LEASE_MS * 0.7 + 500)
    assert q.reap() == ["A1"]
    assert q.where("A1") == ["pending"]
    assert q.job("A1")["state"] == "pending"
    [again] = q.claim(LEASE_MS)
    assert (again.id, again.attempts) == ("A1", 2)


def test_reap_is_bounded_per_call(q):
    q.enqueue_many([f"J{i}" for i in range(7)])
    q.claim(1_000, count=7)
    wait(q.backend, 1_500)
    assert len(q.reap(limit=3)) == 3
    assert len(q.reap(limit=3)) == 3
    assert len(q.reap(limit=3)) == 1
    assert q.sizes()["pending"] == 7


def test_reap_all_goes_in_slices_until_empty(q):
    q.enqueue_many([f"J{i}" for i in range(25)])
    q.claim(1_000, count=25)
    wait(q.backend, 1_500)
    assert q.reap_all(limit=4) == 25
    assert q.sizes() == {"pending": 25, "active": 0, "schedule": 0, "done": 0, "dead": 0}


def test_promote_moves_only_due_jobs(q_slow):
    # the first promote comes 10 model seconds before "late" falls due: 1 real second at the slow scale
    q = q_slow
    q.enqueue("late", delay_ms=20_000)
    q.enqueue("soon", delay_ms=5_000)
    assert q.where("late") == ["schedule"] and q.job("late")["state"] == "scheduled"
    wait(q.backend, 10_000)
    assert q.promote() == 1
    assert q.where("soon") == ["pending"] and q.where("late") == ["schedule"]
    wait(q.backend, 15_000)
    assert q.promote() == 1
    assert q.sizes()["pending"] == 2


def test_batched_extend_pushes_out_every_held_lease_in_one_round_trip(q):
    q.enqueue_many(["A", "B", "C"])
    held = [(j.id, j.attempts) for j in q.claim(LEASE_MS, count=3)]
    wait(q.backend, 10_000)
    before = q.backend.counter.round_trips
    ext = q.extend(held, LEASE_MS)
    assert q.backend.counter.round_trips - before == 1
    assert ext.lost == ()
    for job_id, _ in held:
        assert q.backend.client.zscore(q.active, job_id) == ext.deadline
    assert ext.deadline - ext.server_now == q.clock.to_server_ms(LEASE_MS)


def test_no_resurrection_stale_extend_and_complete_after_reap(q):
    """claim -> the lease passes -> reap -> the lapsed holder's extend -> its completion."""
    q.enqueue("A1")
    [stale] = q.claim(LEASE_MS)
    wait(q.backend, LEASE_MS + 500)
    assert q.reap() == ["A1"]
    ext = q.extend([("A1", stale.attempts)], LEASE_MS)
    assert ext.lost == ("A1",)
    assert q.where("A1") == ["pending"]  # not slipped back into active
    assert q.backend.client.zscore(q.active, "A1") is None
    with pytest.raises(StaleToken):
        q.complete("A1", stale.attempts)
    with pytest.raises(StaleToken):
        q.record_effect("A1", stale.attempts, fenced=True)
    # the re-claim fences the stale holder out of the new lease as well
    [fresh] = q.claim(LEASE_MS)
    assert fresh.attempts == 2
    deadline = q.backend.client.zscore(q.active, "A1")
    assert q.extend([("A1", stale.attempts)], LEASE_MS * 3).lost == ("A1",)
    assert q.backend.client.zscore(q.active, "A1") == deadline
    with pytest.raises(StaleToken):
        q.complete("A1", stale.attempts)
    q.complete("A1", fresh.attempts)
    assert q.where("A1") == ["done"]


def test_fenced_effect_settles_once_and_unfenced_duplicates(q):
    q.enqueue_many(["F", "U"])
    jobs = {j.id: j for j in q.claim(LEASE_MS, count=2)}
    assert q.record_effect("F", jobs["F"].attempts, fenced=True) == 1
    assert q.where("F") == ["done"]
    with pytest.raises(StaleToken):
        q.record_effect("F", jobs["F"].attempts, fenced=True)
    # unfenced: the lapsed attempt's write lands beside the new attempt's
    wait(q.backend, LEASE_MS + 500)
    q.reap()
    [again] = q.claim(LEASE_MS)
    assert q.record_effect("U", again.attempts, fenced=False) == 1
    assert q.record_effect("U", jobs["U"].attempts, fenced=False) == 2
    assert q.effects_applied() == {"F": 1, "U": 2}


def test_run_prefix_leaves_nothing_behind(backend):
    with run_on(backend, "queue-test", {}) as run:
        queue = Queue(backend, "orders", prefix=run.prefix)
        queue.enqueue("A1")
        queue.claim(LEASE_MS)
        assert backend.keys(run.prefix)
    assert backend.keys(run.prefix) == []


def test_reap_in_slices_drains_a_backlog_in_bounded_calls(q):
    from emqlab.queue.reap_backlog import reap_in_slices

    q.enqueue_many([f"J{i:05d}" for i in range(2_000)])
    while q.claim(1_000, count=500):
        pass
    wait(q.backend, 1_500)
    report = reap_in_slices(q, limit=250)
    assert report.returned == 2_000
    assert report.calls == 9  # eight full slices, then one that finds nothing left
    assert len(report.call_ms) == 9 and report.longest_ms >= 0  # not an event count: a duration, ms
    assert q.sizes() == {"pending": 2_000, "active": 0, "schedule": 0, "done": 0, "dead": 0}
    with pytest.raises(BadParameter, match="from 1 to 1000"):
        q.reap(5_000)


def test_a_reaped_job_is_claimed_before_jobs_that_arrived_normally(backend):
    """Pending is scored by arrival (the server's TIME); the reap scores 0, so the reaped job goes
    ahead of every normal arrival, older or newer (what reap.lua's comment says)."""
    from emqlab.scenarios.run_harness import run_on

    with run_on(backend, "order-test", {}) as run:
        q = Queue(backend, "orders", prefix=run.prefix)
        clock = backend.clock
        q.enqueue("Z9")
        [held] = q.claim(30_000)
        q.enqueue("B1")  # arrived before the reap
        clock.run(until=clock.now_ms + 31_000)
        assert q.reap() == ["Z9"]
        q.enqueue("A1")  # arrived after it
        assert [job.id for job in q.claim(30_000, 3)] == ["Z9", "B1", "A1"]
        assert held.attempts == 1


# -- the session design and the hard deadline --------------------------------------------------------
def test_a_session_holds_its_jobs_and_one_renewal_renews_them_all(q_slow):
    # each wait ends 10 model seconds before a deadline: 1 real second at the slow scale (0.1 s at 0.01,
    # which a loaded machine overran once, and the session had lapsed before its renewal)
    q = q_slow
    q.enqueue_many([f"J{i:02d}" for i in range(40)])
    session = q.open_session("worker-1", LEASE_MS)
    assert session.held and session.deadline - session.server_now == q.clock.to_server_ms(LEASE_MS)
    jobs = q.claim(LEASE_MS, count=40, session=session)
    assert len(jobs) == 40 and all(j.deadline == session.deadline and j.hard == 0 for j in jobs)
    assert q.job("J00")["worker"] == "worker-1" and q.job("J00")["session"] == "1"
    assert sorted(q.held_by("worker-1")) == [j.id for j in jobs]
    assert q.backend.client.zscore(q.active, "J00") == float("inf")  # no lease of its own
    before = q.backend.counter.round_trips
    wait(q.backend, 20_000)
    renewed = q.renew_session(session, LEASE_MS)
    assert q.backend.counter.round_trips - before == 1  # one call, whatever K is
    assert renewed.held and q.session_deadlines() == {"worker-1": renewed.deadline}
    wait(q.backend, 20_000)  # 40 s after the claim: past a lease, but the session was renewed
    assert q.reap() == [] and q.sizes()["active"] == 40
    q.complete("J00", jobs[0].attempts)  # settling drops the job from the worker's index
    assert "J00" not in q.held_by("worker-1")
    with pytest.raises(StoreError, match="already has a session"):
        q.open_session("worker-1", LEASE_MS)


def test_a_lapsed_session_is_reaped_in_bounded_slices_and_fences_its_worker(q_slow):
    # the first reap comes 15 model seconds before the session lapses: 1.5 real seconds at the slow scale
    q = q_slow
    q.enqueue_many([f"J{i}" for i in range(7)])
    session = q.open_session("worker-1", LEASE_MS)
    jobs = {j.id: j for j in q.claim(LEASE_MS, count=7, session=session)}
    wait(q.backend, LEASE_MS * 0.5)
    assert q.reap() == []
    wait(q.backend, LEASE_MS * 0.5 + 500)
    first = q.reap_slice(3)
    assert len(first.ids) == 3 and first.ended == []
    # the first slice ended the session: its renewal and its claims fail from here on
    assert not q.renew_session(session, LEASE_MS).held
    with pytest.raises(StaleToken, match="session"):
        q.claim(LEASE_MS, session=session)
    assert len(q.reap_slice(3).ids) == 3
    last = q.reap_slice(3)
    assert len(last.ids) == 1 and last.ended == ["worker-1"]
    assert q.sizes() == {"pending": 7, "active": 0, "schedule": 0, "done": 0, "dead": 0}
    assert q.session_deadlines() == {} and q.held_by("worker-1") == []
    stale = jobs["J0"]
    with pytest.raises(StaleToken):
        q.complete("J0", stale.attempts)
    with pytest.raises(StaleToken):
        q.record_effect("J0", stale.attempts, fenced=True)
    assert q.extend([("J0", stale.attempts)], LEASE_MS).lost == ("J0",)
    assert q.where("J0") == ["pending"]  # not slipped back into active
    again = q.open_session("worker-1", LEASE_MS)  # the name is free once the reaper ended it
    fresh = {j.id: j for j in q.claim(LEASE_MS, count=7, session=again)}
    assert fresh["J0"].attempts == 2
    with pytest.raises(StaleToken):
        q.complete("J0", stale.attempts)
    q.complete("J0", fresh["J0"].attempts)
    assert q.close_session(again) == -1  # jobs still held: left to the reaper
    for job_id, job in fresh.items():
        if job_id != "J0":
            q.complete(job_id, job.attempts)
    assert q.close_session(again) == 1 and q.session_deadlines() == {}


@pytest.mark.parametrize("design", ["lease", "session"])
def test_a_hard_deadline_bounds_a_job_whatever_renews_it(q, design):
    """Set once at claim; the batched extend never pushes a lease past it, a session never holds past it."""
    q.enqueue("A1")
    session = q.open_session("worker-1", LEASE_MS) if design == "session" else None
    [job] = q.claim(LEASE_MS, session=session, worker="worker-1", max_runtime_ms=50_000)
    assert job.hard - job.server_now == q.clock.to_server_ms(50_000)
    for _ in range(4):  # renewed every 15 s: 60 s in all
        wait(q.backend, 15_000)
        if session:
            session = q.renew_session(session, LEASE_MS)
            assert session.held
        else:
            assert q.extend([("A1", job.attempts)], LEASE_MS).lost == ()
            assert q.backend.client.zscore(q.active, "A1") <= job.hard
        if q.where("A1") == ["active"] and q.reap() == ["A1"]:
            break
    assert q.where("A1") == ["pending"] and q.held_by("worker-1") == []
    with pytest.raises(StaleToken):
        q.complete("A1", job.attempts)
    assert q.claim(LEASE_MS)[0].attempts == 2
