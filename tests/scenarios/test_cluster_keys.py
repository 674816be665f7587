"""The cluster lesson's count of a queue's keys, held to the key builder (no cluster needed): the queue
names ten fixed keys plus one per job and one per session worker, and the figure places seven of them."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from emqlab.queue.jobs import Queue
from emqlab.scenarios.cluster import KEYS, _keys, figure_words

LESSON = Path(__file__).resolve().parents[2] / "notebooks" / "10-one-slot-per-queue.ipynb"
FIXED = {"pending", "active", "schedule", "wake", "done", "dead", "effects", "reaped", "sessions", "session_tokens"}


def _fixed_keys(q: Queue) -> set[str]:
    """Every key the queue object names up front: the attributes under its base (job and held keys are built per
    job and per worker)."""
    return {v[len(q.base):] for v in vars(q).values() if isinstance(v, str) and v.startswith(q.base) and v != q.base}


def test_the_queue_names_ten_fixed_keys_and_the_figure_places_seven_of_them(fake):
    q = Queue(fake, "orders")
    assert _fixed_keys(q) == FIXED
    assert q.job_key("J").startswith(q.base + "job:") and q.held_key("w").startswith(q.base + "held:")
    placed = _keys(q, "J")
    assert tuple(placed) == KEYS and len(KEYS) == 7
    assert {k[len(q.base):] for name, k in placed.items() if name != "job"} <= FIXED
    assert figure_words({}).caption.startswith("Seven of one queue's keys")


def test_the_lesson_lists_the_key_builders_keys():
    nb = nbformat.read(LESSON, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    listing = re.search(r"names ten keys\s+for each queue, (.+?), plus one `job:<id>`", text, re.S)
    assert listing, "lesson 10 no longer says how many keys the queue names"
    assert set(re.findall(r"`([a-z_]+)`", listing.group(1))) == FIXED
    assert "seven keys" not in text
