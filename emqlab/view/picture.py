"""A figure as a saved cell holds it: a PNG, and the figure's words for whoever cannot see the PNG (the
site's alt text, a screen reader, a text export, a diff)."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass


@dataclass(frozen=True)
class Picture:
    """A PNG (base64) and its words: what a cell's output holds, as an image and as text."""

    png: str  # base64
    caption: str

    def _repr_mimebundle_(self, **kwargs):
        return {"image/png": self.png, "text/plain": self.caption}


def said(words) -> str:
    """A figure in words, for whoever cannot see it: its caption, then each run's verdict line."""
    return "\n".join([words.caption, *(m.verdict_line for m in words.modes.values())])


def picture(drawing, dpi: int = 80) -> Picture:
    """A static figure (a Drawing, or a matplotlib Figure) as a Picture: its caption and each run's verdict
    line as its words."""
    buf = io.BytesIO()
    getattr(drawing, "figure", drawing).savefig(buf, format="png", dpi=dpi)
    words = getattr(drawing, "words", None)
    return Picture(base64.b64encode(buf.getvalue()).decode("ascii"), said(words) if words else "a figure")
