"""The instructor's dashboard for a class (`emqlab present class`, or served by `emqlab class serve`).

`ClassBoard(board)`: the class figure (`figures.class_figure`: one lane per joined learner, the
totals strip) redrawn about every second from a thread, a status line (the totals in words), a
table of the learners (each one's state, verdict and story: the same words as the figure's), and
the controls: enqueue a burst of N jobs, crash a learner's worker, pause one for N seconds,
fencing on/off. The figure is the course's interactive figure (`emqlab.view.widgets.LitFigure`):
pointing at a learner's lane lights it and says that learner's story, in the browser, with no
message to the kernel, and a pinned lane stays pinned across refreshes. Drawing it at slide size
takes a while on a small machine, so the refresh waits at least twice as long as the last drawing took.

The instructor's address comes from $EMQLAB_CLASS_URL (set by `class serve` in Voila's
environment, or by `emqlab present class --join-file FILE`), never from the notebook's text.
With none, `ClassBoard.practice()` starts a practice class of its own on this machine (a server
and a few workers, all gone when the kernel stops): the instructor rehearses the demo alone.
For tests, the page's parts carry classes: `emqlab-class-status`, `emqlab-class-lanes` (a table,
one `tr.emqlab-lane` per learner with `data-name` and `data-state`), `emqlab-class-said`.
"""

from __future__ import annotations

import html
import io
import logging
import os
import threading
import time
import traceback
from typing import Any

import ipywidgets as w

from ..core.children import TRACKER
from ..core.environment import CLASS_URL_ENV
from ..core.errors import BadParameter
from ..view.interactive import interactive_html
from ..view.widgets import LitFigure
from .draw import class_figure, learner_lane_figure
from .board import Board, class_lanes, class_snapshot, class_words

log = logging.getLogger(__name__)
FIGSIZE, DPI = (15, 7.5), 120  # a slide: 1800 px wide
WINDOW_S = 60.0  # the lanes show at most the last minute


class ClassBoard:
    """The class, live, with the instructor's controls. `refresh()` draws once; `start()` keeps
    drawing every `every` seconds (at least) until `stop()`."""

    def __init__(self, board: Board, *, every: float = 1.0, window: float = WINDOW_S,
                 figsize: tuple[float, float] = FIGSIZE, dpi: float = DPI, start: bool = True):
        self.board, self.every, self.window, self.figsize, self.dpi = board, every, window, figsize, dpi
        self.failures: list[str] = []
        self.snapshot: dict[str, Any] | None = None
        self.status = w.HTML("<div>reading the class …</div>")
        self.status.add_class("emqlab-class-status")
        self.table = w.HTML()
        self.table.add_class("emqlab-class-lanes")
        self.said = w.HTML()
        self.said.add_class("emqlab-class-said")
        self.figure = LitFigure()
        self.errors = w.Output()
        wide = w.Layout(width="auto")
        self.burst = w.BoundedIntText(value=30, min=1, max=100_000, description="jobs", layout=w.Layout(width="210px"))
        self.enqueue_button = w.Button(description="enqueue a burst", button_style="primary", layout=wide)
        self.who = w.Dropdown(options=[], description="learner", layout=w.Layout(width="280px"))
        self.crash_button = w.Button(description="crash", button_style="danger", layout=wide)
        self.seconds = w.BoundedFloatText(value=5.0, min=0.1, max=600, step=0.5, description="seconds",
                                          style={"description_width": "initial"}, layout=w.Layout(width="230px"))
        self.pause_button = w.Button(description="pause", button_style="warning", layout=wide)
        self.fence = w.ToggleButtons(options=[("fencing on", True), ("fencing off", False)], value=board.fenced(),
                                     style={"button_width": "auto"})
        self.enqueue_button.on_click(lambda _: self._act(self.enqueue))
        self.crash_button.on_click(lambda _: self._act(self.crash))
        self.pause_button.on_click(lambda _: self._act(self.pause))
        self.fence.observe(self._on_fence, names="value")
        self._setting = False
        controls = w.HBox([self.burst, self.enqueue_button, self.who, self.crash_button, self.seconds,
                           self.pause_button, self.fence], layout=w.Layout(flex_flow="row wrap", align_items="center"))
        self.widget = w.VBox([self.status, controls, self.said, self.figure, self.table, self.errors])
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.took = 0.0
        self.drawing = None
        self._owned: list[Any] = []  # what a practice class started, stopped by close()
        if start:
            self.refresh()  # the first drawing at once: the cell's output has the figure
            self.start()

    @classmethod
    def from_env(cls, address: str | None = None, **kw: Any) -> "ClassBoard":
        url = address or os.environ.get(CLASS_URL_ENV, "").strip()
        if not url:
            raise BadParameter(f"no class to show: start it with `emqlab class serve` (which serves this dashboard), "
                               f"or `emqlab present class --join-file FILE` (or set ${CLASS_URL_ENV})")
        return cls(Board.connect(url), **kw)

    @classmethod
    def practice(cls, learners: int = 4, **kw: Any) -> "ClassBoard":
        """A practice class on this machine: an embedded server, `learners` workers (processes, as
        `lab.join` starts them), and this board over it; `close()` (or the kernel's end) removes it all."""
        from .server import Classroom, embedded_server
        from .learner import Joined

        server, backend, port = embedded_server()
        owned: list[Any] = [server.stop, backend.close]  # closers, run newest first
        try:
            room = Classroom(backend, learners, "127.0.0.1", port)
            owned.append(room.close)
            room.open()
            names = ["ada", "bob", "cy", "dee", "eve", "fay", "gus", "hal"]
            for k, slot in enumerate(room.slots):
                owned.append(Joined(room.address(slot), names[k] if k < len(names) else slot).stop)
            board = cls(Board.connect(room.address("instructor")), **{**kw, "start": False})
        except BaseException:
            _close_all(owned)
            raise
        board._owned = owned
        TRACKER.own(board, board.close)
        if kw.get("start", True):
            board.refresh()
            board.start()
        return board

    # -- the controls ----------------------------------------------------------------------------
    def enqueue(self, n: int | None = None) -> str:
        ids = self.board.enqueue(int(n if n is not None else self.burst.value))
        return f"enqueued {len(ids)} job(s): {ids[0]} … {ids[-1]}"

    def crash(self, name: str | None = None) -> str:
        name = name or self.who.value
        if not name:
            raise BadParameter("choose a learner to crash")
        order = self.board.crash(name)
        return order.said(name, "crash") + (": its worker is killed once it holds a job" if order.taken else "")

    def pause(self, name: str | None = None, seconds: float | None = None) -> str:
        name = name or self.who.value
        if not name:
            raise BadParameter("choose a learner to pause")
        seconds = float(seconds if seconds is not None else self.seconds.value)
        order = self.board.pause(name, seconds)
        return order.said(name, f"pause {seconds:g} s") + (" once it holds a job" if order.taken else "")

    def fencing(self, on: bool) -> str:
        self.board.fencing(on)
        return f"fencing {'on' if on else 'off'} for the whole class"

    def _act(self, action, *args) -> None:
        try:
            said = action(*args)
        except Exception as exc:  # a widget callback has no caller to raise to: say it
            self._failed("control", exc)
            said = f"refused: {exc}"
        self.said.value = f"<div style='font-size:1.1em'>{html.escape(said)}</div>"
        self._wake()

    def _on_fence(self, change) -> None:
        if not self._setting:
            self._act(self.fencing, bool(change["new"]))

    # -- drawing -----------------------------------------------------------------------------------
    def refresh(self) -> dict[str, Any]:
        """Read the class once and show it: figure, status line, learners' table, dropdown."""
        with self._lock:
            t0 = time.monotonic()
            snap = class_snapshot(self.board)
            words, views = class_words(snap), class_lanes(snap)
            drawing = self.drawing = class_figure(snap, figsize=self.figsize, window=self.window, readout=False)
            self.figure.html = interactive_html(drawing, "class", slide=True)
            stamp = time.strftime("%H:%M:%S")
            where = "a practice class on this machine" if self._owned else "the class"
            self.status.value = (f"<div style='font-size:1.3em'><b>{where}</b> · {html.escape(words.prompt)} "
                                 f"<span style='opacity:0.6'>(at {stamp})</span></div>")
            rows = "".join(
                f"<tr class='emqlab-lane' data-slot='{v['slot']}' data-name='{html.escape(v['label'])}' "
                f"data-state='{v['state']}'><td><b>{html.escape(v['label'])}</b></td>"
                f"<td>{html.escape(words.modes[v['slot']].static)}</td>"
                f"<td>{words.modes[v['slot']].html()}</td></tr>" for v in views)
            self.table.value = ("<table style='font-size:0.9em;border-spacing:12px 2px'><tr><th>learner</th>"
                                f"<th>now</th><th>what happened</th></tr>{rows}</table>")
            names = [v["label"] for v in views]
            if list(self.who.options) != names:
                keep = self.who.value if self.who.value in names else (names[0] if names else None)
                self.who.options = names
                self.who.value = keep
            if self.fence.value != snap["totals"]["fencing"]:  # switched elsewhere (the CLI)
                self._setting = True
                try:
                    self.fence.value = snap["totals"]["fencing"]
                finally:
                    self._setting = False
            self.snapshot = snap
            self.took = time.monotonic() - t0
            return snap

    def _loop(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                self.refresh()
                failures = 0
            except Exception as exc:  # the class ended, or the server is away: say so, keep trying a while
                failures += 1
                self._failed("refresh", exc)
                if failures >= 30:
                    self.status.value = "<div>the class is gone (ended, or its server stopped)</div>"
                    return
            self._wake_event.wait(max(self.every, 2 * self.took))
            self._wake_event.clear()

    def _wake(self) -> None:
        if self.thread is not None:
            self._wake_event.set()

    def _failed(self, what: str, exc: Exception) -> None:
        text = "".join(traceback.format_exception_only(exc)).strip()
        self.failures.append(f"{what}: {text}")
        log.error("%s failed: %s", what, text)

    def start(self) -> "ClassBoard":
        if self.thread is None or not self.thread.is_alive():
            self._stop.clear()
            self._wake_event = threading.Event()
            self.thread = threading.Thread(target=self._loop, name="emqlab-classboard", daemon=True)
            self.thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake()
        if self.thread is not None:
            self.thread.join(timeout=10)

    def close(self) -> None:
        """Stop drawing and disconnect; a practice class is removed (workers, class, server)."""
        self.stop()
        self.board.close()
        owned, self._owned = self._owned, []
        _close_all(owned)
        TRACKER.release(self)  # a practice class's board (`practice`) was owned by the tracker

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, and beside it the figure as it stands and its words (for a reader with no
        widgets, and a checked cell)."""
        bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if self.drawing is not None:
            with self._lock:
                data["image/png"] = _png(self.drawing, self.dpi)
            data["text/plain"] = f"{self.drawing.words.caption}\n{self.drawing.words.prompt}"
        return bundle


def _png(drawing, dpi: float) -> str:
    """The drawing as a base64 PNG: what a saved notebook shows a reader with no widgets."""
    import base64

    buf = io.BytesIO()
    drawing.figure.savefig(buf, format="png", dpi=dpi)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _close_all(owned: list[Any]) -> None:
    """Stop what a practice class started, newest first: workers, the class, the admin, the server."""
    for close in reversed(owned):
        try:
            close()
        except Exception as exc:  # keep going: the rest must still stop
            log.error("stopping a practice class: %s failed: %s", getattr(close, "__qualname__", close), exc)


class LearnerLane:
    """A learner's own lane, live in its notebook: `LearnerLane(lab.join(address))`. The figure
    (`figures.learner_lane_figure`) and its story under it, redrawn every `every` seconds while
    the class runs; `stop()` stops the drawing (not the worker)."""

    def __init__(self, handle: Any, *, every: float = 1.0, figsize: tuple[float, float] = (12, 3.6),
                 dpi: float = 80, start: bool = True):
        self.handle, self.every, self.figsize, self.dpi = handle, every, figsize, dpi
        self.figure = LitFigure()
        self.story = w.HTML()
        self.drawing = None
        self.widget = w.VBox([self.figure, self.story])
        self.failures: list[str] = []
        self._stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.refresh()
        if start:
            self.thread = threading.Thread(target=self._loop, name="emqlab-learner-lane", daemon=True)
            self.thread.start()

    def refresh(self) -> None:
        drawing = self.drawing = learner_lane_figure(self.handle, figsize=self.figsize, readout=False)
        self.figure.html = interactive_html(drawing, f"lane-{drawing.modes[0]}" if drawing.modes else "lane")
        self.story.value = f"<div style='font-size:1.15em'>{html.escape(drawing.words.prompt)}</div>"

    def _loop(self) -> None:
        failures = 0
        while not self._stop.wait(self.every):
            try:
                self.refresh()
                failures = 0
            except Exception as exc:  # the class ended: the last drawing stays
                failures += 1
                self.failures.append("".join(traceback.format_exception_only(exc)).strip())
                if failures >= 5:
                    return

    def stop(self) -> None:
        self._stop.set()
        if self.thread is not None:
            self.thread.join(timeout=10)

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if self.drawing is not None:
            data["image/png"] = _png(self.drawing, self.dpi)
        return bundle
