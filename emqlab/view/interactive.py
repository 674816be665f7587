"""A figure that lights its modes in the browser, with no kernel: matplotlib's SVG of a `Drawing`,
each mode's artists tagged with its key, its words beside it, and one small script.

`interactive_html(drawing, name)` returns an HTML fragment that keeps the page contract of
`static/light.js`: the figure is an element with `data-figure`, each mode's lane an element with
`data-lane` (hovered, focused with Tab or the arrow keys, clicked to pin), every drawn element of a
mode carries `data-mode`, and the readout is the element with `data-readout`. The words are the
scenario's own (`FigureWords`), never composed here; with JavaScript off the caption and every mode's
readout stay on the page as text. With `stepper=True` the fragment carries each mode's events and a
cursor line per axes (drawn by matplotlib, with the scale it was drawn at), and the script walks the
lit mode's events. `interactive_page(fragments, title)` wraps fragments in a page that needs nothing
from the network; the lab's widget (`emqlab.view.widgets.LitFigure`) shows the same fragment.
"""

from __future__ import annotations

import html
import io
import json
import re
from importlib.resources import files
from typing import Any

from matplotlib import rc_context
from matplotlib.layout_engine import ConstrainedLayoutEngine

from ..core.kinds import Kind
from ..plot import Drawing, style

# What a stepper walks: the events that change who holds what or what became of the work, chosen by kind
# from the run's timeline and never cut to a count. A scenario whose story needs more kinds names them in
# SCENARIO_STEPS on purpose (the renewal cost's round trips, the failover's servers). Everything else (a
# contender's refused polls, a consumer's beat steps, a producer's enqueue, a tick's summary) stays out.
STEP_KINDS = frozenset({
    Kind.ACQUIRE, Kind.RENEW, Kind.LATE_EXTEND, Kind.RENEW_LOST, Kind.TOLD, Kind.LAPSE, Kind.LEASE_LOST,  # the lease
    Kind.CLAIM, Kind.REAP, Kind.RECLAIM, Kind.TAKE, Kind.SAW_DONE,  # who takes the job
    Kind.WORK_START, Kind.WORK_DONE, Kind.WORK_STOPPED, Kind.STOPPED, Kind.NOT_STARTED,  # the work
    Kind.EFFECT, Kind.WRITE, Kind.COMPLETION, Kind.COMPLETE, Kind.COMPLETE_REFUSED,  # its results
    Kind.RELEASE, Kind.RELEASE_REFUSED,
    Kind.CRASH, Kind.PAUSE_START, Kind.PAUSE_END, Kind.CLOCK_JUMP,  # the faults
})
SCENARIO_STEPS = {
    "renewal_cost": frozenset({Kind.ROUND_TRIP}),  # what the renewal costs is the story
    "stuck": frozenset({Kind.SESSION_OPEN}),  # a session design opens its session before it claims
    "failover": frozenset({Kind.STALL, Kind.KILLED, Kind.PROMOTED, Kind.REJOINED, Kind.WAIT, Kind.TOKEN}),
}
TIMED = frozenset({"deadline", "ttl", "seconds", "t"})  # event data given in model seconds
# event data a person does not read aloud: the server's raw TIME and scores (epoch milliseconds, and the
# same in seconds; the step's own time says when), and wall-clock costs (meaningless on a virtual clock)
UNSPOKEN = frozenset({"now", "time_s", "score", "score_s", "wall_ms"})
FIGURE_MIME = "application/vnd.emqlab.figure+html"  # a saved explorer's fragment, for `emqlab site`
STEP_IDLE = "Point at a mode (or click it to pin it), then step through its events."
RUN_KEYS = ("scenario", "params", "backend", "clock")  # what a mode's JSON says of the run behind it


def _static(name: str) -> str:
    return files("emqlab.view").joinpath(f"static/{name}").read_text(encoding="utf-8")


def light_script() -> str:
    """The one script every interactive figure uses (emqlab/view/static/light.js), an ES module."""
    return _static("light.js")


def light_style() -> str:
    """How a lit figure looks (emqlab/view/static/light.css)."""
    return _static("light.css")


def event_in_words(event) -> str:
    """"holder · renew · deadline 45 s, ttl 30 s": an event's actor, kind and data, read as words: yes and
    no for a flag, "none" for nothing, model seconds for a time; no epoch milliseconds, no wall time."""
    def value(key: str, v: Any) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        if v is None:
            return "none"
        if isinstance(v, list):
            return ", ".join(value(key, x) for x in v[:6]) + (" …" if len(v) > 6 else "") if v else "none"
        return f"{v:g} s" if key in TIMED and isinstance(v, (int, float)) else str(v)

    said = [(k, v) for k, v in event.data.items() if k not in UNSPOKEN]
    data = ", ".join(f"{k.replace('_', ' ')} {value(k, v)}" for k, v in said)
    return f"{event.actor} · {event.kind.replace('_', ' ')}" + (f" · {data}" if data else "")


def step_kinds(scenario: str) -> frozenset[str]:
    """The kinds of event a stepper walks in a run of `scenario`."""
    return STEP_KINDS | SCENARIO_STEPS.get(scenario, frozenset())


def idle(event) -> bool:
    """A renewal that held no job (a session extended while its worker had nothing): nothing changes hands."""
    return event.kind == Kind.RENEW and event.data.get("jobs") == []


def step_events(timeline) -> list:
    """The events a stepper walks in `timeline`: every event of the kinds `step_kinds` names for its
    scenario, but an idle renewal."""
    if timeline is None:
        return []
    kinds = step_kinds(timeline.scenario)
    return [e for e in timeline.events if e.kind in kinds and not idle(e)]


def _svg(drawing: Drawing, cursors: bool) -> tuple[str, list[tuple[float, float]]]:
    """The figure as SVG, every mode shown at full strength and the readout line left to the page; with
    `cursors`, a hidden cursor line on each axes at t = 0 and, per axes, (0, SVG units per model second)."""
    fig = drawing.figure
    drawing.light(None)
    shown = drawing.readout is not None and drawing.readout.get_visible()
    engine = fig.get_layout_engine()
    rect = engine.get().get("rect") if isinstance(engine, ConstrainedLayoutEngine) else None
    lines = []
    if cursors:
        for i, ax in enumerate(fig.axes):
            limits = ax.get_xlim()
            lines.append(ax.axvline(0, **style.line_kw("now", lw=1.2, gid=f"cursor:{i}", zorder=10, clip_on=False)))
            ax.set_xlim(limits)
    if drawing.readout is not None:
        drawing.readout.set_visible(False)
        if rect is not None:
            engine.set(rect=(0, 0, 1, 1))  # the room kept for the readout line: the page's readout is below
    try:
        buf = io.StringIO()
        with rc_context({"svg.hashsalt": "emqlab"}):  # the same run gives the same bytes
            fig.savefig(buf, format="svg", metadata={"Date": None})
        units = 72 / fig.dpi  # the SVG is in points; the figure's transforms in pixels at its dpi
        scales = [((ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0]) * units)
                  for ax in fig.axes[:len(lines)]]
    finally:
        for line in lines:
            line.remove()
        if drawing.readout is not None:
            drawing.readout.set_visible(shown)
            if rect is not None:
                engine.set(rect=rect)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):], scales


def _tagged(svg: str, labels: dict[str, str], scales: list[float]) -> str:
    """Matplotlib writes a gid as an element id (`mode:KEY`, `lane:KEY`, `cursor:I`, repeated); the
    contract's attributes instead. A lane is focusable and says which mode it lights."""
    def lane(match: re.Match) -> str:
        key = html.unescape(match.group(1))
        label = html.escape(labels.get(key, key), quote=True)
        return (f'<g data-lane="{html.escape(key, quote=True)}" tabindex="0" role="button" aria-pressed="false" '
                f'aria-label="light {label}"')

    def cursor(match: re.Match) -> str:
        return f'<g data-cursor data-scale="{scales[int(match.group(1))]:.6g}"'

    svg = re.sub(r'<g id="lane:([^"]*)"', lane, svg)
    svg = re.sub(r'<g id="cursor:(\d+)"', cursor, svg)
    return re.sub(r'<g id="mode:([^"]*)"', r'<g data-mode="\1"', svg)


def _stepper() -> str:
    idle = html.escape(STEP_IDLE, quote=True)
    return ('<div data-stepper><button type="button" data-step="-1">◀ step</button>'
            '<input type="range" min="0" max="0" value="0" step="1" aria-label="event" disabled>'
            f'<button type="button" data-step="1">step ▶</button><div data-step-label data-idle="{idle}">{idle}</div></div>')


def interactive_html(drawing: Drawing, name: str, *, stepper: bool = False, held_back: str | None = None,
                     slide: bool = False, fold: bool = False) -> str:
    """One figure as an HTML fragment that lights its modes in the browser (see the module's contract).
    held_back: a figure asked first says this instead of its caption, and keeps the list of verdicts
    hidden until a mode is lit; slide: set in large type, for a room; fold: a figure of many modes (a state
    space's states) keeps the list of every mode's words in a box of a few lines that scrolls."""
    words = drawing.words
    modes = {}
    for key, m in words.modes.items():
        # the readout names its mode first; most headlines already do ("no renewal: the 30 s lease …")
        named = m.headline.startswith(m.label)
        modes[key] = {"label": m.label, "html": m.html() if named else f"<b>{html.escape(m.label)}</b> — {m.html()}",
                      "verdict": m.static}
        if stepper:
            modes[key]["steps"] = [[e.t, f"t = {e.t:g} s · {event_in_words(e)}"]
                                   for e in step_events(drawing.timelines.get(key))]
        run = drawing.timelines.get(key)
        if run is not None:  # which run said these words, so a reader (or a test) can make it again
            modes[key]["run"] = {k: v for k, v in run.to_dict().items() if k in RUN_KEYS}
            if stepper:  # every event of the run, by kind, so a reader (or a test) can check the steps chose right
                modes[key]["events"] = [[e.t, e.kind] + (["idle"] if idle(e) else []) for e in run.events]
    svg, scales = _svg(drawing, cursors=stepper)
    svg = _tagged(svg, {key: m.label for key, m in words.modes.items()}, scales)
    items = "".join(f'<li data-verdict="{html.escape(key, quote=True)}"><b>{html.escape(m.label)}</b> → '
                    f'{html.escape(m.static)}<br>{m.html()}</li>' for key, m in words.modes.items())
    hidden = " data-held hidden" if held_back else ""
    caption = html.escape(held_back or words.caption)
    # folded: the list scrolls in a box of its own (still on the page as text, with or without the script)
    box = ' class="emqlab-fold" style="max-height: 16em; overflow-y: auto"' if fold else ""
    listed = f"<ul{box}{hidden}>{items}</ul>"
    data = json.dumps({"modes": modes}, ensure_ascii=False).replace("</", "<\\/")
    return (f'<figure class="emqlab-figure{" emqlab-slide" if slide else ""}" data-figure="{html.escape(name, quote=True)}">'
            f'{svg}{_stepper() if stepper else ""}'
            f'<div data-readout aria-live="polite">{html.escape(words.prompt or words.caption)}</div>'
            f'<figcaption class="emqlab-text">{caption}{listed}</figcaption>'
            f'<script type="application/json" data-modes>{data}</script></figure>')


def page_head(title: str) -> str:
    """The start of a page that holds interactive figures: its style inline, nothing fetched."""
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{light_style()}</style>"
            # a figure asked first hides its verdicts until a mode is lit, which needs the script: without
            # it they are shown, so every readout is on the page as text
            "<noscript><style>.emqlab-figure [data-held] { display: block; }</style></noscript>")


def page_script() -> str:
    """The script, inline, binding every figure on the page (an inline module fetches nothing, file:// too)."""
    return f"<script type='module'>{light_script()}\nbindAll();</script>"


def interactive_page(fragments: list[str], title: str) -> str:
    """A page holding interactive figures: their style and the script inline, nothing fetched."""
    return page_head(title) + "</head><body>" + "".join(fragments) + page_script() + "</body></html>"
