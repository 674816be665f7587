"""Every course figure, exported for a slide deck: `emqlab figures --out DIR --format png|svg`.

Each export runs the real scenario on a backend (fakeredis on the virtual clock by default, so the
files come out the same every time), draws it with its builder from `emqlab.view.figures`, and writes
the image at slide size beside a caption file holding the figure's words (`FigureWords.caption_text`),
and holds it to the checks a person makes by eye (`plot.legibility.figure_problems`: a legend that names
exactly the marks drawn, no text printed over text).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from matplotlib import rc_context

from . import figures
from ..store.backend import Backend, StoreSpec, connect
from ..core.errors import BadParameter, EmqlabError
from ..plot import Drawing
from ..plot.legibility import figure_problems
from ..scenarios.slow_link import latency_boundary

FORMATS = ("png", "svg")
SLIDE_INCHES = (16, 9)
SLIDE_DPI = 120  # 16 x 9 in at 120 dpi = 1920 x 1080 px


@dataclass(frozen=True)
class CourseFigure:
    name: str  # the file stem
    build: Callable[[Backend], Drawing]
    lit: str | None = None  # the mode drawn at full strength; None: every mode


def course_figures(only: Collection[str] | None = None) -> list[CourseFigure]:
    """Every figure the course draws, in the order of the course page; or those named in `only` (whose builds
    then make only the runs those figures draw: one library's figure waits for that library alone)."""
    heartbeat = lambda be: figures.heartbeat_figure(figures.heartbeat_modes(be))  # noqa: E731
    renewal = lambda be: figures.renewal_figure(figures.renewal_designs(be))  # noqa: E731
    stuck = lambda be: figures.stuck_figure(figures.stuck_modes(be))  # noqa: E731
    link = lambda be: figures.heartbeat_figure(figures.link_delay_modes(be))  # noqa: E731
    # the failover always runs on two real servers it starts itself, whatever the store: once per export
    failover = _once(lambda: figures.failover_figure(figures.failover_modes()))
    every = [
        CourseFigure("heartbeat", heartbeat),
        CourseFigure("heartbeat-no-renewal", heartbeat, lit="none"),
        CourseFigure("heartbeat-renew-half", heartbeat, lit="half"),
        CourseFigure("renewal-cost-k6", renewal),
        CourseFigure("renewal-cost-k6-per-job", renewal, lit="per-job"),
        CourseFigure("renewal-cost-k6-sweep", renewal, lit="sweep"),
        CourseFigure("renewal-scaling", figures.measured_scaling),
        CourseFigure("renewal-capacity", lambda be: figures.measured_capacity()),
        CourseFigure("reaper", lambda be: figures.reaper_figure(figures.applied_runs(be)["reaper"])),
        CourseFigure("fencing", lambda be: figures.fencing_figure(figures.applied_runs(be)["fencing"])),
        CourseFigure("stuck-job", stuck),
        CourseFigure("stuck-job-session-limit", stuck, lit="session+limit"),
        CourseFigure("slow-link", link, lit="10 s link"),
        CourseFigure("slow-link-boundary", lambda be: figures.latency_boundary_figure(latency_boundary(be))),
        CourseFigure("failover", failover),
        CourseFigure("failover-no-guard", failover, lit="none"),
        CourseFigure("failover-fence-wait", failover, lit="fence-wait"),
        *tools_figures(only),
    ]
    return every if only is None else [f for f in every if f.name in only]


def tools_figures(only: Collection[str] | None = None) -> list[CourseFigure]:
    """The libraries lessons' figures, one per library (its failure, its fix, emqlab's design facing the same story),
    when the `tools` extra is installed. The runs of every library whose figure is wanted (`only`, default all) start
    their own servers, side by side, once per export (with RQ, about RQ's minute); emqlab's own runs are made on
    the export's store."""
    from ..tools import all_runs, installed, libraries

    if not installed():
        return []
    name = "tools-{}".format
    wanted = [library for library in libraries() if only is None or name(library) in only]
    made: dict = {}

    def build(library: str) -> Callable[[Backend], Drawing]:
        def drawing(be: Backend) -> Drawing:
            if not made:
                made.update(all_runs(wanted))
            return figures.tools_figure(figures.tools_modes(library, be, runs=made[library]))

        return drawing

    return [CourseFigure(name(library), build(library)) for library in libraries()]


def _once(build: Callable[[], Drawing]) -> Callable[[Backend], Drawing]:
    """A figure whose runs are made once for all its exports (each export lights and fits it afresh)."""
    made: list[Drawing] = []

    def drawing(be: Backend) -> Drawing:
        if not made:
            made.append(build())
        return made[0]

    return drawing


def export_figure(drawing: Drawing, path: Path, fmt: str, lit: str | None = None) -> tuple[Path, Path]:
    """Write one figure at slide size, and its caption file beside it; a figure whose legend misses a mark
    (or names one it does not draw), or that prints text over text, is written, then refused in one line."""
    drawing.light(lit)
    drawing.fit(SLIDE_INCHES, SLIDE_DPI)
    fig = drawing.figure
    problems = figure_problems(fig)
    image = path.with_suffix(f".{fmt}")
    # a fixed salt and no date: the same run gives the same SVG bytes, so slide decks diff cleanly
    with rc_context({"svg.hashsalt": "emqlab"}):
        fig.savefig(image, format=fmt, dpi=SLIDE_DPI, metadata={"Date": None} if fmt == "svg" else None)
    caption = path.with_suffix(".txt")
    caption.write_text(drawing.words.caption_text(lit), encoding="utf-8")
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise FigureProblem(f"{image.name} was drawn with a fault a reader would see: {problems[0]}{more}")
    return image, caption


class FigureProblem(EmqlabError):
    """An exported figure failed the checks a person makes by eye (`plot.legibility.figure_problems`)."""


def export_all(out: str | Path, fmt: str = "png", backend: Backend | StoreSpec | str | None = None, *,
               progress: bool = True, only: list[str] | None = None) -> list[Path]:
    """Run and draw every course figure into folder `out`; returns the files written (image, caption, …).

    backend: a Backend, or a StoreSpec (fake, the default, valkey or a URL, with its clock), opened and
    closed here."""
    if fmt not in FORMATS:
        raise BadParameter(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BadParameter(f"--out {str(out)!r} is a file; give a folder to write the figures into")
    if only is not None:
        known = [f.name for f in course_figures()]
        unknown = sorted(set(only) - set(known))
        if unknown:
            raise BadParameter(f"no figure named {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = course_figures(only)
    out.mkdir(parents=True, exist_ok=True)

    from tqdm import tqdm

    owned = not isinstance(backend, Backend)
    be = connect(backend) if owned else backend
    written: list[Path] = []
    try:
        with tqdm(chosen, desc="figures", unit="fig", file=sys.stderr, disable=not progress) as bar:
            for figure in bar:
                bar.set_postfix_str(figure.name)
                written.extend(export_figure(figure.build(be), out / figure.name, fmt, figure.lit))
    finally:
        if owned:
            be.close()
    return written
