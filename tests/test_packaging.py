"""environment.yml stays in step with pyproject.toml; the package data names files that exist; the
README's commands are the ones CI runs; one install serves `./run lab` and `./run test`."""

import re
import tomllib
from pathlib import Path

import pytest
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


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_data_pattern_names_files_that_exist():
    patterns = pyproject()["tool"]["setuptools"]["package-data"]["emqlab"]
    empty = [p for p in patterns if not [f for f in (ROOT / "emqlab").glob(p) if f.is_file()]]
    assert not empty, f"package-data patterns that match no file: {empty}"
    data = [str(f.relative_to(ROOT / "emqlab")) for f in (ROOT / "emqlab" / "data").iterdir() if f.is_file()]
    assert data and all(any(Path(d).match(p) for p in patterns) for d in data), f"unshipped data: {data}"


def test_the_measured_tables_are_read_from_inside_the_package():
    from emqlab.core import measured

    source = measured.benchmark_source()
    assert Path(str(source)).resolve() == (ROOT / measured.BENCHMARK_FILE).resolve()
    bench = measured.load_benchmark()
    assert {"meta", "rows", "capacity"} <= set(bench) and measured.benchmark_rows() == bench["rows"]
    assert all({"design", "k"} <= set(row) for row in bench["rows"])


def test_absent_and_broken_tables(tmp_path):
    from emqlab.core import measured
    from emqlab.core.errors import EmqlabError

    assert measured.load_benchmark(tmp_path / "absent.json") is None
    assert measured.benchmark_rows(tmp_path / "absent.json") == []
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(EmqlabError, match="broken.json is not valid JSON.*run benchmarks/renewal_cost.py"):
        measured.load_benchmark(broken)


def test_license_is_an_spdx_string_the_build_backend_reads():
    data = pyproject()
    assert data["project"]["license"] == "MIT"  # a table is deprecated by setuptools
    [backend_req] = [r for r in data["build-system"]["requires"] if split(r)[0] == "setuptools"]
    assert split(backend_req)[2] == ">=77"  # the first setuptools that reads an SPDX license string
    # tests/test_wheel.py builds without isolation, with the environment's setuptools: same floor
    test_reqs = {split(r)[0]: split(r)[2] for r in data["project"]["optional-dependencies"]["test"]}
    assert test_reqs["setuptools"] == ">=77"


def test_lab_and_test_share_one_install():
    script = (ROOT / "run").read_text()
    assert 'pip install --quiet -e ".[lab,test,tools]"' in script
    [stamp] = re.findall(r'^\s*local stamp=(.*)$', script, re.M)
    assert "$" + "extras" not in stamp and "$1" not in stamp  # one stamp, whatever the command
    calls = re.findall(r"^\s*(?:\w+\)\s*)?install(?!\(\))\b(.*)$", script, re.M)  # lab, test, bench, notebooks, site, install
    assert len(calls) == 6 and all(args.strip() in ("", ";;") for args in calls), f"install called with {calls}"


def test_ci_says_the_second_pass_runs_on_live_valkey():
    ci = (ROOT / ".ci/run").read_text()
    second = ci.index("EMQLAB_BACKEND=valkey ./run test notebooks")
    assert re.search(r'^echo ".*live Valkey', ci[:second], re.M)
