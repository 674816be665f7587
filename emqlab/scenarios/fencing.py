"""The fencing lesson: a worker stopped past the end of its lease wakes up and writes anyway.

worker-1 claims the job and is stopped (a stop-the-world pause: GC, VM migration, SIGSTOP) past
the end of its lease. The lease passes on the server clock; worker-2's beat reaps the job and
re-claims it (attempts 2) and writes the job's effect. Then worker-1 wakes, finishes its work
and writes the effect too. Without fencing that late write lands: the effect is applied twice.
With fencing, the store refuses the write unless the job is still active under the writer's
attempts. In the lesson's run (the default pause, 5:30) worker-1 writes while worker-2 still holds the job,
so only the attempts (1 against the job's 2) refuse it; a longer pause (5:40) finds the job already
done, and the state check refuses it before the attempts are compared. EchoMQ's scripts compare the
attempts alone.

What the store did is recorded as the store's own events (actor "store"), from each script's
reply: `write` (the effect write: writer, attempts, accepted, applied, and the job's state and
attempts as the write found them) and, where a completion follows an unfenced write, `completion`
(writer, attempts, accepted, the job's state and attempts as it found them, and, when refused, `check`:
which of the fence's checks refused it, as `refused_by` names them). The figure's storage lane
is drawn from these, never inferred from what a worker believed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..store.clock import to_ms
from ..core.errors import BadParameter
from ..core.kinds import Kind
from ..core.timeline import Record, Timeline, Verdict, json_name
from ..core.words import ModeWords, seconds, times
from ..faults.pauses import Pause
from ..queue.consumer import Consumer
from ..queue.jobs import Queue
from .run_harness import mode_words, play, positive, run_on
from .reaper import JOB_ID

STORE = "store"  # the actor of the store's own events


class WatchedQueue(Queue):
    """The queue as one writer reaches it, recording what the store replied to each write."""

    def __init__(self, backend, writer: str, recorder, **kw: Any):
        super().__init__(backend, "orders", **kw)
        self.writer, self.rec = writer, recorder

    def do_record_effect(self, job_id: str, attempts: int, fenced: bool) -> int:
        # the job's row as this write finds it (a read beside the script, for the record only): what the
        # fence compares, so the verdict can say which of its checks turned a write away
        state, current = self.backend.client.hmget(self.job_key(job_id), "state", "attempts")
        reply = super().do_record_effect(job_id, attempts, fenced)
        self.rec.event(STORE, Kind.WRITE, writer=self.writer, job=job_id, attempts=int(attempts), fenced=fenced,
                       accepted=reply >= 0, applied=reply if reply >= 0 else None,
                       job_state=_text(state), job_attempts=int(current) if current is not None else None)
        return reply

    def do_complete(self, job_id: str, attempts: int) -> str:
        state, current = self.backend.client.hmget(self.job_key(job_id), "state", "attempts")  # as for a write
        reply = super().do_complete(job_id, attempts)
        found = {"attempts": int(attempts), "job_state": _text(state),
                 "job_attempts": int(current) if current is not None else None}
        why = {} if reply == "ok" else {"check": refused_by(found)}  # a refusal names the check that made it
        self.rec.event(STORE, Kind.COMPLETION, writer=self.writer, job=job_id, attempts=int(attempts),
                       accepted=reply == "ok", job_state=found["job_state"], job_attempts=found["job_attempts"], **why)
        return reply


def _text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def refused_by(write: dict) -> str | None:
    """Which of the fence's checks (`includes/job_fence.lua`, in its order) turns `write` away: 'missing' (no
    such job), 'state' (the job is no longer active: reaped or done), 'attempts' (active under another
    attempt); None when it passes. Read from the job's row as the write found it."""
    if write.get("job_state") is None:
        return "missing"
    if write["job_state"] != "active":
        return "state"
    if write.get("job_attempts") != write["attempts"]:
        return "attempts"
    return None


MODES = {"off": "no fencing", "on": "fenced by attempts"}  # each mode's label; figures read it through the words


@dataclass(frozen=True, kw_only=True)
class Params(Record):
    """A fencing run's parameters: fencing on or off; the lease, the job, the beat (model seconds);
    worker-1's stop-the-world pause."""

    fencing: str
    lease: float
    job: float
    beat: float
    pause: Pause = field(metadata=json_name("pause", load=Pause.from_dict))

    @property
    def mode(self) -> str:
        return self.fencing

    def cost(self) -> tuple[float, float]:
        span = self.pause.at + self.pause.seconds + 2 * self.job + 2 * self.lease + 4 * self.beat
        return span, 2 * span / self.beat + 10


@dataclass(frozen=True, kw_only=True)
class FencingVerdict(Verdict):
    """The facts of a fencing run; `store_writes`: every effect write as the store answered it."""

    mode: str  # the mode's label
    paused_at: float
    woke_at: float
    lease_deadline: float | None
    reaped_at: float | None
    reclaimed_at: float | None
    reclaimed_by: str | None
    reclaim_attempts: int | None
    stale_write_at: float | None
    stale_write_attempts: int | None
    stale_write_landed: bool
    stale_write_refused: bool
    # the job's row as the late write found it, and which fence check refused it first: 'state' (the job was
    # no longer active, e.g. done), 'attempts' (active under a newer attempt), 'missing'; None: not refused
    # (default None: a run recorded before these fields loads as it was)
    stale_write_found_state: str | None = None
    stale_write_found_attempts: int | None = None
    stale_write_refused_by: str | None = None
    store_writes: list
    writes_accepted: int
    writes_refused: int
    late_completion_turned_away: bool
    effects_applied: int
    duplicate_effect: bool


def fencing(fencing: str = "on", lease: float = 30, job: float = 20, pause: Any = "5:30", beat: float = 5,
            backend: Any = None) -> Timeline:
    """Run the fencing scenario and return its timeline.

    fencing: on (the effect store checks attempts) | off (it does not). lease, job, beat: model
    seconds. pause: AT:SECONDS, worker-1's stop-the-world pause; it must outlast the lease
    remaining at AT for the job to be reaped while worker-1 sleeps.
    """
    if fencing not in MODES:
        raise BadParameter(f"fencing must be on or off, got {fencing!r}")
    lease_s, job_s, beat_s = positive("lease", lease), positive("job", job), positive("beat", beat)
    stop = Pause.parse(pause)
    if stop.at >= job_s:
        raise BadParameter(f"the pause must start inside the job (< job = {job_s:g} s), got {pause!r}")
    params = Params(fencing=fencing, lease=lease_s, job=job_s, beat=beat_s, pause=stop)
    with run_on(backend, "fencing", params, cost=params.cost()) as run:
        clock = run.clock
        q = Queue(run.backend, "orders", prefix=run.prefix)
        q.enqueue(JOB_ID, "order")
        run.event("producer", Kind.ENQUEUE, job=JOB_ID)
        effect = "fenced" if fencing == "on" else "unfenced"
        opts = dict(lease_ms=to_ms(lease_s), beat_ms=to_ms(beat_s), work_ms=to_ms(job_s), effect=effect, recorder=run)
        w1, w2 = (Consumer(WatchedQueue(run.backend, name, run, prefix=run.prefix), name, **opts)
                  for name in ("worker-1", "worker-2"))

        def script():
            w1.start()
            yield clock.timeout(to_ms(beat_s) / 2)
            w1.stop()  # worker-1 runs this one job, then leaves
            w2.start()
            yield clock.timeout(max(0.0, to_ms(stop.at) - (clock.now_ms - run.t0_ms)))
            clock.process(w1.pause(to_ms(stop.seconds)))
            # done when both have had their say: worker-1 woke and tried its write, worker-2 finished
            while w1.main.is_alive or q.sizes()["done"] < 1:
                yield clock.timeout(to_ms(beat_s))
            w2.stop()

        horizon = to_ms(stop.at + stop.seconds + 2 * job_s + 2 * lease_s + 4 * beat_s)
        play(run, script(), horizon, to_ms(beat_s), [w1, w2])
        effects = q.effects_applied().get(JOB_ID, 0)
        run.timeline.counts.update({"jobs": 1, "completed": q.sizes()["done"], "lost": 1 - q.sizes()["done"],
                                    "duplicate_effects": max(0, effects - 1), "effects_applied": effects})
        run.timeline.verdict = verdict(run.timeline)
    return run.timeline


def verdict(timeline: Timeline) -> FencingVerdict:
    p, c = timeline.params, timeline.counts
    claim = timeline.first(Kind.CLAIM, "worker-1")
    reap = timeline.first(Kind.REAP)
    reclaim = timeline.first(Kind.CLAIM, where=lambda e: e.data.get("attempts", 0) >= 2)
    # a write is stale only once someone else holds the job: worker-1's writes after the re-claim
    stale = [e for e in timeline.events if e.actor == "worker-1" and e.kind in (Kind.EFFECT, Kind.COMPLETE_REFUSED)
             and reclaim is not None and e.t >= reclaim.t]
    late = stale[0] if stale else None
    landed = late is not None and late.kind == Kind.EFFECT
    writes = [{"t": e.t, "writer": e.data["writer"], "attempts": e.data["attempts"], "accepted": e.data["accepted"],
               "applied": e.data["applied"], "job_state": e.data.get("job_state"),
               "job_attempts": e.data.get("job_attempts")} for e in timeline.of(Kind.WRITE, STORE)]
    # the store's record of the late write: worker-1's first write after the re-claim
    found = next((w for w in writes if reclaim is not None and w["writer"] == "worker-1" and w["t"] >= reclaim.t),
                 None)
    refused = late is not None and late.kind == Kind.COMPLETE_REFUSED
    # with fencing off, the completion sent after a landed late write meets complete's own fence
    turned_away = landed and any(e.data["writer"] == "worker-1" and not e.data["accepted"] and e.t >= late.t
                                 for e in timeline.of(Kind.COMPLETION, STORE))
    v = FencingVerdict(
        mode=MODES[p.fencing],
        paused_at=p.pause.at,
        woke_at=p.pause.at + p.pause.seconds,
        lease_deadline=claim.data["deadline"] if claim else None,
        reaped_at=reap.t if reap else None,
        reclaimed_at=reclaim.t if reclaim else None,
        reclaimed_by=reclaim.actor if reclaim else None,
        reclaim_attempts=reclaim.data["attempts"] if reclaim else None,
        stale_write_at=late.t if late else None,
        stale_write_attempts=late.data.get("attempts") if late else None,
        stale_write_landed=landed,
        stale_write_refused=refused,
        stale_write_found_state=found["job_state"] if found else None,
        stale_write_found_attempts=found["job_attempts"] if found else None,
        stale_write_refused_by=refused_by(found) if refused and found else None,
        store_writes=writes,
        writes_accepted=sum(w["accepted"] for w in writes),
        writes_refused=sum(not w["accepted"] for w in writes),
        late_completion_turned_away=bool(turned_away),
        effects_applied=c["effects_applied"],
        duplicate_effect=c["duplicate_effects"] > 0,
    )
    return v.worded(words(p, v))


def words(p: Params, v: FencingVerdict) -> ModeWords:
    """The fencing run in words: a headline (the late write's fate and how often the effect landed), the
    other facts in the order they happened, and the static verdict line, each clause read from `v`."""
    applied = times(v.effects_applied)
    effect = f"the effect was applied {applied}"
    if v.reclaimed_at is None:
        return ModeWords(v.mode, f"{v.mode}: worker-1's lease was not taken over during its pause; {effect}.",
                         f"no takeover · effect applied {v.effects_applied}×")
    past = (f", past its {seconds(p.lease)} lease" if v.lease_deadline is not None
            and v.woke_at > v.lease_deadline else "")
    facts = [f"worker-1 slept from {seconds(v.paused_at)} to {seconds(v.woke_at)}{past}",
             f"{v.reclaimed_by} re-claimed the job (attempts {v.reclaim_attempts}) at {seconds(v.reclaimed_at)}"]
    if v.stale_write_landed:
        headline = f"{v.mode}: worker-1's late write at {seconds(v.stale_write_at)} landed, so {effect}."
        if v.late_completion_turned_away:
            facts.append("only the completion sent after it was turned away, by the queue's own check")
        static = f"late write lands · effect applied {v.effects_applied}×"
    elif v.stale_write_refused:
        headline = f"{v.mode}: worker-1's late write at {seconds(v.stale_write_at)} was refused: {effect}."
        once = 'once' if v.effects_applied == 1 else str(v.effects_applied) + '×'
        if v.stale_write_refused_by == "state":  # the fence looks at the state first: attempts never compared
            facts.append(f"the job was already {v.stale_write_found_state} (attempts {v.stale_write_found_attempts}), "
                         f"so the store refused worker-1's write on its state, before comparing attempts "
                         f"{v.stale_write_attempts}")
            why = f"job already {v.stale_write_found_state}"
        else:
            facts.append(f"worker-1 woke still holding attempts {v.stale_write_attempts}; the job was at attempts "
                         f"{v.reclaim_attempts} by then")
            why = f"attempts {v.stale_write_attempts} ≠ {v.reclaim_attempts}"
        static = f"late write refused ({why}) · effect applied {once}"
    else:
        headline = f"{v.mode}: worker-1 wrote nothing after it woke; {effect}."
        static = f"no late write · effect applied {v.effects_applied}×"
    return ModeWords(v.mode, headline, static, tuple(facts))


figure_words = mode_words(
    "A worker stopped past the end of its lease wakes up and writes its result anyway. "
    "Without fencing the store takes that late write, so the effect lands twice; with "
    "fencing the store refuses it unless the job is still active under the writer's "
    "attempts.",
    "Point at a mode to read what happened to the late write.")
