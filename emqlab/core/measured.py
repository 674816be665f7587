"""What `benchmarks/renewal_cost.py` measured on live Valkey, shipped inside the package.

The scaling and capacity figures draw these tables, so they travel with the code as package data
(`emqlab/data/renewal_cost.json`, read through importlib.resources): an installed wheel draws
them from any folder, no checkout needed. The benchmark rewrites that file when it is run again.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import EmqlabError

BENCHMARK_FILE = "emqlab/data/renewal_cost.json"  # where the benchmark writes it, relative to a checkout
_RESOURCE = ("data", "renewal_cost.json")


def benchmark_source(path: Path | str | None = None) -> Any:
    """The file `load_benchmark` reads: `path`, or the copy shipped inside the package."""
    if path is not None:
        return Path(path)
    return resources.files("emqlab").joinpath(*_RESOURCE)


def load_benchmark(path: Path | str | None = None) -> dict | None:
    """The measured tables {meta, rows, capacity}, or None where the file is absent."""
    source = benchmark_source(path)
    if not source.is_file():
        return None
    text = source.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EmqlabError(f"{path or BENCHMARK_FILE} is not valid JSON ({exc}); "
                          "run benchmarks/renewal_cost.py again to rewrite it") from None
    if not isinstance(data, dict):
        raise EmqlabError(f"{path or BENCHMARK_FILE} holds no table of measurements; "
                          "run benchmarks/renewal_cost.py again to rewrite it")
    return data


def benchmark_rows(path: Path | str | None = None) -> list:
    """The benchmark's rows (every design and K it ran), or [] where it has not been run."""
    return (load_benchmark(path) or {}).get("rows", [])
