"""What the browser tests (tests/test_browser.py) stand on: JupyterLab and Voila servers started
the way a user starts them, headless Chromium, and reading what the page shows."""


from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = os.environ.get("EMQLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1600, "height": 1000}
START_TIMEOUT = 60  # seconds for a server to answer on a loaded 2-core machine
UI_TIMEOUT = 45_000  # ms for the page to show what it should


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
            self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=home,
                                         start_new_session=True)
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
        if self.proc.poll() is None:
            self.proc.terminate()  # the server shuts its kernels down on SIGTERM
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()


def _server_argv(kind: str, port: int, token: str, home: Path, target: Path) -> list[str]:
    if kind == "lab":  # the command `./run lab` runs (emqlab lab), with a port, a token and a copy of the course
        from emqlab.course.lab import lab_command

        return lab_command([f"--port={port}", "--no-browser", f"--IdentityProvider.token={token}",
                            "--ServerApp.ip=127.0.0.1", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={target}",
                            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: run cells, reach the kernel
                            f"--LabApp.workspaces_dir={home / 'workspaces'}",
                            f"--LabApp.user_settings_dir={home / 'settings'}"])
    from emqlab.course.present import voila_command

    argv = voila_command(target, port=port, open_browser=False)
    return [*argv, f"--token={token}", "--Voila.port_retries=0"]


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """JupyterLab over a copy of the course (running a lesson must not write into the checkout)."""
    home = tmp_path_factory.mktemp("lab")
    course = home / "course"
    shutil.copytree(NOTEBOOKS, course, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    port, token = free_port(), secrets.token_hex(16)
    from emqlab.course.lab import lab_env

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

        server = Server(_server_argv("voila", port, token, home, name), port, token, home, "/", env=voila_env())
        started.append(server)
        return server

    started: list[Server] = []
    yield start
    for server in started:
        server.stop()


# -- the browser ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser(tmp_path_factory):
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

# Asks the live explorer (emqlab.view.widgets.ModeExplorer) where its lanes are, as fractions of the
# figure, and tags its widgets so the page can find the same figure. Read-only otherwise.
PROBE = """
import gc as _gc, json as _json
from emqlab.view.widgets import ModeExplorer as _Explorer
def _emqlab_probe(label):
    for ex in _gc.get_objects():
        if isinstance(ex, _Explorer) and any(label in m.label for m in ex.modes.values()):
            break
    else:
        print(_json.dumps({"error": "no explorer with a mode labelled " + repr(label)}))
        return
    ex.canvas.draw()
    w, h = ex.fig.bbox.width, ex.fig.bbox.height
    lanes = {}
    for name in ex.modes:
        b = ex.drawing.lanes[name].get_window_extent()
        lanes[name] = [b.x0 / w, 1 - b.y1 / h, b.x1 / w, 1 - b.y0 / h]  # left, top, right, bottom
    ex.widget.add_class("emqlab-probe")
    ex.readout.add_class("emqlab-probe-readout")
    ex.verdicts.add_class("emqlab-probe-verdicts")
    print(_json.dumps({"modes": {n: m.label for n, m in ex.modes.items()}, "lanes": lanes,
                       "lit": ex.lit, "pinned": ex.pinned}))
_emqlab_probe(%r)
"""


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
        arg=notebook, timeout=120_000)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, f"{notebook} raised while running:\n" + "\n".join(tracebacks)


def ink(png: bytes, box: list[float]) -> float:
    """How much is drawn in `box` (fractions of the image): mean darkness, 0 = white."""
    from matplotlib.image import imread

    img = imread(io.BytesIO(png), format="png")[..., :3]
    h, w = img.shape[:2]
    left, top, right, bottom = box
    # stay inside the lane: the frame a lit lane gets is not what we measure
    crop = img[int(top * h) + 4:int(bottom * h) - 4, int(left * w) + 4:int(right * w) - 4]
    return float(1.0 - crop.mean())


def point_in(box_px: dict, frac: list[float]) -> tuple[float, float]:
    left, top, right, bottom = frac
    return (box_px["x"] + (left + right) / 2 * box_px["width"],
            box_px["y"] + (top + bottom) / 2 * box_px["height"])


def hover_lights(page, notebook: str, label: str, shot: str, let_go: bool = True) -> None:
    """Move the pointer onto the lane of the mode labelled `label`; check readout and lighting.
    let_go: first click outside the lanes (a lesson may pin a mode); False: the lesson must leave
    nothing pinned, so the hover has to work with no click at all."""
    probe = json.loads(kernel_run(page, notebook, PROBE % label))
    assert "error" not in probe, probe["error"]
    modes, lanes = probe["modes"], probe["lanes"]
    target = next(name for name, lab in modes.items() if label in lab)
    other = next(name for name in modes if name != target)

    figure = page.locator(".emqlab-probe")
    readout = page.locator(".emqlab-probe-readout")
    canvas = figure.locator(".jupyter-matplotlib-canvas-div canvas").first
    wait_drawn(canvas)
    canvas.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    box = canvas.bounding_box()
    assert box and box["width"] > 200, f"the figure's canvas is not shown: {box}"

    if let_go:  # a lesson may leave a mode pinned by its buttons; a click outside the lanes lets go
        page.mouse.click(box["x"] + 6, box["y"] + 6)
    else:
        assert not probe["pinned"] and probe["lit"] is None, f"{notebook} leaves a mode pinned: {probe}"
    # first light the other mode, so that what the target hover changes is visible
    _hover_until(page, box, lanes[other], readout, modes[other])
    page.wait_for_timeout(800)  # the canvas image follows the readout by one round trip
    before = canvas.screenshot()
    page.screenshot(path=str(ARTIFACTS / f"{shot}-1-{other}.png"))
    before_text = readout.inner_text()

    _hover_until(page, box, lanes[target], readout, modes[target])
    after_text = readout.inner_text()
    assert after_text != before_text, "the readout did not change when the pointer moved to the lane"
    assert modes[other] not in after_text.split("—")[0], after_text

    # the verdict list makes the lit mode bold
    # (the list is re-rendered as the readout changes; a node read mid-swap has no computed style,
    # so read until the rendered list has settled)
    deadline = time.monotonic() + 10
    while True:
        weights = page.locator(".emqlab-probe-verdicts li").evaluate_all(
            "items => items.map(li => [li.textContent, getComputedStyle(li).fontWeight])")
        settled = weights and all(weight.isdigit() for _, weight in weights)
        bold = [text for text, weight in weights if weight.isdigit() and int(weight) >= 600]
        if (settled and len(bold) == 1 and bold[0].startswith(modes[target])) or time.monotonic() > deadline:
            break
        page.wait_for_timeout(200)
    assert settled and len(bold) == 1 and bold[0].startswith(modes[target]), weights

    # the canvas: the target lane gains ink (its artists at full strength), the other loses it
    deadline = time.monotonic() + 15
    while True:
        after = canvas.screenshot()
        gain = ink(after, lanes[target]) - ink(before, lanes[target])
        loss = ink(before, lanes[other]) - ink(after, lanes[other])
        if (gain > 0.02 and loss > 0.02) or time.monotonic() > deadline:
            break
        page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / f"{shot}-2-{target}.png"))
    assert gain > 0.02, f"the {modes[target]!r} lane was not lit on the canvas (ink gained {gain:.3f})"
    assert loss > 0.02, f"the {modes[other]!r} lane was not dimmed on the canvas (ink lost {loss:.3f})"

    state = json.loads(kernel_run(page, notebook, PROBE % label))
    assert state["lit"] == target and not state["pinned"], state


def wait_drawn(canvas) -> None:
    """Wait until the figure's image has arrived on the canvas (it comes a round trip after the widget)."""
    canvas.wait_for()
    canvas.evaluate("""(c) => new Promise((resolve, reject) => {
      const t0 = Date.now();
      const look = () => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let ink = 0;
        for (let i = 0; i < d.length; i += 4 * 97) if (d[i + 3] > 0 && d[i] < 200) ink++;
        if (ink > 50) resolve(ink);
        else if (Date.now() - t0 > 30000) reject(new Error('the figure never arrived on the canvas'));
        else setTimeout(look, 200);
      };
      look();
    })""")


def _hover_until(page, box, lane, readout, text: str) -> None:
    """Move the real pointer onto a lane and wait for the readout. ipympl drops pointer events that
    arrive while the kernel is still busy (a freshly run lesson), so a person would nudge the mouse:
    we do the same, within the same lane, at most three times. With no hover handler it still fails."""
    from playwright.sync_api import Error as PlaywrightError

    x, y = point_in(box, lane)
    for attempt in range(3):
        page.mouse.move(x + 4 * attempt, y, steps=8)
        try:
            _expect_text(readout, f"readout · {text}", timeout=8_000 if attempt < 2 else 15_000)  # the head names it
            return
        except (AssertionError, PlaywrightError):
            if attempt == 2:
                raise


def _expect_text(locator, text: str, timeout: int = 15_000) -> None:
    from playwright.sync_api import expect

    expect(locator).to_contain_text(text, timeout=timeout)


def lesson(prefix: str) -> str:
    found = sorted(p.name for p in NOTEBOOKS.glob(f"{prefix}-*.ipynb"))
    assert found, f"no lesson notebooks/{prefix}-*.ipynb in this checkout"
    return found[0]
