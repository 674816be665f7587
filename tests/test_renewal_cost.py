"""The renewal plane: K per-job timers against one sweep, counted exactly on both stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from emqlab.backend import connect
from emqlab.commandstats import ServerCounter, slow_calls
from emqlab.errors import BadParameter, LeaseLost
from emqlab.lease import Leases, new_token
from emqlab.renewal_plane import DEFAULT_BATCH, MAX_CALL_MS, PerJobTimers, make_plane
from emqlab.scenarios.renewal_cost import renewal_cost

EMQLAB = str(Path(sys.executable).with_name("emqlab"))


def _at(backend, t: float, expected: float) -> bool:
    """Exactly on the virtual clock; on a real clock events carry when they really happened, so
    allow a late wake-up (7.5 model s = 75 ms real at scale 0.01) on a loaded machine."""
    if not backend.clock.real:
        return t == expected
    return expected <= t < expected + 7.5


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([EMQLAB, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


# -- counts, exactly, on fakeredis and on live Valkey -------------------------------------------
@pytest.mark.parametrize("design, per_tick", [("per-job", 6), ("sweep", 1)])
def test_round_trips_per_tick_for_six_jobs(backend, design, per_tick):
    t = renewal_cost(jobs=6, design=design, ticks=4, backend=backend)
    c = t.counts
    assert (c["design"], c["jobs"], c["ticks"]) == (design, 6, 4)
    assert c["round_trips_per_tick"] == per_tick
    assert c["commands_per_tick"] == per_tick  # one script call per lease, or one sweep batch
    assert c["all_held"] is True and c["lost"] == [] and c["held_at_end"] == 6
    trips = t.of("round_trip", design)
    assert len(trips) == 4 * per_tick
    # every tick's round trips happen at that tick's model time: 15 s, 30 s, 45 s, 60 s
    assert sorted({e.data["tick"] for e in trips}) == [1, 2, 3, 4]
    assert all(_at(backend, e.t, 15.0 * e.data["tick"]) for e in trips), [e.t for e in trips]
    assert [e.data["round_trips"] for e in t.of("tick")] == [per_tick] * 4
    if design == "per-job":
        assert sorted(e.data["job"] for e in trips if e.data["tick"] == 1) == [1, 2, 3, 4, 5, 6]
    else:
        assert all(e.data["leases"] == 6 for e in trips)
    assert t.verdict["summary"] and t.verdict["static"]
    if backend.live:  # the server's own count agrees with the client's
        assert c["server_calls_per_tick"] == per_tick
        assert c["server_us_per_tick"] > 0
        stats = c["server_commandstats"]
        assert stats["evalsha"]["calls"] == 4 * per_tick
        assert stats["get"]["calls"] == stats["pexpire"]["calls"] == 4 * 6  # every lease, every tick
    else:
        assert c["server_us_per_tick"] is None


def test_sweep_sends_bounded_batches_in_one_round_trip(backend):
    t = renewal_cost(jobs=25, design="sweep", ticks=2, batch=10, backend=backend)
    c = t.counts
    assert c["round_trips_per_tick"] == 1
    assert c["commands_per_tick"] == 3  # 10 + 10 + 5 leases
    assert c["batch"] == 10 and c["all_held"] is True
    if backend.live:
        assert c["server_calls_per_tick"] == 3


def test_default_batch_and_per_job_rejects_a_bad_batch(fake):
    assert make_plane("sweep", fake, 30_000, 15_000).batch == DEFAULT_BATCH
    assert isinstance(make_plane("per-job", fake, 30_000, 15_000), PerJobTimers)
    with pytest.raises(BadParameter, match="batch"):
        make_plane("per-job", fake, 30_000, 15_000, batch=0)


# -- a lease lost between ticks ------------------------------------------------------------------
@pytest.mark.parametrize("design, trips", [("per-job", 6 + 6 + 5 + 5), ("sweep", 4)])
def test_lost_lease_reported_by_next_renewal_and_others_stay_held(backend, design, trips):
    t = renewal_cost(jobs=6, design=design, ticks=4, steal=(20, 3), backend=backend)
    c = t.counts
    assert c["lost"] == [3] and c["all_held"] is False
    assert c["held_at_end"] == 5  # every other lease still holds its token
    [take] = t.of("take", "thief")
    assert take.data["job"] == 3 and _at(backend, take.t, 20.0)
    # the next tick after the theft (30 s) says so, and the holder stops in the same instant
    [lost] = t.of("lease_lost", "job 3")
    [stopped] = t.of("work_stopped", "job 3")
    assert _at(backend, lost.t, 30.0) and stopped.t == lost.t
    assert t.verdict["lost_at"] == {"job 3": lost.t}
    assert len(t.of("round_trip", design)) == trips  # the lost lease is renewed no more
    assert "job 3" in t.summary and "5 leases stayed held" in t.summary


@pytest.mark.parametrize("design", ["per-job", "sweep"])
def test_holder_waiting_on_lost_event_stops_at_once(fake, design):
    clock, leases = fake.clock, Leases(fake)
    keys = [fake.key("plane-test", "{w}", str(i)) for i in range(3)]
    tokens = [new_token() for _ in keys]
    try:
        for key, token in zip(keys, tokens):
            assert leases.acquire(key, 30_000, token) is not None
        told = []
        plane = make_plane(design, fake, 30_000, 15_000, ticks=3, on_lost=lambda h: told.append(h.index))
        holdings = plane.hold_all(zip(keys, tokens))
        stopped = {}

        def holder(h):
            result = yield clock.timeout(50_000) | h.lost
            if h.lost in result:
                stopped[h.index] = (clock.now_ms, result[h.lost])

        for h in holdings:
            clock.process(holder(h))

        def thief():
            yield clock.timeout(20_000)
            fake.client.set(keys[1], "someone-else", px=30_000)

        clock.process(thief())
        plane.start()
        clock.run()
        assert told == [1]
        assert list(stopped) == [1]
        at, error = stopped[1]
        assert at == 30_000
        assert isinstance(error, LeaseLost) and error.key == keys[1] and error.token == tokens[1]
        assert [fake.client.get(k) == tok for k, tok in zip(keys, tokens)] == [True, False, True]
        assert fake.client.pttl(keys[0]) == 25_000  # extended to 30 s at the last tick (45 s); now is 50 s
    finally:
        fake.client.delete(*keys)


def test_extend_leases_script_reports_lost_positions(backend):
    client = backend.client
    keys = [backend.key("script-test", "{w}", str(i)) for i in range(4)]
    try:
        client.set(keys[0], "a", px=5000)
        client.set(keys[1], "other", px=5000)
        client.set(keys[3], "d", px=5000)  # keys[2] does not exist
        reply = client.evalsha(backend.scripts.sha("extend_leases"), 4, *keys, 60_000, "a", "b", "c", "d")
        assert reply == [2, 3]
        assert client.pttl(keys[0]) > 5000 and client.pttl(keys[3]) > 5000
        assert client.pttl(keys[1]) <= 5000 and client.get(keys[1]) == "other"
        assert client.exists(keys[2]) == 0
    finally:
        client.delete(*keys)


# -- the command line ----------------------------------------------------------------------------
@pytest.mark.parametrize("design, per_tick", [("per-job", 6), ("sweep", 1)])
def test_cli_json_fake(design, per_tick):
    out = _cli("renewal-cost", "--jobs", "6", "--design", design, "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("design", "jobs", "ticks", "round_trips_per_tick", "commands_per_tick", "wall_ms_per_tick",
                "server_us_per_tick", "all_held"):
        assert key in data
    assert data["round_trips_per_tick"] == per_tick and data["jobs"] == 6 and data["design"] == design
    assert data["server_us_per_tick"] is None and data["all_held"] is True


@pytest.mark.live
@pytest.mark.parametrize("design, per_tick", [("per-job", 6), ("sweep", 1)])
def test_cli_json_live(valkey_url, design, per_tick):
    out = _cli("renewal-cost", "--jobs", "6", "--design", design, "--json", "--backend", valkey_url)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["round_trips_per_tick"] == per_tick and data["server_calls_per_tick"] == per_tick
    assert data["server_us_per_tick"] > 0 and data["all_held"] is True and data["clock"] == "real"


@pytest.mark.parametrize("args, says", [
    (["--jobs", "0"], "jobs must be a whole number >= 1"),
    (["--jobs", "-5"], "jobs must be a whole number >= 1"),
    (["--design", "sweep", "--batch", "0"], "batch must be a whole number >= 1"),
    (["--design", "per-job", "--batch", "-1"], "batch must be a whole number >= 1"),
    (["--cadence", "0"], "cadence must be a fraction of the lease > 0"),
    (["--cadence", "-0.5"], "cadence must be a fraction of the lease > 0"),
    (["--cadence", "none"], "needs a renewal cadence"),
    (["--ticks", "0"], "ticks must be a whole number >= 1"),
    (["--design", "timers"], "invalid choice"),
])
def test_cli_bad_input_is_one_line_exit_2(args, says):
    out = _cli("renewal-cost", *args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("emqlab: error: ") and says in lines[0]
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_bad_input_from_python(fake):
    for kw in ({"jobs": 0}, {"jobs": 2.5}, {"batch": 0}, {"cadence": 0}, {"ticks": 0}, {"lease": 0},
               {"design": "timers"}, {"steal": "5:9"}):
        with pytest.raises(BadParameter):
            renewal_cost(backend=fake, **kw)
    assert fake.keys() == []  # refused before anything was written


# -- K = 100 000 on live Valkey ------------------------------------------------------------------
@pytest.mark.live
@pytest.mark.slow
def test_sweep_of_100k_leases_is_one_round_trip_and_no_call_over_5ms(valkey_url):
    # scale 0.1: a 30 s lease lasts 3 real seconds and a tick comes every 1.5 s, room for 100 000
    be = connect(valkey_url, clock="real", scale=0.1)
    try:
        # this session started the server, so its slow log is ours to set
        with slow_calls(be.client, int(MAX_CALL_MS * 1000)) as slow:
            t = renewal_cost(jobs=100_000, design="sweep", ticks=3, backend=be)
        c = t.counts
        assert c["round_trips_per_tick"] == 1
        assert c["commands_per_tick"] == 100_000 // DEFAULT_BATCH
        assert c["server_calls_per_tick"] == c["commands_per_tick"]
        assert c["all_held"] is True and c["held_at_end"] == 100_000
        assert [e for e in slow if e["command"] == "evalsha"] == []
        assert be.keys(be.prefix + "renewal_cost") == []  # the run cleaned up after itself
    finally:
        be.close()


@pytest.mark.live
def test_server_counter_agrees_with_client(live):
    server = ServerCounter(live.client).start()
    before = live.counter.snapshot()
    for _ in range(5):
        live.client.get(live.key("nothing-here"))
    after = live.counter.snapshot()
    server.stop()
    assert after[0] - before[0] == 5
    assert server.calls("get") == 5 and server.calls("info") == 0


# -- the figures ---------------------------------------------------------------------------------
def _gids(fig) -> list[str]:
    return [a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()]


def test_figure_two_follows_the_figure_protocol(fake):
    from emqlab.plot.renewal import draw_renewal_cost

    per_job = renewal_cost(jobs=6, design="per-job", backend=fake)
    sweep = renewal_cost(jobs=6, design="sweep", backend=fake)
    fig = draw_renewal_cost([per_job, sweep])
    assert list(fig.emqlab_modes) == ["per-job", "sweep"]
    for name, tl in (("per-job", per_job), ("sweep", sweep)):
        mode = fig.emqlab_modes[name]
        assert mode["readout"] == tl.summary and mode["verdict"] == tl.verdict["static"] and mode["label"]
    gids = _gids(fig)
    assert gids.count("lane:per-job") == 1 and gids.count("lane:sweep") == 1
    # one mark per recorded round trip: 6 per tick on the per-job lane, 1 on the sweep lane
    marks = {name: [line for ax in fig.axes for line in ax.get_lines()
                    if line.get_gid() == f"mode:{name}" and line.get_marker() == "|"] for name in ("per-job", "sweep")}
    assert (len(marks["per-job"]), len(marks["sweep"])) == (24, 4)
    assert "K = 6" in fig.emqlab_caption and fig.emqlab_readout.get_text() == fig.emqlab_default_readout
    fig.canvas.draw()  # it renders


def test_benchmark_figures_draw_from_rows():
    from emqlab.plot.renewal import draw_capacity, draw_scaling

    rows = [{"design": d, "k": k, "rt_per_tick": (k if d.endswith("per-job") else 1), "wall_ms_per_tick": 0.1 * k,
             "broke": "a tick took too long" if k == 1000 and d.endswith("per-job") else None}
            for d in ("emqlab per-job", "emqlab sweep") for k in (1, 10, 1000)]
    fig = draw_scaling(rows)
    assert all(ax.get_xscale() == "log" and ax.get_yscale() == "log" for ax in fig.axes)
    hollow = [line for ax in fig.axes for line in ax.get_lines() if line.get_markerfacecolor() == "white"]
    assert len(hollow) == 2  # the broken per-job point, on both panels
    caps = [{"design": "emqlab sweep", "points": {1000: 0.01, 2000: 16.0}, "capacity_k": 1000, "first_over": 2000}]
    fig = draw_capacity(caps, cadence_s=15.0)
    fig.canvas.draw()
    assert fig.axes[0].get_xscale() == "log"
