"""`emqlab figures`, `emqlab site` and `emqlab present` as a user types them: the verbs of
`emqlab/cli/course.py` (what they make is tested with their modules: tests/view/test_figures.py,
tests/course/test_site.py, tests/course/test_present.py)."""

from __future__ import annotations

import pytest

from emqlab.cli import command as cli
from emqlab.view.export import course_figures


def test_figures_writes_the_figures_it_is_given_with_a_progress_bar(tmp_path, capsys):
    # the bar on stderr, the paths on stdout; every figure at once is the wheel's test (tests/test_wheel.py),
    # from another folder: one full export in the suite is enough (the libraries' runs take a minute)
    names = ["heartbeat", "renewal-cost-k6-sweep", "reaper"]
    out = tmp_path / "figures-out"
    assert cli.main(["figures", "--out", str(out), "--format", "svg", "--only", ",".join(names)]) == 0
    captured = capsys.readouterr()
    listed = captured.out.split()
    assert sorted(p.rsplit("/", 1)[-1] for p in listed) == sorted(f"{n}.{ext}" for n in names for ext in ("svg", "txt"))
    assert all((out / p.rsplit("/", 1)[-1]).is_file() for p in listed)
    assert "figures: 100%" in captured.err and f"{len(names)}/{len(names)}" in captured.err


def test_figures_only_names_known_figures(tmp_path, capsys):
    assert cli.main(["figures", "--out", str(tmp_path), "--only", "heartbeat,nothing"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("emqlab: error: no figure named nothing; known: heartbeat")
    assert err.count("\n") == 1 and not list(tmp_path.iterdir())  # refused before anything is written
    assert [f.name for f in course_figures()][0] == "heartbeat"


@pytest.mark.parametrize(("argv", "message"), [
    (["figures", "--out", "x", "--format", "pdf"], "invalid choice: 'pdf'"),
    (["figures"], "the following arguments are required: --out"),
])
def test_figures_bad_input_is_one_line(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("emqlab: error: ") and message in err and err.count("\n") == 1
