"""One explorer for every figure that follows the protocol in `emqlab.plot`.

Point at a mode's lane to light its timeline and dim the others; click to pin it (click outside
the lanes to let go); the ToggleButtons do the same for keyboard, touch and tests. Under the
figure: the readout of the lit mode and every mode's static verdict. Optional sliders re-run the
scenario; an optional stepper walks the lit mode's timeline event by event.

Errors raised inside a callback are never silent: they are shown in the `errors` Output, kept in
`explorer.failures` and logged to the "emqlab.widgets" logger.
"""

from __future__ import annotations

import html
import itertools
import logging
import traceback
import warnings
from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any

import ipywidgets as w
from matplotlib.figure import Figure

from .plot import style

log = logging.getLogger("emqlab.widgets")
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


class ModeExplorer:
    """Drive any protocol figure: `ModeExplorer(draw_heartbeat, timelines)`, or with `run` and
    `sliders` to re-run on change: `ModeExplorer(draw, run=fn, sliders={"lease": (5, 60, 5, 30)})`."""

    def __init__(self, draw: Callable[..., Figure], data: Any = None, *, run: Callable[..., Any] | None = None,
                 sliders: Mapping[str, Any] | None = None, stepper: bool = False,
                 figsize: tuple[float, float] = (12, 7.2), dpi: float = 80, **draw_kw: Any):
        if data is None and run is None:
            raise TypeError("ModeExplorer needs the data to draw, or a `run` function that makes it")
        self.draw, self.run, self.draw_kw = draw, run, draw_kw
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
        self.verdicts = w.HTML()
        self.sliders = {name: _slider(name, spec) for name, spec in (sliders or {}).items()}
        self.step = w.IntSlider(min=0, max=0, value=0, description="event", continuous_update=True,
                                layout=w.Layout(width="60%"))
        self.back, self.forward = w.Button(description="◀ step", layout=w.Layout(width="auto")), \
            w.Button(description="step ▶", layout=w.Layout(width="auto"))
        self.event_label = w.HTML()
        self.stepper = stepper
        self.hovered: str | None = None
        self.pinned = False
        self.modes: dict[str, dict[str, str]] = {}
        self._artists: dict[str, list[tuple[Any, float]]] = {}
        self._lanes: dict[str, Any] = {}
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
    @property
    def values(self) -> dict[str, Any]:
        return {name: s.value for name, s in self.sliders.items()}

    @property
    def selected(self) -> str | None:
        return self.buttons.value

    @property
    def lit(self) -> str | None:
        """The mode drawn at full strength: the hovered lane, unless a mode is pinned."""
        if self.hovered is not None and not self.pinned:
            return self.hovered
        return self.selected

    @property
    def readout_text(self) -> str:
        lit = self.lit
        return self.modes[lit]["readout"] if lit in self.modes else ""

    @staticmethod
    def _verdict_line(mode: dict[str, str]) -> str:
        """"label → verdict", unless the figure already wrote its verdict that way."""
        label, verdict = mode["label"], mode["verdict"]
        return verdict if verdict.startswith(label) else f"{label} → {verdict}"

    def report(self) -> str:
        """Every mode's readout and static verdict, one per line: stable text for a checked cell."""
        lines = []
        for name, mode in self.modes.items():
            lines.append(self._verdict_line(mode))
            lines.append(f"    {mode['readout']}")
        return "\n".join(lines)

    def timeline(self, mode: str | None = None):
        """The Timeline behind `mode` (default: the lit one), if the figure exposes it."""
        mode = mode or self.lit
        drawn = getattr(self.fig, "emqlab_timelines", None)
        if drawn is None and isinstance(self.data, Mapping):
            drawn = self.data
        return (drawn or {}).get(mode)

    # -- geometry, for pointers and for tests ------------------------------------------------
    def mode_at(self, x: float, y: float) -> str | None:
        """The mode whose lane contains display point (x, y), or None."""
        for name, lane in self._lanes.items():
            if lane.contains_point((x, y)):
                return name
        return None

    def lane_center(self, mode: str) -> tuple[float, float]:
        """Display (pixel) coordinates of the middle of `mode`'s lane, after laying the figure out."""
        self.canvas.draw()
        box = self._lanes[mode].get_window_extent()
        return (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2

    def is_dimmed(self, mode: str) -> bool:
        artists = self._artists.get(mode, [])
        return bool(artists) and all(a.get_alpha() < base for a, base in artists)

    # -- drawing -----------------------------------------------------------------------------
    def _render(self) -> None:
        self._rendering = True
        try:
            self.fig.clear()
            self._cursors = []
            self.draw(self.data, fig=self.fig, **self.draw_kw)
            self.modes = dict(getattr(self.fig, "emqlab_modes", {}))
            self._artists = {name: [] for name in self.modes}
            self._lanes = {}
            for artist in self.fig.findobj():
                gid = artist.get_gid() or ""
                kind, _, name = gid.partition(":")
                if kind == "mode" and name in self._artists:
                    base = artist.get_alpha()
                    self._artists[name].append((artist, 1.0 if base is None else base))
                elif kind == "lane" and name in self.modes:
                    self._lanes[name] = artist
            keep = self.selected if self.selected in self.modes else next(iter(self.modes), None)
            self.buttons.options = [(m["label"], name) for name, m in self.modes.items()]
            self.buttons.value = keep
            if self.hovered not in self.modes:
                self.hovered = None
            if self.stepper:
                self._cursors = [ax.axvline(0, color="black", lw=1.2, ls="--", visible=False) for ax in self.fig.axes]
        finally:
            self._rendering = False
        self._apply()

    def _apply(self) -> None:
        lit = self.lit
        for name, artists in self._artists.items():
            factor = 1.0 if lit is None or name == lit else style.DIM_ALPHA
            for artist, base in artists:
                artist.set_alpha(base * factor)
        for name, lane in self._lanes.items():
            lane.set_linewidth(2.5 if name == lit else 0)
            lane.set_facecolor("#E8F1FA" if name == lit else "#F2F2F2")
        readout_artist = getattr(self.fig, "emqlab_readout", None)
        if readout_artist is not None and lit in self.modes:
            readout_artist.set_text(self.modes[lit]["readout"])
        label = html.escape(self.modes[lit]["label"]) if lit in self.modes else ""
        pin = " (pinned)" if self.pinned else ""
        self.readout.value = (f"<div style='font-size:1.15em'><b>readout · {label}{pin}</b> — "
                              f"{html.escape(self.readout_text)}</div>")
        items = "".join(f"<li style='{'font-weight:bold' if name == lit else 'opacity:0.6'}'>"
                        f"{html.escape(self._verdict_line(m))}</li>" for name, m in self.modes.items())
        self.verdicts.value = f"<div>static verdicts<ul style='margin:0'>{items}</ul></div>"
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
        extra = ", ".join(f"{k}={v}" for k, v in event.data.items())
        self.event_label.value = (f"<code>t = {event.t:g} s · {html.escape(event.actor)} · "
                                  f"{html.escape(event.kind)}</code> {html.escape(extra)}")

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
        return self.widget._repr_mimebundle_(**kwargs)

    def close(self) -> None:
        """Close this explorer's widgets (and only these)."""
        stack = [self.widget]
        while stack:
            widget = stack.pop()
            stack.extend(getattr(widget, "children", ()))
            widget.close()
