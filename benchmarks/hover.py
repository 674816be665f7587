"""How long pointing at a mode takes to light it, in the browser, with no kernel: the interactive
figures of lessons 01 and 04 (emqlab.view.interactive) in headless Chromium — on their pages as
`emqlab site` writes them, opened from file://, and in JupyterLab (the lessons run, the figures shown by the
explorer's widget).

    .venv/bin/python benchmarks/hover.py [--rounds 30] [--where site|lab|both]

For every mode of each figure, `rounds` times: the time from the pointer event to the frame that
shows the lit state (performance.now() at dispatch, then at the next requestAnimationFrame after the
classes changed). In the lab it also counts the messages the page sent the kernel while hovering
(there should be none: the lighting lives in the browser). Prints a table of medians and maxima and
writes it to benchmarks/results/hover.md. A benchmark, not a test: it measures, it asserts nothing.
For comparison, the kernel-side lighting this replaces took 334–351 ms median per hover (issue 20,
measured on main).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path


OUT = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent
MEASURE = """async ([name, rounds]) => {
  const fig = document.querySelector(`[data-figure='${name}']`);
  const lanes = [...fig.querySelectorAll('[data-lane]')];
  if (fig.emqlab) fig.emqlab.pin(null);  // a lesson may have pinned a mode: let go, as a click on the margin does
  const out = {};
  for (let r = 0; r < rounds; r++) for (const lane of lanes) {
    const t0 = performance.now();
    lane.dispatchEvent(new PointerEvent('pointerenter'));
    await new Promise(done => requestAnimationFrame(() => done()));
    if (fig.dataset.lit !== lane.dataset.lane) throw new Error(`pointing at ${lane.dataset.lane} lit ${fig.dataset.lit}`);
    (out[lane.dataset.lane] = out[lane.dataset.lane] || []).push(performance.now() - t0);
    fig.dispatchEvent(new PointerEvent('pointerleave'));
  }
  return out;
}"""


LESSONS = ("01", "04")


def rows_of(page, name: str, label: str, rounds: int, where: str) -> list[dict]:
    page.evaluate(MEASURE, [name, 3])  # warm: the first frames lay the page out
    return [{"where": where, "figure": label, "mode": mode, "n": len(ms), "median_ms": statistics.median(ms),
             "max_ms": max(ms)} for mode, ms in page.evaluate(MEASURE, [name, rounds]).items()]


def measure_lab(rounds: int) -> list[dict]:
    """Lessons 01 and 04 in a real JupyterLab (started as the browser tests start it), every cell run."""
    import secrets
    import shutil

    sys.path.insert(0, str(ROOT / "tests"))
    from support.browser import (CHROMIUM, CHROMIUM_ARGS, COUNT_SENT, NOTEBOOKS, Server, _server_argv, free_port,
                                 lesson, open_and_run)
    from playwright.sync_api import sync_playwright

    from emqlab.course.lab.launcher import lab_env

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        course = home / "course"
        shutil.copytree(NOTEBOOKS, course, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        port, token = free_port(), secrets.token_hex(16)
        server = Server(_server_argv("lab", port, token, home, course), port, token, home, "/api/status", env=lab_env())
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                try:
                    page = browser.new_page(viewport={"width": 1600, "height": 1000})
                    for prefix in LESSONS:
                        notebook = lesson(prefix)
                        open_and_run(page, server, notebook)
                        page.evaluate(COUNT_SENT, notebook)
                        for name in page.evaluate("() => [...document.querySelectorAll('[data-figure]')]"
                                                  ".map(f => f.dataset.figure)"):  # every figure the lesson shows
                            page.locator(f"[data-figure='{name}']").scroll_into_view_if_needed()
                            found = rows_of(page, name, f"{prefix} · {name}", rounds, "lab")
                            sent = len(page.evaluate("() => window.emqlabSent.slice()"))
                            rows += [{**r, "sent": sent} for r in found]
                finally:
                    browser.close()
        finally:
            server.stop()
    return rows


def measure(rounds: int) -> list[dict]:
    """Lessons 01 and 04 as `emqlab site` writes them (from the saved lessons), opened from file://."""
    sys.path.insert(0, str(ROOT / "tests"))
    from support.browser import CHROMIUM, CHROMIUM_ARGS, lesson  # Debian's chromium, as the browser tests drive it
    from playwright.sync_api import sync_playwright

    from emqlab.course.site import build

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        build(tmp)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                for prefix in LESSONS:
                    page.goto((Path(tmp) / lesson(prefix).replace(".ipynb", ".html")).as_uri())
                    for name in page.evaluate("() => [...document.querySelectorAll('[data-figure]')]"
                                              ".map(f => f.dataset.figure)"):
                        page.locator(f"[data-figure='{name}']").scroll_into_view_if_needed()
                        rows += rows_of(page, name, f"{prefix} · {name}", rounds, "site (file://)")
            finally:
                browser.close()
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| where | figure | mode | hovers | median ms to the lit frame | max ms | messages to the kernel |",
             "|---|---|---|---:|---:|---:|---:|"]
    lines += [f"| {r['where']} | {r['figure']} | {r['mode']} | {r['n']} | {r['median_ms']:.1f} | {r['max_ms']:.1f} | "
              f"{r.get('sent', 'no kernel')} |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--where", choices=["site", "lab", "both"], default="both")
    args = parser.parse_args()
    rows = measure(args.rounds) if args.where in ("site", "both") else []
    rows += measure_lab(args.rounds) if args.where in ("lab", "both") else []
    out = table(rows)
    print(out)
    OUT.mkdir(exist_ok=True)
    (OUT / "hover.md").write_text("# Hover to lit, in the browser\n\n" + out + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
