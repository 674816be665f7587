"""A notebook's seat in the instructor's class: `join` starts this notebook's worker on the class's
server (not on the notebook's store, which it never touches)."""

from __future__ import annotations


def join(address: str, name: str | None = None, **options):
    """Join the instructor's class as one worker: `address` is your line of the join file (keep it out
    of saved output). Returns a handle: `.lane()` your lane, `.stop()` leave (also when the kernel stops).
    options: lease_s, beat_s, work_s (real seconds)."""
    from ...classroom.learner import Joined

    return Joined(address, name, **options)
