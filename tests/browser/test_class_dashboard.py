"""Issue 14, must hold: the instructor's dashboard in a real browser. `emqlab class serve` serves it
(Voila, the instructor's address in its environment only); 6 learner processes join; the page shows
6 lanes; crashing one from the dashboard's control shows its job reaped and completed by another.
After Ctrl-C on serve, the dashboard is gone with the class."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from realtime import timeout_s
from support.browser import ARTIFACTS, RENDER_TIMEOUT, VOILA_READY, free_port
from support.processes import cmdlines

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow]
CLI = [sys.executable, "-m", "emqlab.cli", "class"]
NAMES = ["ada", "bob", "cy", "dee", "eve", "fay"]
START_TIMEOUT = timeout_s(90)
def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


@pytest.fixture
def classroom(tmp_path):
    """A class of 6 served with its dashboard on a free port, 6 `class join` processes in it."""
    join, port = str(tmp_path / "join"), free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("EMQLAB_BACKEND", "EMQLAB_URL", "EMQLAB_CLASS_URL")}
    env.update(JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               IPYTHONDIR=str(tmp_path / "ipython"), JUPYTER_PLATFORM_DIRS="1")
    serve = subprocess.Popen([*CLI, "serve", "--learners", "6", "--join-file", join, "--dashboard-port", str(port)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                             start_new_session=True)
    joiners: list[subprocess.Popen] = []
    try:
        assert "Ctrl-C ends the class" in serve.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in serve.stdout.readline()
        joiners = [subprocess.Popen([*CLI, "join", join, "--line", str(i + 1), "--name", name, "--work", "0.4"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                   for i, name in enumerate(NAMES)]
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + START_TIMEOUT
        while not answers(url.rstrip("/") + VOILA_READY):  # up, with no kernel started by asking
            assert serve.poll() is None, serve.communicate()
            assert time.monotonic() < deadline, "the dashboard did not answer"
            time.sleep(0.3)
        yield serve, joiners, url, port
    finally:
        if serve.poll() is None:
            serve.send_signal(signal.SIGINT)
            try:
                serve.communicate(timeout=timeout_s(60))
            except subprocess.TimeoutExpired:
                os.killpg(serve.pid, signal.SIGKILL)
                serve.communicate()
        for p in joiners:
            if p.poll() is None:
                p.terminate()
            p.communicate(timeout=timeout_s(30))


def test_the_dashboard_shows_the_class_and_its_crash_control_works(classroom, page):
    from playwright.sync_api import expect

    serve, joiners, url, port = classroom
    ARTIFACTS.mkdir(exist_ok=True)
    page.set_viewport_size({"width": 1900, "height": 1500})
    page.goto(url, timeout=RENDER_TIMEOUT)  # Voila runs the board's cells before the page loads
    lanes = page.locator(".emqlab-class-lanes tr.emqlab-lane")
    expect(lanes).to_have_count(6, timeout=timeout_s(90_000))  # 6 learners joined: 6 lanes
    expect(page.locator(".emqlab-class-status")).to_contain_text("6 learners working", timeout=timeout_s(30_000))
    assert sorted(lanes.evaluate_all("rows => rows.map(r => r.dataset.name)")) == sorted(NAMES)
    figure = page.locator("[data-figure='class']")
    expect(figure).to_be_visible()
    expect(figure.locator("[data-lane]")).to_have_count(6, timeout=timeout_s(30_000))  # a lane per learner
    assert figure.locator("svg").first.bounding_box()["width"] >= 1500  # not an event count: pixels, a slide's width

    page.locator(".widget-text input, .widget-inline-hbox input[type=number]").first.fill("60")
    page.get_by_role("button", name="enqueue a burst").click()
    expect(page.locator(".emqlab-class-status")).to_contain_text("60 jobs enqueued", timeout=timeout_s(30_000))
    page.locator(".widget-dropdown select").select_option("bob")
    page.get_by_role("button", name="crash").click()
    expect(page.locator(".emqlab-class-said")).to_contain_text("ordered bob")

    bob = page.locator(".emqlab-class-lanes tr.emqlab-lane[data-name='bob']")
    expect(bob).to_have_attribute("data-state", "crashed", timeout=timeout_s(30_000))
    # its job, reaped and completed by a classmate: what the dashboard says of bob's lane
    expect(bob).to_contain_text("crashed holding", timeout=timeout_s(30_000))
    expect(bob).to_contain_text("reaped it", timeout=timeout_s(45_000))
    expect(bob).to_contain_text("completed it", timeout=timeout_s(45_000))
    story = bob.inner_text()
    reaper = story.split(": ", 1)[1].split(" reaped it")[0]
    assert reaper in NAMES and reaper != "bob", story
    status = page.locator(".emqlab-class-status")
    expect(status).to_contain_text("60 completed, 0 lost", timeout=timeout_s(45_000))
    expect(status).to_contain_text("invariants hold")
    assert "reaped" in lanes.filter(has_text=reaper).first.inner_text()
    # pointing at bob's lane in the figure says his story, lit in the browser
    slot = bob.get_attribute("data-slot")
    figure.locator(f"[data-lane='{slot}']").hover(position={"x": 3, "y": 3})
    expect(figure).to_have_attribute("data-lit", slot, timeout=timeout_s(30_000))
    expect(figure.locator("[data-readout]")).to_contain_text("reaped it")
    page.wait_for_timeout(1500)
    page.screenshot(path=str(ARTIFACTS / "voila-class.png"), full_page=True)
    assert joiners[1].wait(timeout=timeout_s(10)) == -signal.SIGKILL  # bob's worker really died

    serve.send_signal(signal.SIGINT)
    out, err = serve.communicate(timeout=timeout_s(60))
    assert "class ended" in err
    assert not answers(url)
    assert f"--port={port}" not in cmdlines()  # no Voila of the class is left
    for p in joiners[:1] + joiners[2:]:
        o, _ = p.communicate(timeout=timeout_s(30))
        assert p.returncode == 0 and "the class ended" in o
