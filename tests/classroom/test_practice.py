"""The class lesson's practice class: `emqlab class serve` run for a learner alone, two classmates of its own,
the instructor's controls; what the lesson's predictions read, and nothing left when it closes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from emqlab.course import lab
from emqlab.core.errors import BadParameter
from emqlab.classroom.board import lane_settled
from emqlab.classroom.practice import PracticeClass
from realtime import host, premise, timeout_s
from support.processes import descendants, servers

pytestmark = pytest.mark.live

# real seconds, each the package's default on the reference host and longer on a slower one (tests/realtime.py):
# the 2 s lease runs out within 2 s of the pause and a classmate's 0.5 s beat reaps it; a 5 s pause leaves 2.5 s
# for a loaded machine's late beats (at 3 s a late beat let ada wake still holding it). The work grows with
# them, so the 300 jobs still outlast the crash and the two pauses
K = host().scale_factor
OPTIONS = {"lease_s": 2.0 * K, "beat_s": 0.5 * K, "work_s": 0.2 * K}
PAUSE_S = 5 * K


def valkey_servers() -> set[int]:
    found = set()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "comm").read_text().strip() == "valkey-server":
                found.add(int(proc.name))
        except OSError:  # gone while we looked
            pass
    return found


def effect_landed_and_completion_refused(lanes: list[dict], name: str) -> set[tuple[str, int]]:
    """(job, attempts) for each job `name` held at its latest pause whose late settling, after it woke, wrote
    its effect (unfenced) and then had its completion refused: that attempt did not finish the job."""
    mine = next(lane for lane in lanes if lane["name"] == name)
    pause = max((e for e in mine["notes"] if e["kind"] == "pause_start"), key=lambda e: e["t"])
    late = [e for e in mine["events"] + mine["notes"] if e["t"] > pause["t"] and e.get("job") in pause["holding"]]
    effects = {(e["job"], e["attempts"]) for e in late if e["kind"] == "effect"}
    return effects & {(e["job"], e["attempts"]) for e in late if e["kind"] == "complete_refused"}


def test_a_crash_and_a_freeze_in_a_practice_class_and_nothing_left_after():
    room = PracticeClass(seats=3, classmates=2, **OPTIONS)
    ours = servers(descendants(room._serve.pid))
    assert ours and set(ours) <= valkey_servers()  # the class's own server (other tests may run theirs beside it)
    folder, mates = room.folder, list(room.classmates)
    try:
        assert oct(os.stat(folder).st_mode & 0o777) == "0o700"  # the join file's folder is the learner's alone
        me = lab.join(room.address(1), name="ada", **OPTIONS)
        assert len(room.board.enqueue(300)) == 300
        crashed = room.crash("ada", timeout=timeout_s(60))
        v = crashed.verdict
        assert v.held and v.finished == v.held and set(v.reaped_by.values()) <= {"classmate-2", "classmate-3"}
        # a classmate reaped the job, or (a crash racing the job's own completion) it finished just before
        assert v.reaped_by or "it finished before its lease ran out" in v.text, v
        assert "it crashed holding" in v.text and not me.alive
        me = lab.join(room.address(1), name="ada", **OPTIONS)
        frozen = room.pause("ada", PAUSE_S, timeout=timeout_s(60)).verdict
        assert frozen.late_write_refused and not frozen.late_effect_landed
        assert "its late write was refused" in frozen.text
        room.board.fencing(False)
        unfenced = room.pause("ada", PAUSE_S, timeout=timeout_s(60)).verdict
        assert unfenced.late_effect_landed and not unfenced.late_write_refused
        assert "its late effect landed anyway" in unfenced.text
        lanes = room.board.lanes()  # read before the totals
        twice = effect_landed_and_completion_refused(lanes, "ada")
        # the lane's counts (its verdict, its headline): the fenced freeze's write is a late write refused; the
        # unfenced one's effect landed, so it is a duplicate, neither refused nor a job ada finished
        settled = lane_settled(next(lane for lane in lanes if lane["name"] == "ada"))
        assert set(frozen.held) & {job for job, _ in settled["refused"]}, settled
        assert twice <= settled["duplicated"] and not twice & (settled["finished"] | settled["refused"]), settled
        # each such job is done (finished) by another attempt's completion, which wrote its effect as well
        premise(bool(twice) and {job for job, _ in twice} <= set(unfenced.finished),
                "ada woke, wrote the effect of a job it held and had its completion refused, and the job is done")
        totals = room.board.totals()
        assert totals["lost"] == 0 and totals["duplicate_effects"] >= 1 and totals["invariants_ok"]
        me.stop()
    finally:
        room.close()
    assert not os.path.exists(folder)
    assert room._serve.returncode is not None  # `class serve` ended, and with it its server
    assert not set(ours) & valkey_servers()
    assert len(mates) == 2 and not [m for m in mates if m.alive]


def test_a_practice_class_refuses_a_bad_size_in_one_sentence():
    with pytest.raises(BadParameter, match="from 2 to 30 seats"):
        PracticeClass(seats=1)
    with pytest.raises(BadParameter, match="one seat is yours"):
        PracticeClass(seats=3, classmates=3)
