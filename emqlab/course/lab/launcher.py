"""Opening the course: JupyterLab on the course folder and lesson 00 (`emqlab lab`), and the versions of
the libraries the libraries lessons run."""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib import resources
from pathlib import Path

from ...core.errors import EmqlabError

NOTEBOOKS = Path(__file__).resolve().parents[3] / "notebooks"  # beside the package, in a checkout
START = "00-start-here.ipynb"


def lab_command(extra_args: list[str] | None = None) -> list[str]:
    """The command `emqlab lab` runs: JupyterLab, serving the course folder, opened on lesson 00."""
    start = NOTEBOOKS / START
    if not start.is_file():
        raise EmqlabError(f"the course notebooks are not beside this installation (looked for {start}); "
                          "run `emqlab lab` from a checkout of the emqlab repository")
    if importlib.util.find_spec("jupyterlab") is None:
        raise EmqlabError("JupyterLab is not installed; install the lab extras: pip install -e '.[lab]'")
    extra = list(extra_args or [])
    if extra[:1] == ["--"]:  # `emqlab lab -- --no-browser`: the separator is argparse's, not Jupyter's
        extra = extra[1:]
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        extra.append("--allow-root")  # containers often run as root; Jupyter refuses it unless told
    course = [f"--LabApp.default_url=/lab/tree/{START}",  # the URL printed and opened lands on lesson 00
              "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if not any(a.startswith(("--ServerApp.root_dir", "--notebook-dir", "--ServerApp.notebook_dir")) for a in extra):
        course.insert(0, f"--ServerApp.root_dir={NOTEBOOKS}")  # serve the course folder, unless told otherwise
    return [sys.executable, "-m", "jupyterlab", *course, *extra]


def lab_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment `emqlab lab` runs JupyterLab in: the course's own lab settings come first on
    the config path, which turn off JupyterLab's news prompt for the course (and nothing else)."""
    env = dict(os.environ if env is None else env)
    course = str(resources.files("emqlab").joinpath("dashboards", "share", "labconfig-course"))
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in (course, env.get("JUPYTER_CONFIG_PATH", "")) if p)
    return env


def open_lab(extra_args: list[str] | None = None) -> None:
    """Replace this process with JupyterLab, opened on notebooks/00-start-here.ipynb."""
    argv = lab_command(extra_args)
    os.chdir(NOTEBOOKS)  # the file browser opens on the course
    os.execve(argv[0], argv, lab_env())


def versions() -> str:
    """The installed version of every library the libraries lessons run, in one line."""
    from ...tools import versions as installed

    return " · ".join(f"{name} {version}" for name, version in installed().items())
