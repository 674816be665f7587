"""A figure that lights its modes in the browser, with no kernel: matplotlib's SVG of a `Drawing`,
each mode's artists tagged with its key, its words beside it, and one small script.

`interactive_html(drawing, name)` returns an HTML fragment that keeps the page contract of
`static/light.js`: the figure is an element with `data-figure`, each mode's lane an element with
`data-lane` (hovered, focused with Tab or the arrow keys, clicked to pin), every drawn element of a
mode carries `data-mode`, and the readout is the element with `data-readout`. The words are the
scenario's own (`FigureWords`), never composed here; with JavaScript off the caption and every mode's
readout stay on the page as text. `interactive_page(fragments, title)` wraps fragments in a page
that needs nothing from the network.
"""

from __future__ import annotations

import html
import io
import json
import re
from importlib.resources import files

from matplotlib import rc_context
from matplotlib.layout_engine import ConstrainedLayoutEngine

from ..plot import Drawing

STYLE = """
.emqlab-figure { margin: 1em 0; max-width: 100%; }
.emqlab-figure svg { width: 100%; height: auto; display: block; }
.emqlab-figure [data-mode] { transition: none; }
.emqlab-figure .emq-dim { opacity: 0.18; }
.emqlab-figure [data-lane] { cursor: pointer; outline: none; }
.emqlab-figure [data-lane].emq-lit path { fill: #E8F1FA !important; }
.emqlab-figure [data-lane]:focus-visible path { stroke: #0072B2; stroke-width: 2; }
.emqlab-figure [data-readout] { font-size: 1.05em; min-height: 3em; }
.emqlab-figure [data-readout] ul { margin: 0.2em 0; }
.emqlab-figure .emqlab-text { font-size: 0.9em; color: #333; }
"""


def light_script() -> str:
    """The one script every interactive figure uses (emqlab/view/static/light.js)."""
    return files("emqlab.view").joinpath("static/light.js").read_text(encoding="utf-8")


def _svg(drawing: Drawing) -> str:
    """The figure as SVG, every mode shown at full strength and the readout line left to the page."""
    drawing.light(None)
    shown = drawing.readout is not None and drawing.readout.get_visible()
    engine = drawing.figure.get_layout_engine()
    rect = engine.get().get("rect") if isinstance(engine, ConstrainedLayoutEngine) else None
    if drawing.readout is not None:
        drawing.readout.set_visible(False)
        if rect is not None:
            engine.set(rect=(0, 0, 1, 1))  # the room kept for the readout line: the page's readout is below
    try:
        buf = io.StringIO()
        with rc_context({"svg.hashsalt": "emqlab"}):  # the same run gives the same bytes
            drawing.figure.savefig(buf, format="svg", metadata={"Date": None})
    finally:
        if drawing.readout is not None:
            drawing.readout.set_visible(shown)
            if rect is not None:
                engine.set(rect=rect)
    svg = buf.getvalue()
    return svg[svg.index("<svg"):]


def _tagged(svg: str, labels: dict[str, str]) -> str:
    """Matplotlib writes a gid as an element id (`mode:KEY`, `lane:KEY`, repeated); the contract's
    attributes instead. A lane is focusable and says which mode it lights."""
    def lane(match: re.Match) -> str:
        key = html.unescape(match.group(1))
        label = html.escape(labels.get(key, key), quote=True)
        return (f'<g data-lane="{html.escape(key, quote=True)}" tabindex="0" role="button" aria-pressed="false" '
                f'aria-label="light {label}"')

    svg = re.sub(r'<g id="lane:([^"]*)"', lane, svg)
    return re.sub(r'<g id="mode:([^"]*)"', r'<g data-mode="\1"', svg)


def interactive_html(drawing: Drawing, name: str) -> str:
    """One figure as an HTML fragment that lights its modes in the browser (see the module's contract)."""
    words = drawing.words
    modes = {key: {"label": m.label, "html": f"<b>{html.escape(m.label)}</b> — {m.html()}", "verdict": m.verdict}
             for key, m in words.modes.items()}
    svg = _tagged(_svg(drawing), {key: m.label for key, m in words.modes.items()})
    text = "".join(f"<li><b>{html.escape(m.label)}</b> → {html.escape(m.verdict)}<br>{m.html()}</li>"
                   for m in words.modes.values())
    data = json.dumps(modes, ensure_ascii=False).replace("</", "<\\/")
    return (f'<figure class="emqlab-figure" data-figure="{html.escape(name, quote=True)}">{svg}'
            f'<div data-readout aria-live="polite">{html.escape(words.prompt or words.caption)}</div>'
            f'<figcaption class="emqlab-text">{html.escape(words.caption)}<ul>{text}</ul></figcaption>'
            f'<script type="application/json" data-modes>{data}</script></figure>')


def interactive_page(fragments: list[str], title: str) -> str:
    """A page holding interactive figures: their style and the script inline, nothing fetched."""
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
            + "".join(fragments) + f"<script>{light_script()}</script></body></html>")
