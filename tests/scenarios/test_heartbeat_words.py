"""A readout that cannot lie: over random heartbeat runs, every clause of the readout is a fact of
the verdict, and every number it quotes is the verdict's (through the one time formatter).

`check_readout` is the checker; `test_the_checker_catches_a_lying_readout` breaks the words on
purpose and shows the checker fails, so the property test can fail for a reason."""

from __future__ import annotations

import importlib
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emqlab.store.backend import connect
from emqlab.scenarios.heartbeat import heartbeat, words
from emqlab.core.words import HEADLINE_WORDS, headline_words, seconds

heartbeat_module = importlib.import_module("emqlab.scenarios.heartbeat")
NUMBER = re.compile(r"(\d+(?:\.\d+)?) s\b")


def check_readout(params: dict, v: dict, text: str, done_at: float | None = None) -> None:
    """Raise AssertionError naming the first clause of `text` that the verdict `v` does not hold.
    `done_at`: when the holder's work was done (its `work_done` event), read off the timeline."""
    def says(phrase: str, fact: bool) -> None:
        assert (phrase in text) == bool(fact), f"{phrase!r} said={phrase in text} but fact={fact}: {text}"

    # the lease lapsed only after the holder's job was done (its release reached the store late)
    after = v.lapsed_at is not None and done_at is not None and done_at <= v.lapsed_at

    says("paused", v.paused_at is not None)
    says("while the holder was frozen", v.lapsed_in_pause)
    says("lapsed at", v.lapsed_at is not None or v.contender_lapsed_at is not None)
    says(f"the {seconds(params.lease)} lease lapsed at", v.lapsed_at is not None and not after)
    says("after the job was done", after)
    says("held while the holder worked", after and v.renewals > 0)
    says("replied 0", v.renew_lost_at is not None)
    says("stopped at once", v.holder_stopped_at is not None and v.renew_lost_at is not None)
    says("reclaimed the job", v.reclaimed_at is not None)
    says("at once for", v.double_run)
    says("finished once", v.finished_once)
    says("nobody finished", not v.finished_by)
    says("finished twice", len(v.finished_by) == 2)
    finishers = re.search(r"finished (?:once|twice|\d+ times), by the ([^.;\n]+)", text)
    named = re.split(r" and (?:by )?the ", finishers.group(1)) if finishers else []
    assert sorted(named) == sorted(v.finished_by), f"finished by {named} said, {v.finished_by} in fact: {text}"
    says("never reached the store", v.missed_at)
    says("the closest extend landed with", v.missed_at and v.tightest_margin_s is not None)
    says("held the", v.lapsed_at is None and v.renewals > 0)
    says("outlasted", v.lapsed_at is None and v.renewals == 0)
    says("held through the work", after and v.renewals == 0)
    latency = params.latency
    blind = bool(latency) and v.blind_s is not None and v.blind_s >= 0.05
    says("one-way delay", latency)
    says("after its lease had lapsed", blind)
    says("learned only at", latency and v.renew_lost_at is not None)
    says("never told", blind and v.renew_lost_at is None)
    if latency:
        assert f"over a link whose one-way delay is {seconds(latency)}" in text, text
    if blind:
        assert f"{seconds(v.blind_s)} after its lease had lapsed" in text, text
    if latency and v.renew_lost_at is not None:
        assert f"learned only at {seconds(v.renew_lost_at)}" in text, text
    if (v.lapsed_at is None or after) and v.renewals:
        assert re.search(rf"\b{v.renewals} token-checked extends?\b", text), text
    # every time quoted is one of the verdict's (or the run's parameters), as the formatter writes it
    allowed = {seconds(x) for x in (params.lease, params.job, v.lapsed_at, v.reclaimed_at,
                                    v.renew_lost_at, v.paused_at, v.resumed_at, v.both_ran_s,
                                    v.contender_lapsed_at, v.tightest_margin_s, *v.missed_at,
                                    params.latency, v.blind_s if latency else None)
               if x is not None}
    if v.double_run and v.both_ran_s < 0.05:
        allowed.add("0.1 s")  # "for less than 0.1 s": an overlap too short to quote to the tenth
    if v.double_run:
        quoted = seconds(v.both_ran_s) if v.both_ran_s >= 0.05 else "less than 0.1 s"
        assert f"at once for {quoted}" in text, text
    for number in NUMBER.findall(text):
        assert f"{number} s" in allowed, f"{number} s is not a fact of the verdict {sorted(allowed)}: {text}"
    for key, phrase in (("lapsed_at", "lease lapsed at "), ("lapsed_at", "it lapsed at "),
                        ("reclaimed_at", "reclaimed the job at "),
                        ("renew_lost_at", "learned only at " if latency else "extend at "),
                        ("paused_at", "paused from "),
                        ("contender_lapsed_at", "own lease lapsed at ")):
        value = getattr(v, key)
        if value is not None and phrase in text:
            assert f"{phrase}{seconds(value)}" in text, f"{key}={value} misquoted: {text}"


def done_at(tl) -> float | None:
    """When the holder's work was done, off the run's events (None: it never finished)."""
    return next((e.t for e in tl.of("work_done", "holder")), None)


runs = st.fixed_dictionaries({
    "lease": st.integers(1_000, 120_000).map(lambda ms: ms / 1000),
    "job": st.integers(1_000, 300_000).map(lambda ms: ms / 1000),
    "renew": st.one_of(st.just("none"), st.integers(50, 2000).map(lambda f: f / 1000)),
    "pause": st.one_of(st.none(), st.tuples(st.integers(0, 300_000), st.integers(100, 200_000)).map(
        lambda p: f"{p[0] / 1000}:{p[1] / 1000}")),
    "miss": st.lists(st.integers(1, 6), max_size=2, unique=True),
    "latency": st.one_of(st.just(0), st.integers(0, 60_000).map(lambda ms: ms / 1000)),
})


@pytest.fixture(scope="module")
def store():
    be = connect("fake")
    yield be
    be.close()


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(runs)
def test_every_clause_of_the_heartbeat_readout_is_true_of_its_verdict(store, p):
    tl = heartbeat(**p, backend=store)
    v = tl.verdict
    check_readout(tl.params, v, v.text, done_at(tl))
    assert v.text == words(tl.params, v).text  # the verdict carries the one function's words
    assert headline_words(v.headline) <= HEADLINE_WORDS, v.headline
    assert v.static == words(tl.params, v).static


@pytest.mark.parametrize("lie", ["pause", "finished once", "contender finished", "double run", "number",
                                 "blind", "latency", "held while it worked"])
def test_the_checker_catches_a_lying_readout(store, monkeypatch, lie):
    """Break the words on purpose, one way each; the checker must fail each time."""
    honest = words

    def lying(params, v):
        w = honest(params, v)
        text = {
            "pause": w.text.replace("the 30 s lease", "the holder was paused from 1 s to 2 s; the 30 s lease"),
            "finished once": w.text.replace("finished twice", "finished once"),
            "contender finished": w.text.replace("by the holder.", "by the contender."),  # noqa: E501
            "double run": w.text.replace("\n· both ran it at once for 44.5 s", ""),
            "number": w.text.replace("30.5 s", "31 s"),
            "blind": w.text.replace("15 s after its lease", "5 s after its lease"),
            "latency": w.text.replace("\n· over a link whose one-way delay is 10 s", ""),
            "held while it worked": w.text.replace("held while the holder worked", "lapsed at 113 s"),
        }[lie]
        assert text != w.text
        return type(w)(w.label, text, w.static)

    monkeypatch.setattr(heartbeat_module, "words", lying)
    case = {"renew": "half"} if lie == "contender finished" else {"renew": "none"}
    if lie in ("blind", "latency"):
        case = {"renew": "half", "latency": 10}
    if lie == "held while it worked":  # lesson 11's run: the lease lapsed at 113 s, after the job was done
        case = {"renew": 0.3, "latency": 8}
    tl = heartbeat(lease=30, job=75, **case, backend=store)
    with pytest.raises(AssertionError):
        check_readout(tl.params, tl.verdict, tl.verdict.text, done_at(tl))
