"""A stuck job under each design (issue 13, item 3): with no renewal the lease bounds it; a sweep
or a session keeps it leased while its worker lives; a hard deadline set at claim bounds it again.
Exact on the virtual clock; the same on live Valkey within margins; the CLI contract; the words."""

from __future__ import annotations

import json

import pytest

from emqlab.cli.command import main
from emqlab.core.errors import BadParameter
from emqlab.scenarios.stuck import JOB_ID, Params, StuckVerdict, stuck
from emqlab.scenarios.stuck import figure_words as stuck_figure_words
from emqlab.scenarios.stuck import words as stuck_words
from realtime import premise
from support.records import lease_on_the_server, reaped_past_its_lease, record
from support.words import clauses
from emqlab.core.words import plural, seconds

MUST = [("none", None, (0, 35)), ("sweep", None, None), ("session", None, None), ("session", 120, (120, 125))]


@pytest.mark.parametrize("design,limit,bounds", MUST)
def test_stuck_must_hold(backend, design, limit, bounds):
    tl = stuck(design=design, max_runtime=limit, backend=backend)
    v = tl.verdict
    assert v.horizon == 240.0 and v.design == design
    if bounds is None:
        # no reap is no proof of renewal (the reaper stalls with the renewer on a loaded machine): the holding
        # is read on the server's clock. Held from the claim through the 240 s horizon on 30 s grants, each
        # landing before the deadline it pushed out: more than 240 / 30 - 1, so at least 8 renewals, whatever
        # their lateness (16 on the virtual clock, every 15 s to 240 s)
        claimed, deadline = lease_on_the_server(tl, "worker-1", JOB_ID)
        premise(v.reclaimed_at is None and v.held_to_horizon and deadline is not None
                and deadline >= claimed + backend.clock.to_server_ms(v.horizon * 1000),
                "worker-1's hold on the hung job never lapsed on the server's clock through the horizon")
        assert v.reclaimed_at is None and v.held_to_horizon and v.holder_renewals >= 8
        if not backend.clock.real:
            assert v.holder_renewals == 16
    else:
        # never before the lease or the limit; after it, by one beat on the virtual clock. On a real clock
        # at LIVE_SCALE a loaded machine's slack is more model seconds than the beat it would bound, so there
        # only the order is claimed (the exact reap, 32.5 and 122.5, is the virtual clock's, below)
        low, high = bounds
        assert low <= v.reclaimed_at and (backend.clock.real or v.reclaimed_at <= high), v
        assert reaped_past_its_lease(tl, JOB_ID)  # on the server's clock, which decided it
        assert v.second_attempt_by == "worker-2" and v.completed_at is not None
    if not backend.clock.real:
        assert v.reclaimed_at == {None: None, "none": 32.5, "session": 122.5}[design if bounds else None]
    says_only_what_the_verdict_holds(tl)
    assert not backend.keys(backend.prefix + "stuck")


def test_the_sweep_with_a_limit_is_bounded_and_its_worker_is_told(fake):
    v = stuck(design="sweep", max_runtime=120, backend=fake).verdict
    assert (v.reclaimed_at, v.reclaim_reason, v.holder_told_at) == (122.5, "max_runtime", 135.0)
    v = stuck(design="none", max_runtime=20, backend=fake).verdict  # a limit under the lease: the limit wins
    assert (v.reclaimed_at, v.reclaim_reason) == (22.5, "max_runtime")


def test_stuck_validates(fake):
    with pytest.raises(BadParameter, match="unknown design"):
        stuck(design="twice", backend=fake)
    with pytest.raises(BadParameter, match="max_runtime"):
        stuck(max_runtime=0, backend=fake)


def test_cli_stuck_json(capsys):
    assert main(["stuck", "--design", "session", "--max-runtime", "120", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scenario"] == "stuck" and out["params"]["design"] == "session"
    assert out["verdict"]["reclaimed_at"] == 122.5 and out["verdict"]["horizon"] == 240.0
    assert main(["stuck", "--design", "sweep", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"]["reclaimed_at"] is None
    assert main(["stuck", "--design", "bogus"]) == 2


def says_only_what_the_verdict_holds(tl):
    v, p = tl.verdict, tl.params
    readout, static = v.text, v.static
    back = v.reclaimed_at is not None
    assert readout.startswith(v.label + ": ")
    clauses(readout, {"nothing returned it to pending": not back, "returned the job to pending at": back,
                      f"at {seconds(v.reclaimed_at)}": back, "nobody renewed": p.design == "none",
                      plural(v.holder_renewals, "session renewal"): p.design == "session",
                      "the hard deadline set at the claim": v.reclaim_reason == "max_runtime",
                      "the lease ran out": v.reclaim_reason == "lease",
                      "was not told": back and p.design == "session" and v.holder_told_at is None,
                      "found the job gone": v.holder_told_at is not None,
                      f"finished it at {seconds(v.completed_at)}": v.completed_at is not None})
    clauses(static, {"held to the horizon": not back, f"back in pending at {seconds(v.reclaimed_at)}": back})


def test_words_and_figure_words(fake):
    v = record(StuckVerdict, horizon=240.0, reclaimed_at=None, holder_renewals=1, holder_renew_calls=1,
               holder_told_at=None, second_attempt_by=None, completed_at=None, reclaim_reason=None)
    w = stuck_words(record(Params, design="sweep", lease=30.0, max_runtime=None), v)
    assert w.static == "held to the horizon (240 s) · never back in pending"
    assert "1 renewal tick (1 extend call)" in w.text
    runs = [stuck(design=d, backend=fake) for d in ("none", "session")]
    words = stuck_figure_words(runs)
    assert list(words.modes) == ["none", "session"]
    assert words.modes["none"].text == runs[0].text
