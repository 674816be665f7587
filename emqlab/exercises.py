"""Checks for the recap exercises (lesson 07). Each runs the learner's answer against the store
where it can, and replies with a `Feedback`: right or not yet, and why, in plain words.

A check never raises on a wrong answer: being wrong is the normal first step of an exercise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import redis

from .errors import BadParameter, EmqlabError
from .renewal import parse_cadence
from .scenarios.base import run_on
from .scenarios.heartbeat import heartbeat
from .scenarios.renewal_cost import renewal_cost
from .words import plural, seconds

LEASE, JOB = 30, 75
CRASH_FREE_WITHIN = 10  # seconds: exercise 3's bound on how long a crashed holder may block others
GC_PAUSE = (21, 3)  # exercise 3's stop-the-world pause: at 21 s, for 3 s


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
    """Exercise 1: a renewal cadence (fraction of the 30 s lease) that keeps a 75 s job held, with
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
    if run["lapsed_at"] is not None:
        return Feedback(False, f"An extend every {seconds(every)} comes too late for a {LEASE} s lease; an extend "
                               f"must arrive before the lease runs out. The run: {run['summary']}")
    if every > LEASE / 2:
        return Feedback(False, f"The lease held, but each extend arrives with {seconds(LEASE - every)} of the "
                               f"{LEASE} s lease left, less than half of it: if one extend fails, the retry has less "
                               "time than the cadence itself. Renew while at least half the lease remains "
                               "(a fraction of 0.5 or less).")
    return Feedback(True, f"Each extend arrives with {seconds(LEASE - every)} of the lease still in hand, at least "
                          f"half of it, so a failed one can be retried in time. The run: {run['summary']}")


# -- 2. write the extend ----------------------------------------------------------------------------
def check_extend_script(lua: Any, backend: Any = None) -> Feedback:
    """Exercise 2: a Lua extend (KEYS[1] lock, ARGV[1] token, ARGV[2] ms) that resets the TTL only
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
        return client.eval(lua, 1, key, token, 60_000)

    client.set(key, "mine", px=10_000)
    reply = call("mine")
    ttl = client.pttl(key)
    if client.get(key) != "mine":
        return Feedback(False, "When the token matched, your script changed or removed the lock's value; an "
                               "extend only resets the time to live (PEXPIRE), the token stays.")
    if ttl <= 10_000:
        return Feedback(False, "When the token matched, the time to live did not change: call PEXPIRE on "
                               "KEYS[1] with ARGV[2].")
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
    """Exercise 3: a lease (seconds, renewed at half of it) that frees a crashed holder's lock within
    10 s and still survives the holder's 3 s stop-the-world pause at 21 s."""
    if _unanswered(lease):
        return Feedback(False, "Set `lease` to a number of seconds.")
    value = _number(lease)
    if value is None or value <= 0:
        return Feedback(False, f"A lease is a number of seconds greater than 0; {lease!r} is not one.")
    crash = heartbeat(lease=value, job=JOB, renew="none", backend=backend).verdict  # a crashed holder never renews
    freed = crash["reclaimed_at"]
    if freed is None or freed > CRASH_FREE_WITHIN:
        got = (f"the contender got the lock only at {seconds(freed)}" if freed is not None
               else "the contender never got the lock")
        return Feedback(False, f"With a {seconds(value)} lease and a holder that never renews (as a crashed one), "
                               f"{got}, later than the {CRASH_FREE_WITHIN} s allowed. Shorten the lease.")
    at, pause_s = GC_PAUSE
    paused = heartbeat(lease=value, job=JOB, renew="half", pause=f"{at}:{pause_s}", backend=backend).verdict
    if paused["lapsed_at"] is not None:
        return Feedback(False, f"Renewing at half a {seconds(value)} lease, a {pause_s} s pause at {at} s can outlast "
                               f"what is left of the lease; make it longer. The run: {paused['summary']}")
    return Feedback(True, f"A crashed holder's lock is free after {seconds(freed)}, and renewing every "
                          f"{seconds(value / 2)} rode out the {pause_s} s pause. Short enough to die with its holder, "
                          f"long enough to outlast a pause. The run: {paused['summary']}")


# -- 4. what renewal costs ----------------------------------------------------------------------------
def check_round_trips(per_job: Any, sweep: Any, jobs: int = 6, backend: Any = None) -> Feedback:
    """Exercise 4: round trips per renewal tick for a worker holding `jobs` leases, per-job timers
    against one sweep. Both designs are run on the store and the answers checked against what
    the runs measured."""
    if _unanswered(per_job) or _unanswered(sweep):
        return Feedback(False, "Set both `per_job` and `sweep` to a number of round trips per tick.")
    measured = {design: renewal_cost(jobs=jobs, design=design, ticks=2, backend=backend).counts["round_trips_per_tick"]
                for design in ("per-job", "sweep")}
    a, b = _number(per_job), _number(sweep)
    if a != measured["per-job"]:
        return Feedback(False, f"With one timer per job, each of the {jobs} held jobs sends its own extend every "
                               f"tick: the run measured {plural(measured['per-job'], 'round trip')} per tick, not {per_job!r}.")
    if b != measured["sweep"]:
        return Feedback(False, f"One sweep sends every held lease in bounded calls written together each tick: the "
                               f"run measured {plural(measured['sweep'], 'round trip')} per tick, not {sweep!r}.")
    return Feedback(True, f"The runs agree: {measured['per-job']:g} round trips per tick for per-job timers, "
                          f"{measured['sweep']:g} for the sweep. The first grows with the jobs held, the second "
                          "only with the ticks.")


# -- 5. which write does fencing refuse ----------------------------------------------------------------
def check_fencing(refused: Any) -> Feedback:
    """Exercise 5: a worker claimed a job (attempts 1), froze past its lease; the reaper returned
    the job and another worker re-claimed it (attempts 2). Whose write does the store refuse:
    "first" or "second"?"""
    if _unanswered(refused):
        return Feedback(False, 'Set `refused` to "first" or "second".')
    answer = str(refused).strip().lower()
    if answer not in ("first", "second"):
        return Feedback(False, f'Answer "first" (the worker that froze) or "second" (the one that re-claimed); '
                               f"{refused!r} is neither.")
    if answer == "second":
        return Feedback(False, "The second worker holds the current attempt (2): its write matches the job and "
                               "lands. The write that must be refused is the late one from the first worker, "
                               "who still carries attempt 1.")
    return Feedback(True, "The first worker woke up carrying attempt 1, but the job is on attempt 2 since the "
                          "re-claim: the store compares the two and refuses its write, so the effect lands once.")


def check_all(answers: dict[str, Any], backend: Any = None) -> list[Feedback]:
    """Every check, in order, from a dict of answers (keys: cadence, extend_lua, lease, per_job, sweep, refused)."""
    try:
        return [
            check_cadence(answers.get("cadence"), backend),
            check_extend_script(answers.get("extend_lua"), backend),
            check_lease(answers.get("lease"), backend),
            check_round_trips(answers.get("per_job"), answers.get("sweep"), backend=backend),
            check_fencing(answers.get("refused")),
        ]
    except EmqlabError as exc:  # e.g. the store went away: say so, in one line
        return [Feedback(False, f"The check could not run: {exc}")]
