"""environment.yml stays in step with pyproject.toml; the README's commands are the ones CI runs."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
# PyPI name -> conda-forge name, where they differ
CONDA_NAME = {"redis": "redis-py"}
SPLIT = re.compile(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$")


def split(req: str) -> tuple[str, str, str]:
    name, extras, spec = SPLIT.match(req.strip()).groups()
    return name.lower().replace("_", "-"), extras or "", spec.replace(" ", "")


def pyproject_requirements() -> dict[str, tuple[str, str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    return {split(r)[0]: split(r)[1:] for r in reqs}


def environment() -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda, pip = {}, {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for req in dep["pip"]:
                if not req.startswith("-e"):
                    name, extras, spec = split(req)
                    pip[name] = (extras, spec)
        else:
            name, _, spec = split(dep)
            conda[name] = spec
    return conda, pip


def test_every_pyproject_requirement_is_in_environment_yml_with_the_same_bounds():
    conda, pip = environment()
    for name, (extras, spec) in pyproject_requirements().items():
        if name in pip:
            assert pip[name] == (extras, spec), f"{name}: pip section says {pip[name]}, pyproject says {(extras, spec)}"
        else:
            conda_name = CONDA_NAME.get(name, name)
            assert conda_name in conda, f"{name} is in pyproject.toml but not in environment.yml"
            assert not extras, f"{name}{extras}: conda cannot express extras; list it in the pip section"
            assert conda[conda_name] == spec, f"{name}: environment.yml says {conda[conda_name]!r}, pyproject {spec!r}"


def test_environment_yml_lists_nothing_pyproject_does_not():
    conda, pip = environment()
    wanted = {CONDA_NAME.get(n, n) for n in pyproject_requirements()} | set(pyproject_requirements())
    extra = (set(conda) | set(pip)) - wanted - {"python", "pip"}
    assert not extra, f"environment.yml lists {sorted(extra)}, which pyproject.toml does not"


def test_environment_yml_installs_the_project_and_the_python_floor_matches():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "conda-forge" in env["channels"]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip
    floor = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert f"python{floor}" in env["dependencies"]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "./run lab" in readme and "./run test" in readme
    assert re.search(r"^\./run test$", (ROOT / ".ci/run").read_text(), re.M)
