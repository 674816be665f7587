"""The instructor's side of a class: totals, the queue's invariants, every learner's lane, and the
controls (enqueue a burst, crash a learner's worker, pause it, fencing on/off).

Everything here runs with the instructor's credential (`emqlab.classroom.server.open_class` on the line of
`FILE.instructor`); the dashboard and `emqlab class status|enqueue|crash|pause|fence` call it.

Invariants (`Board.status()["invariants"]`: {name: the jobs that break it}, for each invariant one snapshot
can judge), the queue's own (`emqlab.queue.invariants`), checked over every job j1 … jN the instructor
enqueued:
- one_place: no job in two of pending, active, schedule, done, dead; its hash's `state` names its set;
- never_lost: each job in one of them (the jobs in none are `lost`);
- attempts_grow: a job's attempts never went down since the last check (kept in `P seen`);
- one_effect: with fencing on for the whole class, no job's effect was applied more than once;
- sessions_agree: each worker's session index agrees with the active set;
- no_resurrection, lease_kept, current_fence: a history's invariants (a snapshot alone shows no refusal,
  no granted deadline, no accepted operation): not evaluated here, and not in `invariants`;
- done_has_effect: not judged either: a learner may complete a job by hand, with no effect written (the
  queue's own `complete`), and the class counts that job completed.
A learner can break them with the plain commands the queue's functions need (see classroom.py):
the check is how that damage is seen, not silent.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from typing import Any

from .server import QUEUE, ClassStore, open_class
from ..core.errors import BadParameter
from ..core.kinds import Command, Kind
from ..core.marks import MARKS
from ..core.ranges import within
from ..queue import invariants
from ..queue.jobs import PLACES, Queue
from ..core.words import FigureWords, ModeWords, as_text, plural, times
from ..store.clock import time_reply_ms, to_s

LANE_KEEP = 200  # events each learner's lane keeps (the newest)


ORDER_WAIT_S = 3.0  # s an order waits for the seat's worker to take it (it polls every 0.2 s)


@dataclass(frozen=True)
class Order:
    """An instructor's order as it was received: the seat, the command, whether the seat's worker took it
    (`taken`), and if not, why."""

    slot: str
    command: str
    taken: bool
    why: str = ""

    def said(self, name: str, what: str) -> str:
        """Say "ordered ada (seat l01) to crash", and if nobody took it, why."""
        head = f"ordered {name} (seat {self.slot}) to {what}"
        return head if self.taken else f"{head}, but it did not land: {self.why}"


class Board:
    """A class seen and steered by its instructor."""

    def __init__(self, store: ClassStore):
        if store.slot != "instructor":
            raise BadParameter("the class's controls need the instructor's address (the line of FILE.instructor)")
        self.store, self.keys, self.client = store, store.keys, store.client
        self.queue = Queue(store, QUEUE, prefix=store.keys.prefix)

    @classmethod
    def connect(cls, url: str) -> "Board":
        return cls(open_class(url))

    def close(self) -> None:
        self.store.close()

    # -- who is in the class --------------------------------------------------------------------
    def slots(self) -> list[str]:
        n = int(self.client.get(self.keys.key("learners")) or 0)
        return [f"l{i:02d}" for i in range(1, n + 1)]

    def learners(self) -> list[dict[str, Any]]:
        """Every seat: slot, the name its learner joined under (or None), whether its worker is alive, and
        the instructor's last order to it (`order`: cmd, seconds, at; {} if none)."""
        slots = self.slots()
        pipe = self.client.pipeline(transaction=False)
        for slot in slots:
            pipe.get(self.keys.own(slot, "name"))
            pipe.exists(self.keys.own(slot, "alive"))
            pipe.hgetall(self.keys.ctl(slot))
        got = pipe.execute()
        return [{"slot": s, "name": got[3 * i], "alive": bool(got[3 * i + 1]), "order": got[3 * i + 2] or {}}
                for i, s in enumerate(slots)]

    def slot_of(self, name: str) -> str:
        """A learner's seat from its slot (l07) or the name it joined under."""
        for seat in self.learners():
            if name in (seat["slot"], seat["name"]):
                return seat["slot"]
        raise BadParameter(f"no learner {name!r} in this class (a slot like l07, or the name a learner joined under)")

    # -- controls ---------------------------------------------------------------------------------
    def enqueue(self, n: int) -> list[str]:
        """Enqueue a burst of `n` jobs, ids following the last one (j1, j2, …); the ids enqueued."""
        n = int(within("burst", n))
        first = int(self.client.get(self.keys.key("enqueued")) or 0) + 1
        ids = [f"j{i}" for i in range(first, first + n)]
        for start in range(0, n, 1000):
            self.queue.enqueue_many(ids[start:start + 1000])
        return ids

    def order(self, name: str, command: str, seconds: float = 0.0, wait_s: float = ORDER_WAIT_S) -> "Order":
        """Send one learner's worker an order (crash or pause) and wait, up to `wait_s`, until the worker has
        taken it (it then acts once it holds a job, or after HOLD_WAIT_S holding nothing). An order no worker
        takes (the seat's worker crashed or left) is not dropped in silence: the `Order` says so, and why."""
        slot = self.slot_of(name)
        # the order first, then its number: a worker polling in between sees the new order under the old
        # number (not yet its to obey), never the new number over the old order (which it would take as
        # obeyed, losing the new one)
        pipe = self.client.pipeline(transaction=False)
        pipe.hset(self.keys.ctl(slot), mapping={"cmd": command, "seconds": seconds, "at": time.time()})
        pipe.hincrby(self.keys.ctl(slot), "seq", 1)
        seq = pipe.execute()[1]
        end = time.monotonic() + wait_s
        while int(self.client.get(self.keys.own(slot, "taken")) or 0) < seq:
            if time.monotonic() > end:
                alive = self.client.exists(self.keys.own(slot, "alive"))
                why = (f"no worker took it within {wait_s:g} s"
                       + ("" if alive else " (the seat has no live worker: it crashed or left)"))
                return Order(slot, command, taken=False, why=why)
            time.sleep(0.05)
        return Order(slot, command, taken=True)

    def crash(self, name: str) -> "Order":
        return self.order(name, Command.CRASH)

    def pause(self, name: str, seconds: float) -> "Order":
        return self.order(name, Command.PAUSE, float(within("pause", seconds)))

    def fencing(self, on: bool) -> None:
        self.client.set(self.keys.key("fence"), "1" if on else "0")
        if not on:
            self.client.set(self.keys.key("fence-was-off"), "1")

    def server_ms(self) -> int:
        """The server's clock (TIME), ms: where 'now' is on the lanes' lease stamps."""
        return time_reply_ms(self.client.time())

    def fenced(self) -> bool:
        return self.client.get(self.keys.key("fence")) != "0"

    # -- what happened --------------------------------------------------------------------------
    def lanes(self, last: int = LANE_KEEP) -> list[dict[str, Any]]:
        """One lane per seat: slot, name, alive; `events`, its newest events (each with `t`, unix
        seconds; a claim carries `now` and `score`, the server's clock and the lease deadline it
        stamped, in ms); `notes`, its newest notable ones (reaps, refusals, crash, pause), which a
        busy lane's claims never push out."""
        seats = self.learners()
        pipe = self.client.pipeline(transaction=False)
        for seat in seats:
            pipe.lrange(self.keys.own(seat["slot"], "lane"), -last, -1)
            pipe.lrange(self.keys.own(seat["slot"], "notes"), -last, -1)
        got = pipe.execute()
        for i, seat in enumerate(seats):
            seat["events"] = [json.loads(x) for x in got[2 * i]]
            seat["notes"] = [json.loads(x) for x in got[2 * i + 1]]
        return seats

    def status(self) -> dict[str, Any]:
        """Totals and the queue's invariants (`emqlab.queue.invariants`), from the server: one snapshot of
        every job, judged by the same functions the explorer, the chaos runs and the tests use."""
        k, q = self.keys, self.queue
        n = int(self.client.get(k.key("enqueued")) or 0)
        ids = [f"j{i}" for i in range(1, n + 1)]
        snap = invariants.read(q, ids)
        pipe = self.client.pipeline(transaction=False)
        pipe.hgetall(k.key("seen"))
        pipe.get(k.key("fence-was-off"))
        pipe.get(q.reaped_key)
        seen, was_off, reaped = pipe.execute()
        # attempts "never go down" since the last check: the last check's values are what was handed out
        facts = invariants.Facts(snapshot=snap, issued={job: int(a) for job, a in seen.items()})
        # only what one snapshot (and the last check's attempts) can judge: the rest is left out, not "held";
        # done_has_effect too: a learner may complete a job by hand (the queue's own operation, no effect written)
        judged = tuple(n for n in invariants.evaluable(facts) if n != "done_has_effect")
        broken: dict[str, list[str]] = {name: [] for name in judged}
        for b in invariants.judge(facts, judged):
            if b.invariant == "one_effect" and was_off:
                continue  # duplicates are expected once fencing was off for the class
            if b.job not in broken[b.invariant]:
                broken[b.invariant].append(b.job)
        counts = dict.fromkeys(PLACES, 0)
        for row in snap.jobs.values():
            if len(row.places) == 1:
                counts[row.places[0]] += 1
        now_seen = {job: row.attempts for job, row in snap.jobs.items() if row.attempts is not None}
        if now_seen:
            self.client.hset(k.key("seen"), mapping=now_seen)
        lost = broken["never_lost"]
        learners = self.learners()
        return {
            "learners": sum(s["alive"] for s in learners), "seats": len(learners), "enqueued": n,
            "completed": counts["done"], "pending": counts["pending"], "active": counts["active"],
            "scheduled": counts["schedule"], "dead": counts["dead"], "lost": len(lost),
            "duplicate_effects": sum(max(0, v - 1) for v in snap.effects.values()),
            "reaped": int(reaped or 0), "fencing": self.fenced(), "fencing_was_off": bool(was_off),
            "invariants_ok": not any(broken.values()),
            "invariants": {name: jobs[:20] for name, jobs in broken.items()}, "lost_jobs": lost[:20],
        }

    def totals(self) -> dict[str, Any]:
        """What `emqlab class status --json` prints: the issue's seven fields."""
        s = self.status()
        return {key: s[key] for key in ("learners", "enqueued", "completed", "lost", "duplicate_effects",
                                        "reaped", "invariants_ok")}


# -- a lane, read (for the dashboard's lanes and the learner's own) ------------------------------------
def lane_bands(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """A lane's events as what to draw. `leases`: one per claim, {job, attempts, start, deadline, end,
    ended (completed | refused | landed | crashed | None: still held), server_now, server_deadline} (times
    in unix seconds on the learner's clock; the lease's length comes from the server's own stamps, ms):
    `landed` is a late effect that landed (fencing off) before its completion was refused, `refused` a late
    write turned away with nothing written; `pauses`: {start, end, holding}; `reaps`: {t, jobs} (jobs this
    learner handed back from others); `crashes`: {t, holding}."""
    leases: list[dict[str, Any]] = []
    open_: dict[tuple[str, int], dict[str, Any]] = {}
    landed: set[tuple[str, int]] = set()
    holding: list[str] = []  # what the worker held when its latest pause began
    out: dict[str, list[dict[str, Any]]] = {"leases": leases, "pauses": [], "reaps": [], "crashes": []}
    for e in sorted(events, key=lambda e: e["t"]):
        kind, job = e["kind"], (e.get("job"), e.get("attempts"))
        if kind == Kind.CLAIM:
            band = {"job": e["job"], "attempts": e["attempts"], "start": e["t"],
                    "deadline": e["t"] + to_s(e["score"] - e["now"]), "end": None, "ended": None,
                    "server_now": e["now"], "server_deadline": e["score"]}
            leases.append(band)
            open_[job] = band
        elif kind == Kind.EFFECT and e.get("applied"):  # an effect that landed ends nothing: a late one (fencing
            # off) lands and its completion is refused after it; a fenced one is followed by its `complete`
            landed.add(job)
        elif kind in (Kind.COMPLETE, Kind.COMPLETE_REFUSED):
            band = open_.pop(job, None)
            if band is not None:
                band["end"] = e["t"]
                band["ended"] = ("completed" if kind == Kind.COMPLETE else "landed" if job in landed else "refused")
        elif kind == Kind.CRASH:
            out["crashes"].append({"t": e["t"], "holding": e.get("holding", [])})
            for band in open_.values():
                band["end"], band["ended"] = e["t"], "crashed"
            open_.clear()
        elif kind == Kind.PAUSE_START:
            holding = list(e.get("holding", []))
        elif kind == Kind.PAUSE_END:
            out["pauses"].append({"start": e.get("started", e["t"]), "end": e["t"], "holding": holding})
            holding = []
        elif kind == Kind.REAP:
            out["reaps"].append({"t": e["t"], "jobs": e["jobs"]})
    return out


def lane_settled(lane: dict[str, Any]) -> dict[str, set[tuple[str, int]]]:
    """How a lane's jobs were settled, each (job, attempts) once, from its events and notes:
    - `finished`: the completions the store accepted (a `complete` event: the worker records one after
      every settle that went through, a fenced effect's included);
    - `refused`: late writes the store refused, nothing written (a fenced effect turned away by the
      attempts fence; with no effect, the completion itself);
    - `duplicated`: late effects that landed (fencing off) although the completion that followed was
      refused: the job's effect happened twice, and the job was not this worker's to finish."""
    events = [*lane.get("events", []), *lane.get("notes", [])]
    completed = {(e.get("job"), e.get("attempts")) for e in events if e["kind"] == Kind.COMPLETE}
    landed = {(e.get("job"), e.get("attempts")) for e in events if e["kind"] == Kind.EFFECT and e.get("applied")}
    turned = {(e.get("job"), e.get("attempts")) for e in events if e["kind"] == Kind.COMPLETE_REFUSED}
    return {"finished": completed, "refused": turned - landed, "duplicated": turned & landed}


def lane_story(name: str, lanes: list[dict[str, Any]], fates: dict[str, dict[str, Any]] | None = None) -> str:
    """`lane_words` as text: the headline, then one line per fact."""
    return as_text(*lane_words(name, lanes, fates))


def lane_words(name: str, lanes: list[dict[str, Any]],
               fates: dict[str, dict[str, Any]] | None = None) -> tuple[str, tuple[str, ...]]:
    """What happened to `name`'s jobs, in one place for the lesson and the dashboard: a headline (what it
    finished, how often it crashed or was paused), then for each job it held when crashed or paused, who
    reaped it and whether its late write was refused. `fates` ({job: {state, attempts, worker}}, the
    job's hash now): what a learner, who sees only its own lane, can tell of a job it lost."""
    mine = next((lane for lane in lanes if name in (lane["name"], lane["slot"])), None)
    if mine is None:
        return f"{name} has not joined the class.", ()
    notes = mine.get("notes", [])
    done = len(lane_settled(mine)["finished"])
    faults = [e for e in notes if e["kind"] in (Kind.CRASH, Kind.PAUSE_START)]
    crashed = sum(1 for e in faults if e["kind"] == Kind.CRASH)
    paused = len(faults) - crashed
    troubles = []
    if crashed:
        troubles.append(f"crashed {times(crashed)}")
    if paused:
        troubles.append(f"was paused {times(paused)}")
    parts, saved = [], []  # saved: for each job held in a fault, whether a classmate reaped and finished it
    for e in notes:
        if e["kind"] not in (Kind.CRASH, Kind.PAUSE_START):
            continue
        what = "crashed" if e["kind"] == Kind.CRASH else f"was paused {e['seconds']:g} s"
        for job in e.get("holding", []):
            by = [lane["name"] or lane["slot"] for lane in lanes for r in lane.get("notes", [])
                  if r["kind"] == Kind.REAP and job in r["jobs"]]
            refused = any(r["kind"] == Kind.COMPLETE_REFUSED and r.get("job") == job for r in notes)
            # fencing off, the woken worker's effect lands (its effect event) and only its completion is refused
            landed = any(r["kind"] == Kind.EFFECT and r.get("job") == job and r["t"] >= e["t"]
                         for r in notes + mine.get("events", []))
            fate = f"{by[0]} reaped it" if by else "nobody reaped it (it finished before its lease ran out)"
            now = (fates or {}).get(job) or {}
            if not by and now.get("worker") and now["worker"] != (mine["name"] or mine["slot"]):
                fate = (f"its lease ran out and {now['worker']} took it over (attempt {now['attempts']}); "
                        f"it is now {now['state']}")
            done_by = [lane["name"] or lane["slot"] for lane in lanes if lane is not mine
                       if any(j == job for j, _ in lane_settled(lane)["finished"])]
            if by and done_by:
                fate += " and completed it" if done_by[0] == by[0] else f" and {done_by[0]} completed it"
            saved.append(bool(by and done_by) or (not by and now.get("state") == "done"
                                                  and now.get("worker") != (mine["name"] or mine["slot"])))
            late = ("; its late effect landed anyway (fencing was off): the job's effect happened twice" if landed
                    else "; its late write was refused" if refused else "")
            parts.append(f"it {what} holding {job}: {fate}{late}")
    # a busy lane keeps its newest LANE_KEEP events only: then the count is of the jobs those show
    kept = "" if len(mine.get("events", [])) < LANE_KEEP else f" in the newest {LANE_KEEP} events of its lane"
    headline = f"{mine['name'] or mine['slot']} finished {plural(done, 'job')}{kept}"
    if troubles:
        headline += f"; it {' and '.join(troubles)}"
        if saved and all(saved):
            headline += f"; classmates took over and finished {'the job' if len(saved) == 1 else 'every job'} it held"
    return headline + ".", tuple(parts)


# -- the class, as plain data to draw (emqlab.classroom.draw) and its words ----------------------------
PAUSE_GRACE_S = 1.0  # an ordered pause is shown as under way until this long after it should have ended


def class_snapshot(board: Board, last: int = LANE_KEEP) -> dict[str, Any]:
    """One look at the class: `lanes` (Board.lanes), `totals` (Board.status), `server_ms` (the server's
    TIME) and `local` (this machine's clock at the same moment, for the instructor's order stamps)."""
    lanes, totals = board.lanes(last), board.status()
    return {"lanes": lanes, "totals": totals, "server_ms": board.server_ms(), "local": time.time()}


def lane_offset(events: list[dict[str, Any]]) -> float:
    """Seconds to add to a learner's clock to read the server's: the median, over its claims, of the
    server's TIME the claim stamped minus the learner's time of the claim (0 without a claim)."""
    gaps = [to_s(e["now"]) - e["t"] for e in events if e["kind"] == Kind.CLAIM and "now" in e]
    return statistics.median(gaps) if gaps else 0.0


def _merged(lane: dict[str, Any]) -> list[dict[str, Any]]:
    seen, out = set(), []
    for e in [*lane.get("events", []), *lane.get("notes", [])]:
        key = (e["t"], e["kind"], e.get("job"), e.get("attempts"))
        if key not in seen:
            seen.add(key)
            out.append(e)
    return sorted(out, key=lambda e: e["t"])


def held_past(lease: dict[str, Any], paused: bool) -> bool:
    """Whether a drawn lease ran on past the deadline the server stamped (a stale holder): it ended after
    its deadline, or it is still held by a paused worker whose deadline has passed (`draw`'s `held-past`)."""
    end = lease["end"] if lease["end"] is not None else 0.0
    settled = lease["ended"] is not None or (paused and lease["end"] is None)
    return settled and lease["deadline"] < end


def lane_state(lane: dict[str, Any], local: float) -> str:
    """working | paused | crashed | left | empty (a seat nobody joined)."""
    order = lane.get("order") or {}
    if not lane.get("name"):
        return "empty"
    if order.get("cmd") == Command.PAUSE and local < float(order["at"]) + float(order["seconds"]) + PAUSE_GRACE_S:
        return "paused"
    if lane.get("alive"):
        return "working"
    crashed = order.get("cmd") == Command.CRASH or any(e["kind"] == Kind.CRASH for e in lane.get("notes", []))
    return "crashed" if crashed else "left"


def lane_view(lane: dict[str, Any], server_ms: int, local: float | None = None) -> dict[str, Any]:
    """A lane as what to draw: lane_bands on the server's clock, in seconds before `server_ms` (≤ 0),
    with its `state`, `label` (its name) and `done` (the jobs it finished: `lane_settled`)."""
    events = _merged(lane)
    shift = lane_offset(events) - to_s(server_ms)
    bands = lane_bands(events)

    def at(t):
        return None if t is None else t + shift

    leases = [{**b, "start": at(b["start"]), "end": at(b["end"]),
               "deadline": to_s(b["server_deadline"]) - to_s(server_ms)} for b in bands["leases"]]
    pauses = [{**p, "start": at(p["start"]), "end": at(p["end"])} for p in bands["pauses"]]
    local = time.time() if local is None else local
    state = lane_state(lane, local)
    order = lane.get("order") or {}
    if state == "paused":  # under way: the worker writes its pause only when it wakes
        start = float(order["at"]) - local
        if not any(p["end"] >= start - PAUSE_GRACE_S for p in pauses):
            pauses.append({"start": start, "end": None})
    return {"slot": lane["slot"], "label": lane.get("name") or lane["slot"], "state": state,
            "leases": leases, "pauses": pauses,
            "reaps": [{"t": at(r["t"]), "jobs": r["jobs"]} for r in bands["reaps"]],
            "crashes": [{"t": at(c["t"]), "holding": c["holding"]} for c in bands["crashes"]],
            "done": len(lane_settled(lane)["finished"])}


def class_lanes(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """The lanes of every learner who joined (a seat nobody took is not drawn), as `lane_view`s."""
    return [lane_view(lane, snapshot["server_ms"], snapshot.get("local")) for lane in snapshot["lanes"]
            if lane.get("name")]


def totals_sentence(totals: dict[str, Any]) -> str:
    """The class's totals in one sentence (the dashboard's status line, the figure's prompt)."""
    t = totals
    broken = [name for name, jobs in t.get("invariants", {}).items() if jobs] + (["lost"] if t["lost"] else [])
    holds = ("the queue's invariants hold" if t["invariants_ok"]
             else f"the queue's invariants are BROKEN ({', '.join(broken) or 'see class status'})")
    fence = "on" if t.get("fencing", True) else "off"
    return (f"{plural(t['learners'], 'learner')} working; {t['enqueued']} jobs enqueued, {t['completed']} completed, "
            f"{t['lost']} lost, {plural(t['duplicate_effects'], 'duplicate effect')}, {t['reaped']} reaped; "
            f"{holds}; fencing {fence}.")


def lane_verdict(lane: dict[str, Any], view: dict[str, Any]) -> str:
    """One lane's short verdict: its state, what it finished, and its late writes: refused by the store, or
    (fencing off) landed as a second effect of a job a classmate finished (`lane_settled`)."""
    notes = lane.get("notes", [])
    crash = next((e for e in reversed(notes) if e["kind"] == Kind.CRASH), None)
    settled = lane_settled(lane)
    refused, duplicated = len(settled["refused"]), len(settled["duplicated"])
    reaped = sum(len(e.get("jobs", [])) for e in notes if e["kind"] == Kind.REAP)
    parts = [f"{view['state']}", f"{len(settled['finished'])} done"]
    if crash is not None:
        parts.append(f"crashed holding {', '.join(crash.get('holding', [])) or 'nothing'}")
    if reaped:
        parts.append(f"reaped {plural(reaped, 'job')} of classmates")
    if refused:
        parts.append(f"{plural(refused, 'late write')} refused")
    if duplicated:
        twice = "a duplicate" if duplicated == 1 else "duplicates"
        parts.append(f"{plural(duplicated, 'late effect')} landed ({twice})")
    return " · ".join(parts)


def _headline_static_facts(lane: dict[str, Any], lanes: list[dict[str, Any]], views: dict[str, Any],
                          fates: dict[str, dict[str, Any]] | None = None):
    # fates: a learner's own snapshot sees no classmate's reap, so what became of its jobs comes from their hashes
    headline, facts = lane_words(lane["name"], lanes, fates)
    return headline, lane_verdict(lane, views[lane["slot"]]), facts


def lanes_caption(views: list[dict[str, Any]], own: bool = False) -> str:
    """The lanes' caption: what a band is, and what each kind of mark the lanes draw means (only the kinds
    drawn: a learner's own lane may hold no reap); `own`: one learner's lane, not the class's."""
    leases = [(b, v["state"] == "paused") for v in views for b in v["leases"]]
    ended = {b["ended"] for b, _ in leases}
    said = {name: MARKS[name].said for name in MARKS}
    past = any(held_past(b, paused) for b, paused in leases)
    kinds = [("completed" in ended, f"a {said['done']} at a band's end is a completion"),
             ("refused" in ended, f"a {said['refused']} a stale write the attempts fence refused"),
             ("landed" in ended, f"a {said['effect']} a late effect that landed all the same (fencing off)"),
             (any(v["crashes"] for v in views), f"a {said['crash']} a crash"),
             (any(v["reaps"] for v in views), f"a {said['taken-back']} a reap that handed a classmate's expired "
                                              "job back"),
             (any(v["pauses"] for v in views), f"a {said['pause']} a pause")]
    head = "One learner's worker on the class server." if own else \
        "A class on one server: one lane per learner's worker."
    band = ("Each band is a lease, from the claim until it ended, never past the deadline the server stamped on "
            "its own clock" + (f" (a {said['held-past']} is the worker holding on past it)" if past else ""))
    marks = [words for drawn, words in kinds if drawn]
    return f"{head} {band}" + (f"; {', '.join(marks)}." if marks else ".")


def class_words(snapshot: dict[str, Any]) -> FigureWords:
    """What the class figure says: the caption, the totals as its prompt, and for each joined
    learner (a mode per seat) its name, its story (`lane_story`) and its short verdict."""
    lanes = [lane for lane in snapshot["lanes"] if lane.get("name")]
    views = {v["slot"]: v for v in class_lanes(snapshot)}
    modes = {lane["slot"]: ModeWords(lane["name"], *_headline_static_facts(lane, lanes, views, snapshot.get("fates")))
             for lane in lanes}
    caption = lanes_caption(list(views.values()), own=snapshot.get("totals") is None)
    if snapshot.get("totals") is None:  # one learner's own lane: its story is the prompt
        own = lanes[0]["name"] if lanes else "this learner"
        return FigureWords(caption, lane_story(own, lanes, snapshot.get("fates")), modes)
    return FigureWords(caption, totals_sentence(snapshot["totals"]), modes)
