"""A lease lost in a failover: the lease lives in one server's memory and replication is asynchronous.

The run starts its own primary and replica (`emqlab.faults.replica.ReplicaPair`, whatever store the
caller uses) and plays one story on the real clock, `scale` real seconds per model second:

- replication lags `LAG_S` behind the primary, and stalls just before the holder asks for the lease (with
  `fence`, before it takes its token, which so stays on the primary alone);
- the holder takes the lease on the primary (SET NX PX, a random token) and works; with a guard it
  first takes a fencing token (INCR on the same store: `fence`; confirmed by `WAIT 1`: `fence-wait`)
  or confirms its acquire with `WAIT 1` and starts only if a replica acknowledged (`wait`);
- `KILL_AFTER_S` later the primary is SIGKILLed (what the link still held dies with it), the replica
  is promoted (REPLICAOF NO ONE), and a fresh server rejoins as its replica (the story's clock stops
  while that server starts: a machine's start-up time is no part of the story);
- the contender, running the same client code, takes the lease on the new primary and works;
- each worker writes its result to a storage lane in `PARTS` parts, one at the end of each part of
  its job, carrying its token; the storage (the resource the lock protects, outside the store)
  refuses a token lower than the highest it has seen. A worker stops when its lease runs out by its
  own clock, or when the storage refuses its token.

Events: servers `primary` (killed, rejoined) and `replica` (stall, promoted), workers `holder` and
`contender` (token, acquire, acquire_failed, wait, not_started, work_start, write, work_stopped,
work_done, release, release_refused), `storage` (write: writer, token, accepted, highest). Intervals:
`lease` on the server lanes (holder: who holds it, ended: released / server died / lapsed),
`run` (working) and `holds` (when a worker believed it held the lease) on the worker lanes.
"""

from __future__ import annotations

import heapq
import time
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import count
from typing import Any

from ..store.backend import StoreSpec, connect, store_spec
from ..store.clock import to_ms, to_s
from ..core.errors import BackendUnavailable, BadParameter, StaleToken, StoreError
from ..lease.leases import Leases, new_token
from ..core.kinds import Kind
from ..core.ranges import check_run
from ..faults.replica import ReplicaPair, wait, wait_cost
from ..core.timeline import Interval, Record, Timeline, Verdict, WallRecorder, most_at_once
from ..core.words import ModeWords, plural, seconds
from .run_harness import mode_words, positive

__all__ = ["failover", "verdict", "words", "figure_words", "GUARDS", "SCALE"]

GUARDS = ("none", "wait", "fence", "fence-wait")
SCALE = 0.04  # real seconds per model second: a 30 s lease lasts 1.2 real seconds
LAG_S = 2.0  # model seconds replication lags behind the primary during the story
WAIT_S = 8.0  # WAIT's timeout, model seconds: twice the 2 × LAG_S an acknowledgement takes
KILL_AFTER_S = 2.0  # the primary dies this long after the holder's acquire
POLL_S = 1.0  # the contender's retry
PARTS = 3  # a job writes its result in this many parts
COUNTER_START = 33  # the fencing counter's value before the story: it has a past
WAIT_COST_N = 50  # acquires timed each way (alternating) for the WAIT cost


@dataclass(frozen=True, kw_only=True)
class Params(Record):
    """A failover run's parameters: the guard, the lease and the job (model seconds), and the story's
    constants: replication's lag, WAIT's timeout, how long after the acquire the primary dies, the
    parts a job writes, the clock's scale (real seconds per model second)."""

    guard: str
    lease: float
    job: float
    lag: float = LAG_S
    wait_timeout: float = WAIT_S
    kill_after: float = KILL_AFTER_S
    parts: int = PARTS
    scale: float = SCALE

    @property
    def mode(self) -> str:
        return self.guard

    def cost(self) -> tuple[float, float]:
        """(model span, store steps): the story (kill, promote, two jobs) and, at worst, the contender
        outwaiting a lease."""
        span = 20 + self.job + self.lease
        return span, span + 100


@dataclass(frozen=True, kw_only=True)
class FailoverVerdict(Verdict):
    """The facts of a failover run, read off its events (model seconds; per worker where a dict)."""

    guard: str
    holders_at_once: int
    lease_on_new_primary: bool
    lost_in_failover: bool
    holder_started: bool
    contender_started: bool
    tokens: dict
    token_reused: bool | None  # None: no fencing token, nothing to reuse
    stale_write_refused: bool | None  # None: no fencing token, nothing for the storage to refuse
    double_run: bool
    both_ran_s: float
    acquired_at: dict
    wait_acked: dict
    killed_at: float | None
    promoted_at: float | None
    writes: list
    writes_taken: dict
    refused_at: float | None
    # the stale holder's writes the storage took after the contender drew a newer token, before any write carried
    # it: fencing orders writes, it cannot refuse one that arrives before the first newer token ([{t, token}])
    stale_taken: list
    # when the holder was first told it no longer held the lock, and by whom: "storage" (its write refused) or
    # "release" (the new primary refused its release: the lock was another's); None: it never was
    holder_told_at: float | None
    holder_told_by: str | None
    wait_cost_ms: float | None
    wait_cost: dict | None


class Storage:
    """The resource the lock protects: it keeps every write, and refuses a token lower than the
    highest it has seen (an equal token reads as the same holder writing again). Unfenced writers
    carry no token and are always taken."""

    def __init__(self):
        self.highest: int | None = None
        self.writes: list[tuple[str, int | None, bool]] = []

    def write(self, writer: str, token: int | None) -> bool:
        accepted = token is None or self.highest is None or token >= self.highest
        if accepted and token is not None:
            self.highest = token
        self.writes.append((writer, token, accepted))
        return accepted


class Worker:
    """One worker's state: its lease token, fencing token, and the intervals it is drawn with."""

    def __init__(self, name: str):
        self.name, self.token = name, new_token()
        self.fence: int | None = None
        self.deadline: float | None = None  # when it believes its lease runs out (its own clock)
        self.lease: Interval | None = None  # the band on a server lane
        self.run: Interval | None = None
        self.holds: Interval | None = None
        self.working = False


class Story:
    """The run, step by step on the real clock: each step is due at a model time and runs in order."""

    def __init__(self, guard: str, pair: ReplicaPair, lease_s: float, job_s: float, spec: StoreSpec,
                 timeline: Timeline):
        self.guard, self.pair, self.lease_s, self.job_s = guard, pair, lease_s, job_s
        self.fenced, self.waits = guard.startswith("fence"), guard.endswith("wait")
        self.clock = spec.make_clock()  # the story's own: it converts every duration that is real time
        self.rec = WallRecorder(timeline, time.time(), self.clock)
        self.servers = {name: connect(store_spec(pair.url(name), clock=spec.clock, scale=spec.scale))
                        for name in ("primary", "replica")}
        self.prefix = self.servers["primary"].run_prefix("failover")
        self.lock, self.counter = self.prefix + "lock", self.prefix + "fence"
        self.current = "primary"  # where the clients send their commands (they follow the failover)
        self.storage = Storage()
        self.holder, self.contender = Worker("holder"), Worker("contender")
        self._steps: list = []
        self._seq = count()

    # -- the clock ---------------------------------------------------------------------------------
    @property
    def t(self) -> float:
        return self.rec.t

    def at(self, t: float, step, *args) -> None:
        heapq.heappush(self._steps, (t, next(self._seq), step, args))

    def play(self) -> None:
        while self._steps:
            t, _, step, args = heapq.heappop(self._steps)
            if step in (self.write, self.expire) and not args[0].working:
                continue  # a worker that has stopped has nothing left to do: not waited for
            self.rec.sleep_until(t)
            step(*args)

    def close(self) -> None:
        for backend in self.servers.values():
            backend.close()

    # -- the store, as the clients reach it ----------------------------------------------------------
    def _client(self):
        return self.servers[self.current].client

    def _leases(self) -> Leases:
        return Leases(self.servers[self.current], prefix=self.prefix)

    def _wait(self, w: Worker, what: str) -> bool:
        # over the lagging link the acknowledgement's trip is the story's time. After the failover the rejoined
        # server replicates directly, with no lag: its acknowledgement takes only the machine's time (a loaded
        # machine takes a few hundred ms), so the story's clock stands still meanwhile and never lets the
        # holder's next write pass the contender's
        lagging = self.current == "primary"
        with nullcontext() if lagging else self.rec.off_the_clock():
            acked = wait(self._client(), 1, self.clock.to_server_ms(to_ms(WAIT_S)))
        self.rec.event(w.name, Kind.WAIT, acked=acked, what=what, server=self.current)
        return acked >= 1

    def _not_started(self, w: Worker, reason: str) -> None:
        self.rec.event(w.name, Kind.NOT_STARTED, reason=reason)
        self.release(w)

    # -- the story ---------------------------------------------------------------------------------
    def setup(self) -> dict[str, Any] | None:
        """Before the story (not on its timeline): the counter's past, the WAIT cost, the lag."""
        client = self.servers["primary"].client
        client.set(self.counter, COUNTER_START)
        if wait(client, 1, 5000) < 1:
            raise BackendUnavailable("the replica did not acknowledge the fencing counter on a healthy link")
        cost = wait_cost(client, self.prefix, WAIT_COST_N) if self.waits else None
        self.pair.lag(self.clock.real_s(LAG_S))
        self.rec.t0_wall = time.time()
        return cost

    def _stall(self) -> None:
        self.pair.stall()
        self.rec.event("replica", Kind.STALL, lag=LAG_S)

    def begin(self) -> None:
        h = self.holder
        if self.guard == "fence":
            # an unconfirmed token lives on the primary alone: replication stalls first (sent just after the
            # INCR, a loaded machine's stall came later than the lag and the token reached the replica)
            self._stall()
            self.take_token(h)
        else:
            if self.fenced:
                self.take_token(h)
                if not self._wait(h, "token"):  # fence-wait: a replica must have the token before the lease
                    self.rec.event(h.name, Kind.NOT_STARTED, reason="no replica acknowledged its token")
                    return self.at(self.t + KILL_AFTER_S, self.fail_over)
            self._stall()
        if not self.acquire(h):
            raise StoreError("the holder could not take a fresh lock on the primary")
        if self.guard == "wait" and not self._wait(h, "lease"):
            self._not_started(h, "no replica acknowledged its acquire")
        else:
            self.start(h)
        self.at(self.t + KILL_AFTER_S, self.fail_over)

    def take_token(self, w: Worker) -> None:
        w.fence = int(self._client().incr(self.counter))
        self.rec.event(w.name, Kind.TOKEN, token=w.fence, server=self.current)
        if w.lease is not None and w.lease.end is None:
            w.lease.data["token"] = w.fence

    def acquire(self, w: Worker) -> bool:
        sent = self.t
        grant = self._leases().acquire(self.lock, to_ms(self.lease_s), w.token)
        if grant is None:
            self.rec.event(w.name, Kind.ACQUIRE_FAILED, server=self.current)
            return False
        ttl = to_s(grant.ttl_ms)
        w.deadline = round(sent + self.lease_s, 3)  # its own clock, counted from when it asked
        self.rec.event(w.name, Kind.ACQUIRE, server=self.current, ttl=round(ttl, 3))
        w.lease = self.rec.open(self.current, "lease", holder=w.name, token=w.fence,
                                deadline=round(self.t + ttl, 3), ended=None)
        return True

    def start(self, w: Worker) -> None:
        w.working = True
        self.rec.event(w.name, Kind.WORK_START, token=w.fence)
        w.run, w.holds = self.rec.open(w.name, "run"), self.rec.open(w.name, "holds", deadline=w.deadline)
        for part in range(1, PARTS + 1):
            self.at(self.t + self.job_s * part / PARTS, self.write, w, part)
        self.at(w.deadline, self.expire, w)

    def write(self, w: Worker, part: int) -> None:
        if not w.working:
            return
        accepted = self.storage.write(w.name, w.fence)
        # one event a write, the storage's: it says who wrote, with which token, and what the storage did
        self.rec.event("storage", Kind.WRITE, writer=w.name, token=w.fence, part=part, accepted=accepted,
                       highest=self.storage.highest)
        if not accepted:
            self.stop(w, Kind.WORK_STOPPED, reason="the storage refused its token")
        elif part == PARTS:
            self.stop(w, Kind.WORK_DONE)

    def expire(self, w: Worker) -> None:
        if w.working:
            self.stop(w, Kind.WORK_STOPPED, reason="its lease ran out by its own clock")

    def stop(self, w: Worker, kind: str, **data: Any) -> None:
        w.working = False
        w.run.end = w.holds.end = self.rec.event(w.name, kind, **data).t
        self.release(w)

    def release(self, w: Worker) -> None:
        try:
            self._leases().release(self.lock, w.token)
        except StaleToken:
            self.rec.event(w.name, Kind.RELEASE_REFUSED, server=self.current, reason="the lock is not its own")
            return
        released = self.rec.event(w.name, Kind.RELEASE, server=self.current)
        if w.lease is not None and w.lease.end is None and w.lease.actor == self.current:
            w.lease.end, w.lease.data["ended"] = released.t, "released"

    def fail_over(self) -> None:
        h = self.holder
        # the crash is an instant of the story; sending SIGKILL, reaping the process and removing its folder
        # are the machine's time (hundreds of ms on a loaded machine, which at SCALE is several model
        # seconds): the clock stands still, so the contender's turn does not slide past the holder's job
        with self.rec.off_the_clock():
            self.pair.kill_primary()
        killed = self.rec.event("primary", Kind.KILLED, signal="SIGKILL")
        if h.lease is not None and h.lease.end is None:
            h.lease.end, h.lease.data["ended"] = killed.t, "server died"
        # promoting the replica and reaching it is the machine's time too (a loaded machine takes tens of
        # ms): the story's clock stands still, so the contender asks as soon after the kill as it would
        with self.rec.off_the_clock():
            self.pair.promote()
            self.current = "replica"
            client = self._client()
            found = client.get(self.lock) == h.token
            counter = int(client.get(self.counter) or 0)
        self.rec.event("replica", Kind.PROMOTED, lease_found=found, counter=counter)
        if found:
            h.lease = self.rec.open("replica", "lease", holder=h.name, token=h.fence,
                                    deadline=round(self.t + to_s(self.clock.from_server_ms(client.pttl(self.lock))), 3), ended=None)
        # a fresh server comes back as the new primary's replica (the contender's WAIT needs one). Starting
        # and syncing it is the machine's time, not the story's (a loaded machine takes a second): the
        # story's clock stops meanwhile, so it never decides whose write the storage sees first
        with self.rec.off_the_clock():
            self.pair.rejoin()
        self.rec.event("primary", Kind.REJOINED, replica_of="replica")
        self.give_up_at = self.t + self.lease_s + POLL_S
        self.at(self.t, self.contend)

    def contend(self) -> None:
        c = self.contender
        if not self.acquire(c):
            if self.t < self.give_up_at:
                self.at(self.t + POLL_S, self.contend)
            return
        if self.fenced:
            self.take_token(c)
        if self.waits and not self._wait(c, "token" if self.fenced else "lease"):
            return self._not_started(c, "no replica acknowledged")
        self.start(c)

    def end(self) -> None:
        """Close what is still open at the story's end: a band ends at its deadline if that has passed."""
        now = round(self.t, 3)
        for i in self.rec.timeline.intervals:
            if i.end is None:
                deadline = i.data.get("deadline")
                lapsed = deadline is not None and deadline <= now
                i.end = deadline if lapsed else now
                if i.kind == "lease":
                    i.data["ended"] = "lapsed" if lapsed else "held at the end"


def failover(guard: str = "none", lease: float = 30, job: float = 12, scale: float = SCALE,
             backend: Any = None) -> Timeline:
    """Run the failover story with one guard and return its timeline (verdict included).

    guard: none | wait | fence | fence-wait. lease, job: model seconds. scale: real seconds per model
    second. Live only, on servers of its own: a primary and a replica (and the server that rejoins),
    started here and stopped when the run ends, however it ends. `backend` is not used: the run
    needs servers it may kill, whatever store the caller works with."""
    if guard not in GUARDS:
        raise BadParameter(f"guard must be one of {', '.join(GUARDS)}, got {guard!r}")
    lease_s, job_s = positive("lease", lease), positive("job", job)
    spec = store_spec("valkey", clock="real", scale=scale)  # the scale checked; the servers are the run's own
    params = Params(guard=guard, lease=lease_s, job=job_s, scale=spec.scale)
    check_run("this failover run", *params.cost(), clock=spec.make_clock())  # before any server starts
    timeline = Timeline("failover", params, backend="valkey", clock="real")
    with ReplicaPair() as pair:
        story = Story(guard, pair, lease_s, job_s, spec, timeline)
        try:
            cost = story.setup()
            story.at(0.0, story.begin)
            story.play()
            story.end()
        finally:
            story.close()
    timeline.finish()
    timeline.verdict = verdict(timeline, cost)
    return timeline


# -- the verdict, read off the events ------------------------------------------------------------
def stale_taken(writes: list[dict], tokens: dict, contender_at: float | None) -> list[dict]:
    """The holder's writes the storage accepted after the contender took a higher token and before the storage
    had seen it: {t, token} each."""
    low, high = tokens.get("holder"), tokens.get("contender")
    if low is None or high is None or high <= low or contender_at is None:
        return []
    seen_high = next((w["t"] for w in writes if w.get("token") == high), None)
    return [{"t": w["t"], "token": w["token"]} for w in writes
            if w["writer"] == "holder" and w["accepted"] and w["t"] > contender_at
            and (seen_high is None or w["t"] < seen_high)]


def verdict(timeline: Timeline, cost: dict[str, Any] | None = None) -> FailoverVerdict:
    """The facts of a failover run, read off its events and intervals; then its words."""
    p = timeline.params
    fenced = p.guard.startswith("fence")
    first = {e.actor: e for e in reversed(timeline.of(Kind.TOKEN))}
    tokens = {w: (first[w].data["token"] if w in first else None) for w in ("holder", "contender")}
    promoted = timeline.first(Kind.PROMOTED, "replica")
    killed = timeline.first(Kind.KILLED, "primary")
    runs = {w: [(i.start, i.end) for i in timeline.spans("run", w)] for w in ("holder", "contender")}
    overlap = [(max(a0, b0), min(a1, b1)) for a0, a1 in runs["holder"] for b0, b1 in runs["contender"]
               if max(a0, b0) < min(a1, b1)]
    writes = [{"t": e.t, **e.data} for e in timeline.of(Kind.WRITE, "storage")]
    acquired = {w: getattr(timeline.first(Kind.ACQUIRE, w), "t", None) for w in ("holder", "contender")}
    waits = {w: [e.data["acked"] for e in timeline.of(Kind.WAIT, w)] for w in ("holder", "contender")}
    told = sorted([(e.t, "storage") for e in timeline.of(Kind.WORK_STOPPED, "holder")
                   if "storage" in e.data.get("reason", "")]
                  + [(e.t, "release") for e in timeline.of(Kind.RELEASE_REFUSED, "holder")])
    v = FailoverVerdict(
        guard=p.guard,
        holders_at_once=most_at_once([(i.start, i.end) for i in timeline.spans("holds")]),
        lease_on_new_primary=bool(promoted and promoted.data["lease_found"]),
        lost_in_failover=any(i.data.get("ended") == "server died" for i in timeline.spans("lease", "primary")),
        holder_started=bool(timeline.of(Kind.WORK_START, "holder")),
        contender_started=bool(timeline.of(Kind.WORK_START, "contender")),
        tokens=tokens,
        token_reused=(tokens["holder"] is not None and tokens["holder"] == tokens["contender"]) if fenced else None,
        stale_write_refused=any(not w["accepted"] for w in writes) if fenced else None,
        double_run=bool(overlap),
        both_ran_s=round(sum(b - a for a, b in overlap), 3),
        acquired_at=acquired,
        wait_acked=waits,
        killed_at=killed.t if killed else None,
        promoted_at=promoted.t if promoted else None,
        writes=writes,
        writes_taken={w: sum(1 for x in writes if x["writer"] == w and x["accepted"]) for w in ("holder", "contender")},
        refused_at=next((w["t"] for w in writes if not w["accepted"]), None),
        stale_taken=stale_taken(writes, tokens, acquired["contender"]),
        holder_told_at=told[0][0] if told else None,
        holder_told_by=told[0][1] if told else None,
        wait_cost_ms=cost["wait_cost_ms"] if cost else None,
        wait_cost=cost,
    )
    return v.worded(words(p, v))


# -- the one place a failover run is put into words: headline, facts, static verdict, caption ----------------
# Every clause is a fact of the verdict; every time is quoted through `emqlab.core.words.seconds`.
LABELS = {"none": "no guard", "wait": "WAIT after the acquire", "fence": "fencing token",
          "fence-wait": "fencing token confirmed by WAIT"}


def _ms(x: float) -> str:
    return f"{x:.2f} ms"


def words(p: Params, v: FailoverVerdict) -> ModeWords:
    """The run's words (a headline with the lease's fate, how many held it at once and what the storage did,
    then the facts in the order they happened) and the static verdict of one failover run, each clause
    read from `v`."""
    guard, label = p.guard, LABELS[p.guard]
    tokens, acked = v.tokens, v.wait_acked
    said, short, head = [], [], []
    lag = f"replication lagged {seconds(p.lag)} behind the primary"
    if tokens["holder"] is not None and guard == "fence":  # replication stalled before the token
        said.append(f"{lag} and stalled")
        said.append(f"the holder took fencing token {tokens['holder']}, which only the primary saw")
    elif tokens["holder"] is not None:
        confirmed = guard == "fence-wait" and acked["holder"][:1] == [1]
        said.append(f"the holder took fencing token {tokens['holder']}"
                    + (" and WAIT 1 saw a replica confirm it" if confirmed else f" while {lag}"))
        said.append(f"then replication, {seconds(p.lag)} behind, stalled" if confirmed else "then replication stalled")
    else:
        said.append(f"{lag} and stalled")
    took = v.acquired_at["holder"]
    if took is not None:
        said.append(f"the holder took the lease on the primary at {seconds(took)}")
    if guard == "wait" and not v.holder_started:
        said.append("its WAIT 1 timed out with no replica acknowledging, so it never started and let the lease go")
        short.append("holder never starts")
    elif not v.holder_started:
        said.append("the holder never started")
        short.append("holder never starts")
    if v.killed_at is not None:
        kept = "with the holder's lease" if v.lease_on_new_primary else "without the lease"
        said.append(f"the primary was killed at {seconds(v.killed_at)} and the replica promoted "
                    f"at {seconds(v.promoted_at)} {kept}")
        if v.lease_on_new_primary:
            short.append("lease survives")
            head.append("the lease survived the failover")
        elif v.lost_in_failover:
            short.append("lease lost in the failover")
            head.append("the lease was lost in the failover")
    got = v.acquired_at["contender"]
    if got is not None:
        token = f" with token {tokens['contender']}" if tokens["contender"] is not None else ""
        said.append(f"the contender took the lease on the new primary at {seconds(got)}{token}")
        if p.guard in ("wait", "fence-wait") and v.contender_started:
            said.append("the fresh replica acknowledged its WAIT")
    else:
        said.append("the contender never got the lease")
    at_once = v.holders_at_once
    if at_once >= 2:
        if v.double_run and v.both_ran_s >= 0.05:
            said.append(f"both ran the job at once for {seconds(v.both_ran_s)}")
        head.append("two holders at once")
        short.append("two holders at once")
    else:
        head.append("never two holders at once")
        short.append("one holder at a time")
    if v.token_reused:
        said.append(f"both held token {tokens['holder']}: its increment was lost with the primary, so the storage "
                    "could not tell the two writers apart")
        short.append(f"token {tokens['holder']} reused")
    elif tokens["holder"] is not None and tokens["contender"] is not None:
        if not v.stale_taken:  # else the stale write's fact says it
            said.append(f"the tokens rose across the failover, {tokens['holder']} then {tokens['contender']}")
        short.append(f"tokens {tokens['holder']} < {tokens['contender']}")
    taken = v.writes_taken
    if v.stale_taken:  # fencing orders writes: the stale ones before the first newer token get through
        took = ", ".join(seconds(w["t"]) for w in v.stale_taken)
        short.append("a stale write taken first")
    if v.stale_write_refused and v.stale_taken:
        said.append(f"the tokens rose across the failover, {tokens['holder']} then {tokens['contender']}, yet the "
                    f"storage took {tokens['holder']} at {took}, before any write brought {tokens['contender']}, and "
                    f"refused it at {seconds(v.refused_at)}: the holder stopped")
    elif v.stale_taken:
        said.append(f"the tokens rose across the failover, {tokens['holder']} then {tokens['contender']}, yet the "
                    f"storage took {tokens['holder']} at {took}, before any write brought {tokens['contender']}")
    elif v.stale_write_refused:
        said.append(f"the storage refused the holder's token {tokens['holder']} at {seconds(v.refused_at)}, "
                    "having seen a higher one, and the holder stopped")
    if v.stale_write_refused:
        short.append("the next refused" if v.stale_taken else "stale write refused")
        head.append("a stale write taken, the next refused" if v.stale_taken else "the storage refused the stale write")
    if taken["holder"] and taken["contender"]:
        if not v.stale_taken:  # else the stale write's fact says what the holder's write came to
            said.append(f"the storage took {plural(taken['holder'], 'write')} from the holder and "
                        f"{plural(taken['contender'], 'write')} from the contender")
        if not v.stale_write_refused:
            short.append("storage takes both")
            head.append(f"the storage took both writers' writes{', under one token' if v.token_reused else ''}")
    elif taken["holder"] or taken["contender"]:
        who = "holder" if taken["holder"] else "contender"
        said.append(f"the storage took {plural(taken[who], 'write')}, all from the {who}")
    if v.holder_told_by == "release":
        said.append(f"the holder was told only when the new primary refused its release, at {seconds(v.holder_told_at)}: "
                    "the lock was the contender's")
    if v.wait_cost_ms is not None:
        n, cost = v.wait_cost["n"], v.wait_cost_ms
        added = f"added {_ms(cost)} to" if cost > 0 else "added nothing measurable to"
        said.append(f"WAIT 1 {added} an acquire on a healthy pair (median of {n}; "
                    f"{_ms(v.wait_cost['acquire_ms'])} without it)")
        short.append(f"WAIT costs {_ms(max(cost, 0))} per acquire on a healthy pair")
    return ModeWords(label, f"{label}: " + "; ".join(head) + ".", " · ".join(short), tuple(said))


figure_words = mode_words(
    "A lease lost in a failover: the holder takes it on the primary, replication "
    "stalls, the primary is killed and its replica promoted, and the contender takes "
    "the lease on the new primary. Each guard runs the same story.",
    "Point at a guard to light its run and read what happened to the lease, the tokens "
    "and the writes.")
