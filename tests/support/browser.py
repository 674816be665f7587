"""The browser: JupyterLab and Voila servers started as a user starts them (`Server`), headless Chromium's
settings and the waits (stretched on a slower host), and reading the page (`open_and_run`, `figure_with`,
`lit_state`, `hover_lights`, `lesson`). The fixtures are in tests/browser/conftest.py."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

import realtime
from emqlab.core.children import TRACKER, kill_tree
from support.processes import ROOT


# -- the browser: servers started as a user starts them, and reading the page ----------------------
NOTEBOOKS = ROOT / "notebooks"


ARTIFACTS = ROOT / "test-artifacts"


CHROMIUM = os.environ.get("EMQLAB_CHROMIUM", "/usr/bin/chromium")


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


VIEWPORT = {"width": 1600, "height": 1000}
# the browser tests' waits, stretched on a slower host (`realtime.timeout_s`)
START_TIMEOUT = realtime.timeout_s(60)  # seconds for a server to answer on a loaded 2-core machine
UI_TIMEOUT = realtime.timeout_s(45_000)  # ms for the page to show what it should
# ms for Voila to send a dashboard: it runs the notebook's cells before the page loads (the failover's live
# primaries and replicas: 13 s on a quiet machine, past 45 s on a loaded one in CI)
RENDER_TIMEOUT = realtime.timeout_s(150_000)
# what says a Voila server is up: one of its static files. Its page ("/") is no probe: each request for it runs
# the dashboard in a kernel of its own, which stays until the server stops, so probing "/" ran every dashboard
# twice (once more for each poll that timed out waiting for the first byte on a loaded machine)
VOILA_READY = "/voila/static/voila.js"


# -- servers ------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A jupyter lab / voila process on a loopback port with a token; always stopped."""

    def __init__(self, argv: list[str], port: int, token: str, home: Path, ready_path: str,
                 env: dict[str, str] | None = None, quiet_news: bool = True):
        self.port, self.token, self.home = port, token, home
        self.log = home / "server.log"
        env = {k: v for k, v in (env or os.environ).items() if k not in ("EMQLAB_BACKEND", "EMQLAB_URL")}
        env.update(JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
                   IPYTHONDIR=str(home / "ipython"), JUPYTER_PLATFORM_DIRS="1")
        # the user's own settings must not change what the test sees; the news toast is turned off here
        # unless the command under test is meant to turn it off itself (the course lab does)
        labconfig = home / "config" / "labconfig"
        labconfig.mkdir(parents=True)
        if quiet_news:
            (labconfig / "page_config.json").write_text(json.dumps(
                {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        with open(self.log, "wb") as log:
            # emqlab's one tracker: the server is stopped even if the test process ends without `stop()`
            self.proc = TRACKER.spawn(argv, setup=None, end=self._end, env=env, stdout=log,
                                      stderr=subprocess.STDOUT, cwd=home)
        try:
            self._wait(ready_path)
        except BaseException:
            self.stop()
            raise

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"http://127.0.0.1:{self.port}{path}{sep}token={self.token}"

    def _wait(self, path: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"the server exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url(path), timeout=2) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.25)
        pytest.fail(f"the server did not answer within {START_TIMEOUT} s:\n{self.tail()}")

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def stop(self) -> None:
        self._end(self.proc)

    @staticmethod
    def _end(proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            proc.terminate()  # the server shuts its kernels down on SIGTERM
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                kill_tree(proc)  # the kernels with it
        TRACKER.release(proc)


def _server_argv(kind: str, port: int, token: str, home: Path, target: Path) -> list[str]:
    if kind == "lab":  # the command `./run lab` runs (emqlab lab), with a port, a token and a copy of the course
        from emqlab.course.lab.launcher import lab_command

        return lab_command([f"--port={port}", "--no-browser", f"--IdentityProvider.token={token}",
                            "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={target}",
                            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: run cells, reach the kernel
                            f"--LabApp.workspaces_dir={home / 'workspaces'}",
                            f"--LabApp.user_settings_dir={home / 'settings'}"])
    from emqlab.course.present import voila_command

    argv = voila_command(target, port=port, open_browser=False)
    return [*argv, f"--token={token}", "--Voila.port_retries=0"]


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in text).strip("-")


# -- reading the page --------------------------------------------------------------------------------------
PANEL = """(path) => {
  for (const w of window.jupyterapp.shell.widgets('main')) if (w.context && w.context.path === path) return w;
  return null;
}"""


RUN_IN_KERNEL = """async ([path, code]) => {
  const panel = (""" + PANEL + """)(path);
  const kernel = panel.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, silent: false, store_history: false});
  let out = '', err = '';
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') out += msg.content.text;
    if (msg.header.msg_type === 'error') err += msg.content.ename + ': ' + msg.content.evalue;
  };
  await future.done;
  return {out, err};
}"""


def kernel_run(page, notebook: str, code: str) -> str:
    reply = page.evaluate(RUN_IN_KERNEL, [notebook, code])
    assert not reply["err"], reply["err"]
    return reply["out"]


def open_and_run(page, server: Server, notebook: str) -> None:
    # a workspace of its own: no tab from an earlier test is restored beside this one
    page.goto(server.url(f"/lab/workspaces/{secrets.token_hex(4)}/tree/{notebook}"))
    find = "(" + PANEL + ")(path)"
    page.wait_for_function(
        f"(path) => {{ const p = window.jupyterapp && {find};"
        " return p && p.sessionContext && p.sessionContext.session && p.sessionContext.session.kernel"
        " && p.context && p.context.isReady; }", arg=notebook)
    page.evaluate(f"""async (path) => {{
      const app = window.jupyterapp, panel = {find};
      app.shell.activateById(panel.id);
      await panel.sessionContext.ready;
      await app.commands.execute('notebook:run-all-cells');
    }}""", notebook)
    page.wait_for_function(
        f"(path) => {{ const p = {find};"
        " return p.content.widgets.every(c => c.model.type !== 'code' || (c.model.executionCount !== null"
        " && !c.node.querySelector('.jp-InputArea-prompt').textContent.includes('*'))); }",
        arg=notebook, timeout=realtime.timeout_s(120_000))
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, f"{notebook} raised while running:\n" + "\n".join(tracebacks)


COUNT_SENT = """(path) => {
  const panel = (""" + PANEL + """)(path);
  const kernel = panel.sessionContext.session.kernel;
  if (!window.emqlabSent) {
    window.emqlabSent = [];
    kernel.anyMessage.connect((_, m) => { if (m.direction === 'send') window.emqlabSent.push(m.msg.header.msg_type); });
  }
  window.emqlabSent.length = 0;
}"""


def figure_with(page, label: str):
    """The interactive figure on the page that has a mode labelled `label`, scrolled into view (JupyterLab
    may leave an output that is out of view undrawn), with its modes {key: label}."""
    page.wait_for_function("""(label) => [...document.querySelectorAll('[data-figure] script[data-modes]')]
      .some(s => Object.values(JSON.parse(s.textContent).modes).some(m => m.label.includes(label)))""",
                           arg=label, timeout=UI_TIMEOUT)
    name = page.evaluate("""(label) => [...document.querySelectorAll('[data-figure]')].find(f =>
      Object.values(JSON.parse(f.querySelector('script[data-modes]').textContent).modes)
        .some(m => m.label.includes(label))).dataset.figure""", label)
    figure = page.locator(f"[data-figure='{name}']")
    figure.wait_for(timeout=UI_TIMEOUT)
    figure.scroll_into_view_if_needed()
    modes = json.loads(figure.locator("script[data-modes]").text_content())["modes"]
    return figure, {key: m["label"] for key, m in modes.items()}


def lit_state(figure) -> dict:
    """What a person sees lit: the figure's lit mode, the modes whose marks are dimmed, the verdict line
    set in bold, and the readout's text."""
    return figure.evaluate("""(f) => ({
      lit: f.dataset.lit ?? null,
      dimmed: [...new Set([...f.querySelectorAll('[data-mode].emq-dim')].map(m => m.dataset.mode))].sort(),
      bold: [...f.querySelectorAll('[data-verdict]')].filter(li => Number(getComputedStyle(li).fontWeight) >= 600)
                .map(li => li.dataset.verdict),
      readout: f.querySelector('[data-readout]').innerText,
    })""")


def hover_lights(page, notebook: str, label: str, shot: str, let_go: bool = True) -> None:
    """Move the real pointer onto the lane of the mode labelled `label` and check what a learner sees:
    the readout names that mode, its verdict is the bold one, every other mode's marks fade — and the
    browser sends the kernel nothing while it happens. let_go: first click the figure's margin (a lesson
    may pin a mode); False: the lesson must leave nothing pinned, so the hover works with no click."""
    from playwright.sync_api import expect

    figure, modes = figure_with(page, label)
    target = next(key for key, text in modes.items() if label in text)
    other = next(key for key in modes if key != target)
    page.evaluate(COUNT_SENT, notebook)
    if let_go:
        box = figure.locator("svg").first.bounding_box()
        page.mouse.click(box["x"] + 3, box["y"] + 3)
    else:
        assert lit_state(figure)["lit"] is None, f"{notebook} leaves a mode lit"
    for key in (other, target):  # the other mode first, so that what the target hover changes is seen
        figure.locator(f"[data-lane='{key}']").hover(position={"x": 3, "y": 3})
        expect(figure).to_have_attribute("data-lit", key, timeout=UI_TIMEOUT)
        state = lit_state(figure)
        assert state["readout"].startswith(modes[key]), state
        assert state["dimmed"] == sorted(k for k in modes if k != key) and state["bold"] == [key], state
        page.screenshot(path=str(ARTIFACTS / f"{shot}-{key}.png"))
    sent = page.evaluate("() => window.emqlabSent.slice()")
    assert sent == [], f"hovering sent the kernel {sent}"


def lesson(prefix: str) -> str:
    found = sorted(p.name for p in NOTEBOOKS.glob(f"{prefix}-*.ipynb"))
    assert found, f"no lesson notebooks/{prefix}-*.ipynb in this checkout"
    return found[0]
