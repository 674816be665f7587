"""Renewal cadences: how often a holder pushes its lease out, as a fraction of the lease."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import BadParameter

NAMED = {"half": 0.5, "third": 1 / 3, "quarter": 0.25}
CADENCE_HELP = "none, half, third, quarter, or a fraction of the lease > 0 (e.g. 0.5, 1/3, 1.2)"


@dataclass(frozen=True)
class Cadence:
    """`fraction` of the lease between renewals; None means the holder never renews."""

    name: str
    fraction: float | None

    def every_ms(self, lease_ms: float) -> float | None:
        return None if self.fraction is None else self.fraction * lease_ms

    @property
    def label(self) -> str:
        if self.fraction is None:
            return "no renewal"
        if self.name in NAMED:
            return {"half": "renew at TTL/2", "third": "renew at TTL/3", "quarter": "renew at TTL/4"}[self.name]
        return f"renew every {self.fraction:g} × TTL"


def parse_cadence(spec: str | float | None) -> Cadence:
    """none | half | third | quarter | a number | a/b. A fraction must be > 0."""
    if spec is None:
        return Cadence("none", None)
    if isinstance(spec, Cadence):
        return spec
    text = str(spec).strip().lower()
    if text in ("none", "off", "no"):
        return Cadence("none", None)
    if text in NAMED:
        return Cadence(text, NAMED[text])
    try:
        if "/" in text:
            num, den = text.split("/", 1)
            value = float(num) / float(den)
        else:
            value = float(text)
    except (ValueError, ZeroDivisionError):
        raise BadParameter(f"unknown renewal cadence {spec!r}; allowed: {CADENCE_HELP}") from None
    if not math.isfinite(value) or value <= 0:
        raise BadParameter(f"renewal cadence must be a fraction of the lease > 0, got {spec!r}; allowed: {CADENCE_HELP}")
    for name, fraction in NAMED.items():
        if math.isclose(value, fraction):
            return Cadence(name, fraction)
    return Cadence(f"{value:g}", value)
