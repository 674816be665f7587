"""Drawing: read Timelines (plain data), return matplotlib Figures. Never runs a scenario.

The figure protocol every drawing function follows, so one generic widget can drive any of them:
- it takes data (Timelines or result dicts) and an optional `fig`; with none it makes a plain
  `matplotlib.figure.Figure` (export), the widget passes an ipympl figure in;
- each artist that belongs to a mode carries `gid = "mode:<name>"`; each mode has exactly one
  lane background patch with `gid = "lane:<name>"`, the target a pointer hovers or clicks;
- it sets `fig.emqlab_modes = {name: {"label": str, "readout": str, "verdict": str}}` (insertion
  order = display order) and `fig.emqlab_caption` (the figure's one-line caption).

Optional, and used by `emqlab.widgets.ModeExplorer` when present:
- `fig.emqlab_timelines = {name: Timeline}`, what the event stepper walks (without it, the
  explorer walks the data it was given if that is a {mode: Timeline} dict);
- `fig.emqlab_readout`, a Text artist in the figure that the explorer rewrites with the lit
  mode's readout (so an exported frame carries its readout line too).
The explorer clears the figure and calls the drawing function again whenever its sliders re-run a
scenario; a drawing function must draw into the `fig` it is given, from scratch.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..timeline import Timeline


def as_modes(timelines: Any, key: Callable[[Timeline], str], what: str) -> dict[str, Timeline]:
    """One Timeline, a list (named by `key`, a repeat gets a suffix) or a dict {mode: Timeline}."""
    if isinstance(timelines, Timeline):
        timelines = [timelines]
    if isinstance(timelines, Mapping):
        modes = dict(timelines)
    elif isinstance(timelines, Sequence) and not isinstance(timelines, str):
        modes = {}
        for tl in timelines:
            name = key(tl)
            modes[name if name not in modes else f"{name}-{len(modes) + 1}"] = tl
    else:
        raise TypeError(f"{what} takes Timelines: one, a list, or a dict {{mode: Timeline}}")
    if not modes:
        raise ValueError(f"{what} needs at least one Timeline")
    return modes
