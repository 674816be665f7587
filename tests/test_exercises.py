"""Lesson 07's checks: right answers pass, wrong ones are told what was wrong and why, in words."""

from __future__ import annotations

import pytest

from emqlab import exercises as ex

GOOD_EXTEND = """
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("pexpire", KEYS[1], ARGV[2])
end
return 0
"""


def test_feedback_reads_as_a_sentence_and_is_falsy_when_wrong():
    good, bad = ex.Feedback(True, "Fine."), ex.Feedback(False, "Too slow.")
    assert str(good) == "✔ Right. Fine." and repr(bad) == "✘ Not yet. Too slow."
    assert good and not bad


@pytest.mark.parametrize("answer", [None, ...])
def test_unanswered_exercises_say_what_to_fill_in(answer):
    assert "Set `cadence`" in str(ex.check_cadence(answer))
    assert "Write the extend" in str(ex.check_extend_script(answer))
    assert "Set `lease`" in str(ex.check_lease(answer))
    assert "Set both" in str(ex.check_round_trips(answer, 1))
    assert 'Set `refused`' in str(ex.check_fencing(answer))


def test_cadence(fake):
    slow = ex.check_cadence(1.2, fake)
    assert not slow and "comes too late" in slow.text and "lapsed at 30 s" in slow.text
    from emqlab.scenarios import heartbeat
    assert slow.text.endswith(heartbeat(renew=1.2, backend=fake).verdict["summary"])  # the run's own words
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
    assert right and "free after 8.5 s" in right.text and "every 4 s" in right.text
    assert "greater than 0" in ex.check_lease(-1, fake).text


def test_round_trips_and_fencing(fake):
    assert ex.check_round_trips(6, 1, backend=fake)
    assert "the run measured 6 round trips per tick, not 1" in ex.check_round_trips(1, 1, backend=fake).text
    assert "the run measured 1 round trip per tick, not 6" in ex.check_round_trips(6, 6, backend=fake).text
    assert ex.check_round_trips(100, 1, jobs=100, backend=fake)
    assert ex.check_fencing("first") and ex.check_fencing(" First ")
    wrong = ex.check_fencing("second")
    assert not wrong and "still carries attempt 1" in wrong.text
    assert "is neither" in ex.check_fencing("both").text


def test_check_all_in_order(fake):
    results = ex.check_all({"cadence": 0.5, "extend_lua": GOOD_EXTEND, "lease": 8, "per_job": 6, "sweep": 1,
                            "refused": "first"}, fake)
    assert [bool(r) for r in results] == [True] * 5
    assert [bool(r) for r in ex.check_all({}, fake)] == [False] * 5
