"""What an exploration and a replay found, as the records their runs' JSON carries."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.timeline import Verdict


@dataclass(frozen=True, kw_only=True)
class ExploreVerdict(Verdict):
    """What the search found. `states`: distinct states; `transitions`: steps tried; `depth_reached`:
    the deepest new state; `complete`: every state within the depth was explored (the budget did not
    cut the search); `violations`: broken steps (and the first state progress failed from); `counterexample`:
    the shortest schedule to the first (its steps with what the store answered each, and when), or None;
    `invariant` and `broken`: which invariant broke and how; `tried`: for progress, the fair schedule's steps
    tried from the state the counterexample reaches; `margin`: the least distance (model s) of the
    counterexample's beats from a deadline (what a replay's scale is set from); `progress_checked`: states
    whose fair schedule ran; `levels`: new states at each depth (0 = the start); `seconds`: wall time."""

    states: int
    transitions: int
    depth_reached: int
    complete: bool
    violations: int
    counterexample: list | None
    invariant: str | None
    broken: str | None
    tried: list | None = None
    margin: float | None = None
    progress_checked: int = 0
    levels: list
    seconds: float


@dataclass(frozen=True, kw_only=True)
class ReplayVerdict(Verdict):
    """A schedule played on a store. `expected`: the invariant the search saw break at its last step;
    `broke_at`: the step (1-based) where an invariant first broke here, or None; `invariant`, `broken`:
    which and how; `same`: the same invariant broke at the same, last step; `why`: when not, the first
    step the store answered otherwise than in the search; `scale`: real seconds per model second."""

    steps: int
    expected: str | None
    broke_at: int | None
    invariant: str | None
    broken: str | None
    same: bool
    why: str | None
    scale: float | None
    store: str
