"""The interactive figure format: matplotlib's SVG, each mode's artists tagged, the scenario's words
beside it, and the page contract of `emqlab/view/static/light.js` (checked in a browser in
tests/browser/test_interactive.py)."""

from __future__ import annotations

import json
import re

import pytest

from emqlab.view import figures
from emqlab.view.interactive import interactive_html, interactive_page, light_script

BUILD = {
    "heartbeat": lambda be: figures.heartbeat_figure(figures.heartbeat_modes(be)),
    "renewal": lambda be: figures.renewal_figure(figures.renewal_designs(be)),
    "reaper": lambda be: figures.reaper_figure(figures.applied_runs(be)["reaper"]),
    "fencing": lambda be: figures.fencing_figure(figures.applied_runs(be)["fencing"]),
    "stuck": lambda be: figures.stuck_figure(figures.stuck_modes(be)),
}


@pytest.mark.parametrize("name", list(BUILD))
def test_a_figure_carries_its_modes_and_their_words(fake, name):
    drawing = BUILD[name](fake)
    def state():
        return drawing.figure.get_layout_engine().get()["rect"], drawing.readout and drawing.readout.get_visible()

    before = state()
    page = interactive_html(drawing, name)
    assert page.startswith(f'<figure class="emqlab-figure" data-figure="{name}"><svg')
    modes = list(drawing.words.modes)
    assert sorted(set(re.findall(r'data-mode="([^"]*)"', page))) == sorted(modes)  # every mode's marks, tagged
    lanes = re.findall(r'<g data-lane="([^"]*)" tabindex="0" role="button"', page)
    assert sorted(lanes) == sorted(modes)  # one focusable lane per mode
    words = json.loads(re.search(r"<script type=\"application/json\" data-modes>(.*?)</script>", page).group(1))["modes"]
    assert list(words) == modes
    for key, m in drawing.words.modes.items():
        assert words[key]["verdict"] == m.static and m.html() in words[key]["html"]
    # with JavaScript off: the caption and every mode's readout, headline and facts, as text
    alt = re.search(r'<figcaption class="emqlab-text">(.*?)</figcaption>', page).group(1)
    for m in drawing.words.modes.values():
        assert m.html() in alt and m.static.replace("<", "&lt;") in alt
    # nothing fetched: no source or link to anywhere (the SVG's namespaces are names, not requests)
    assert not re.search(r'\b(?:src|href)="(?!#)', page), re.findall(r'\b(?:src|href)="[^"]*"', page)[:3]
    # exporting leaves the drawing as it was: its readout line and the room kept for it
    assert state() == before


def test_the_page_holds_its_script_and_style_inline(fake):
    page = interactive_page([interactive_html(BUILD["heartbeat"](fake), "fig1")], "a page")
    assert page.count(light_script()) == 1 and "<style>" in page and page.startswith("<!DOCTYPE html>")
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        'xmlns:xlink="http://www.w3.org/1999/xlink"', "").replace("http://purl.org/dc", "").replace(
        "http://creativecommons.org/ns#", "").replace("http://www.w3.org/1999/02/22-rdf-syntax-ns#", "")


def test_a_stepper_carries_each_modes_events_and_a_cursor_per_axes(fake):
    drawing = BUILD["heartbeat"](fake)
    page = interactive_html(drawing, "fig1", stepper=True)
    words = json.loads(re.search(r"<script type=\"application/json\" data-modes>(.*?)</script>", page).group(1))["modes"]
    steps = {key: [text for _, text in words[key]["steps"]] for key in words}
    lapse = next(i for i, text in enumerate(steps["none"]) if "holder · lapse" in text)
    assert steps["none"][lapse].startswith("t = 30 s · holder · lapse")
    assert steps["none"][lapse + 1].startswith("t = 30.5 s · contender · acquire")
    assert sum(" · renew" in text for text in steps["half"]) == 4
    assert not any("acquire failed" in text for texts in steps.values() for text in texts)  # polling noise left out
    assert [t for t, _ in words["none"]["steps"]] == sorted(t for t, _ in words["none"]["steps"])
    # one cursor per axes, each with the scale matplotlib drew it at (SVG units per model second)
    scales = [float(s) for s in re.findall(r'<g data-cursor data-scale="([^"]*)"', page)]
    assert len(scales) == len(drawing.figure.axes) and all(s > 0 for s in scales)
    assert "<div data-stepper>" in page and "<div data-stepper>" not in interactive_html(drawing, "fig1")


def test_a_figure_asked_first_holds_its_verdicts_back(fake):
    drawing = BUILD["heartbeat"](fake)
    page = interactive_html(drawing, "fig1", held_back="Drawn: two runs.")
    caption = re.search(r'<figcaption class="emqlab-text">(.*?)<ul', page).group(1)
    assert caption == "Drawn: two runs." and "<ul data-held hidden>" in page
    assert drawing.words.caption not in page


def test_an_event_reads_aloud_flags_in_words_and_no_epoch_or_wall_time():
    from emqlab.core.timeline import Event
    from emqlab.view.interactive import event_in_words, step_events

    e = Event(t=32.5, actor="worker-2", kind="claim", data={"job": "J1", "attempts": 2, "deadline": 62.5,
                                                            "now": 1767225632500, "score": 1767225662500,
                                                            "fenced": False, "token": None, "wall_ms": 0.2})
    assert event_in_words(e) == "worker-2 · claim · job J1, attempts 2, deadline 62.5 s, fenced no, token none"

    class Run:
        scenario = "reaper"
        events = [e, Event(t=33, actor="worker-1", kind="step", data={"step": "park"}),
                  Event(t=35, actor="worker-1", kind="renew", data={"jobs": []}),
                  Event(t=36, actor="worker-2", kind="renew", data={"jobs": ["J1"]})]

    assert [(x.actor, x.kind) for x in step_events(Run())] == [("worker-2", "claim"), ("worker-2", "renew")]
    Run.events.append(Event(t=37, actor="worker-2", kind="round_trip", data={}))  # the renewal cost's story alone
    assert [x.kind for x in step_events(Run())][-1] == "renew"
    Run.scenario = "renewal_cost"
    assert [x.kind for x in step_events(Run())][-1] == "round_trip"
