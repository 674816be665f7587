"""What a figure and its words promise: a Drawing of the applied form (`check_protocol`), every clause of a
readout true of its verdict (`clauses`, the reaper's and the queue heartbeat's readout checks), and a
library's recorded runs, each verdict read again off its events (`verdicts_read_again`)."""

from __future__ import annotations

from typing import Any

from emqlab.core.words import HEADLINE_WORDS, headline_words, plural, seconds, times
from emqlab.plot import Drawing


# -- figures and their words --------------------------------------------------------------------
def _gids(fig):
    return [a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()]


def check_protocol(drawing, names):
    """A Drawing of the applied form: one lane per mode, the mode's artists tagged, each panel
    titled with the mode's label and static verdict as the words say them, no emqlab_* attribute."""
    assert isinstance(drawing, Drawing)
    assert drawing.modes == names and list(drawing.timelines) == names
    gids = _gids(drawing.figure)
    titles = [ax.get_title(loc="left") for ax in drawing.figure.axes]
    for name in names:
        assert gids.count(f"lane:{name}") == 1
        assert f"mode:{name}" in gids
        words = drawing.words.modes[name]
        assert f"{words.label}\n{words.static}" in titles
        assert words.text == drawing.timelines[name].text
    assert drawing.words.caption and drawing.words.prompt
    assert not [k for k in vars(drawing.figure) if k.startswith("emqlab_")]
    drawing.light(names[-1])
    assert drawing.is_dimmed(names[0]) == (len(names) > 1)


# -- the readouts: every clause true of the verdict ---------------------------------------------------
def clauses(text: str, expected: dict[str, bool]) -> None:
    """Each phrase is in `text` exactly when the verdict says it should be."""
    wrong = {phrase: should for phrase, should in expected.items() if (phrase in text) != should}
    assert not wrong, f"{text!r}: phrases present/absent against the verdict: {wrong}"


def says_only_what_the_reaper_verdict_holds(tl):
    v, p = tl.verdict, tl.params
    readout, static = v.text, v.static
    n = v.beats_before_reap
    clauses(readout, {"read a server TIME before that deadline and left the job alone":
                      bool(v.first_beat_past_score) and bool(n),
                      f"{plural(n or 0, 'beat')} read a server TIME": bool(v.first_beat_past_score) and bool(n),
                      "the first beat whose TIME had reached it": bool(v.first_beat_past_score)})
    suffix = "" if p.design == "none" else f" · {p.design}"
    story = ("a worker keeps working its job" if p.crash_at is None
             else "a worker dies holding the job" + (" (two OS processes, SIGKILL)" if p.procs else ""))
    step = p.clock_jump.seconds if p.clock_jump is not None else None
    jumped = "" if step is None else f" · server clock {'+' if step > 0 else '−'}{abs(step):g} s"
    assert v.label == story + suffix + jumped
    reaped = v.reaped_at is not None
    clauses(readout, {"never reaped": not reaped, "was refused": v.stale_complete_refused,
                      "ACCEPTED": v.stale_complete_accepted and reaped,
                      "was accepted": v.stale_complete_accepted and not reaped,
                      "no job lost" if v.lost == 0 else f"{v.lost} job": True})
    assert headline_words(v.headline) <= HEADLINE_WORDS, v.headline
    clauses(static, {"never reaped": not reaped, "refused": v.stale_complete_refused,
                     "ACCEPTED": v.stale_complete_accepted and reaped,
                     "late completion accepted": v.stale_complete_accepted and not reaped,
                     "no job lost" if v.lost == 0 else f"{v.lost} job": True})
    if reaped:
        for key in ("crashed_at", "lease_deadline", "reaped_at", "back_in_pending_after", "completed_at"):
            assert seconds(getattr(v, key)) in readout, key
        clauses(readout, {f"re-claimed it with attempts {v.reclaim_attempts}": v.reclaimed_by is not None,
                          "within one lease plus one beat": v.within_lease_plus_beat,
                          "later than one lease plus one beat": not v.within_lease_plus_beat,
                          "holding the job": v.died_holding, f"{v.reaped_by}'s beat": True})
        assert f"reaped at {seconds(v.reaped_at)}" in static


def says_only_what_the_queue_heartbeat_verdict_holds(tl):
    v, p = tl.verdict, tl.params
    readout, static = v.text, v.static
    reaped = v.reaped_at is not None
    assert headline_words(v.headline) <= HEADLINE_WORDS, v.headline
    clauses(readout, {f"ran {times(v.runs)}": reaped, "both runs overlapping": v.double_run and v.runs == 2,
                      "the first holder's completion was refused": v.first_holder_refused,
                      "to a second consumer": v.reclaimed_by == "worker-2",
                      "held the": not reaped and v.lapsed_at is None and v.renewals > 0,
                      "finished once": not reaped and v.completions == 1,
                      f"{v.renewals} batched extend": not reaped and v.renewals > 0})
    assert f"{v.runs} times" not in readout or v.runs > 2
    if reaped:
        assert seconds(v.reaped_at) in readout and f"runs {times(v.runs)}" in static
    if v.lapsed_at is not None:
        assert f"ran out at {seconds(v.lapsed_at)}" in readout and seconds(v.lapsed_at) in static
    assert readout.startswith(v.label + ": ") and seconds(p.lease) in readout and seconds(p.job) in readout
    lapsed_ok = v.accepted_after_lapse_by is not None
    clauses(readout, {"own lease ran out at": lapsed_ok,
                      "no consumer beat in between, so no reap took the job back and nobody claimed it again":
                      lapsed_ok and v.beats_in_gap == 0 and v.claims_in_gap == 0})
    if lapsed_ok:
        assert (f"ran out at {seconds(v.accepted_lapsed_at)}, yet its completion at {seconds(v.accepted_at)} "
                "was accepted") in readout
        assert f"attempt {v.accepted_attempts} was still the current one" in readout


# -- a library's recorded runs: the verdict read again off the events -----------------------------------
def verdicts_read_again(recorded, module, *names: str) -> list[tuple[Any, Any]]:
    """(run, verdict) for each recorded run named (`recorded`: the tools tests' `recorded_run`), every one
    checked first: `module.verdict` reads off its recorded events the verdict it was recorded with, and its
    headline keeps to the headline words and opens with its label."""
    read = []
    for name in names:
        tl = recorded(name)
        v = module.verdict(tl)
        assert v.to_dict() == tl.verdict.to_dict(), name  # the verdict is read off the recorded events
        assert headline_words(v.headline) <= HEADLINE_WORDS, v.headline
        assert v.headline.startswith(v.label), v.headline
        read.append((tl, v))
    return read
