"""What every `emqlab` verb module shares: the parser class, the common options, opening a run's
store after its cost is checked, and printing the result (see `emqlab.cli`)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..store.backend import BACKEND_HELP, connect, parse_backend
from ..store.clock import DEFAULT_SCALE
from ..core.errors import BadParameter
from ..faults.pauses import Pause
from ..core.ranges import arg, check_verb, help_text, spec_arg
from ..lease.cadence import parse_cadence


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, no usage dump
        raise BadParameter(f"{message} (see `{self.prog} --help`)")

    def _get_value(self, action, arg_string):  # a type's BadParameter keeps its own sentence (emqlab.core.ranges)
        type_func = self._registry_get("type", action.type, action.type)
        try:
            return type_func(arg_string) if callable(type_func) else super()._get_value(action, arg_string)
        except BadParameter as exc:
            raise argparse.ArgumentError(action, str(exc)) from None
        except (TypeError, ValueError):
            return super()._get_value(action, arg_string)  # argparse's own words: "invalid int value: …"


def common_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--backend", default=None, type=_backend_spec,
                        help=f"{BACKEND_HELP} (default: $EMQLAB_URL, $EMQLAB_BACKEND, fake)")
    common.add_argument("--clock", choices=["virtual", "real"], default=None,
                        help="virtual (default on fake) or real (default, and required, on a live server)")
    common.add_argument("--scale", type=arg("scale"), default=DEFAULT_SCALE,
                        help=help_text("scale", f"real clock: real seconds per model second (default {DEFAULT_SCALE})"))
    common.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return common


def _backend_spec(text: str) -> str:
    """A backend checked at parse time: a malformed URL is one line, exit 2; `REDIS://` reads as `redis://`."""
    spec_arg(parse_backend, "backend URL")(text)  # a bad spec: one line, exit 2
    return parse_backend(text)[1] or text.strip()  # a URL as parse_backend reads it (scheme in lower case)


def _check_cost(args) -> None:
    """Refuse a run that would last longer than the limits in emqlab/core/ranges.py (each part in range)."""
    params = dict(vars(args))
    if "renew" in params or "cadence" in params:
        params["cadence"] = parse_cadence(params.get("renew", params.get("cadence"))).fraction
    pause = Pause.parse(params.get("pause")) if params.get("pause") else None
    params["pause"] = (pause.at, pause.seconds) if pause else None
    defaults = {"lease": 10.0, "beat": 1.0, "job": 0.5}  # chaos's own defaults for the flags left unset
    params.update({k: v for k, v in defaults.items() if params.get(k) is None})
    kind = parse_backend(args.backend)[0]
    real = args.clock == "real" or (args.clock is None and kind != "fake")
    check_verb(args.verb, params, real=real, scale=args.scale)


def open_store(args):
    _check_cost(args)  # the whole run's cost, before any server starts
    return connect(args.backend, clock=args.clock, scale=args.scale)


def emit(args, payload: dict[str, Any], text: str) -> None:
    if args.json:
        print(json.dumps(payload))
    else:
        print(text)


def scenario_kwargs(args) -> dict[str, Any]:
    """The verb's own options, as keyword arguments (everything but the common ones)."""
    skip = {"backend", "clock", "scale", "json", "func", "verb"}
    return {k: v for k, v in vars(args).items() if k not in skip}
