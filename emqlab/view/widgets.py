"""One explorer for every figure that follows the drawing protocol of `emqlab.plot`.

`ModeExplorer(build, data)`: `build(data, fig=…)` returns a `Drawing` (the builders of
`emqlab.view.figures`, e.g. `heartbeat_figure`). Point at a mode's lane to light its timeline and dim
the others; click to pin it (click outside the lanes to let go); the ToggleButtons do the same
for keyboard, touch and tests. Nothing is pinned at first, so a pointer lights a mode at once.
Under the figure: the readout of the lit mode (said once: the figure's own readout line, which
an exported image carries, is hidden here) and every mode's static verdict. Optional sliders re-run the scenario; an optional stepper walks the
lit mode's timeline event by event. Every word shown comes from the drawing's `FigureWords`.

Errors raised inside a callback are never silent: they are shown in the `errors` Output, kept in
`explorer.failures` and logged to the "emqlab.view.widgets" logger.
"""

from __future__ import annotations

import html
import itertools
import logging
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

import ipywidgets as w
from matplotlib.figure import Figure

from ..core.errors import BadParameter
from ..plot import Drawing
from ..core.words import ModeWords

log = logging.getLogger(__name__)
_numbers = itertools.count(1000)  # figure numbers for managers that pyplot never sees
SKIP_WHEN_STEPPING = frozenset({"acquire_failed"})  # polling noise: dozens of identical events


def _guarded(method):
    """Run a callback; an exception goes to the explorer's error panel instead of vanishing."""

    @wraps(method)
    def run(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:  # a widget callback has no caller to raise to
            text = "".join(traceback.format_exception(exc))
            self.failures.append(text)
            log.error("callback %s failed:\n%s", method.__name__, text)
            self.errors.append_stderr(f"emqlab: {method.__name__} failed: {exc}\n")
            return None

    return run


def _slider(name: str, spec: Any) -> w.ValueWidget:
    if isinstance(spec, w.ValueWidget):
        return spec
    lo, hi, step, value = spec
    kind = w.IntSlider if all(isinstance(x, int) for x in spec) else w.FloatSlider
    return kind(min=lo, max=hi, step=step, value=value, description=name, continuous_update=False,
                style={"description_width": "initial"})


def event_in_words(event) -> str:
    """"holder · renew · deadline 45 s, ttl 30 s": an event's actor, kind and data, read as words."""
    def value(key: str, v: Any) -> str:
        if isinstance(v, list):
            return ", ".join(map(str, v[:6])) + (" …" if len(v) > 6 else "") if v else "none"
        return f"{v:g} s" if key in TIMED and isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)

    data = ", ".join(f"{k.replace('_', ' ')} {value(k, v)}" for k, v in event.data.items())
    return f"{event.actor} · {event.kind.replace('_', ' ')}" + (f" · {data}" if data else "")


TIMED = frozenset({"deadline", "ttl", "seconds", "t"})  # event data given in model seconds


class ModeExplorer:
    """Drive any drawing: `ModeExplorer(heartbeat_figure, timelines)`, or with `run` and `sliders`
    to re-run on change: `ModeExplorer(heartbeat_figure, run=fn, sliders={"lease": (5, 60, 5, 30)})`."""

    def __init__(self, build: Callable[..., Drawing], data: Any = None, *, run: Callable[..., Any] | None = None,
                 sliders: dict[str, Any] | None = None, stepper: bool = False, ask_first: bool = False,
                 figsize: tuple[float, float] = (12, 7.2), dpi: float = 80, **build_kw: Any):
        if data is None and run is None:
            raise BadParameter("ModeExplorer needs the data to draw, or a `run` function that makes it")
        self.build, self.run, self.build_kw = build, run, build_kw
        self.failures: list[str] = []
        self.errors = w.Output()
        # Imported here, not at module import: importing the ipympl package makes it pyplot's backend
        # (as `%matplotlib widget` would), a global change only building an explorer should make.
        from ipympl.backend_nbagg import Canvas, FigureManager

        # a figure keeps its layout in inches; 80 dpi fits a 12-inch figure in a notebook's output area
        self.fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        self.canvas = Canvas(self.fig)
        with warnings.catch_warnings():  # ipympl 0.10's Toolbar passes traitlets an argument it warns about
            warnings.simplefilter("ignore", DeprecationWarning)
            FigureManager(self.canvas, next(_numbers))  # wires the canvas to ipympl without pyplot's registry
        # no title bar, pan/zoom toolbar or coordinate footer: they cover the legend and say nothing here
        self.canvas.header_visible = False
        self.canvas.toolbar_visible = False
        self.canvas.footer_visible = False
        self.canvas.mpl_connect("motion_notify_event", self._on_motion)
        self.canvas.mpl_connect("button_press_event", self._on_click)
        self.canvas.mpl_connect("figure_leave_event", self._on_leave)

        self.buttons = w.ToggleButtons(description="mode", style={"button_width": "auto"})
        self.readout = w.HTML()
        # ask_first: the static verdicts stay hidden until the learner has predicted or pointed at a mode
        self.verdicts = w.HTML(layout=w.Layout(display="none" if ask_first else None))
        self.sliders = {name: _slider(name, spec) for name, spec in (sliders or {}).items()}
        self.step = w.IntSlider(min=0, max=0, value=0, description="event", continuous_update=True,
                                layout=w.Layout(width="60%"))
        self.back, self.forward = w.Button(description="◀ step", layout=w.Layout(width="auto")), \
            w.Button(description="step ▶", layout=w.Layout(width="auto"))
        self.event_label = w.HTML()
        self.stepper = stepper
        self.hovered: str | None = None
        self.pinned = False
        self.drawing: Drawing | None = None
        self._cursors: list[Any] = []
        self._rendering = False

        self.data = data if data is not None else self.run(**self.values)
        self._render()
        self.buttons.observe(self._on_button, names="value")
        for slider in self.sliders.values():
            slider.observe(self._on_slider, names="value")
        self.step.observe(self._on_step, names="value")
        self.back.on_click(lambda _: self._nudge(-1))
        self.forward.on_click(lambda _: self._nudge(+1))

        rows: list[w.Widget] = [self.buttons, self.canvas, self.readout, self.verdicts]
        if stepper:
            rows.append(w.HBox([self.back, self.step, self.forward, self.event_label]))
        if self.sliders:
            rows.append(w.HBox(list(self.sliders.values()), layout=w.Layout(flex_flow="row wrap")))
        rows.append(self.errors)
        self.widget = w.VBox(rows)

    # -- what is shown -----------------------------------------------------------------------
    def reveal(self) -> None:
        """Show the static verdicts, under the figure and in it (after a prediction, or the first hover)."""
        if self.revealed and (self.drawing is None or self.drawing.verdicts_shown):
            return
        self.verdicts.layout.display = None
        if self.drawing is not None:
            self.drawing.show_verdicts(True)
            self._redraw()

    @property
    def revealed(self) -> bool:
        return self.verdicts.layout.display != "none"

    @property
    def values(self) -> dict[str, Any]:
        return {name: s.value for name, s in self.sliders.items()}

    @property
    def selected(self) -> str | None:
        """The mode the buttons show (pinned, if `pinned`)."""
        return self.buttons.value

    @property
    def lit(self) -> str | None:
        """The mode drawn at full strength: the pinned one, else the hovered lane (None: all at full strength)."""
        return self.selected if self.pinned else self.hovered

    @property
    def modes(self) -> dict[str, ModeWords]:
        """Each mode's words (label, readout, verdict), as the scenario wrote them."""
        return dict(self.drawing.words.modes) if self.drawing else {}

    @property
    def readout_text(self) -> str:
        """What the readout line says now: the lit mode's readout, or the figure's prompt."""
        return self.drawing.words.readout(self.lit) if self.drawing else ""

    def report(self) -> str:
        """Every mode's verdict line and readout, one per line: stable text for a checked cell."""
        return self.drawing.words.report()

    def timeline(self, mode: str | None = None):
        """The Timeline behind `mode` (default: the lit one)."""
        return self.drawing.timelines.get(mode or self.lit) if self.drawing else None

    # -- geometry, for pointers and for tests ------------------------------------------------
    def mode_at(self, x: float, y: float) -> str | None:
        """The mode whose lane contains display point (x, y), or None."""
        for name, lane in self.drawing.lanes.items():
            if lane.contains_point((x, y)):
                return name
        return None

    def lane_center(self, mode: str) -> tuple[float, float]:
        """Display (pixel) coordinates of the middle of `mode`'s lane, after laying the figure out."""
        self.canvas.draw()
        box = self.drawing.lanes[mode].get_window_extent()
        return (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2

    def is_dimmed(self, mode: str) -> bool:
        return self.drawing.is_dimmed(mode)

    # -- drawing -----------------------------------------------------------------------------
    def _render(self) -> None:
        self._rendering = True
        try:
            self.fig.clear()
            self._cursors = []
            self.drawing = self.build(self.data, fig=self.fig, **self.build_kw)
            self.drawing.show_verdicts(self.revealed)  # asked first: the figure keeps its answers back too
            self._readout_in_figure(False)  # the readout is said once, in the widget below the canvas
            keep = self.selected if self.selected in self.modes else None
            self.buttons.options = [(m.label, name) for name, m in self.modes.items()]
            self.buttons.value = keep
            if keep is None:
                self.pinned = False
            if self.hovered not in self.modes:
                self.hovered = None
            if self.stepper:
                self._cursors = [ax.axvline(0, color="black", lw=1.2, ls="--", visible=False) for ax in self.fig.axes]
        finally:
            self._rendering = False
        self._apply()

    def _apply(self) -> None:
        lit = self.lit
        if lit is not None:
            self.reveal()
        self.drawing.light(lit)
        if self.buttons.value != lit and not self.pinned:
            self._rendering = True  # the buttons follow the pointer: they always show the lit mode
            try:
                self.buttons.value = lit
            finally:
                self._rendering = False
        label = html.escape(self.modes[lit].label) if lit in self.modes else ""
        head = f"<b>readout · {label}</b>" if label else "<b>readout ·</b>"
        pin = " (pinned: click outside the lanes to let go)" if self.pinned else ""
        dash = " —" if label else ""
        said = self.modes[lit].html() if lit in self.modes else html.escape(self.readout_text)
        self.readout.value = f"<div style='font-size:1.15em'>{head}{pin}{dash} {said}</div>"
        items = "".join(f"<li style='{'font-weight:bold' if name == lit else 'opacity:0.6'}'>"
                        f"{html.escape(m.verdict_line)}</li>" for name, m in self.modes.items())
        self.verdicts.value = f"<div>each mode, in short (its verdict)<ul style='margin:0'>{items}</ul></div>"
        if self.stepper:
            self._sync_stepper()
        self._redraw()

    def _redraw(self) -> None:
        # Full frames, not diffs: a lighting change touches most pixels anyway, and a diff applied
        # over a frame the browser has not shown yet leaves half-drawn lanes and doubled text.
        self.canvas._force_full = True
        self.canvas.draw_idle()

    # -- stepping through a timeline ---------------------------------------------------------
    def step_events(self) -> list:
        tl = self.timeline()
        return [e for e in getattr(tl, "events", []) if e.kind not in SKIP_WHEN_STEPPING]

    def _sync_stepper(self) -> None:
        events = self.step_events()
        self.step.max = max(len(events) - 1, 0)
        self._show_event(events)

    def _show_event(self, events: list) -> None:
        if not events:
            self.event_label.value = ""
            return
        event = events[min(self.step.value, len(events) - 1)]
        for line in self._cursors:
            line.set_xdata([event.t, event.t])
            line.set_visible(True)
        self.event_label.value = f"t = {event.t:g} s · {html.escape(event_in_words(event))}"

    @_guarded
    def _on_step(self, change) -> None:
        self._show_event(self.step_events())
        self._redraw()

    def _nudge(self, by: int) -> None:
        self.step.value = min(max(self.step.value + by, 0), self.step.max)

    # -- callbacks -----------------------------------------------------------------------------
    @_guarded
    def _on_motion(self, event) -> None:
        name = self.mode_at(event.x, event.y)
        if name != self.hovered:
            self.hovered = name
            self._apply()

    @_guarded
    def _on_leave(self, event) -> None:
        if self.hovered is not None:
            self.hovered = None
            self._apply()

    @_guarded
    def _on_click(self, event) -> None:
        name = self.mode_at(event.x, event.y)
        self.hovered = name
        self.pinned = name is not None
        if name is not None and name != self.selected:
            self.buttons.value = name  # _on_button applies
        else:
            self._apply()

    @_guarded
    def _on_button(self, change) -> None:
        if self._rendering:
            return
        self.pinned = True
        self._apply()

    @_guarded
    def _on_slider(self, change) -> None:
        self.data = self.run(**self.values)
        self._render()

    # -- display -------------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        """The live widget, and beside it a PNG of the figure as it stands: what a reader without a
        kernel (GitHub, nbviewer, `jupyter nbconvert --to html`) sees in the saved notebook."""
        bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["image/png"] = self.png()
        words = self.drawing.words
        data["text/plain"] = f"{words.caption}\n{self.report()}" if self.revealed else self.held_back()
        return bundle

    def held_back(self) -> str:
        """What a figure asked first says before the prediction: what it draws, and no outcome (its
        caption explains the outcome, so it waits for the answer too)."""
        labels = "; ".join(m.label for m in self.modes.values())
        return f"Drawn: {labels}. Each run's verdict follows the prediction."

    def png(self, dpi: float | None = None) -> str:
        """The figure as a base64 PNG, its readout line shown (the static image has no widget under it):
        the lit mode's readout, or, with nothing lit, the caption: what is drawn, since a reader of the
        image cannot point at anything."""
        import base64
        import io

        self._readout_in_figure(True)
        if self.lit is None:
            self.drawing.say(self.drawing.words.caption if self.revealed else self.held_back())
        try:
            buf = io.BytesIO()
            self.fig.savefig(buf, format="png", dpi=dpi or self.fig.dpi)
        finally:
            self._readout_in_figure(False)
            self.drawing.light(self.lit)
        return base64.b64encode(buf.getvalue()).decode("ascii")

    def snapshot(self):
        """The figure as it stands now (its modes, sliders and lit mode), as an image: what a cell that
        moves a slider and talks about the result leaves in the saved notebook, for a reader without
        a kernel, who would otherwise see only the figure as it was first drawn."""
        import base64

        from IPython.display import Image

        return Image(data=base64.b64decode(self.png()), format="png")

    def _readout_in_figure(self, shown: bool) -> None:
        """Show the figure's own readout line (and keep room for it), or hide it and give the room back."""
        readout = self.drawing.readout
        if readout is None:
            return
        readout.set_visible(shown)
        if shown:
            self.drawing.fit()
        else:
            engine = self.fig.get_layout_engine()
            if hasattr(engine, "set"):
                engine.set(rect=(0, 0, 1, 1))

    def close(self) -> None:
        """Close this explorer's widgets (and only these)."""
        stack = [self.widget]
        while stack:
            widget = stack.pop()
            stack.extend(getattr(widget, "children", ()))
            widget.close()


class Predict:
    """Predict, then run: the learner commits an answer before the outcomes are shown.

    `Predict(question, {answer: is_right(verdict)}, run, explorer=None)`: radio buttons and a
    "commit" button; on commit the explorer's static verdicts appear and the feedback quotes the
    run's own readout (the scenario's words) beside the learner's answer. In a checked cell,
    `predict.choose(answer)` does what the button does and returns the feedback text."""

    def __init__(self, question: str, answers: dict[str, Callable[[dict], bool]], run: Any,
                 explorer: ModeExplorer | None = None):
        if not answers:
            raise BadParameter("a prediction needs at least one answer to choose from")
        self.question, self.answers, self.run, self.explorer = question, dict(answers), run, explorer
        self.choice = w.RadioButtons(options=list(self.answers), value=None, layout=w.Layout(width="auto"))
        self.commit = w.Button(description="commit my prediction", button_style="primary", disabled=True)
        self.feedback = w.HTML()
        self.choice.observe(lambda change: setattr(self.commit, "disabled", change["new"] is None), names="value")
        self.commit.on_click(lambda _: self.choose(self.choice.value))
        self.widget = w.VBox([w.HTML(f"<b>Predict first.</b> {html.escape(question)}"), self.choice, self.commit,
                              self.feedback])

    def choose(self, answer: str) -> str:
        """Commit `answer`; reveal the outcomes; return the feedback (also shown under the buttons)."""
        if answer not in self.answers:
            raise BadParameter(f"{answer!r} is not one of the answers: {', '.join(self.answers)}")
        verdict = self.run.verdict
        right = bool(self.answers[answer](verdict))
        text = (f"You predicted: {answer}. " + ("The run agrees. " if right else "The run says otherwise. ")
                + f"The run: {verdict.summary}")
        self.choice.value, self.choice.disabled, self.commit.disabled = answer, True, True
        self.feedback.value = f"<div style='font-size:1.1em'>{html.escape(text)}</div>"
        if self.explorer is not None:
            self.explorer.reveal()
        return text

    def right_answers(self) -> list[str]:
        """The answers the run bears out."""
        return [answer for answer, is_right in self.answers.items() if is_right(self.run.verdict)]

    def answer(self) -> "Answer":
        """The answer, for the cell after the question and its figure: the answers the run bears out,
        the run's own readout, and the figure with every verdict shown. Run it once you have committed
        a prediction; in a saved lesson it is where a reader without a kernel finds the answer."""
        text = f"The answer: {' / '.join(self.right_answers()) or 'none of these'}. The run: {self.run.verdict.summary}"
        image = None
        if self.explorer is not None:
            self.explorer.reveal()
            image = self.explorer.png()
        return Answer(text, image)

    def _repr_mimebundle_(self, **kwargs):
        """The live buttons, and for a reader without a kernel the question and its options as text:
        the answer is not here, but in the saved output of the cell that calls `answer()`."""
        bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["text/plain"] = f"Predict first. {self.question} " + " / ".join(self.answers)
        options = "".join(f"<li>{html.escape(a)}</li>" for a in self.answers)
        data["text/html"] = (f"<div><b>Predict first.</b> {html.escape(self.question)}<ol>{options}</ol>"
                             "<i>Choose one before you read on: the answer follows the figure.</i></div>")
        return bundle


@dataclass(frozen=True)
class Answer:
    """A prediction's answer as a cell shows it: its words, and the figure with its verdicts (a PNG)."""

    text: str
    png: str | None = None  # base64

    def _repr_mimebundle_(self, **kwargs):
        data = {"text/plain": self.text}
        body = f"<p style='font-size:1.1em'>{html.escape(self.text)}</p>"
        if self.png is not None:
            data["image/png"] = self.png
            body += f"<img src='data:image/png;base64,{self.png}' style='max-width:100%'/>"
        data["text/html"] = f"<div>{body}</div>"
        return data
