"""A run's typed records: named once, read as attributes, written to the JSON keys the command line has
always printed (a field may carry its own JSON name, be left out while it holds its default, and a
verdict's words come after its facts), and read back the same."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, field

import pytest

from emqlab.core.timeline import Record, Timeline, Verdict, json_name
from emqlab.scenarios import load


@dataclass(frozen=True, kw_only=True)
class Knobs(Record):
    lease: float
    pause: tuple | None = None
    delay_s: float = field(default=0.0, metadata=json_name("delay", omit_default=True))


@dataclass(frozen=True, kw_only=True)
class Facts(Verdict):
    lapsed_at: float | None
    runs: int


def test_a_record_writes_its_json_keys_in_one_place():
    assert Knobs(lease=30.0).to_dict() == {"lease": 30.0, "pause": None}  # delay only when set
    assert Knobs(lease=30.0, pause=(20, 40), delay_s=5.0).to_dict() == {"lease": 30.0, "pause": [20, 40], "delay": 5.0}
    assert Knobs.from_dict({"lease": 30.0, "delay": 5.0}) == Knobs(lease=30.0, delay_s=5.0)


def test_a_verdict_says_its_facts_first_and_its_words_last():
    v = Facts(lapsed_at=30.0, runs=2).but(label="no renewal", headline="it lapsed", static="lapses")
    assert list(v.to_dict()) == ["lapsed_at", "runs", "label", "summary", "static"]
    assert Facts.from_dict(v.to_dict()) == v
    with pytest.raises(FrozenInstanceError):
        v.runs = 1  # a verdict is read, never changed: `but` makes another


def test_a_run_reads_back_typed_and_an_unknown_scenario_is_refused(fake):
    from emqlab.scenarios.heartbeat import heartbeat

    tl = heartbeat(renew="half", latency=5, backend=fake)
    again = load(tl.to_dict())
    assert again.params == tl.params and again.verdict == tl.verdict and again.params.latency == 5.0
    untyped = Timeline.from_dict(tl.to_dict())  # plain data: the headline and its facts as the JSON holds them
    assert untyped.verdict["summary"] == tl.verdict.headline and untyped.text == tl.text
    with pytest.raises(Exception, match="no scenario named 'nosuch'"):
        load({**tl.to_dict(), "scenario": "nosuch"})


def test_most_at_once_counts_overlap_not_touching():
    from emqlab.core.timeline import most_at_once

    assert most_at_once([(0, 10), (5, 20)]) == 2
    assert most_at_once([(0, 5), (5, 10)]) == 1  # one ends as the other starts: never two at once
    assert most_at_once([(0, 10), (2, 3), (2, 4)]) == 3
    assert most_at_once([(4, 4)]) == 0 and most_at_once([]) == 0
