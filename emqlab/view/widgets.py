"""One explorer for every figure that follows the drawing protocol of `emqlab.plot`.

`ModeExplorer(build, data)`: `build(data, fig=…)` returns a `Drawing` (the builders of
`emqlab.view.figures`, e.g. `heartbeat_figure`). The figure is shown by `LitFigure`, a widget whose
front end is the page script of `emqlab.view.interactive` (static/light.js): point at a mode's lane
to light its timeline and dim the others, click to pin it (click the figure's margin to let go),
Tab and the arrow keys do the same, and the readout under it says the lit mode's words — all in the
browser, with no message to the kernel. Optional sliders re-run the scenario and send a new figure;
an optional stepper walks the lit mode's timeline event by event (in the browser too). A cell may
pin a mode from the kernel (`explorer.pin("half")`). Every word shown comes from the drawing's
`FigureWords`.

Errors raised inside a callback are never silent: they are shown in the `errors` Output, kept in
`explorer.failures` and logged to the "emqlab.view.widgets" logger.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import logging
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

import anywidget
import ipywidgets as w
import traitlets
from matplotlib.figure import Figure

from ..core.errors import BadParameter
from ..core.words import ModeWords
from ..plot import Drawing
from .interactive import FIGURE_MIME, event_in_words, interactive_html, light_script, light_style, step_events
from .picture import Picture, said

log = logging.getLogger(__name__)
_numbers = itertools.count(1)  # each explorer's figure gets its own name on the page: data-figure="heartbeat-1"

__all__ = ["LitFigure", "ModeExplorer", "Predict", "Answer", "event_in_words", "step_events"]


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
    slider = w.IntSlider if all(isinstance(x, int) for x in spec) else w.FloatSlider
    return slider(min=lo, max=hi, step=step, value=value, description=name, continuous_update=False,
                style={"description_width": "initial"})


class LitFigure(anywidget.AnyWidget):
    """An interactive figure in the lab: `html` is `interactive_html`'s fragment, lit by the page script
    in the browser; `pinned` pins a mode from the kernel (None: nothing pinned). The browser sends
    nothing back: hovering, focusing and pinning there stay there."""

    _esm = light_script()
    _css = light_style()
    html = traitlets.Unicode("").tag(sync=True)
    pinned = traitlets.Unicode(None, allow_none=True).tag(sync=True)


class ModeExplorer:
    """Drive any drawing: `ModeExplorer(heartbeat_figure, timelines)`, or with `run` and `sliders`
    to re-run on change: `ModeExplorer(heartbeat_figure, run=fn, sliders={"lease": (5, 60, 5, 30)})`.
    `fold=True`: a figure of many modes (`space_figure`'s states) says its caption and notes in its saved
    text instead of a line per mode, and the page lists every mode's words in a box that scrolls."""

    def __init__(self, build: Callable[..., Drawing], data: Any = None, *, run: Callable[..., Any] | None = None,
                 sliders: dict[str, Any] | None = None, stepper: bool = False,
                 figsize: tuple[float, float] = (12, 7.2), dpi: float = 80, slide: bool = False,
                 name: str | None = None, fold: bool = False, **build_kw: Any):
        if data is None and run is None:
            raise BadParameter("ModeExplorer needs the data to draw, or a `run` function that makes it")
        self.build, self.run, self.build_kw = build, run, build_kw
        self.stepper, self.slide, self.fold = stepper, slide, fold
        self.name = name or f"{build.__name__.removesuffix('_figure')}-{next(_numbers)}"
        self.failures: list[str] = []
        self.errors = w.Output()
        # a figure keeps its layout in inches; the page scales its SVG to the output area's width
        self.fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        self.figure = LitFigure()
        self.sliders = {name: _slider(name, spec) for name, spec in (sliders or {}).items()}
        self._revealed = True  # a Predict holds the verdicts back (`hold_back`) until the learner commits
        self._pinned: str | None = None
        self.drawing: Drawing | None = None

        self.data = data if data is not None else self.run(**self.values)
        self._render()
        for slider in self.sliders.values():
            slider.observe(self._on_slider, names="value")
        rows: list[w.Widget] = [self.figure]
        if self.sliders:
            rows.append(w.HBox(list(self.sliders.values()), layout=w.Layout(flex_flow="row wrap")))
        rows.append(self.errors)
        self.widget = w.VBox(rows)

    # -- what is shown -----------------------------------------------------------------------
    def reveal(self) -> None:
        """Show the static verdicts, under the figure and in it (after a prediction)."""
        if self._revealed:
            return
        self._revealed = True
        self.drawing.show_verdicts(True)
        self._show()

    def hold_back(self) -> None:
        """Keep the verdicts back until `reveal()`: what a figure under a prediction does."""
        if self._revealed:
            self._revealed = False
            self.drawing.show_verdicts(False)
            self._show()

    @property
    def revealed(self) -> bool:
        return self._revealed

    @property
    def values(self) -> dict[str, Any]:
        return {name: s.value for name, s in self.sliders.items()}

    @property
    def lit(self) -> str | None:
        """The mode a cell pinned (`pin`), or None. What a pointer lights in the browser stays there."""
        return self._pinned

    def pin(self, mode: str | None) -> None:
        """Pin `mode` (None lets go), as a click on its lane would; the figure in the browser follows."""
        if mode is not None and mode not in self.modes:
            raise BadParameter(f"the figure has no mode {mode!r}; it has: {', '.join(self.modes)}")
        self._pinned = mode
        self.drawing.light(mode)
        self.figure.pinned = mode

    @property
    def modes(self) -> dict[str, ModeWords]:
        """Each mode's words (label, headline, static verdict, facts), as the scenario wrote them."""
        return dict(self.drawing.words.modes) if self.drawing else {}

    @property
    def readout_text(self) -> str:
        """What the readout line says with the pinned mode lit: the mode's full text, or the figure's prompt."""
        return self.drawing.words.under(self.lit) if self.drawing else ""

    @property
    def html(self) -> str:
        """The figure as the browser shows it (`interactive_html`'s fragment)."""
        return self.figure.html

    def report(self) -> str:
        """Every mode's verdict line and readout, one per line: stable text for a checked cell."""
        return self.drawing.words.report()

    def timeline(self, mode: str | None = None):
        """The Timeline behind `mode` (default: the pinned one)."""
        return self.drawing.timelines.get(mode or self.lit) if self.drawing else None

    def step_events(self, mode: str | None = None) -> list:
        """The events the stepper walks for `mode` (default: the pinned one)."""
        return step_events(self.timeline(mode))

    def is_dimmed(self, mode: str) -> bool:
        return self.drawing.is_dimmed(mode)

    # -- drawing -----------------------------------------------------------------------------
    def _render(self) -> None:
        self.fig.clear()
        self.drawing = self.build(self.data, fig=self.fig, **self.build_kw)
        self.drawing.show_verdicts(self._revealed)  # held back: the figure keeps its answers back too
        if self._pinned not in self.modes:
            self._pinned = None
        self._show()

    def _show(self) -> None:
        self.figure.html = interactive_html(self.drawing, self.name, stepper=self.stepper, slide=self.slide,
                                            held_back=None if self._revealed else self.held_back(), fold=self.fold)
        self.figure.pinned = self._pinned
        self.drawing.light(self._pinned)

    @_guarded
    def _on_slider(self, change) -> None:
        self.data = self.run(**self.values)
        self._render()

    # -- display -------------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        """The live widget, and beside it a PNG of the figure as it stands: what a reader without a
        kernel (GitHub, nbviewer, `jupyter nbconvert --to html`) sees in the saved notebook; and the
        interactive fragment, which `emqlab site` lights with no kernel at all."""
        bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["image/png"] = self.png()
        data["text/plain"] = self.said() if self.revealed else self.held_back()
        data[FIGURE_MIME] = self.html
        return bundle

    def said(self) -> str:
        """The figure in words, for a reader of the saved text (an image's alt): its caption, then each
        run's verdict line. The readouts behind them are the figure's to show, mode by mode. Folded (a
        figure of many modes, such as a state space's states): the caption, then the figure's notes."""
        if self.fold:
            return "\n".join([self.drawing.words.caption, *self.drawing.words.notes])
        return said(self.drawing.words)

    def held_back(self) -> str:
        """What a figure asked first says before the prediction: what it draws, and no outcome (its
        caption explains the outcome, so it waits for the answer too)."""
        labels = "; ".join(m.label for m in self.modes.values())
        return f"Drawn: {labels}. Each run's verdict follows the prediction."

    def png(self, dpi: float | None = None) -> str:
        """The figure as a base64 PNG, its readout line shown (the static image has no readout under it):
        the pinned mode's readout, or, with nothing pinned, the caption: what is drawn, since a reader of
        the image cannot point at anything."""
        self.drawing.light(self.lit)
        if self.lit is None:
            self.drawing.say(self.drawing.words.caption if self.revealed else self.held_back())
        try:
            buf = io.BytesIO()
            self.fig.savefig(buf, format="png", dpi=dpi or self.fig.dpi)
        finally:
            self.drawing.light(self.lit)
        return base64.b64encode(buf.getvalue()).decode("ascii")

    def snapshot(self) -> Picture:
        """The figure as it stands now (its modes, sliders and pinned mode), as an image with its words
        (the caption, then what the lit mode's readout says): what a cell that moves a slider and talks
        about the result leaves in the saved notebook, for a reader without a kernel, who would otherwise
        see only the figure as it was first drawn."""
        if self.lit is None:  # nothing lit: what the image shows, not a prompt to point at it
            return Picture(self.png(), self.said())
        return Picture(self.png(), f"{self.drawing.words.caption}\n{self.readout_text}")

    def close(self) -> None:
        """Close this explorer's widgets (and only these)."""
        stack = [self.widget]
        while stack:
            widget = stack.pop()
            stack.extend(getattr(widget, "children", ()))
            widget.close()


Why = str | Callable[[Any], str]  # why an option is right or wrong: "{v.lapsed_at} s …" over the run's verdict


class Predict:
    """Predict, then run: the learner commits an answer before anything shows the outcome.

    `Predict(question, {option: is_right}, run, explorer=None)`: `is_right(verdict)` says whether the run
    bears the option out. The question shows radio buttons and a "commit" button, and no figure; on commit
    it says whether the run agrees and shows the figure under it with its verdicts (in the lab). The next
    cell, `predict.answer({option: why})`, says for every option why it is right or wrong, `why` being one
    line as a format string over the run's verdict (`"the lease ran out at {v.lapsed_at:g} s"`) or a
    function of it, so every number comes from the run; the reasons live in that cell, after the question,
    so nothing above the question gives the answer away. A reader without a kernel finds the answer and
    the figure in that cell's saved output. In a checked cell, `predict.choose(option)` does what the
    button does and returns the feedback."""

    def __init__(self, question: str, answers: dict[str, Callable[[Any], bool]], run: Any,
                 explorer: ModeExplorer | None = None):
        if len(answers) < 2:
            raise BadParameter("a prediction needs at least two options to choose from")
        wrong = [option for option, is_right in answers.items() if not callable(is_right)]
        if wrong:
            raise BadParameter(f"option {wrong[0]!r}: give a function of the run's verdict that says whether "
                               "it is right")
        self.question, self.answers, self.run, self.explorer = question, dict(answers), run, explorer
        if explorer is not None:
            explorer.hold_back()
        self.committed: str | None = None
        self.choice = w.RadioButtons(options=list(self.answers), value=None, layout=w.Layout(width="auto"))
        self.commit = w.Button(description="commit my prediction", button_style="primary", disabled=True)
        self.feedback = w.HTML()
        self.shown = w.VBox()  # the figure, once the learner has committed
        self.choice.observe(lambda change: setattr(self.commit, "disabled", change["new"] is None), names="value")
        self.commit.on_click(lambda _: self.choose(self.choice.value))
        self.widget = w.VBox([w.HTML(f"<b>Predict first.</b> {html.escape(question)}"), self.choice, self.commit,
                              self.feedback, self.shown])

    def right_answers(self) -> list[str]:
        """The options the run bears out."""
        return [option for option, is_right in self.answers.items() if is_right(self.run.verdict)]

    def reasons(self, why: dict[str, Why]) -> list[tuple[bool, str, str]]:
        """(right?, option, why in the run's numbers) for every option, the right ones first."""
        missing = [option for option in self.answers if option not in why]
        extra = [option for option in why if option not in self.answers]
        if missing:
            raise BadParameter(f"give a reason for every option: none for {missing[0]!r}")
        if extra:
            raise BadParameter(f"{extra[0]!r} is not one of the options: {', '.join(self.answers)}")
        right, verdict = set(self.right_answers()), self.run.verdict
        spoken = {option: reason(verdict) if callable(reason) else reason.format(v=verdict)
                  for option, reason in why.items()}
        rows = [(option in right, option, spoken[option]) for option in self.answers]
        return sorted(rows, key=lambda row: not row[0])

    def choose(self, option: str) -> str:
        """Commit `option`: say whether the run agrees, show the figure; return the feedback text."""
        if option not in self.answers:
            raise BadParameter(f"{option!r} is not one of the options: {', '.join(self.answers)}")
        self.committed = option
        agrees = option in self.right_answers()
        text = (f"You predicted: {option}. " + ("The run agrees." if agrees else "The run says otherwise.")
                + " The next cell says why each option is right or wrong.")
        self.choice.value, self.choice.disabled, self.commit.disabled = option, True, True
        self.feedback.value = Answer(text)._html()
        if self.explorer is not None:
            self.explorer.reveal()
            self.shown.children = (self.explorer.widget,)
        return text

    def answer(self, why: dict[str, Why]) -> "Answer":
        """The cell after the question: the run's own headline, then every option with why the run bears it
        out or not, then the figure with its verdicts. Where the learner committed with the button (in the
        lab) the figure already stands under the question, so only the words are shown here; in a saved
        lesson this cell's output is where a reader without a kernel meets the figure, once."""
        lines = [f"The run: {self.run.verdict.headline}"]
        lines += [f"{'✓ right' if right else '✗ wrong'}: {option}. {reason}"
                  for right, option, reason in self.reasons(why)]
        if self.explorer is None:
            return Answer("\n".join(lines))
        self.explorer.reveal()
        if self.committed is not None:
            return Answer("\n".join(lines + ["The figure is under your prediction, above."]))
        return Answer("\n".join(lines), self.explorer)

    def _repr_mimebundle_(self, **kwargs):
        """The live buttons, and for a reader without a kernel the question and its options as text:
        the answer, and the figure, are in the saved output of the cell that calls `answer()`."""
        bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        data["text/plain"] = f"Predict first. {self.question} " + " / ".join(self.answers)
        options = "".join(f"<li>{html.escape(a)}</li>" for a in self.answers)
        data["text/html"] = (f"<div><b>Predict first.</b> {html.escape(self.question)}<ol>{options}</ol>"
                             "<i>Choose one before you read on: the answer and the run's figure follow.</i></div>")
        return bundle


@dataclass(frozen=True)
class Answer:
    """What a prediction's answer shows: its words, one line each (a list in HTML), then the figure if any."""

    text: str
    figure: ModeExplorer | None = None

    def _html(self) -> str:
        lines = [html.escape(line) for line in self.text.splitlines()]
        if len(lines) == 1:
            return f"<p style='font-size:1.1em'>{lines[0]}</p>"
        items = "".join(f"<li>{line}</li>" for line in lines[1:])
        return (f"<div style='font-size:1.1em'><p>{lines[0]}</p>"
                f"<ul style='list-style:none;padding-left:0'>{items}</ul></div>")

    def words(self) -> dict[str, str]:
        return {"text/plain": self.text, "text/html": self._html()}

    def _ipython_display_(self):
        from IPython.display import display

        display(self.words(), raw=True)
        if self.figure is not None:
            display(self.figure)
