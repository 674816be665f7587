"""What a slider change costs in the kernel, from the new value to the new figure handed to the
browser: lesson 03's explorer (five sliders over the heartbeat; `lab.cadence_modes`) on fakeredis's
virtual clock, exactly as the lesson builds it.

    .venv/bin/python benchmarks/slider.py [--changes 10] [--repeat 3]

Each change moves `pause_for` to another value. The whole path is timed as the widget runs it
(`slider.value = v`: re-run the scenario, redraw, write the interactive SVG and hand it to the
widget); then the same values are timed phase by phase: run, draw, SVG. Prints a table of medians
and maxima and writes it to benchmarks/results/slider.md. A benchmark, not a test: it asserts nothing.
For comparison, the ipympl explorer this replaces took 33–37 ms to run + 97–121 ms to rebuild +
281–359 ms to rasterise per change (issue 20, measured on main).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from emqlab.course import lab
from emqlab.view.figures import heartbeat_figure
from emqlab.view.interactive import interactive_html
from emqlab.view.widgets import ModeExplorer

OUT = Path(__file__).resolve().parent / "results"
SLIDERS = {"lease": (10, 60, 5, 30), "job": (15, 120, 5, 75), "cadence": (0.1, 1.5, 0.05, 0.5),
           "pause_at": (0, 60, 5, 20), "pause_for": (0, 60, 5, 40)}  # lesson 03's, as the lesson writes them


def ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000


def measure(changes: int, repeat: int) -> dict[str, list[float]]:
    lab.use("fake")
    explorer = ModeExplorer(heartbeat_figure, run=lab.cadence_modes, sliders=SLIDERS, stepper=True, ask_first=True)
    values = [v for v in range(0, 61, 5) if v != 40][:changes]
    out: dict[str, list[float]] = {"whole change": [], "run": [], "draw": [], "svg": [], "svg bytes": []}
    try:
        explorer.sliders["pause_for"].value = 0  # warm: the first Lua call and the first SVG cost extra
        for _ in range(repeat):
            for v in values:
                t0 = time.perf_counter()
                explorer.sliders["pause_for"].value = v
                out["whole change"].append(ms(t0))
                assert not explorer.failures, explorer.failures
                out["svg bytes"].append(len(explorer.figure.html.encode()))
                t0 = time.perf_counter()
                data = lab.cadence_modes(**explorer.values)
                out["run"].append(ms(t0))
                explorer.fig.clear()
                t0 = time.perf_counter()
                drawing = heartbeat_figure(data, fig=explorer.fig)
                out["draw"].append(ms(t0))
                t0 = time.perf_counter()
                interactive_html(drawing, "bench", stepper=True)
                out["svg"].append(ms(t0))
            explorer.sliders["pause_for"].value = 40
    finally:
        explorer.close()
        lab.close()
    return out


def table(out: dict[str, list[float]]) -> str:
    lines = ["| kernel side, per slider change | n | median | max |", "|---|---:|---:|---:|"]
    for name, xs in out.items():
        unit = "" if name == "svg bytes" else " ms"
        fmt = (lambda x: f"{x / 1000:.0f} kB") if name == "svg bytes" else (lambda x: f"{x:.1f}{unit}")
        lines.append(f"| {name} | {len(xs)} | {fmt(statistics.median(xs))} | {fmt(max(xs))} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    out = table(measure(args.changes, args.repeat))
    print(out)
    OUT.mkdir(exist_ok=True)
    (OUT / "slider.md").write_text("# A slider change, kernel side (lesson 03's explorer, fakeredis)\n\n" + out + "\n",
                                   encoding="utf-8")


if __name__ == "__main__":
    main()
