"""Shared fixtures. `backend` runs a test on fakeredis (virtual clock) and on a live valkey-server
that this test session starts itself (real clock, scale 0.01).

Every test that starts a Valkey carries the `live` mark: a test that reaches the session's server
through a fixture gets the mark here, and a test without it that starts one in this process fails."""

from __future__ import annotations

import os

import pytest

from emqlab.store.backend import connect
from emqlab.store.embedded import EmbeddedValkey
import realtime
from support.records import SLOW_SCALE

LIVE_SCALE = 0.01 * realtime.host().scale_factor  # 0.01 on the reference host; slower on a slower one (tests/realtime.py)


@pytest.fixture(scope="session")
def valkey_url():
    """One embedded valkey-server for the whole test session; stopped at the end."""
    with EmbeddedValkey() as server:
        yield server.url


def _both(request, scale: float):
    """The fake store, or the session's embedded Valkey on the real clock at `scale`; closed after."""
    if request.param == "fake":
        return connect("fake")
    return connect(request.getfixturevalue("valkey_url"), clock="real", scale=scale)


BOTH = ["fake", pytest.param("live", marks=pytest.mark.live)]


@pytest.fixture(params=BOTH)
def backend(request):
    """The same test on both stores. Live: the session's embedded Valkey, real clock."""
    be = _both(request, LIVE_SCALE)
    yield be
    be.close()


@pytest.fixture(params=BOTH)
def backend_slow(request):
    """Both stores, the live one at `support.records.SLOW_SCALE`: for a test whose claim is an order of things a
    few model seconds apart, which a loaded machine may swap at scale 0.01."""
    be = _both(request, SLOW_SCALE)
    yield be
    be.close()


@pytest.fixture
def fake():
    be = connect("fake")
    yield be
    be.close()


@pytest.fixture
def live(valkey_url):
    be = connect(valkey_url, clock="real", scale=LIVE_SCALE)
    yield be
    be.close()


@pytest.fixture
def slow_live(valkey_url):
    """The session's Valkey at `support.records.SLOW_SCALE`: for a real-time claim that needs a few model seconds
    of precision on a loaded machine (a 5 model s margin is 0.5 s of real time here)."""
    be = connect(valkey_url, clock="real", scale=SLOW_SCALE)
    yield be
    be.close()


LIVE_FIXTURES = {"valkey_url", "live", "slow_live"}


@pytest.hookimpl(tryfirst=True)  # before `-m` selects: `-m "not live"` must leave these out
def pytest_collection_modifyitems(config, items):
    for item in items:
        if LIVE_FIXTURES & set(getattr(item, "fixturenames", ())) and not item.get_closest_marker("live"):
            item.add_marker(pytest.mark.live)
    # the rule for real-clock assertions (tests/realtime.py): a lower bound on real-time events needs its premise;
    # a test that breaks it fails before it runs, naming the line
    for item, bounds in realtime.check_items(items).items():
        item.stash[UNSOUND] = bounds
    # each test's time limit (pytest-timeout; pyproject's 300 s, or its own mark) stretched on a slower host
    default = config.getini("timeout")
    for item in items:
        mark = item.get_closest_marker("timeout")
        limit = float(mark.args[0]) if mark and mark.args else float(default or 0)
        if limit and realtime.host().factor > 1:
            item.add_marker(pytest.mark.timeout(realtime.timeout_s(limit)), append=False)
    # what takes long starts first: side by side (xdist, a file per process), a file that starts last is
    # the whole run's tail. A file's weight: its RUN_SECONDS, or a lesson's `ran_s` (recorded when it was
    # saved); then the files with a slow test; then the rest, in the order they were collected
    seconds: dict = {}
    for item in items:
        seconds.setdefault(item.path, run_seconds(item))
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: (-seconds[item.path], item.path not in slow))


def run_seconds(item) -> float:
    """About how long `item`'s file takes on a quiet 2-core machine (seconds; 0 when it does not say)."""
    if item.path.suffix == ".ipynb":
        import json

        return json.loads(item.path.read_text()).get("metadata", {}).get("emqlab", {}).get("ran_s", 0)
    return getattr(getattr(item, "module", None), "RUN_SECONDS", 0)


def pytest_configure(config):
    # keep the order above: xdist would otherwise hand out the files with the most tests first
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


UNSOUND = pytest.StashKey[list]()


@pytest.fixture(autouse=True)
def _real_time_rule(request):
    """A test the collection-time check found breaking the rule for real-clock assertions fails before it runs."""
    bounds = request.node.stash.get(UNSOUND, None)
    if bounds:
        pytest.fail("a real-clock test bounds a count from below without asserting the premise that guarantees it "
                    "(the rule in tests/realtime.py):\n" + "\n".join(bounds), pytrace=False)


@pytest.fixture(autouse=True)
def _live_needs_the_mark(monkeypatch, request):
    """A test not marked `live` cannot start a valkey-server in this process."""
    if request.node.get_closest_marker("live") is None and "nbval" not in request.node.__class__.__module__:
        def refuse(self):
            pytest.fail(f"{request.node.nodeid} starts a valkey-server: mark it @pytest.mark.live")

        monkeypatch.setattr(EmbeddedValkey, "start", refuse)


@pytest.fixture(autouse=True)
def _no_backend_env(monkeypatch, request):
    """Tests choose their backend explicitly; the notebook run in CI sets EMQLAB_BACKEND for notebooks only."""
    if "nbval" not in request.node.__class__.__module__:
        monkeypatch.delenv("EMQLAB_BACKEND", raising=False)
        monkeypatch.delenv("EMQLAB_URL", raising=False)


def pytest_report_header(config):
    backend = os.environ.get("EMQLAB_BACKEND", "fake")
    where = "live Valkey (an embedded valkey-server)" if backend == "valkey" else backend
    return f"emqlab: EMQLAB_BACKEND={backend}: the notebooks run on {where}"
