"""The class lesson's question on the unfenced freeze: what decides each option lives in the package, not in
the lesson's question cell (reader c, F8), and reads the board and the run as the options say."""

from __future__ import annotations

from types import SimpleNamespace

from emqlab.classroom.practice import unfenced_answers

CLEAN = {"one_place": [], "never_lost": [], "attempts_grow": [], "one_effect": [], "no_resurrection": []}


def right(board, landed=True):
    run = SimpleNamespace(late_effect_landed=landed)
    return [option for option, is_right in unfenced_answers(board).items() if is_right(run)]


def test_one_effect_twice_and_nothing_else_broken_is_the_third_option():
    board = {"lost": 0, "duplicate_effects": 1, "invariants": CLEAN}
    assert right(board) == ["nothing lost, every job in one place, and one effect applied twice"]
    assert right(board, landed=False) == []  # the late effect was refused: no option holds


def test_a_lost_job_or_a_job_in_two_places_is_what_the_board_shows():
    assert right({"lost": 1, "duplicate_effects": 1, "invariants": {**CLEAN, "never_lost": ["j3"]}}) == [
        "a lost job: nothing will ever run it"]
    assert right({"lost": 0, "duplicate_effects": 1, "invariants": {**CLEAN, "one_place": ["j3"]}}) == [
        "a job in two places at once"]
    assert right({"lost": 0, "duplicate_effects": 0, "invariants": CLEAN}) == []
