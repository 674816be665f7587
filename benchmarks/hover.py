"""How long pointing at a mode takes to light it, in the browser, with no kernel: the interactive
figures of lessons 01 and 04 (emqlab.view.interactive) in headless Chromium, from file://.

    .venv/bin/python benchmarks/hover.py [--rounds 30]

For every mode of each figure, `rounds` times: the time from the pointer event to the frame that
shows the lit state (performance.now() at dispatch, then at the next requestAnimationFrame after the
classes changed). Prints a table of medians and maxima and writes it to benchmarks/results/hover.md.
A benchmark, not a test: it measures, it asserts nothing. For comparison, the kernel-side lighting
this replaces took 334–351 ms median per hover (issue 20, measured on main).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from emqlab import connect
from emqlab.view import figures
from emqlab.view.interactive import interactive_html, interactive_page

OUT = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent
MEASURE = """async ([name, rounds]) => {
  const fig = document.querySelector(`[data-figure='${name}']`);
  const lanes = [...fig.querySelectorAll('[data-lane]')];
  const out = {};
  for (let r = 0; r < rounds; r++) for (const lane of lanes) {
    const t0 = performance.now();
    lane.dispatchEvent(new PointerEvent('pointerenter'));
    await new Promise(done => requestAnimationFrame(() => done()));
    (out[lane.dataset.lane] = out[lane.dataset.lane] || []).push(performance.now() - t0);
    fig.dispatchEvent(new PointerEvent('pointerleave'));
  }
  return out;
}"""


def measure(rounds: int) -> list[dict]:
    sys.path.insert(0, str(ROOT / "tests"))
    from support import CHROMIUM, CHROMIUM_ARGS  # Debian's chromium, as the browser tests drive it
    from playwright.sync_api import sync_playwright

    be = connect("fake")
    drawings = {"01 · figure 1": figures.heartbeat_figure(figures.heartbeat_modes(be)),
                "04 · figure 2": figures.renewal_figure(figures.renewal_designs(be))}
    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "figures.html"
        page_path.write_text(interactive_page([interactive_html(d, n) for n, d in drawings.items()], "hover"),
                             encoding="utf-8")
        rows = []
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(page_path.as_uri())
                for name in drawings:
                    page.evaluate(MEASURE, [name, 3])  # warm: the first frames lay the page out
                    for mode, ms in page.evaluate(MEASURE, [name, rounds]).items():
                        rows.append({"figure": name, "mode": mode, "n": len(ms), "median_ms": statistics.median(ms),
                                     "max_ms": max(ms)})
            finally:
                browser.close()
    be.close()
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| figure | mode | hovers | median ms to the lit frame | max ms |", "|---|---|---:|---:|---:|"]
    lines += [f"| {r['figure']} | {r['mode']} | {r['n']} | {r['median_ms']:.1f} | {r['max_ms']:.1f} |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    out = table(measure(args.rounds))
    print(out)
    OUT.mkdir(exist_ok=True)
    (OUT / "hover.md").write_text("# Hover to lit, in the browser\n\n" + out + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
