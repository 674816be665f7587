"""Renewal cadences: how often a holder pushes its lease out, as a fraction of the lease.

`CADENCES` names each cadence once (its CLI name, fraction, label and a one-line
description); the labels, the CLI help and the error messages all read it, so a cadence added
here is offered everywhere."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.errors import BadParameter
from ..core.ranges import get


@dataclass(frozen=True)
class NamedCadence:
    """One cadence the course names: `fraction` of the lease between renewals (None: never)."""

    name: str
    fraction: float | None
    label: str
    description: str


CADENCES: dict[str, NamedCadence] = {c.name: c for c in (
    NamedCadence("none", None, "no renewal", "the holder never renews: the lease lapses at its TTL"),
    NamedCadence("half", 1 / 2, "renew at TTL/2", "extend every half lease: one missed extend is survived"),
    NamedCadence("third", 1 / 3, "renew at TTL/3", "extend every third of the lease: two missed extends survived"),
    NamedCadence("quarter", 1 / 4, "renew at TTL/4", "extend every quarter lease: three missed extends survived"),
)}
NAMED = {name: c.fraction for name, c in CADENCES.items() if c.fraction is not None}  # the renewing ones
ALIASES = {"off": "none", "no": "none"}


def cadence_help(renewing: bool = False) -> str:
    """The allowed cadences in words, for the CLI help and error messages (renewing: leave out "none")."""
    names = [name for name, c in CADENCES.items() if not (renewing and c.fraction is None)]
    return f"{', '.join(names)}, or a fraction of the lease from {get('cadence').text()} (e.g. 0.5, 1/3, 1.2)"


CADENCE_HELP = cadence_help()
CADENCE_RANGE = get("cadence")


@dataclass(frozen=True)
class Cadence:
    """`fraction` of the lease between renewals; None means the holder never renews."""

    name: str
    fraction: float | None

    def every_ms(self, lease_ms: float) -> float | None:
        return None if self.fraction is None else self.fraction * lease_ms

    @property
    def named(self) -> NamedCadence | None:
        return CADENCES.get(self.name)

    @property
    def label(self) -> str:
        return self.named.label if self.named else f"renew every {self.fraction:g} × TTL"


def parse_cadence(spec: str | float | None) -> Cadence:
    """none | half | third | quarter | a number | a/b. A fraction must be > 0."""
    if spec is None:
        return Cadence("none", None)
    if isinstance(spec, Cadence):
        return spec
    text = str(spec).strip().lower()
    text = ALIASES.get(text, text)
    if text in CADENCES:
        return Cadence(text, CADENCES[text].fraction)
    try:
        if "/" in text:
            num, den = text.split("/", 1)
            value = float(num) / float(den)
        else:
            value = float(text)
    except (ValueError, ZeroDivisionError):
        raise BadParameter(f"unknown renewal cadence {spec!r}; allowed: {CADENCE_HELP}") from None
    if not math.isfinite(value) or not CADENCE_RANGE.low <= value <= CADENCE_RANGE.high:
        raise BadParameter(f"renewal cadence must be a fraction of the lease from {CADENCE_RANGE.text()}, got {spec!r}; "
                           f"allowed: {CADENCE_HELP}")
    for name, fraction in NAMED.items():
        if math.isclose(value, fraction):
            return Cadence(name, fraction)
    return Cadence(f"{value:g}", value)
