"""What several test files share: nothing here is a test. A test file imports from this module, never
from another test file."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any, TypeVar

R = TypeVar("R")


def record(cls: type[R], **given: Any) -> R:
    """A scenario's record (its Params or Verdict) holding what a test names; every other field the
    record needs is None. A words test reads only the facts it names, so a None it did not expect
    fails the test loudly."""
    needed = {f.name: None for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    return cls(**{**needed, **given})
