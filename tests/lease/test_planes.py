"""The session design: one lease on the worker, one renewal per tick whatever K is; lose the session
and every job goes with it. Exact on fakeredis (virtual clock), with margins on live Valkey."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from emqlab.store.backend import connect
from emqlab.core.errors import BadParameter, LeaseLost
from emqlab.core.marks import series
from emqlab.lease.designs import DESIGNS, make_plane
from emqlab.lease.planes import PerJobTimers, Session, Sweep
from emqlab.scenarios.renewal_cost import CostVerdict, renewal_cost, static_verdict, words
from realtime import timeout_s
from support.records import record, stop_when_lost
from emqlab.core.words import seconds

EMQLAB = str(Path(sys.executable).with_name("emqlab"))


def _cli(*args: str) -> dict:
    out = subprocess.run([EMQLAB, "renewal-cost", *args, "--json"], capture_output=True, text=True,
                         timeout=timeout_s(180), env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


# -- registered like the other designs ----------------------------------------------------------------
def test_session_is_registered_and_made_by_make_plane(fake):
    d = DESIGNS["session"]
    assert (d.name, d.label, d.plane) == ("session", "one session", Session)
    # a look of its own in the benchmark's figures: the mark table's series, not the registry's
    assert len({series(f"emqlab {name}") for name in DESIGNS}) == len(DESIGNS)
    plane = make_plane("session", fake, 30_000, 15_000, worker="w9", session=fake.key("{q}", "worker", "w9"))
    assert isinstance(plane, Session) and plane.worker == "w9" and plane.session_key == fake.key("{q}", "worker", "w9")
    # the other designs ignore the session's own keywords; session refuses a bad batch like per-job does
    assert type(make_plane("sweep", fake, 30_000, 15_000, worker="w9", session="x")) is Sweep
    assert type(make_plane("per-job", fake, 30_000, 15_000, worker="w9")) is PerJobTimers
    with pytest.raises(BadParameter, match="batch"):
        make_plane("session", fake, 30_000, 15_000, batch=0)
    assert Session.round_trips_per_tick(0) == 0
    assert all(Session.round_trips_per_tick(k) == 1 for k in (1, 6, 1000, 1_000_000))
    assert static_verdict("session", 100_000) == static_verdict("session", 6)  # the same whatever K is


# -- one round trip per tick, whatever K is ---------------------------------------------------------
@pytest.mark.parametrize("k", [1, 6, 1000, 20_000])
def test_one_renewal_per_tick_whatever_k_fake(fake, k):
    t = renewal_cost(jobs=k, design="session", ticks=3, backend=fake)
    c, v = t.counts, t.verdict
    assert (c["round_trips_per_tick"], c["commands_per_tick"], c["all_held"]) == (1, 1, True)
    assert c["held_at_end"] == k and c["lost"] == []
    assert [e.t for e in t.of("round_trip", "session")] == [15.0, 30.0, 45.0]  # exact on the virtual clock
    assert all(e.data["leases"] == k for e in t.of("round_trip", "session"))
    assert v.round_trips_by_tick == v.calls_by_tick == [1, 1, 1]
    assert t.text == (f"one session: K = {k} {'lease' if k == 1 else 'leases'} held by one worker paid 1 round trip "
                         "per tick over 3 ticks.\n· 1 script call per tick on the worker's session, none on a job\n"
                         f"· the median tick took {v.wall_ms_per_tick:g} ms of wall time\n· every lease was held to the end")
    assert fake.keys() == []  # the run's keys are gone


def test_session_key_and_job_records_on_the_server(fake):
    """A job's key names its worker (no TTL of its own); the session holds the token, with the lease's TTL."""
    keys = [fake.key("rec", "{q}", "job", str(i)) for i in range(3)]
    plane = make_plane("session", fake, 30_000, 15_000, ticks=2, worker="w1")
    plane.hold_all((key, f"attempt-{i}") for i, key in enumerate(keys))
    try:
        assert plane.session_key == fake.key("rec", "{q}", "worker", "w1", "session")  # beside its jobs, same hashtag
        assert plane.acquire() == 30_000
        assert fake.client.mget(keys) == ["w1"] * 3 and [fake.client.pttl(k) for k in keys] == [-1] * 3
        assert fake.client.get(plane.session_key) == plane.token
        plane.start()
        fake.clock.run()
        assert fake.client.pttl(plane.session_key) == 30_000  # renewed at the last tick (30 s), now is 30 s
        assert plane.still_held() == plane.holdings
        fake.client.set(keys[1], "w2")  # a job re-recorded for another worker (a reaper's doing) is not held
        assert [h.index for h in plane.still_held()] == [0, 2]
    finally:
        fake.delete_prefix(fake.key("rec", ""))


# -- lose the session, lose every job -----------------------------------------------------------------
def test_session_taken_loses_every_job_at_the_next_renewal(backend_slow):
    # the steal at 20 s falls 5 model seconds after the first renewal and 10 before the second: at the slow
    # scale, half a real second either way (at 0.01, a loaded machine put the steal before the first renewal)
    backend = backend_slow
    t = renewal_cost(jobs=6, design="session", ticks=4, steal=(20, 3), backend=backend)
    c, v = t.counts, t.verdict
    assert c["lost"] == [1, 2, 3, 4, 5, 6] and c["held_at_end"] == 0 and c["all_held"] is False
    [take] = t.of("take", "thief")
    assert take.data["session"] is True and take.data["key"].endswith(":worker:worker-1:session")
    lost_at = set(v.lost_at.values())
    assert len(lost_at) == 1  # every job in the same instant
    at = lost_at.pop()
    assert at == 30.0 if not backend.clock.real else 30.0 <= at < 37.5
    assert v.stopped == [1, 2, 3, 4, 5, 6] and v.session_taken_at == take.t
    assert v.round_trips_by_tick == [1, 1, 0, 0]  # nothing left to renew after the session went
    assert t.text.endswith(f"\n· the renewal at {seconds(at)} found the worker's session re-owned and told the "
                              "holders of all 6 jobs at once, and each stopped")


def test_session_lapsed_loses_every_job_and_says_gone(fake):
    t = renewal_cost(jobs=4, design="session", ticks=3, cadence=1.2, backend=fake)  # renews after the lease ends
    v = t.verdict
    assert v.lost == [1, 2, 3, 4] and v.taken == {} and v.session_taken_at is None
    assert "found the worker's session gone and told the holders of all 4 jobs at once, and each stopped" in t.text


def test_holders_waiting_on_lost_events_all_stop_at_once(fake):
    keys = [fake.key("hold", "{w}", str(i)) for i in range(3)]
    told = []
    plane = make_plane("session", fake, 30_000, 15_000, ticks=3, on_lost=lambda h: told.append(h.index))
    holdings = plane.hold_all((k, "t") for k in keys)
    try:
        plane.acquire()
        stopped = stop_when_lost(fake, plane, holdings, plane.session_key)  # the session stolen
        assert told == [0, 1, 2] and sorted(stopped) == [0, 1, 2]
        assert {at for at, _ in stopped.values()} == {30_000}
        assert all(isinstance(err, LeaseLost) for _, err in stopped.values())
        assert len(plane.calls) == 2  # no renewal after the session was found gone
    finally:
        fake.delete_prefix(fake.key("hold", ""))


def test_words_for_one_job_and_many():
    v = record(CostVerdict, design="session", jobs=1, ticks=2, batch=None, round_trips_by_tick=[1, 0],
               calls_by_tick=[1, 0], wall_ms_per_tick=0.2, all_held=False, held_at_end=0, lost=[1],
               lost_at={"job 1": 15.0}, stopped=[1], taken={}, session_taken_at=None)
    one = words(None, v)
    assert one.text == ("one session: K = 1 lease held by one worker paid 1 round trip over 2 ticks (1, then 0).\n"
                        "· 1 script call in all on the worker's session, none on a job\n"
                        "· the median tick took 0.2 ms of wall time\n"
                        "· the renewal at 15 s found the worker's session gone and told the holders of its one job at "
                        "once, and each stopped")
    assert one.label == "one session" and one.static.startswith("one session extend each tick, whatever K is")


# -- the must-holds on live Valkey: the command line, K = 6, 1,000 and 100,000 ---------------------------
@pytest.mark.live
@pytest.mark.parametrize("k", [6, 1000, pytest.param(100_000, marks=pytest.mark.slow)])
def test_cli_session_one_call_per_tick_live(valkey_url, k):
    # at 0.05 the 30 s session lease is 1.5 real seconds, renewed with 0.75 s to spare (at the default 0.01,
    # 0.15 s: a loaded machine delayed a tick past it and the session lapsed)
    data = _cli("--design", "session", "--jobs", str(k), "--scale", "0.05", "--backend", valkey_url)
    assert (data["round_trips_per_tick"], data["server_calls_per_tick"], data["all_held"]) == (1, 1, True)
    assert data["commands_per_tick"] == 1 and data["held_at_end"] == k and data["clock"] == "real"
    stats = data["server_commandstats"]
    assert stats["evalsha"]["calls"] == 4 and stats["pexpire"]["calls"] == 4  # one key a tick, not K
    assert 0 < data["server_us_per_tick"]  # not an event count: the server's time per tick, µs


@pytest.mark.live
def test_session_server_time_does_not_grow_with_k_live(valkey_url):
    """The server's time per tick at K = 20,000 stays near K = 6's (one key either way); a margin for a
    loaded machine, where the benchmark quotes the exact figures."""
    be = connect(valkey_url, clock="real", scale=0.05)
    try:
        small, big = (renewal_cost(jobs=k, design="session", ticks=4, backend=be).counts for k in (6, 20_000))
        assert small["all_held"] and big["all_held"]
        assert big["server_us_per_tick"] < 5 * small["server_us_per_tick"] + 50
        assert big["server_commandstats"]["get"]["calls"] == 4  # the session only
    finally:
        be.close()
