"""The course as a reader without a kernel meets it: the saved lessons carry their outputs, every
figure as an image, and those outputs came from today's sources (`./run notebooks` saves them)."""

from __future__ import annotations

import re

import nbformat
import pytest

from emqlab.course import notebooks as course

LESSONS = course.lessons()
WIDGET = "application/vnd.jupyter.widget-view+json"


def is_figure(out) -> bool:
    """A live explorer or a static image; a prediction widget is words, not a figure."""
    data = out.get("data", {})
    prediction = "".join(data.get("text/plain", "")).startswith("Predict first.")
    return "image/png" in data or (WIDGET in data and not prediction)


def figure_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and any(is_figure(o) for o in c.outputs)]


def test_saved_outputs_come_from_todays_sources():
    assert course.stale() == [], "saved outputs are stale: run `./run notebooks` and commit the lessons"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_every_figure_is_saved_as_an_image(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.outputs:
            assert out.get("output_type") != "error", f"{path.name}: a saved cell raised:\n{cell.source}"
            if is_figure(out):
                assert out["data"].get("image/png"), f"{path.name}: a live figure without its image:\n{cell.source}"


@pytest.mark.slow
@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name[:2])
def test_nbconvert_html_shows_every_figure(path):
    from nbconvert import HTMLExporter

    nb = nbformat.read(path, as_version=4)
    body, _ = HTMLExporter().from_notebook_node(nb)
    images = len(re.findall(r"<img\b[^>]*src=\"data:image/png;base64,", body))
    assert images >= len(figure_cells(nb)), f"{path.name}: {images} images for {len(figure_cells(nb))} figures"
