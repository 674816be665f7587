"""The front end learners and rooms see: the JupyterLab extensions the widgets need, and the
Voila dashboards `emqlab present` serves.

A widget that shows as text ("VBox(children=...)") almost always means the browser side is
missing or does not match the Python side; the first test catches that in the environment the
README creates (this virtualenv).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from emqlab.cli import command as cli
from emqlab.course import present
from realtime import timeout_s

RUN_SECONDS = 55  # about how long this file runs on a quiet 2-core machine: the suite starts the longest first

JUPYTER = Path(sys.executable).with_name("jupyter")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def labextensions() -> dict[str, str]:
    """`jupyter labextension list`, as {name: the rest of its line}."""
    done = subprocess.run([str(JUPYTER), "labextension", "list"], capture_output=True, text=True,
                          timeout=timeout_s(120))
    assert done.returncode == 0, done.stderr
    found = {}
    for line in ANSI.sub("", done.stdout + done.stderr).splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1].startswith("v"):
            found[parts[0]] = " ".join(parts[1:])
    return found


@pytest.mark.parametrize("name", ["@jupyter-widgets/jupyterlab-manager", "anywidget"])
def test_widget_extensions_are_enabled_and_ok(labextensions, name):
    assert name in labextensions, f"{name} is not installed in JupyterLab: {sorted(labextensions)}"
    assert re.search(r"\benabled\b.*\bOK\b", labextensions[name]), f"{name}: {labextensions[name]}"


def _version(line: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.match(r"v(\d+)\.(\d+)\.(\d+)", line).groups())


def test_browser_side_matches_python_side(labextensions):
    import anywidget
    import ipywidgets

    # ipywidgets 8 speaks to the version 5 widget manager (ipywidgets 7 needed version 3)
    manager = _version(labextensions["@jupyter-widgets/jupyterlab-manager"])
    assert int(ipywidgets.__version__.split(".")[0]) == 8 and manager[0] == 5, (ipywidgets.__version__, manager)
    # anywidget ships its front end with its Python package: the two must be the same release
    have = _version(labextensions["anywidget"])
    assert have == _version("v" + anywidget.__version__), f"anywidget {anywidget.__version__}, front end {have}"


def test_nothing_needs_ipympl_any_more():
    """The figures light in the browser (emqlab.view.widgets.LitFigure): no ipympl to install or import."""
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + [d for extra in project["optional-dependencies"].values() for d in extra]
    assert not [d for d in wanted if d.lower().startswith("ipympl")]


# -- the dashboards ---------------------------------------------------------------------------------------
def test_every_dashboard_ships_as_a_short_notebook():
    assert "heartbeat" in present.dashboards()
    for name in present.dashboards():
        nb = nbformat.read(present.dashboard_path(name), as_version=4)
        code = [c.source for c in nb.cells if c.cell_type == "code"]
        assert code and all(len(src.splitlines()) <= 3 for src in code), code
        assert f'present.explorer("{name}")' in "\n".join(code)
        assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit dashboards without outputs"


def test_the_template_fetches_nothing_from_the_network():
    template = Path(present.voila_env()["JUPYTER_PATH"].split(":")[0]) / "voila" / "templates" / present.TEMPLATE
    assert json.loads((template / "conf.json").read_text())["base_template"] == "lab"
    text = (template / "index.html.j2").read_text()
    assert "http://" not in text and "https://" not in text
    # and the lab template we extend still has the block we replace (a Voila upgrade may move it)
    lab = Path(sys.prefix) / "share" / "jupyter" / "voila" / "templates" / "lab" / "index.html.j2"
    assert "{%- block notebook_css -%}" in lab.read_text()


def test_voila_command_serves_on_loopback_without_code():
    argv = present.voila_command("heartbeat", port=9123, open_browser=False)
    assert argv[:3] == [sys.executable, "-m", "voila"] and argv[3].endswith("heartbeat.ipynb")
    for flag in ("--port=9123", "--Voila.ip=127.0.0.1", "--strip_sources=True", "--template=emqlab", "--no-browser"):
        assert flag in argv
    assert "--no-browser" not in present.voila_command("heartbeat", open_browser=True)


@pytest.mark.parametrize(("argv", "message"), [
    (["present", "sometimes"], "no dashboard named 'sometimes'; choose one of: heartbeat"),
    (["present", "heartbeat", "--port", "70000"], "port must be a whole number from 1 to 65535"),
    (["present", "heartbeat", "--port", "eighty"], "invalid int value: 'eighty'"),
])
def test_present_bad_input_is_one_line(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("emqlab: error: ") and message in err and err.count("\n") == 1


# these start real servers of their own (a failover's pair, a class's server): live, whatever the store
LIVE_DASHBOARDS = {"failover", "class"}


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.live) if n in LIVE_DASHBOARDS else n
                                  for n in present.dashboards()])
def test_dashboard_runs_headless(name, tmp_path):
    """What Voila executes, executed by nbclient: no error, and the figure is a live widget."""
    from nbclient import NotebookClient

    nb = nbformat.read(present.dashboard_path(name), as_version=4)
    NotebookClient(nb, timeout=int(timeout_s(120)), kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"], outputs
    views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(views) == 1, outputs
    data = views[0]["data"]
    # beside the live view: the figure as an image and its words as text, for a reader with no widgets
    shown = present.explorer(name)  # the same thing in this process (the class's board: a practice class)
    try:
        assert data["image/png"] and data["text/plain"].splitlines()[0] == shown.drawing.words.caption
    finally:
        getattr(shown, "close", lambda: None)()  # the class board stops its thread and its practice class


@pytest.mark.slow
def test_present_serves_and_stops_with_voila(tmp_path):
    """The real verb: Voila answers on the port; SIGTERM to emqlab takes Voila down with it."""
    import signal
    import socket
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("EMQLAB_BACKEND", "EMQLAB_URL")}
    env.update(JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    proc = subprocess.Popen([sys.executable, "-m", "emqlab.cli", "present", "heartbeat", "--no-browser",
                             "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline, page = time.monotonic() + timeout_s(60), None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=timeout_s(30)) as reply:
                    page = reply.read().decode()
                break
            except OSError:
                time.sleep(0.3)
        assert page is not None, f"voila never answered:\n{proc.stderr.read() if proc.poll() is not None else ''}"
        assert "cdn.jsdelivr.net" not in page  # the offline template, not Voila's stock one
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=timeout_s(30)) == 130  # the CLI's "interrupted" exit
        assert "emqlab: interrupted" in proc.stderr.read()
        with pytest.raises(OSError):
            urllib.request.urlopen(url, timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
