"""What every verb family of the `emqlab` command shares: the parser, the options every run takes, the
argument types, and printing a result.

The CLI parses; it does not judge. A number flag's type turns text into a number (`number`), naming
its range from the one table (`emqlab.core.ranges`) in `--help`; the range itself, and every other
rule about a value, is checked once, by the library function the verb calls (a scenario, the store,
the class), which refuses with `BadParameter` before it starts anything. A path to write is the one
thing checked here, since only the command line writes files after a run.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Callable

from ..core import ranges
from ..core.errors import BadParameter
from ..store.backend import BACKEND_HELP, StoreSpec, store_spec
from ..store.clock import DEFAULT_SCALE


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, no usage dump
        raise BadParameter(f"{message} (see `{self.prog} --help`)")

    def _get_value(self, action, arg_string):  # a type's BadParameter keeps its own sentence
        type_func = self._registry_get("type", action.type, action.type)
        try:
            return type_func(arg_string) if callable(type_func) else super()._get_value(action, arg_string)
        except BadParameter as exc:
            raise argparse.ArgumentError(action, str(exc)) from None
        except (TypeError, ValueError):
            return super()._get_value(action, arg_string)  # argparse's own words: "invalid int value: …"


def number(name: str) -> Callable[[str], float | int]:
    """The argument type of a number the table names: the text as a number (a whole one where the table
    says so). Its range is the library's to check; text that is no number at all is refused here."""
    rng = ranges.get(name)

    def parse(text: str) -> float | int:
        value = ranges.parse(text, whole=rng.whole)
        if value is None:
            raise BadParameter(f"invalid {'int' if rng.whole else 'float'} value: {text!r}; {rng.rule()}")
        return value

    parse.__name__ = f"{name} number"
    return parse


def help_text(name: str, text: str) -> str:
    """A flag's help with its range appended, from the table."""
    return f"{text} [{ranges.get(name).text()}]"


def run_limits() -> str:
    """The whole-run bound in words, for a run verb's `--help`."""
    return (f"Every number is checked against its range before anything starts. A run whose whole cost is over "
            f"{ranges.REAL_SECONDS_LIMIT:g} s of real time on a real clock (model span × scale) or over "
            f"{ranges.STEP_LIMIT:,} store steps (≈ round trips) is refused too, so no run lasts longer than "
            f"{ranges.RUN_BOUND}.")


def common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--backend", default=None, type=store_spec,
                        help=f"{BACKEND_HELP} (default: $EMQLAB_URL, $EMQLAB_BACKEND, fake)")
    common.add_argument("--clock", choices=["virtual", "real"], default=None,
                        help="virtual (default on fake) or real (default, and required, on a live server)")
    common.add_argument("--scale", type=number("scale"), default=DEFAULT_SCALE,
                        help=help_text("scale", f"real clock: real seconds per model second (default {DEFAULT_SCALE})"))
    common.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return common


COMMON = ("backend", "clock", "scale", "json", "func", "verb")


def store_of(args) -> StoreSpec:
    """Where a run's store is and how it keeps time, made once from --backend, --clock and --scale: the
    specification a scenario opens (after checking the run)."""
    return store_spec(args.backend, clock=args.clock, scale=args.scale)


def verb_kwargs(args, *leave_out: str) -> dict[str, Any]:
    """The verb's own options, as keyword arguments (everything but the common ones and `leave_out`)."""
    return {k: v for k, v in vars(args).items() if k not in COMMON and k not in leave_out}


def emit(args, payload: dict[str, Any], text: str) -> None:
    if args.json:
        print(json.dumps(payload))
    else:
        print(text)


def output_file(suffixes: tuple[str, ...]) -> Callable[[str], str]:
    """The argument type of a file to write after the run: its folder exists and is writable, it is not
    a folder, and its extension says a format we write. Checked before the run, not after it."""

    def check_file(text: str) -> str:
        path = os.path.abspath(os.path.expanduser(text))
        folder, suffix = os.path.dirname(path), os.path.splitext(path)[1].lower().lstrip(".")
        allowed = " or ".join(suffixes)
        if os.path.isdir(path):
            raise BadParameter(f"{text!r} is a folder; name a file ending .{allowed}")
        if suffix not in suffixes:
            raise BadParameter(f"{text!r} must end in .{allowed} (the format is read from it)")
        if not os.path.isdir(folder):
            raise BadParameter(f"the folder of {text!r} does not exist: {folder}")
        if not os.access(folder, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
            raise BadParameter(f"{text!r} cannot be written here (no permission)")
        return text

    check_file.__name__ = "file"
    return check_file


def output_dir(text: str) -> str:
    """The argument type of a folder to write into: made here if missing (so a folder that cannot be
    made — under a file, on a read-only or virtual file system such as /proc — is one line, exit 2)."""
    path = os.path.abspath(os.path.expanduser(text))
    if os.path.exists(path) and not os.path.isdir(path):
        raise BadParameter(f"{text!r} is a file, not a folder")
    probe = path
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise BadParameter(f"{text!r} cannot be created: {probe} is a file, not a folder")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise BadParameter(f"{text!r} cannot be created: {exc.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise BadParameter(f"{text!r} cannot be written: no permission")
    return text


__all__ = ["Parser", "common_options", "emit", "help_text", "number", "output_dir", "output_file",
           "run_limits", "store_of", "verb_kwargs"]
