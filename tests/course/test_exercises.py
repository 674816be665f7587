"""The exercises' checks: right answers pass, wrong ones are told what was wrong and why, in words."""

from __future__ import annotations

import pytest

from emqlab.core.errors import BadParameter
from emqlab.course import exercises as ex
from emqlab.scenarios.fencing import fencing

GOOD_EXTEND = ex.EXTEND_LUA  # the extend exercise's right answer, as the recap's answer shows it


def test_feedback_reads_as_a_sentence_and_is_falsy_when_wrong():
    good, bad = ex.Feedback(True, "Fine."), ex.Feedback(False, "Too slow.")
    assert str(good) == "✔ Right. Fine." and repr(bad) == "✘ Not yet. Too slow."
    assert good and not bad


@pytest.mark.parametrize("answer", [None, ...])
def test_unanswered_exercises_say_what_to_fill_in(answer):
    assert "Set `cadence`" in str(ex.check_cadence(answer))
    assert "Write the extend" in str(ex.check_extend_script(answer))
    assert "Set `lease`" in str(ex.check_lease(answer))
    assert "Set `k_max`" in str(ex.check_capacity(answer))
    assert "Set `reaped_at`" in str(ex.check_fencing(answer, 2, "first"))


def test_cadence(fake):
    slow = ex.check_cadence(1.2, fake)
    assert not slow and "comes too late" in slow.text and "lapsed at 30 s" in slow.text
    from emqlab.scenarios.heartbeat import heartbeat
    assert slow.text.endswith(heartbeat(renew=1.2, backend=fake).verdict.headline)  # the run's own headline
    tight = ex.check_cadence(0.8, fake)
    assert not tight and "The lease held, but" in tight.text and "6 s of the 30 s lease left" in tight.text
    near = ex.check_cadence(0.51, fake)  # 14.7 s left: less than half, said as such, not "almost no time"
    assert not near and "14.7 s of the 30 s lease left, less than half of it" in near.text
    assert ex.check_cadence(0.5, fake) and "15 s of the lease still in hand" in ex.check_cadence(0.5, fake).text
    assert ex.check_cadence("1/3", fake)
    nonsense = ex.check_cadence("soon", fake)
    assert not nonsense and "'soon' is not one" in nonsense.text


def test_extend_script_right_on_both_stores(backend):
    result = ex.check_extend_script(GOOD_EXTEND, backend)
    assert result, str(result)
    assert backend.keys() == []  # the check's keys are gone afterwards


@pytest.mark.parametrize("lua, says", [
    ('return redis.call("pexpire", KEYS[1], ARGV[2])', "extended a lock that another holder owns"),
    ("return 0", "the time to live did not change"),
    ('redis.call("pexpire", KEYS[1], ARGV[2]) return 0', "replied 0"),
    ('redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2]) return 1', "changed a lock that another holder owns"),
    ('if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end '
     'return 1', "replied 1"),
    ('if redis.call("get", KEYS[1]) == ARGV[1] or redis.call("exists", KEYS[1]) == 0 then '
     'redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2]) return 1 end return 0', "created one"),
    ("this is not lua", "could not run your script"),
])
def test_extend_script_mistakes_are_named(fake, lua, says):
    result = ex.check_extend_script(lua, fake)
    assert not result and says in result.text, result.text
    assert "AssertionError" not in result.text


def test_lease_bounds_crash_and_rides_out_the_pause(fake):
    long = ex.check_lease(30, fake)
    assert not long and "got the lock only at 30.5 s, later than the 10 s allowed" in long.text
    almost = ex.check_lease(9.5, fake)  # 9.5 s is within the bound; the contender's poll came at 10.5 s
    assert not almost and "9.5 s lease" in almost.text and "only at 10.5 s" in almost.text
    assert "longer than" not in almost.text
    short = ex.check_lease(3, fake)
    assert not short and "can outlast what is left of the lease" in short.text and "lapsed at 22.5 s" in short.text
    right = ex.check_lease(8, fake)
    assert right and "lapsed at 8 s and the contender had it at 8.5 s" in right.text and "every 4 s" in right.text
    assert "greater than 0" in ex.check_lease(-1, fake).text


def test_capacity_is_worked_out_from_the_measured_cost():
    budget = ex.renewal_budget()
    given = ex.per_extend_cost()  # what the exercise shows: the cost and the tick, never the capacity found
    assert f"{budget['per_extend_us']:g} µs" in given and "15 s" in given
    assert f"{budget['measured_capacity']:,}" not in given and str(budget["measured_capacity"]) not in given
    estimate = budget["tick_s"] * 1_000_000 / budget["per_extend_us"]
    right = ex.check_capacity(round(estimate, -3))
    assert right and f"{budget['measured_capacity']:,}" in right.text  # the measured run is quoted beside it
    assert not ex.check_capacity(estimate * 2) and not ex.check_capacity(estimate / 2)
    assert "Solve K ×" in ex.check_capacity(10).text and "greater than 0" in ex.check_capacity(-5).text


def test_fencing_answers_are_checked_by_a_run(fake):
    right = ex.check_fencing(22, 2, "first", fake)  # a 20 s lease; beats at 2, 6, …, 18, 22 s
    assert right and "The run agrees" in right.text and "was refused" in right.text
    # the exercise asks about the attempt count as a fencing token: its run must be refused on attempts (worker-1
    # writes while worker-2 still holds the job), not on a state a plain "is it done?" check would also see
    run = fencing(fencing="on", lease=ex.FENCE_LEASE, job=20, pause="{}:{}".format(*ex.FENCE_PAUSE), beat=ex.FENCE_BEAT,
                  backend=fake).verdict
    assert (run.stale_write_refused_by, run.stale_write_found_state) == ("attempts", "active")
    assert "Refused because worker-1 woke still holding attempts 1; the job was at attempts 2" in right.text
    assert not ex.check_fencing(32.5, 2, "first", fake)  # the fencing lesson's answer is not this run's
    late = ex.check_fencing(20, 2, "first", fake).text
    assert "first beat at or after the deadline" in late and "fall at 2 s, 6 s, … every 4 s" in late
    assert "every claim adds one" in ex.check_fencing(22, 1, "first", fake).text
    wrong = ex.check_fencing(22, 2, "second", fake)
    assert not wrong and "still carries attempt 1" in wrong.text


def test_extend_with_expire_in_milliseconds_is_caught(fake):
    blind = ex.check_extend_script('return redis.call("expire", KEYS[1], ARGV[2])', fake)
    checked = ex.check_extend_script(GOOD_EXTEND.replace("pexpire", "expire"), fake)
    for result in (blind, checked):
        assert not result and "about 16.7 hours" in result.text and "Use PEXPIRE" in result.text


def test_check_all_in_order(fake):
    results = ex.check_all(ex.right_answers(), fake)
    assert [bool(r) for r in results] == [True] * 7, [str(r) for r in results]
    assert [bool(r) for r in ex.check_all({}, fake)] == [False] * 7
    k = ex.right_answers()["k_max"]
    assert abs(k - 15_000_000 / ex.renewal_budget()["per_extend_us"]) < 1000  # the arithmetic, rounded


@pytest.mark.parametrize("name", list(ex.EXERCISES))
def test_each_answer_is_right_by_its_own_check_and_says_what_it_sets(fake, name):
    solution = ex.answer(name, fake)
    assert solution.feedback, str(solution)
    names = ex.EXERCISES[name][1]
    assert list(solution.answers) == list(names)
    lines = str(solution).splitlines()
    assert lines[0].startswith(f"{names[0]} = ") and lines[-1] == str(solution.feedback)
    namespace: dict = {}
    exec("\n".join(lines[:-1]), namespace)  # the answer reads as the lesson's own assignments
    assert {name: namespace[name] for name in names} == solution.answers


@pytest.mark.parametrize("name", [0, 1, "Cadence", "budget", True, None])
def test_an_exercise_that_does_not_exist_is_refused(name):
    with pytest.raises(BadParameter, match="the exercises are cadence, extend, lease, capacity, fencing, "):
        ex.answer(name)


@pytest.mark.parametrize("answer, ok, said", [
    (30, False, "hand it to a second worker"),  # shorter than a healthy job
    (40, False, "hand it to a second worker"),
    (88, False, "later than 90 s"),  # deadline 88, the next beat at 92.5
    (60, True, "returned the job to pending at 62.5 s"),
    (85, True, "returned the job to pending at 87.5 s"),
    ("soon", False, "from 1 to 600"), (None, False, "Set `max_runtime`"),
])
def test_the_stuck_job_limit_is_checked_by_a_run(fake, answer, ok, said):
    result = ex.check_max_runtime(answer, fake)
    assert bool(result) is ok and said in result.text, result.text


@pytest.mark.parametrize("answer, ok, said", [
    (15, False, "lost the lease"),  # TTL/2 thinking: the lease is gone
    (10.5, False, "lost the lease"),
    (5, False, "would hold over a slower one"),
    (9.75, True, "d < TTL/3 = 10 s"),
    (10, True, "3 token-checked extends held the 30 s lease"),  # exactly on the line, exact clock: held
    ("ten", False, "from 0 to 60"), (-1, False, "from 0 to 60"), (None, False, "Set `max_delay`"),
])
def test_the_slow_link_budget_is_checked_by_a_run(fake, answer, ok, said):
    result = ex.check_link_budget(answer, fake)
    assert bool(result) is ok and said in result.text
