"""Defects planted in the package's own scripts, each a small edit of its text, each one a way a queue's script
goes wrong that the explorer must catch (issue 37's table), with the invariant that catches it:

- the reaper settles an expired job as done and drops its work (done_has_effect);
- the reaper takes a job back 15 s before the deadline the holder was granted (lease_kept);
- the reaper never returns anything: a crashed worker's job stays active for ever (progress);
- a claim silently drops pending jobs that waited 45 s or more (never_lost);
- a reap within 5 s of a deadline marks the job pending but leaves it in active (one_place).

Each is built from the shipped script by replacing one passage; `planted()` refuses a passage that is no
longer in the script, so an edit of the script cannot quietly turn a defect into the shipped behaviour."""

from __future__ import annotations

from emqlab.store.scripts import source

BACK_TO_PENDING = """  if held then
    redis.call('HSET', job_key, 'state', 'pending', 'session', '0')
  else
    redis.call('HSET', job_key, 'state', 'pending')
  end
  ids[#ids + 1] = id"""
SCORED = """  scored[#scored + 1] = 0
  scored[#scored + 1] = id
"""
EXPIRED = "redis.call('ZRANGEBYSCORE', active_key, '-inf', now, 'LIMIT', 0, limit)"
EXPIRED_LOOP = """  back_to_pending(id, job_key, session == '1')
end
-- One ZREM for the slice: a backlog of 100,000 costs a few calls per slice, not three per job.
-- Slices stay far below Lua's unpack limit.
if #expired > 0 then
  redis.call('ZREM', active_key, unpack(expired))
end"""
POP = "local popped = redis.call('ZPOPMIN', pending_key, limit)"


def _edit(name: str, *pairs: tuple[str, str]) -> dict[str, str]:
    text = source(name)
    for old, new in pairs:
        if old not in text:
            raise AssertionError(f"{name}.lua no longer holds the passage a planted defect replaces: {old[:60]!r}")
        text = text.replace(old, new)
    return {name: text}


def planted() -> dict[str, tuple[dict[str, str], str]]:
    """{a defect in words: ({script name: its broken text}, the invariant that must catch it)}."""
    return {
        "the reaper settles an expired job as done and drops the work": (_edit(
            "reap", (BACK_TO_PENDING, "  redis.call('HSET', job_key, 'state', 'done')\n"
                                      "  redis.call('SADD', base .. 'done', id)"), (SCORED, "")), "done_has_effect"),
        "the reaper takes a job back 15 s before the deadline it granted": (_edit(
            "reap", (EXPIRED, EXPIRED.replace("now,", "now + 15000,"))), "lease_kept"),
        "the reaper never reaps": (_edit("reap", ("local ids = {}", "do return {now, 0} end\nlocal ids = {}")),
                                   "progress"),
        "a claim drops pending jobs that waited 45 s or more": (_edit(
            "claim", (POP, "redis.call('ZREMRANGEBYSCORE', pending_key, 1, now - 45000)\n" + POP)), "never_lost"),
        "a reap within 5 s of a deadline marks the job pending but leaves it in active": (_edit(
            "reap", (EXPIRED_LOOP, """  if tonumber(redis.call('ZSCORE', active_key, id)) >= now - 5000 then
    redis.call('HSET', job_key, 'state', 'pending')
  else
    back_to_pending(id, job_key, session == '1')
    redis.call('ZREM', active_key, id)
  end
end""")), "one_place"),
    }
