"""Every course figure, exported for a slide deck: `emqlab figures --out DIR --format png|svg`.

Each export runs the real scenario on a backend (fakeredis on the virtual clock by default, so the
files come out the same every time), draws it with the figure's own plot function, and writes the
image at slide size beside a caption file holding the figure's caption and readout.

The list lives in FIGURES: a name, and a function that builds the Figure from a backend. The
same data builders feed the Voila dashboards (`emqlab.present`), so a projected figure and an
exported one come from the same runs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib import rc_context
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

from .backend import Backend, connect
from .clock import DEFAULT_SCALE
from .errors import BadParameter, EmqlabError
from .plot import style

FORMATS = ("png", "svg")
SLIDE_INCHES = (16, 9)
SLIDE_DPI = 120  # 16 x 9 in at 120 dpi = 1920 x 1080 px


# -- the data behind each figure (shared with the dashboards) --------------------------------------
def heartbeat_modes(backend: Backend, lease: float = 30, job: float = 75) -> dict[str, Any]:
    """Figure 1's two runs: no renewal, and renewal at TTL/2."""
    from .scenarios.heartbeat import heartbeat

    return {"none": heartbeat(lease=lease, job=job, renew="none", backend=backend),
            "half": heartbeat(lease=lease, job=job, renew="half", backend=backend)}


def renewal_designs(backend: Backend, jobs: int = 6, ticks: int = 4) -> dict[str, Any]:
    """Figure 2's two runs: K per-job timers and one sweep, for a worker holding `jobs` leases."""
    from .scenarios.renewal_cost import renewal_cost

    return {design: renewal_cost(jobs=jobs, design=design, ticks=ticks, backend=backend)
            for design in ("per-job", "sweep")}


SCALING_KS = (1, 6, 100, 1000)  # measured on the spot when the live benchmark's results are absent
CADENCE_S = 15.0  # a 30 s lease renewed at TTL/2


def applied_runs(backend: Backend) -> dict[str, Any]:
    """The reaper's crash recovery (lesson 05) and fencing off / on (lesson 06)."""
    from .scenarios.fencing import fencing
    from .scenarios.reaper import reaper

    return {"reaper": reaper(lease=30, beat=5, job=20, crash_at=10, backend=backend),
            "fencing": {"off": fencing(fencing="off", pause="5:40", backend=backend),
                        "on": fencing(fencing="on", pause="5:40", backend=backend)}}


# -- lighting one mode of a protocol figure, without any widget ------------------------------------
def light(fig: Figure, mode: str) -> Figure:
    """Draw `mode` at full strength and dim the others, as the explorer does on hover.

    Reads the figure protocol of `emqlab.plot`: artists with gid "mode:<name>", lane patches with
    gid "lane:<name>", `fig.emqlab_modes`, and (if the figure has one) `fig.emqlab_readout`."""
    modes = getattr(fig, "emqlab_modes", {})
    if mode not in modes:
        raise BadParameter(f"the figure has no mode {mode!r}; it has: {', '.join(modes) or 'none'}")
    for artist in fig.findobj():
        kind, _, name = (artist.get_gid() or "").partition(":")
        if kind == "mode" and name in modes and name != mode:
            base = artist.get_alpha()
            artist.set_alpha((1.0 if base is None else base) * style.DIM_ALPHA)
        elif kind == "lane" and name == mode:
            artist.set_linewidth(2.5)
    readout = getattr(fig, "emqlab_readout", None)
    if readout is not None:
        readout.set_text(modes[mode]["readout"])
    return fig


def caption_text(fig: Figure, lit: str | None = None) -> str:
    """The caption file: the figure's caption, its readout, and each mode's static verdict."""
    lines = [getattr(fig, "emqlab_caption", "").strip()]
    modes = getattr(fig, "emqlab_modes", {})
    if lit is not None:
        lines.append(f"readout · {modes[lit]['readout']}")
    else:
        readout = getattr(fig, "emqlab_default_readout", None) or getattr(fig, "emqlab_readout_text", None)
        if readout:
            lines.append(f"readout · {readout}")
    if modes:
        lines.append("static verdicts:")
        # some figures' verdicts already open with their label; do not say it twice
        lines.extend(f"- {m['verdict']}" if m["verdict"].startswith(m["label"]) else f"- {m['label']} → {m['verdict']}"
                     for m in modes.values())
        if lit is None:
            lines.extend(f"- readout for {m['label']}: {m['readout']}" for m in modes.values())
    extra = getattr(fig, "emqlab_readout_lines", None)
    if extra:
        lines.extend(extra)
    return "\n".join(line for line in lines if line) + "\n"


# -- the list ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CourseFigure:
    name: str  # the file stem
    build: Callable[[Backend], Figure]
    lit: str | None = None  # the mode drawn at full strength; None: every mode


def _heartbeat(backend: Backend) -> Figure:
    from .plot.heartbeat import draw_heartbeat

    return draw_heartbeat(heartbeat_modes(backend), labels=None)


def _renewal_cost(backend: Backend) -> Figure:
    from .plot.renewal import draw_renewal_cost

    return draw_renewal_cost(renewal_designs(backend))


def _measured_on(backend: Backend) -> str:
    where = {"fake": "fakeredis (in-process)", "valkey": "an embedded valkey-server"}.get(backend.kind, backend.describe())
    return f"measured on {where} by `emqlab figures`"


def _scaling(backend: Backend) -> Figure:
    from .lab import load_benchmark
    from .plot.renewal import draw_scaling
    from .scenarios.renewal_cost import renewal_scaling

    bench = load_benchmark()
    if bench:  # every design and K up to 100,000, side by side on live Valkey
        when = bench["meta"].get("when", "see benchmarks/results")
        rows, where = bench["rows"], f"measured on live Valkey by benchmarks/renewal_cost.py ({when})"
    else:
        rows, where = renewal_scaling(backend, SCALING_KS), _measured_on(backend)
    fig = draw_scaling(rows)
    fig.emqlab_readout_lines = [
        f"- {r['design']}, K = {r['k']:,}: " + (
            f"{r['rt_per_tick']:,} round trips per tick, {r['wall_ms_per_tick']:.3g} ms per tick, all held: {r['all_held']}"
            if r.get("wall_ms_per_tick") is not None else f"broke: {r.get('broke')}")
        for r in rows]
    ks = sorted({r["k"] for r in rows})
    fig.emqlab_caption = (f"Renewal cost against K = {', '.join(f'{k:,}' for k in ks)}: round trips and wall time "
                          f"per tick for each design, {where}.")
    return fig


def _capacity(backend: Backend) -> Figure:
    from .lab import BENCHMARK, load_benchmark
    from .plot.renewal import draw_capacity

    bench = load_benchmark()
    if not bench or not bench.get("capacity"):
        raise EmqlabError(f"the capacity figure draws the measured capacity search in {BENCHMARK}; "
                          "run `.venv/bin/python benchmarks/renewal_cost.py` to make it")
    caps = bench["capacity"]
    fig = draw_capacity(caps, cadence_s=CADENCE_S)
    fig.emqlab_caption = (f"Capacity on live Valkey, one connection: the largest K whose renewal tick still fits a "
                          f"{CADENCE_S:g} s cadence (30 s lease at TTL/2), found by measured ticks (doubling, then "
                          "bisection) in benchmarks/renewal_cost.py.")
    fig.emqlab_readout_lines = [f"- {c['design']}: keeps K = {c['capacity_k']:,} alive; K = {c['first_over']:,} "
                                "takes longer than the cadence" for c in caps if c.get("capacity_k")]
    return fig


def _reaper(backend: Backend) -> Figure:
    from .plot.applied import draw_reaper

    return draw_reaper(applied_runs(backend)["reaper"])


def _fencing(backend: Backend) -> Figure:
    from .plot.applied import draw_fencing

    return draw_fencing(applied_runs(backend)["fencing"])


def course_figures() -> list[CourseFigure]:
    """Every figure the course draws, in the order of the course page."""
    return [
        CourseFigure("fig1-heartbeat", _heartbeat),
        CourseFigure("fig1-heartbeat-no-renewal", _heartbeat, lit="none"),
        CourseFigure("fig1-heartbeat-renew-half", _heartbeat, lit="half"),
        CourseFigure("fig2-renewal-cost-k6", _renewal_cost),
        CourseFigure("fig2-renewal-cost-k6-per-job", _renewal_cost, lit="per-job"),
        CourseFigure("fig2-renewal-cost-k6-sweep", _renewal_cost, lit="sweep"),
        CourseFigure("fig3-renewal-scaling", _scaling),
        CourseFigure("fig4-renewal-capacity", _capacity),
        CourseFigure("fig5-reaper", _reaper),
        CourseFigure("fig6-fencing", _fencing),
    ]


def export_figure(fig: Figure, path: Path, fmt: str, lit: str | None = None) -> tuple[Path, Path]:
    """Write one figure at slide size, and its caption file beside it."""
    if lit is not None:
        light(fig, lit)
    fig.set_size_inches(*SLIDE_INCHES)
    engine = fig.get_layout_engine()
    if fig.texts and isinstance(engine, ConstrainedLayoutEngine):
        # a figure-level line at the foot (readout, note) wraps at slide width; keep the axes clear of it
        engine.set(rect=(0, 0.075, 1, 0.925))  # left, bottom, width, height
    image = path.with_suffix(f".{fmt}")
    # a fixed salt and no date: the same run gives the same SVG bytes, so slide decks diff cleanly
    with rc_context({"svg.hashsalt": "emqlab"}):
        fig.savefig(image, format=fmt, dpi=SLIDE_DPI, metadata={"Date": None} if fmt == "svg" else None)
    caption = path.with_suffix(".txt")
    caption.write_text(caption_text(fig, lit), encoding="utf-8")
    return image, caption


def export_all(out: str | Path, fmt: str = "png", backend: Backend | str | None = None, *,
               clock: str | None = None, scale: float = DEFAULT_SCALE, progress: bool = True,
               only: list[str] | None = None) -> list[Path]:
    """Run and draw every course figure into folder `out`; returns the files written (image, caption, …).

    backend: a Backend, or fake (default) / valkey / a URL, opened and closed here."""
    if fmt not in FORMATS:
        raise BadParameter(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BadParameter(f"--out {str(out)!r} is a file; give a folder to write the figures into")
    figures = course_figures()
    if only is not None:
        unknown = sorted(set(only) - {f.name for f in figures})
        if unknown:
            raise BadParameter(f"no figure named {', '.join(unknown)}; known: {', '.join(f.name for f in figures)}")
        figures = [f for f in figures if f.name in only]
    out.mkdir(parents=True, exist_ok=True)

    from tqdm import tqdm

    owned = not isinstance(backend, Backend)
    be = connect(backend, clock=clock, scale=scale) if owned else backend
    written: list[Path] = []
    try:
        with tqdm(figures, desc="figures", unit="fig", file=sys.stderr, disable=not progress) as bar:
            for figure in bar:
                bar.set_postfix_str(figure.name)
                fig = figure.build(be)
                written.extend(export_figure(fig, out / figure.name, fmt, figure.lit))
    finally:
        if owned:
            be.close()
    return written
