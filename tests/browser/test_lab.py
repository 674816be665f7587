"""The widgets where learners see them: headless Chromium (Debian's package, which `./run test`
installs) drives a real JupyterLab and a real Voila through Playwright.

Lessons: open the lesson, run every cell, move the real pointer onto a mode's lane, and check
what the learner would see: the readout names that mode, its verdict is the bold one, and the other
modes' marks fade — with no message sent to the kernel (the lighting lives in the browser).
Dashboards: `emqlab present heartbeat`'s Voila page shows the same interactive figure in large
type, lights a mode under the pointer, and asks nothing of any other machine.

Screenshots land in test-artifacts/ (git-ignored; CI keeps them). The servers, the browser and the
page readers live in tests/support/browser.py.
"""

from __future__ import annotations

import pytest

from emqlab.lease.designs import DESIGNS, design_names

from support.browser import (ARTIFACTS, RENDER_TIMEOUT, UI_TIMEOUT, figure_with, hover_lights, lesson, lit_state,
                             open_and_run)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUN_SECONDS = 100  # about how long this file runs on a quiet 2-core machine: the suite starts the longest first


# -- the tests ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("prefix", "label"), [("01", "no renewal"), ("04", "one sweep")],
                         ids=["lease-lapses-no-renewal", "timer-or-sweep-one-sweep"])
def test_hover_lights_the_lane_in_jupyterlab(lab_server, page, prefix, label):
    ARTIFACTS.mkdir(exist_ok=True)
    notebook = lesson(prefix)
    open_and_run(page, lab_server, notebook)
    hover_lights(page, notebook, label, shot=f"lab-{prefix}", let_go=prefix != "01")


def test_the_lab_opens_on_lesson_00_with_no_news_prompt(lab_server, page):
    """`./run lab` prints (and opens) the server's default URL: it must land on lesson 00."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(lab_server.url("/"))
    page.wait_for_function("() => window.jupyterapp && [...window.jupyterapp.shell.widgets('main')]"
                           ".some(w => w.context && w.context.path === '00-start-here.ipynb')")
    current = page.evaluate("() => window.jupyterapp.shell.currentWidget.context.path")
    assert current == "00-start-here.ipynb"
    page.wait_for_timeout(3000)  # the news prompt, when on, shows within a second or two of start
    page.screenshot(path=str(ARTIFACTS / "lab-start.png"))
    assert page.get_by_text("official Jupyter news").count() == 0


def test_heartbeat_dashboard_renders_offline(voila_server, page):
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    server = voila_server("heartbeat")
    leaked: list[str] = []

    def only_loopback(route):
        if route.request.url.startswith(f"http://127.0.0.1:{server.port}/"):
            route.continue_()
        else:  # a classroom may have no network: nothing may come from elsewhere
            leaked.append(route.request.url)
            route.abort()

    page.set_viewport_size({"width": 1600, "height": 1500})  # the whole slide, readout included
    page.route("**/*", only_loopback)
    page.goto(server.url("/"), timeout=RENDER_TIMEOUT)
    figure, modes = figure_with(page, "no renewal")
    assert list(modes.values()) == ["no renewal", "renew at TTL/2"]
    expect(figure.locator("[data-lane]")).to_have_count(2)
    expect(figure.get_by_text("lease ends at 30 s and lapses")).to_be_visible()
    expect(figure.get_by_text("pushed out every 15 s")).to_be_visible()
    # Voila strips the code: no source cell reaches the room
    assert page.locator(".jp-CodeCell .jp-InputArea, .cm-editor").count() == 0
    box = figure.locator("svg").first.bounding_box()
    assert box["width"] >= 1000, f"a slide figure should be wide; got {box}"
    # large type: the readout is set at 20 px or more
    size = figure.locator("[data-readout]").evaluate("el => parseFloat(getComputedStyle(el).fontSize)")
    assert size >= 20, size
    figure.locator("[data-lane='none']").hover(position={"x": 3, "y": 3})
    expect(figure).to_have_attribute("data-lit", "none", timeout=UI_TIMEOUT)
    assert lit_state(figure)["readout"].startswith("no renewal")
    page.screenshot(path=str(ARTIFACTS / "voila-heartbeat.png"), full_page=True)
    assert not leaked, f"the dashboard reached off the machine: {leaked}"


@pytest.mark.parametrize(("name", "labels"), [
    ("renewal", None), ("fencing", ["no fencing", "fenced by attempts"]),
    pytest.param("failover", ["no guard", "WAIT after the acquire", "fencing token", "fencing token confirmed by WAIT"],
                 marks=pytest.mark.live)])
def test_other_dashboards_render(voila_server, page, name, labels):
    from playwright.sync_api import expect

    ARTIFACTS.mkdir(exist_ok=True)
    server = voila_server(name)
    page.set_viewport_size({"width": 1600, "height": 1500})
    page.goto(server.url("/"), timeout=RENDER_TIMEOUT)
    labels = labels or [DESIGNS[d].label for d in design_names(renewing=True)]  # every renewing design
    figure, modes = figure_with(page, labels[0])
    assert list(modes.values()) == labels
    expect(figure.locator("[data-lane]")).to_have_count(len(labels))
    last = list(modes)[-1]
    figure.locator(f"[data-lane='{last}']").hover(position={"x": 3, "y": 3})
    expect(figure).to_have_attribute("data-lit", last, timeout=UI_TIMEOUT)
    page.screenshot(path=str(ARTIFACTS / f"voila-{name}.png"))
