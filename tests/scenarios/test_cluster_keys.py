"""The cluster lesson's keys, held to the key builder (no cluster needed): the queue names ten fixed keys plus
one per job and one per session worker, the figure places seven of them, and the lesson names only keys the
queue has and claims no count of them but the figure's."""

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


def test_the_lesson_names_only_the_queues_keys_and_counts_only_what_the_figure_places(fake):
    nb = nbformat.read(LESSON, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    q = Queue(fake, "orders")
    placed = {k[len(q.base):] for k in _keys(q, "J").values()}
    named = set(re.findall(r"`([a-z_]+)`", text)) - {"emq", "emqlab", "q"}  # prefixes and the hashtag's name
    assert named and named <= FIXED, named - FIXED  # every key the lesson names in code is one the queue has
    assert f"writes {len(KEYS)} of the queue's keys" in text  # the count it gives is the figure's, of a larger whole
    assert len(FIXED) > len(KEYS) and not re.search(r"(?i)\b(seven|7) keys in all|queue has (seven|7) keys", text)
    assert {"pending", "active", "done"} <= named and placed - {"job:J"} <= FIXED
