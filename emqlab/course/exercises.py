"""Checks for the course's exercises (in the recap, the sessions lesson and the slow link's). Each runs
the learner's answer against the store where it can, and replies with a `Feedback`: right or not
yet, and why, in plain words.

A check never raises on a wrong answer: being wrong is the normal first step of an exercise.
Each exercise's right answer is kept here too (`right_answers`), and `answer(name)` runs that exercise's
check on it: what the lesson keeps, folded away, under each exercise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import redis

from ..core.errors import BadParameter, EmqlabError, StoreError
from ..core.measured import load_benchmark
from ..lease.cadence import parse_cadence
from ..scenarios.run_harness import run_on
from ..scenarios.fencing import fencing
from ..scenarios.heartbeat import heartbeat
from ..scenarios.slow_link import latency_bound
from ..core.words import seconds
from ..store.clock import to_ms, to_s

LEASE, JOB = 30, 75
CRASH_FREE_WITHIN = 10  # seconds: the "lease" exercise's bound on how long a crashed holder may block others
GC_PAUSE = (21, 3)  # the "lease" exercise's stop-the-world pause: at 21 s, for 3 s
TICK_S = 15.0  # the "capacity" exercise: a 30 s lease renewed at TTL/2
# the fencing exercise's run: not the fencing lesson's, whose answer is shown. worker-1 freezes at 3 s for 20 s
# and writes at 40 s, while worker-2 (re-claimed at 22 s) still runs the job: the store refuses it on attempts
FENCE_LEASE, FENCE_BEAT, FENCE_PAUSE = 20, 4, (3, 20)  # the pause: at, seconds
US_PER_MS = 1000  # microseconds in a millisecond: the capacity exercise quotes a measured cost per extend in µs
ASKED_MS = 60_000  # the "extend" exercise: the time to live the check asks the learner's extend to set
# the "link-budget" exercise: the delays it runs, and how close to the bound is right
LINK_DELAY_MAX, LINK_TOLERANCE = 60, 0.5
STUCK_HEALTHY_S, STUCK_BACK_BY_S, STUCK_BEAT_S, STUCK_LIMIT_MAX = 40, 90, 5, 600  # the "max-runtime" exercise
CAPACITY_TOLERANCE = 0.25  # the "capacity" exercise: an estimate within 25 % of the arithmetic is right


EXTEND_LUA = """
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("pexpire", KEYS[1], ARGV[2])
end
return 0
"""  # the extend exercise's answer: the token-checked extend, written out


@dataclass(frozen=True)
class Feedback:
    ok: bool
    text: str

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return ("✔ Right. " if self.ok else "✘ Not yet. ") + self.text

    __repr__ = __str__


def _unanswered(answer: Any) -> bool:
    return answer is None or answer is Ellipsis


def _number(answer: Any) -> float | None:
    if isinstance(answer, bool):
        return None
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


# -- 1. a cadence that forgives one missed extend ------------------------------------------------
def check_cadence(fraction: Any, backend: Any = None) -> Feedback:
    """The "cadence" exercise: a renewal cadence (fraction of the 30 s lease) that keeps a 75 s job held, with
    at least half the lease left at every extend so that a failed one can be retried."""
    if _unanswered(fraction):
        return Feedback(False, "Set `cadence` to the fraction of the lease between two extends, e.g. 0.75.")
    try:
        value = parse_cadence(fraction).fraction
    except BadParameter:
        value = None
    if value is None:
        return Feedback(False, f"The cadence is a fraction of the lease greater than 0 (0.5 means every 15 s); "
                               f"{fraction!r} is not one.")
    every = value * LEASE
    run = heartbeat(lease=LEASE, job=JOB, renew=value, backend=backend).verdict
    if run.lapsed_at is not None:
        return Feedback(False, f"An extend every {seconds(every)} comes too late for a {LEASE} s lease; an extend "
                               f"must arrive before the lease runs out. The run: {run.headline}")
    if every > LEASE / 2:
        return Feedback(False, f"The lease held, but each extend arrives with {seconds(LEASE - every)} of the "
                               f"{LEASE} s lease left, less than half of it: if one extend fails, the retry has less "
                               "time than the cadence itself. Renew while at least half the lease remains.")
    return Feedback(True, f"Each extend arrives with {seconds(LEASE - every)} of the lease still in hand, at least "
                          f"half of it: time to retry a failed one at once (waiting for the next tick, at half the "
                          f"lease, lands with nothing left: lesson 03). The run: {run.headline}")


# -- 2. write the extend ----------------------------------------------------------------------------
def check_extend_script(lua: Any, backend: Any = None) -> Feedback:
    """The "extend" exercise: a Lua extend (KEYS[1] lock, ARGV[1] token, ARGV[2] ms) that resets the TTL only
    for the owner and replies 0 otherwise. Runs it on the store in three cases."""
    if _unanswered(lua) or not str(lua).strip():
        return Feedback(False, "Write the extend as Lua in the string `extend_lua`; KEYS[1] is the lock, "
                               "ARGV[1] your token, ARGV[2] the new time to live in ms.")
    with run_on(backend, "exercise", {"exercise": "extend"}) as run:
        client, key = run.backend.client, run.key("lock")
        try:
            return _try_extend(client, str(lua), key)
        except redis.ResponseError as exc:
            return Feedback(False, f"The server could not run your script: {exc}.")


def _try_extend(client, lua: str, key: str) -> Feedback:
    def call(token: str) -> Any:
        return client.eval(lua, 1, key, token, ASKED_MS)

    client.set(key, "mine", px=10_000)
    reply = call("mine")
    ttl = client.pttl(key)
    if client.get(key) != "mine":
        return Feedback(False, "When the token matched, your script changed or removed the lock's value; an "
                               "extend only resets the time to live (PEXPIRE), the token stays.")
    if ttl <= 10_000:
        return Feedback(False, "When the token matched, the time to live did not change: call PEXPIRE on "
                               "KEYS[1] with ARGV[2].")
    if ttl > ASKED_MS:
        hours = ttl / 3_600_000
        if ttl > 100 * ASKED_MS:
            return Feedback(False, f"Your script set a time to live of about {hours:.3g} hours, not "
                                   f"{to_s(ASKED_MS):g} seconds: ARGV[2] is in milliseconds, and EXPIRE reads its "
                                   "argument as seconds. Use PEXPIRE, which takes milliseconds.")
        return Feedback(False, f"Your script set a time to live of {ttl} ms, more than the {ASKED_MS} ms asked for "
                               "in ARGV[2]; pass ARGV[2] to PEXPIRE as it is.")
    if not reply:
        return Feedback(False, "The lease was extended, but the script replied 0 (or nothing), which tells the "
                               "holder it lost the lock. Return PEXPIRE's reply (1) when the token matched.")

    client.set(key, "someone-else", px=10_000)
    reply = call("mine")
    if client.get(key) != "someone-else":
        return Feedback(False, "Your script changed a lock that another holder owns; only the owner may touch it.")
    if client.pttl(key) > 10_000:
        return Feedback(False, "Your script extended a lock that another holder owns. Compare GET KEYS[1] with "
                               "ARGV[1] first, and extend only when they are equal.")
    if reply != 0:
        return Feedback(False, f"The other holder's lock was left alone, but your script replied {reply!r}. "
                               "Reply 0, so the caller learns at once that the lock is no longer its own.")

    client.delete(key)
    reply = call("mine")
    if client.exists(key):
        return Feedback(False, "With no lock present, your script created one. A lapsed lease must stay gone; "
                               "extend only a key that holds your token.")
    if reply != 0:
        return Feedback(False, f"With no lock present your script replied {reply!r}; it must reply 0 (lock lost).")
    return Feedback(True, "Your extend resets the time to live for its owner, leaves another holder's lock "
                          "untouched, and replies 0 when the lock is not yours: the holder learns at once.")


# -- 3. a lease short enough for a crash, long enough for a pause ----------------------------------
def check_lease(lease: Any, backend: Any = None) -> Feedback:
    """The "lease" exercise: a lease (seconds, renewed at half of it) with which a contender polling once a
    second gets a crashed holder's lock within 10 s, and which still survives the holder's 3 s stop-the-world
    pause at 21 s."""
    if _unanswered(lease):
        return Feedback(False, "Set `lease` to a number of seconds.")
    value = _number(lease)
    if value is None or value <= 0:
        return Feedback(False, f"A lease is a number of seconds greater than 0; {lease!r} is not one.")
    crash = heartbeat(lease=value, job=JOB, renew="none", backend=backend).verdict  # a crashed holder never renews
    freed = crash.reclaimed_at
    if freed is None or freed > CRASH_FREE_WITHIN:
        got = (f"the contender got the lock only at {seconds(freed)}" if freed is not None
               else "the contender never got the lock")
        return Feedback(False, f"With a {seconds(value)} lease and a holder that never renews (as a crashed one), "
                               f"{got}, later than the {CRASH_FREE_WITHIN} s allowed. Shorten the lease.")
    at, pause_s = GC_PAUSE
    paused = heartbeat(lease=value, job=JOB, renew="half", pause=f"{at}:{pause_s}", backend=backend).verdict
    if paused.lapsed_at is not None:
        return Feedback(False, f"Renewing at half a {seconds(value)} lease, a {pause_s} s pause at {at} s can outlast "
                               f"what is left of the lease; make it longer. The run: {paused.headline}")
    return Feedback(True, f"A crashed holder's lock lapsed at {seconds(crash.lapsed_at)} and the contender had it at "
                          f"{seconds(freed)}, and renewing every "
                          f"{seconds(value / 2)} rode out the {pause_s} s pause. Short enough to die with its holder, "
                          f"long enough to outlast a pause. The run: {paused.headline}")


# -- 4. how many leases can per-job timers keep? --------------------------------------------------
def renewal_budget() -> dict[str, float]:
    """What the "capacity" exercise gives the learner, read from the live benchmark that ships with emqlab:
    the wall time of one per-job extend (K = 1,000, one connection) and the 15 s tick of a 30 s
    lease renewed at TTL/2; and what the benchmark's capacity search then measured."""
    bench = load_benchmark() or {}
    row = next((r for r in bench.get("rows", []) if r["design"] == "emqlab per-job" and r["k"] == 1000), None)
    cap = next((c for c in bench.get("capacity", []) if c["design"] == "emqlab per-job"), None)
    if row is None or cap is None:
        raise StoreError("the capacity exercise reads the benchmark's measurements (emqlab/data/renewal_cost.json), "
                         "and they are missing; run `.venv/bin/python benchmarks/renewal_cost.py`")
    return {"per_extend_us": round(row["wall_ms_per_tick"] * US_PER_MS / row["k"], 1), "tick_s": TICK_S,
            "measured_capacity": cap["capacity_k"], "first_over": cap["first_over"]}


def per_extend_cost() -> str:
    """What the "capacity" exercise shows the learner: the measured cost of one per-job extend and the tick it must
    fit in (not the capacity the benchmark then found: that is the answer the check compares with)."""
    budget = renewal_budget()
    return (f"one per-job extend: {budget['per_extend_us']:g} µs of wall time (measured on live Valkey, K = 1,000, "
            f"one connection) · the tick: {budget['tick_s']:g} s (a 30 s lease renewed at TTL/2)")


def check_capacity(k_max: Any) -> Feedback:
    """The "capacity" exercise: from the measured cost of one per-job extend, the K at which a tick of per-job
    timers (K extends one after another) no longer fits in the 15 s cadence."""
    if _unanswered(k_max):
        return Feedback(False, "Set `k_max` to a number of leases.")
    value = _number(k_max)
    if value is None or value <= 0:
        return Feedback(False, f"K is a number of leases greater than 0; {k_max!r} is not one.")
    budget = renewal_budget()
    estimate = to_ms(budget["tick_s"]) * US_PER_MS / budget["per_extend_us"]
    found = (f"The benchmark's capacity search, run for real, kept K = {budget['measured_capacity']:,} alive "
             f"and failed at K = {budget['first_over']:,}")
    if estimate >= budget["measured_capacity"]:
        measured = found + ": per extend the cost is not quite constant as K grows, so the straight-line estimate " \
                           "is an upper bound."
    else:  # the per-extend cost and the capacity search came from different runs of the benchmark
        measured = found + ", more than the estimate: the two numbers come from different runs of the " \
                           "benchmark, and a machine's speed varies between runs; the straight line is a good " \
                           "first answer, a capacity search the real one."
    if abs(value - estimate) > CAPACITY_TOLERANCE * estimate:
        return Feedback(False, f"One tick sends K extends one after another, so it lasts about K × "
                               f"{budget['per_extend_us']:g} µs; it must end within {budget['tick_s']:g} s. "
                               f"Solve K × {budget['per_extend_us']:g} µs = {budget['tick_s']:g} s; {k_max!r} is "
                               f"not close to that.")
    return Feedback(True, f"About {estimate:,.0f} leases: {budget['tick_s']:g} s / {budget['per_extend_us']:g} µs. "
                          + measured)


# -- 5. when is the job back, and whose write is refused? ----------------------------------------------
def check_fencing(reaped_at: Any, attempts: Any, refused: Any, backend: Any = None) -> Feedback:
    """The "fencing" exercise: worker-1 claims a job with a 20 s lease and freezes at 3 s for 20 s; worker-2
    beats every 4 s, first at 2 s. When does a beat reap the job, what attempts number does the
    re-claim carry, and whose late write does the store refuse? A real run checks the answers."""
    if any(_unanswered(a) for a in (reaped_at, attempts, refused)):
        return Feedback(False, 'Set `reaped_at` (seconds), `attempts` (a number) and `refused` ("first" or '
                               '"second").')
    at, pause_s = FENCE_PAUSE
    run = fencing(fencing="on", lease=FENCE_LEASE, job=20, pause=f"{at}:{pause_s}", beat=FENCE_BEAT,
                  backend=backend).verdict
    when, count = _number(reaped_at), _number(attempts)
    who = str(refused).strip().lower()
    if when is None or abs(when - run.reaped_at) > 0.5:
        return Feedback(False, f"The lease runs out at {seconds(FENCE_LEASE)}; a reap happens only on a beat, and "
                               f"worker-2's beats fall at {seconds(FENCE_BEAT / 2)}, {seconds(FENCE_BEAT * 1.5)}, … every {seconds(FENCE_BEAT)}. The first "
                               f"beat at or after the deadline is the answer; {reaped_at!r} is not it.")
    if count != run.reclaim_attempts:
        return Feedback(False, f"The first claim made attempts 1; every claim adds one. {attempts!r} is not what "
                               "the re-claim carries.")
    if who != "first":
        return Feedback(False, "The second worker holds the current attempt: its write matches the job and lands. "
                               "The write to refuse is the late one from the first worker, who still carries "
                               "attempt 1.")
    why = run.facts[-1]  # the scenario's own words for what refused the late write
    return Feedback(True, f"The run agrees: {run.headline} Refused because {why}.")


# -- 6. a budget for a slow link ---------------------------------------------------------------------
def check_link_budget(max_delay: Any, backend: Any = None) -> Feedback:
    """The "link-budget" exercise: a holder renews its 30 s lease every 10 s (a third of it) over a slow link. What
    is the longest one-way delay under which the lease still holds? A real run at that delay checks."""
    if _unanswered(max_delay):
        return Feedback(False, "Set `max_delay` to a one-way delay in seconds, e.g. 5.")
    delay = _number(max_delay)
    if delay is None or not 0 <= delay <= LINK_DELAY_MAX:
        return Feedback(False, f"A delay is a number of seconds from 0 to {LINK_DELAY_MAX}; {max_delay!r} is not one.")
    bound = latency_bound(LEASE, 1 / 3)
    run = heartbeat(lease=LEASE, job=JOB, renew="third", latency=delay, backend=backend).verdict
    if run.reclaimed_at is not None:
        return Feedback(False, f"A real run over a {seconds(delay)} link lost the lease: the contender took the job "
                               "while the holder still worked on it. Each delay counts twice: once while the "
                               "acquire's reply travels back (the timer starts only then) and once while the "
                               "extend travels out.")
    if bound - delay > LINK_TOLERANCE:
        return Feedback(False, f"The lease holds over a {seconds(delay)} link, but it would hold over a slower one "
                               "too. Count from the moment the server stamps the lease: the reply travels back, the "
                               "timer waits a third of the lease, the extend travels out, and all of it must fit "
                               "inside the lease.")
    return Feedback(True, f"d + TTL/3 + d < TTL gives d < TTL/3 = {seconds(bound)}: at (1 − c) × TTL / 2 with "
                          f"c = ⅓. Exactly on the line the extend lands at the deadline itself, which a live server "
                          f"may or may not still honour. The run: {run.headline}")


# -- 7. a limit for a stuck job ----------------------------------------------------------------------
def check_max_runtime(max_runtime: Any, backend: Any = None) -> Feedback:
    """The "max-runtime" exercise: workers renew one session each (30 s, beat 5 s); a healthy job takes at most 40 s.
    Choose the per-job limit set at the claim so that no healthy job is taken away and a hung one is
    back in pending within 90 s of its claim. A real run of a hung job checks the second half."""
    from ..scenarios.stuck import stuck

    if _unanswered(max_runtime):
        return Feedback(False, "Set `max_runtime` to a number of seconds, e.g. 60.")
    limit = _number(max_runtime)
    if limit is None or not 1 <= limit <= STUCK_LIMIT_MAX:
        return Feedback(False, f"The limit is a number of seconds from 1 to {STUCK_LIMIT_MAX}; {max_runtime!r} is not "
                               "one.")
    if limit <= STUCK_HEALTHY_S:
        return Feedback(False, f"A healthy job may run for {STUCK_HEALTHY_S} s; a limit of {seconds(limit)} would "
                               "hand it to a second worker while the first is still doing honest work, and the "
                               "attempts fence would then throw that work away.")
    run = stuck(design="session", max_runtime=limit, backend=backend).verdict
    back = run.reclaimed_at
    if back is None or back > STUCK_BACK_BY_S:
        return Feedback(False, f"The hung job comes back only when a beat finds its deadline passed: with a limit of "
                               f"{seconds(limit)} that is later than {STUCK_BACK_BY_S} s. A beat comes every "
                               f"{STUCK_BEAT_S} s, so leave room for one.")
    return Feedback(True, f"Longer than any healthy job, and short enough that a beat after the deadline still falls "
                          f"within {STUCK_BACK_BY_S} s. The run: {run.headline}")


# Every exercise by name, in the course's order: its check, the names of the answers it takes (as the lesson
# names them), and whether it runs on a store ("capacity" is arithmetic on measured numbers). The recap
# holds cadence, extend, lease and fencing; the sessions lesson capacity and max-runtime; the slow link's
# lesson link-budget.
EXERCISES = {
    "cadence": (check_cadence, ("cadence",), True),
    "extend": (check_extend_script, ("extend_lua",), True),
    "lease": (check_lease, ("lease",), True),
    "capacity": (check_capacity, ("k_max",), False),
    "fencing": (check_fencing, ("reaped_at", "attempts", "refused"), True),
    "link-budget": (check_link_budget, ("max_delay",), True),
    "max-runtime": (check_max_runtime, ("max_runtime",), True),
}


def _check(name: str, answers: dict[str, Any], backend: Any) -> Feedback:
    check, names, on_store = EXERCISES[name]
    values = [answers.get(name) for name in names]
    return check(*values, backend) if on_store else check(*values)


def check_all(answers: dict[str, Any], backend: Any = None) -> list[Feedback]:
    """Every check, in order, from a dict of answers (keys: cadence, extend_lua, lease, k_max, reaped_at,
    attempts, refused, max_delay, max_runtime)."""
    try:
        return [_check(name, answers, backend) for name in EXERCISES]
    except EmqlabError as exc:  # e.g. the store went away: say so, in one line
        return [Feedback(False, f"The check could not run: {exc}")]


def right_answers() -> dict[str, Any]:
    """Every exercise's right answer, under the names the lessons give them (what `check_all` takes).
    The "capacity" exercise's is worked out from the measured cost it shows, rounded as a learner would."""
    budget = renewal_budget()
    return {"cadence": 0.5, "extend_lua": EXTEND_LUA, "lease": 8,
            "k_max": int(round(to_ms(budget["tick_s"]) * US_PER_MS / budget["per_extend_us"], -3)),
            "reaped_at": 22, "attempts": 2, "refused": "first",  # a 20 s lease; beats at 2, 6, …, 18, 22 s
            "max_delay": 9.5, "max_runtime": 60}


@dataclass(frozen=True)
class Solution:
    """An exercise's right answer, as the lesson's cell assigns it, and what the check says of it."""

    answers: dict[str, Any]
    feedback: Feedback

    def __str__(self) -> str:
        def value(v: Any) -> str:  # text as the lesson writes it: in double quotes, a script in triple quotes
            if isinstance(v, str):
                return f'"""{v}"""' if "\n" in v else f'"{v}"'
            return repr(v)

        lines = [f"{name} = {value(v)}" for name, v in self.answers.items()]
        return "\n".join(lines + [str(self.feedback)])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        """Folded away, as the lab folds the cell: a reader of the saved lesson as HTML (nbconvert, a
        notebook viewer) opens it on purpose, after trying the exercise."""
        import html

        return f"<details><summary>Show a right answer</summary><pre>{html.escape(str(self))}</pre></details>"


def answer(name: Any, backend: Any = None) -> Solution:
    """The exercise `name`'s right answer, checked by its own check on `backend`, as a real run."""
    if not isinstance(name, str) or name not in EXERCISES:
        raise BadParameter(f"the exercises are {', '.join(EXERCISES)}; {name!r} is not one of them")
    right = right_answers()
    given = {key: right[key] for key in EXERCISES[name][1]}
    return Solution(given, _check(name, given, backend))
