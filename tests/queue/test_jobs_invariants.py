"""Property-based (hypothesis stateful) checks of the queue on fakeredis: whatever the interleaving
of enqueues, claims, completions, retries, reaps, promotions, extends and fenced effect writes,
stale or current, and however the clock moves:
- every job is in exactly one of pending, active, schedule, done or dead, and its state agrees; once
  dead (its third attempt failed), it stays dead;
- attempts never decrease;
- a completion (or fenced effect) is accepted at most once per job;
(these three are the queue's own invariants, `emqlab.queue.invariants`, judged on a snapshot read after
every rule: the same functions the explorer, the chaos runs and the class board use)
- (session) every job a session holds is active under that worker, and nothing else is indexed (and the
  queue's own `sessions_agree` holds, in every design);
- no job is taken from its holder before the deadline the store granted it in its reply (`lease_kept`:
  the claim's deadline, pushed out or pulled in by each extend or session renewal, never past a hard
  deadline; a holder holds until its completion, fenced effect or retry is accepted or refused).

The machine runs once per design: none (nobody extends), per-job (one extend per job), sweep (a
batched extend), session (two workers' sessions, renewed or left to lapse, opened again once the
reaper ended them), each with and without hard deadlines set at claim."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from emqlab.store.backend import connect
from emqlab.core.errors import StaleToken, StoreError
from emqlab.queue import invariants
from emqlab.queue.jobs import Queue

IDS = st.sampled_from([f"J{i}" for i in range(6)])


WORKERS = st.sampled_from(["worker-1", "worker-2"])


class QueueMachine(RuleBasedStateMachine):
    DESIGN = "sweep"

    def __init__(self):
        super().__init__()
        self.backend = connect("fake")
        self.q = Queue(self.backend, "orders", prefix=self.backend.run_prefix("invariants"))
        self.known: set[str] = set()
        self.claims: list[tuple[str, int]] = []  # every (id, attempts) ever handed out, stale or not
        self.attempts: dict[str, int] = {}
        self.accepted: dict[str, int] = {}
        self.sessions: dict[str, object] = {}  # worker -> its Session (stale ones kept: they are tried too)
        self.dead: set[str] = set()  # jobs seen in the dead set
        # (id, attempts) -> [worker, the deadline the store granted it (server ms), its hard deadline (0: none),
        #                    the session it was claimed under (its token; None: its own lease)]
        self.holders: dict[tuple[str, int], list] = {}

    def teardown(self):
        self.backend.delete_prefix(self.q.base)
        self.backend.close()

    # -- operations ----------------------------------------------------------------------
    @rule(job=IDS, delay=st.sampled_from([0, 0, 5_000, 40_000]))
    def enqueue(self, job, delay):
        added = self.q.enqueue(job, "p", delay_ms=delay)
        assert added == (job not in self.known)
        self.known.add(job)

    @rule(count=st.integers(1, 3), lease=st.sampled_from([1_000, 10_000, 30_000]),
          hard=st.sampled_from([0, 0, 8_000, 50_000]), worker=WORKERS)
    def claim(self, count, lease, hard, worker):
        session = self.sessions.get(worker) if self.DESIGN == "session" else None
        if self.DESIGN == "session" and session is None:
            return
        try:
            got = self.q.claim(lease, count, worker=worker, session=session, max_runtime_ms=hard)
        except StaleToken:
            return
        for c in got:
            self.claims.append((c.id, c.attempts))
            self.holders[(c.id, c.attempts)] = [worker, min(c.deadline, c.hard) if c.hard else c.deadline, c.hard,
                                                session.token if session is not None else None]

    @precondition(lambda self: self.DESIGN == "session")
    @rule(worker=WORKERS, lease=st.sampled_from([5_000, 30_000]))
    def open_session(self, worker, lease):
        try:
            self.sessions[worker] = self.q.open_session(worker, lease)
        except StoreError:
            pass

    @precondition(lambda self: self.DESIGN == "session" and self.sessions)
    @rule(worker=WORKERS, lease=st.sampled_from([5_000, 30_000]))
    def renew_session(self, worker, lease):
        if worker in self.sessions:
            renewed = self.q.renew_session(self.sessions[worker], lease)
            if renewed.held:  # every job this session holds now lives to its new deadline (not one an older,
                for holder in self.holders.values():  # lost session of the same worker held: that one is gone)
                    if holder[0] == worker and holder[3] == renewed.token:
                        holder[1] = min(renewed.deadline, holder[2]) if holder[2] else renewed.deadline

    @rule(ms=st.sampled_from([500, 5_000, 15_000, 45_000]))
    def time_passes(self, ms):
        self.backend.clock.run(until=self.backend.clock.now_ms + ms)

    @rule(limit=st.integers(1, 4))
    def reap(self, limit):
        self.q.reap(limit)

    @rule(limit=st.integers(1, 4))
    def promote(self, limit):
        self.q.promote(limit)

    @precondition(lambda self: self.claims)
    @rule(pick=st.integers(0, 1_000), how=st.sampled_from(["complete", "effect", "retry", "retry-later"]))
    def settle(self, pick, how):
        job, attempts = self.claims[pick % len(self.claims)]
        self.holders.pop((job, attempts), None)  # accepted, given back or refused: it holds nothing after
        try:
            if how == "complete":
                self.q.complete(job, attempts)
            elif how == "effect":
                self.q.record_effect(job, attempts, fenced=True)
            else:
                self.q.retry(job, attempts, delay_ms=0 if how == "retry" else 20_000)
                return
        except StaleToken:
            return
        self.accepted[job] = self.accepted.get(job, 0) + 1

    @precondition(lambda self: self.claims and self.DESIGN in ("sweep", "per-job", "session"))
    @rule(picks=st.lists(st.integers(0, 1_000), min_size=1, max_size=3), lease=st.sampled_from([1_000, 30_000]))
    def extend(self, picks, lease):
        """Session: a stray extend of a session-held job must change nothing."""
        held = [self.claims[p % len(self.claims)] for p in picks]
        if self.DESIGN == "per-job":
            held = held[:1]
        extended = self.q.extend(dict(held).items(), lease)
        if self.DESIGN == "session":
            return  # a session's jobs have no lease of their own: a stray extend changes no deadline
        for pair in dict(held).items():
            if pair[0] in extended.lost:
                self.holders.pop(pair, None)
            elif pair in self.holders:
                hard = self.holders[pair][2]
                self.holders[pair][1] = min(extended.deadline, hard) if hard else extended.deadline

    # -- invariants: the queue's own (emqlab.queue.invariants), on a snapshot read after every rule ------------
    def _broken(self, *names):
        snap = invariants.read(self.q, sorted(self.known))
        facts = invariants.Facts(snapshot=snap, issued=self.attempts, effects=self.accepted)
        return snap, invariants.judge(facts, names)

    @invariant()
    def exactly_one_place(self):
        snap, broken = self._broken("one_place", "never_lost")
        assert not broken, broken
        for job, row in snap.jobs.items():
            if job in self.dead:  # the dead set is the end: nothing brings a job back from it
                assert row.places == ("dead",), (job, row)
            elif row.places == ("dead",):
                self.dead.add(job)

    @invariant()
    def attempts_never_decrease(self):
        snap, broken = self._broken("attempts_grow")
        assert not broken, broken
        self.attempts = {job: row.attempts for job, row in snap.jobs.items()}

    @invariant()
    def a_session_holds_exactly_its_active_jobs(self):
        client = self.q.backend.client
        for worker in ("worker-1", "worker-2"):
            for job in self.q.held_by(worker):
                row = self.q.job(job)
                assert (row["state"], row["worker"], row.get("session")) == ("active", worker, "1"), (job, row)
        for job in self.known:
            row = self.q.job(job)
            if row.get("session") == "1":
                assert row["state"] == "active" and job in self.q.held_by(row["worker"]), (job, row)
                score = client.zscore(self.q.active, job)
                assert score == (float(row["hard"]) if "hard" in row else float("inf")), (job, row, score)

    @invariant()
    def sessions_agree(self):
        _, broken = self._broken("sessions_agree")
        assert not broken, broken

    @invariant()
    def no_lease_is_taken_before_its_deadline(self):
        sec, usec = self.q.backend.client.time()
        now = (int(sec) * 1000 + int(usec) // 1000) / 1000
        holders = tuple(invariants.Holder(w, job, attempts, deadline / 1000)
                        for (job, attempts), (w, deadline, *_) in self.holders.items())
        facts = invariants.Facts(snapshot=invariants.read(self.q, sorted(self.known)), now=now, holders=holders)
        assert invariants.evaluable(facts, ["lease_kept"]) == (("lease_kept",) if holders else ())
        broken = invariants.judge(facts, ["lease_kept"])
        assert not broken, broken

    @invariant()
    def accepted_at_most_once(self):
        """Completions and fenced effects the store accepted (counted here) and effects it applied (its hash)."""
        _, broken = self._broken("one_effect")
        assert not broken, broken


def _machine(design: str):
    machine = type(f"QueueMachine_{design.replace('-', '_')}", (QueueMachine,), {"DESIGN": design})
    machine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
    return machine.TestCase


TestQueueInvariantsNone = _machine("none")
TestQueueInvariantsPerJob = _machine("per-job")
TestQueueInvariantsSweep = _machine("sweep")
TestQueueInvariantsSession = _machine("session")
