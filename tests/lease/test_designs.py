"""One registry of renewal designs serves bare leases and the queue alike: a design added in one
place (an entry of `DESIGNS`, with its plane and its keeper) is offered by the CLI, drawn in the
legend, and held by a queue consumer, with no other line of code changed."""

from __future__ import annotations

import json

import pytest

from emqlab.cli import command
from emqlab.core.errors import BadParameter
from emqlab.core.marks import MARKS
from emqlab.lease.designs import DESIGNS, Design, design_names, lookup_design, queue_design
from emqlab.lease.keepers import BatchedExtend
from emqlab.lease.planes import Sweep
from emqlab.queue.consumer import Consumer
from emqlab.queue.jobs import Queue
from emqlab.scenarios.run_harness import run_on
from emqlab.scenarios.reaper import reaper


class DummyPlane(Sweep):
    """A sweep under another name: what a new design's bare-lease side may be."""


class DummyKeeper(BatchedExtend):
    """A batched extend under another name: a new design's queue side."""


DUMMY = Design("dummy", "a dummy sweep", "a sweep by another name, for the registry's test",
               DummyPlane, DummyKeeper, "dummy round trip", "like a sweep", steps_per_lease=0.25)


@pytest.fixture
def dummy(monkeypatch):
    monkeypatch.setitem(DESIGNS, DUMMY.name, DUMMY)  # the one place a design is added
    return DUMMY


def choices(verb: str) -> list[str]:
    parser = command.build_parser()
    sub = next(a for a in parser._actions if a.dest == "verb").choices[verb]
    return list(next(a for a in sub._actions if a.dest == "design").choices)


def test_a_design_added_in_one_place_is_a_cli_choice_of_every_verb(dummy, capsys):
    for verb in ("renewal-cost", "reaper", "chaos", "stuck"):
        assert "dummy" in choices(verb), verb
    assert "none" not in choices("renewal-cost") and "none" in choices("reaper")  # renewal-cost renews
    assert command.main(["renewal-cost", "--design", "dummy", "--jobs", "6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["design"] == "dummy" and out["round_trips_per_tick"] == 1 and out["all_held"] is True


def test_a_design_added_in_one_place_is_in_the_figure_legend(dummy, fake):
    from emqlab.view.figures import renewal_designs, renewal_figure

    runs = renewal_designs(fake)
    assert list(runs) == ["per-job", "sweep", "session", "dummy"]
    drawing = renewal_figure(runs)
    legends = [ax.get_legend() for ax in drawing.figure.axes if ax.get_legend()] + list(drawing.figure.legends)
    entries = [text.get_text() for lg in legends for text in lg.get_texts()]
    assert MARKS["round-trip"].meaning in entries, entries  # one look for a round trip, whatever the design
    panel = drawing.figure.axes[list(runs).index("dummy")]
    assert panel.get_title(loc="left") == drawing.words.modes["dummy"].label
    trips = [line for line in panel.get_lines() if line.get_gid() == "mode:dummy"
             and line.get_label() == MARKS["round-trip"].meaning]
    assert len(trips) == len(runs["dummy"].of("round_trip")) > 0  # the dummy's panel draws its round trips


def test_a_design_added_in_one_place_holds_a_queue_consumers_jobs(dummy, fake):
    run = reaper(design="dummy", backend=fake)
    renewals = run.of("renew")
    assert renewals and {e.data["design"] for e in renewals} == {"dummy"}
    assert run.verdict.reaped_by == "worker-2" and run.verdict.lost == 0

    with run_on(fake, "dummy", {}) as r:
        q = Queue(fake, "orders", prefix=r.prefix)
        c = Consumer(q, "w", lease_ms=30_000, beat_ms=5_000, work_ms=1_000, design="dummy")
        assert isinstance(c.keeper, DummyKeeper) and c.design == "dummy" and c.renew_every == 15_000


def test_lookups_say_what_is_allowed():
    assert lookup_design("session").per_worker and not lookup_design("none").renews
    with pytest.raises(BadParameter, match="unknown design 'twice'; allowed: none, per-job, sweep, session"):
        lookup_design("twice")
    with pytest.raises(BadParameter, match="unknown renewal design 'none'; allowed: per-job, sweep, session"):
        lookup_design("none", renewing=True)
    assert queue_design(None, None)[0].name == "none" and queue_design(None, 0.5)[0].name == "sweep"
    assert queue_design("per-job", None) == (DESIGNS["per-job"], 0.5)
    with pytest.raises(BadParameter, match="renews nothing"):
        queue_design("none", 0.5)
    assert design_names() == ["none", "per-job", "sweep", "session"]
    assert design_names(renewing=True) == ["per-job", "sweep", "session"]
