"""The browser tests' fixtures: JupyterLab and Voila servers started the way a user starts them, and
headless Chromium (Debian's, never a downloaded one)."""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import pytest

from support.browser import (ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, NOTEBOOKS, UI_TIMEOUT, VIEWPORT, VOILA_READY, Server,
                             _server_argv, _slug, free_port)


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """JupyterLab over a copy of the course (running a lesson must not write into the checkout)."""
    home = tmp_path_factory.mktemp("lab")
    course = home / "course"
    shutil.copytree(NOTEBOOKS, course, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    port, token = free_port(), secrets.token_hex(16)
    from emqlab.course.lab.launcher import lab_env

    server = Server(_server_argv("lab", port, token, home, course), port, token, home, "/api/status",
                    env=lab_env(), quiet_news=False)
    yield server
    server.stop()


@pytest.fixture
def voila_server(tmp_path_factory):
    def start(name: str) -> Server:
        home = tmp_path_factory.mktemp(f"voila-{name}")
        port, token = free_port(), secrets.token_hex(16)
        from emqlab.course.present import voila_env

        server = Server(_server_argv("voila", port, token, home, name), port, token, home, VOILA_READY, env=voila_env())
        started.append(server)
        return server

    started: list[Server] = []
    yield start
    for server in started:
        server.stop()


# -- the browser ----------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def expect_waits_ui_timeout():
    """`expect()` without its own timeout waits UI_TIMEOUT (stretched on a slower host), not Playwright's
    fixed 5 s: page.set_default_timeout does not reach expect()."""
    from playwright.sync_api import expect

    expect.set_options(timeout=UI_TIMEOUT)


@pytest.fixture(scope="module")
def browser(tmp_path_factory, expect_waits_ui_timeout):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: the browser tests drive Debian's chromium "
                    "(`./run test` installs it; or apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, viewport=VIEWPORT)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser, request):
    page = browser.new_page()
    page.set_default_timeout(UI_TIMEOUT)
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{_slug(request.node.name)}-last.png"), full_page=False)
    page.close()
