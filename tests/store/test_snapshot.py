"""A state of the store kept and put back (`emqlab.store.snapshot`), the virtual clock put back with it
(`VirtualClock.rewind`), and a backend running a caller's own text for one script (`scripts=`): the three
things the explorer's search stands on."""

from __future__ import annotations

import pytest

from emqlab.core.errors import BadParameter
from emqlab.queue.jobs import Queue
from emqlab.store import snapshot
from emqlab.store.backend import connect
from emqlab.store.clock import RealClock


def test_a_store_written_back_reads_the_same_and_behaves_the_same(fake):
    q = Queue(fake, "orders", prefix=fake.run_prefix("snap"))
    q.enqueue("A", "pay")
    q.enqueue("B", "pay")
    [a] = q.claim(30_000)
    fake.client.set(q.base + "note", "x", px=90_000)
    kept, at = snapshot.read(fake.client, q.base), fake.clock.now_ms
    assert set(kept.entries) >= {q.pending, q.active, q.job_key("A"), q.base + "note"}
    assert kept.entries[q.job_key("A")] == snapshot.Entry("hash", (("attempts", "1"), ("payload", "pay"),
                                                                   ("state", "active"), ("worker", "")), -1)
    assert 0 < kept.entries[q.base + "note"].pttl <= 90_000

    fake.clock.run(until=at + 40_000)
    assert q.reap() == ["A"]
    q.claim(30_000, count=2)
    fake.clock.rewind(at)  # the clock first: a time to live is written back from its now
    snapshot.write(fake.client, kept.entries, snapshot.read(fake.client, q.base).entries)
    again = snapshot.read(fake.client, q.base)
    assert again.entries == kept.entries and again.server_ms == kept.server_ms
    fake.clock.run(until=at + 40_000)
    assert q.reap() == ["A"]  # the same lease, lapsing at the same time


def test_only_a_virtual_clock_rewinds():
    with pytest.raises(BadParameter, match="a real clock cannot be rewound"):
        RealClock(0.01).rewind(0)


def test_a_backend_runs_a_callers_text_for_one_script_and_the_packages_for_the_rest():
    model = '--- @include "includes/server_now"\nreturn {now, 0, "replaced"}\n'
    with connect("fake", scripts={"extend_active": model}) as be:
        q = Queue(be, "orders", prefix=be.run_prefix("override"))
        q.enqueue("A")
        [a] = q.claim(30_000)  # the package's claim
        assert q.extend([(a.id, a.attempts)], 30_000).lost == ("replaced",)
        assert be.scripts.overridden == ("extend_active",)
    with connect("fake") as be:  # another backend: the package's extend
        q = Queue(be, "orders", prefix=be.run_prefix("override"))
        q.enqueue("A")
        [a] = q.claim(30_000)
        assert q.extend([(a.id, a.attempts)], 30_000).lost == ()
