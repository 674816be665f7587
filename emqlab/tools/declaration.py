"""How one library declares itself, once: the record each library's module holds as `LIBRARY`.

Everything that lists the libraries reads these records and nothing else: the `emqlab tools` verb (its
choices, its flags and their help), the lesson's runs, emqlab's counterpart run, the installed versions,
`benchmarks/tools_repeat.py`'s cases and the table in `docs/libraries.md` (`docs_table`, which a test compares
with the page). A library's module is found by its name (`emqlab/tools/<run>_run.py`, `run` its run
function), so adding one touches its own module, its tests and
the lesson (and the `tools` extra in `pyproject.toml`, which a test keeps in step with the records).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

FAILURE_AND_FIX = MappingProxyType({"failure": {}, "fix": {"fix": True}})  # most lessons' runs: mode -> options


@dataclass(frozen=True)
class Option:
    """An option of one library's story beyond --fix, --task and --timeout. `name`: the run function's keyword
    and the flag (`pause_at` is `--pause-at`); a switch (`choices` empty and `seconds` False), one of `choices`,
    or a number of seconds whose range the table names under `range_name`."""

    name: str
    help: str
    choices: tuple[str, ...] = ()
    seconds: bool = False
    range_name: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Repeat:
    """One case `benchmarks/tools_repeat.py` runs N times: the flags, the claim in words, the check on the
    verdict's JSON, and which verdict fields it tallies."""

    flags: tuple[str, ...]
    claim: str
    holds: Callable[[Mapping[str, Any]], bool]
    tally: tuple[str, ...]


@dataclass(frozen=True)
class Library:
    """One library, declared once in its module (`LIBRARY = Library(...)`).

    name: the command line's name (`emqlab tools NAME`); title: how the help and the lessons write it;
    place: its place in every list (the lessons' order); run: the module's run function's name;
    imports, distribution: the module the run imports and the package it is (its version is the run's);
    requires: {the name a learner knows it by: the requirement in the `tools` extra} (every package the
    versions line names); task, timeout: the default of each in words, for `--help` (timeout names the
    library's own knob); options: its own options; runs: the lesson's runs {mode: options};
    counterpart: emqlab's own run facing its story (a scenario and its options); failure, fix: the
    docs' table's two cells (Markdown); repeats: tools_repeat's cases; fixed_wait_s: a wait the library
    always makes before it gives up on a worker (RQ's 60 s), so that its runs go side by side."""

    name: str
    title: str
    place: int
    run: str
    imports: str
    distribution: str
    requires: Mapping[str, str]
    task: str
    timeout: str
    failure: str
    fix: str
    counterpart: tuple[str, Mapping[str, Any]]
    repeats: tuple[Repeat, ...]
    options: tuple[Option, ...] = ()
    runs: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: FAILURE_AND_FIX)
    fixed_wait_s: float = 0.0


def docs_table(libraries: Mapping[str, Library]) -> str:
    """The table `docs/libraries.md` shows: each library's failure (its default run) and its `--fix`."""
    rows = ["| library | the failure (default) | `--fix` |", "|---|---|---|"]
    rows += [f"| `{lib.name}` | {lib.failure} | {lib.fix} |" for lib in libraries.values()]
    return "\n".join(rows)
