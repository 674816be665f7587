"""Issue 21: emqlab's own design facing each library's story (emqlab.tools.counterpart), on fakeredis: what the lesson
draws beside each library's runs holds what the lesson says of it."""

from __future__ import annotations

import pytest

from emqlab.core.errors import BadParameter
from emqlab.store.backend import connect
from emqlab.tools import libraries
from emqlab.tools.counterpart import ours


@pytest.fixture(scope="module")
def fake():
    with connect("fake") as be:
        yield be


def test_every_library_has_its_counterpart():
    assert {lib.counterpart[0] for lib in libraries().values()} <= {"reaper", "fencing", "heartbeat"}


@pytest.mark.parametrize("library", ["celery", "rq"])
def test_a_worker_that_dies_is_found_within_a_lease_and_its_job_runs_again(fake, library):
    v = ours(library, fake).verdict
    assert v.reaped_at is not None and v.within_lease_plus_beat and v.lost == 0
    assert v.reclaim_attempts == 2 and v.stale_complete_refused


@pytest.mark.parametrize("library", ["bullmq", "python-redis-lock"])
def test_a_worker_stopped_past_its_lease_is_fenced_and_the_effect_lands_once(fake, library):
    v = ours(library, fake).verdict
    assert v.effects_applied == 1 and v.stale_write_refused and not v.duplicate_effect


def test_the_token_checked_extend_tells_the_holder_at_once(fake):
    v = ours("redis-lock", fake).verdict
    assert v.finished_once and v.renew_lost_at is not None


def test_an_unknown_library_is_refused(fake):
    with pytest.raises(BadParameter, match="no library named"):
        ours("sidekiq", fake)
