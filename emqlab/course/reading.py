"""How long a saved lesson takes to read, by one formula the course map and its tests share.

Prose (markdown) at 180 words a minute; the text a cell saved under it (printed text, and each output's
plain form) at 250; six seconds a non-blank line of code; 45 seconds a saved image. The formula reads the
lesson as saved, as a reader without a kernel meets it; running the cells, and the exercises, come on top.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

PROSE_WPM = 180  # words a minute, markdown
OUTPUT_WPM = 250  # words a minute, saved text outputs
CODE_LINE_S = 6  # seconds a non-blank line of code
IMAGE_S = 45  # seconds a saved image
LESSON_MAX_MIN = 15  # the longest a lesson may read
CORE_MAX_MIN = 60  # the core path, lesson 00 not counted


@dataclass(frozen=True)
class Reading:
    """What one saved lesson holds to read, and the minutes the formula gives it."""

    prose_words: int
    output_words: int
    code_lines: int
    images: int

    @property
    def minutes(self) -> float:
        return (self.prose_words / PROSE_WPM + self.output_words / OUTPUT_WPM
                + (self.code_lines * CODE_LINE_S + self.images * IMAGE_S) / 60)


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def reading(path: Path) -> Reading:
    """Count a saved lesson's prose words, output words, code lines and images."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    prose = output = lines = images = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            prose += len(cell.source.split())
        elif cell.cell_type == "code":
            lines += sum(1 for line in cell.source.splitlines() if line.strip())
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                output += len(_text(out.get("text", "")).split()) + len(_text(data.get("text/plain", "")).split())
                images += "image/png" in data
    return Reading(prose, output, lines, images)


def minutes(path: Path) -> int:
    """A lesson's reading time, whole minutes rounded up: what the course map prints beside it."""
    return math.ceil(reading(path).minutes)
