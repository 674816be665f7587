"""Dashboards for a classroom: `emqlab present NAME` serves a lesson's figures through Voila.

A dashboard is a notebook in `emqlab/dashboards/` whose code Voila hides: the room sees only the
live figures, in large type, with the hover and the buttons working. Everything is served from
this machine (no CDN), so it works without a network.

The notebooks stay two lines long; what they show is built here, by `slide_style()` and
`explorer(name)`, from the same runs `emqlab figures` exports.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.children import TRACKER, stop_then_kill
from ..core.errors import BadParameter, EmqlabError
from ..core.ranges import within

# name -> what the room sees (the notebook is emqlab/dashboards/<name>.ipynb)
DASHBOARDS = {
    "heartbeat": "figure 1, the renewal heartbeat: no renewal against renew at TTL/2",
    "renewal": "figure 2, per-job timers against one sweep for a worker holding K = 6 jobs",
    "fencing": "the applied form: a stale worker's late write, without and with fencing",
    "failover": "a real failover under four guards: no guard, WAIT, a fencing token, a token confirmed by WAIT",
    "class": "a class on one server, live: one lane per learner, the totals, and the instructor's controls",
}

SLIDE_FIGSIZE = (15, 7.5)
SLIDE_DPI = 120  # 15 in at 120 dpi = 1800 px: on a 1920-wide screen, the 11 pt ticks are 18 px
TEMPLATE = "emqlab"  # emqlab/dashboards/share/voila/templates/emqlab: Voila's lab template, served offline
DEFAULT_PORT = 8866


def dashboards() -> dict[str, str]:
    """The dashboards `emqlab present` knows, with what each shows."""
    return dict(DASHBOARDS)


def dashboard_path(name: str) -> Path:
    """The notebook behind dashboard `name`."""
    if name not in DASHBOARDS:
        raise BadParameter(f"no dashboard named {name!r}; choose one of: {', '.join(DASHBOARDS)}")
    path = Path(str(resources.files("emqlab").joinpath("dashboards").joinpath(f"{name}.ipynb")))
    if not path.is_file():
        raise EmqlabError(f"the dashboard notebook {path} is missing from this installation")
    return path


def voila_command(name: str, port: int = DEFAULT_PORT, open_browser: bool = True,
                  extra: list[str] | None = None) -> list[str]:
    """The command that serves dashboard `name` on 127.0.0.1:`port`."""
    port = int(within("port", port))
    path = dashboard_path(name)
    if importlib.util.find_spec("voila") is None:
        raise EmqlabError("Voila is not installed; install the lab extras: pip install -e '.[lab]'")
    argv = [sys.executable, "-m", "voila", str(path), f"--port={port}", "--Voila.ip=127.0.0.1",
            "--strip_sources=True", "--theme=light", f"--template={TEMPLATE}"]
    if not open_browser:
        argv.append("--no-browser")
    return argv + list(extra or [])



def voila_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment Voila needs to find emqlab's template (JUPYTER_PATH gains our folder)."""
    env = dict(os.environ if env is None else env)
    share = str(resources.files("emqlab").joinpath("dashboards").joinpath("share"))
    env["JUPYTER_PATH"] = os.pathsep.join(p for p in (share, env.get("JUPYTER_PATH", "")) if p)
    return env


def present(name: str, port: int = DEFAULT_PORT, open_browser: bool = True,
            env: dict[str, str] | None = None) -> None:
    """Serve dashboard `name` until Ctrl-C (which stops Voila and its kernel). `env`: more of
    Voila's environment (the class dashboard's address: never on a command line)."""
    argv = voila_command(name, port, open_browser)
    print(f"emqlab: serving the {name} dashboard ({DASHBOARDS[name]}) at http://127.0.0.1:{port}/ ; "
          "Ctrl-C stops it", file=sys.stderr, flush=True)
    proc = TRACKER.spawn(argv, setup=None, session=False, end=lambda p: stop_then_kill(p, 15.0),
                         env={**voila_env(), **(env or {})})
    previous = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is threading.main_thread():
        # stopped by a service manager or `kill`: take Voila (and its kernel) down too
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        code = proc.wait()
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, previous)
        stop_then_kill(proc, 15.0)  # Voila shuts its kernels down on SIGTERM
    if code not in (0, -signal.SIGINT, -signal.SIGTERM):
        raise EmqlabError(f"voila stopped with exit code {code} (is port {port} free? try --port)")


def _interrupt(signum, frame):
    raise KeyboardInterrupt


# -- what the dashboard notebooks call --------------------------------------------------------------
SLIDE_CSS = """
<style>
  /* projected in a room: everything a size up, the page edge to edge */
  body, .jp-RenderedHTMLCommon, .widget-label, .widget-html-content { font-size: 20px !important; }
  .jp-RenderedHTMLCommon h1 { font-size: 2.0em !important; }
  .widget-toggle-button, .jupyter-button { font-size: 20px !important; height: auto !important;
                                           padding: 4px 14px !important; }
  .widget-html-content { line-height: 1.4 !important; }
  .jp-Cell, .jp-OutputArea-output { max-width: none !important; }
</style>
"""


def slide_style():
    """The dashboard's large type, as an HTML display object (no global state changes)."""
    from IPython.display import HTML

    return HTML(SLIDE_CSS)


def classboard(address: str | None = None, **kw: Any):
    """The class dashboard: `emqlab.classroom.dashboard.ClassBoard` on the instructor's address ($EMQLAB_CLASS_URL,
    which `emqlab class serve` sets for the Voila it starts); with none, a practice class of its own
    on this machine (a server and 4 workers, removed when the kernel stops)."""
    import os

    from ..classroom.dashboard import ClassBoard
    from ..core.environment import CLASS_URL_ENV

    if address or os.environ.get(CLASS_URL_ENV, "").strip():
        return ClassBoard.from_env(address, **kw)
    return ClassBoard.practice(**kw)


def explorer(name: str, backend: Any = None):
    """The live figure of dashboard `name`: a ModeExplorer over fresh runs on `backend`
    (default: the lab's shared backend, fakeredis unless EMQLAB_BACKEND / EMQLAB_URL say otherwise)."""
    from ..view import figures
    from . import lab
    from ..view.widgets import ModeExplorer

    if name not in DASHBOARDS:
        raise BadParameter(f"no dashboard named {name!r}; choose one of: {', '.join(DASHBOARDS)}")
    if name == "class":  # a live class, not runs: the instructor's board (see `classboard`)
        return classboard()
    be = backend if backend is not None else lab.backend()
    build, runs = {
        "heartbeat": (figures.heartbeat_figure, figures.heartbeat_modes),
        "renewal": (figures.renewal_figure, figures.renewal_designs),
        "fencing": (figures.fencing_figure, figures.fencing_modes),
        "failover": (figures.failover_figure, lambda be: figures.failover_modes()),  # its own servers, any store
    }[name]
    return ModeExplorer(build, runs(be), figsize=SLIDE_FIGSIZE, dpi=SLIDE_DPI, slide=True)
