"""The explorer's figures: a schedule drawn step by step, and the search space growing with depth.

`draw_schedule(timelines, words, fig=None, breaks=None) -> Drawing`: one panel per mode (the schedule
the search found on fakeredis, its replay on a live server, a violation's window in any history). The
x axis counts steps, not seconds: most of a schedule's steps take no model time, and only a freeze or
a beat moves the clock, so each step's model time is printed under its number. A lane per actor
(workers, the reaper), each step a mark in its actor's lane with what the store answered (`MARKS`: the
course's mark for each kind of event); a worker's band runs from its claim to the step it lets go
(`belief`, a dashed outline: what it believes it holds), filled where the store's own snapshot after the
step shows it the job's holder (`lease` while its lease runs, by the server's ZSCORE against TIME;
`lapsed-lease` once it has lapsed unreaped). Under the lanes, the store lane says where each job is after
each step. `breaks` {mode: (step, invariant)}: the step shaded (`breaks`) where an invariant broke.

`draw_growth(timelines, words, fig=None)`: the states the search found at each depth (bars) and in all
(a line), one look per run (`growth_looks`): no look a course mark already has, so no run reads as an
event (a purple diamond is a job taken back, a green dot a job done, wherever it appears).

`draw_space(space, words, fig=None)`: the explored graph itself (`scenarios.explore.state_space`), a column
per depth, every state a mode (`state <id>`) with a tile under its dot as its lane, the steps tried from it
its lines, the shortest counterexample's path over them, and the state its last step broke marked.

Every artist of a mode carries `gid = "mode:<name>"`, each panel one `lane:<name>` patch; the legend is
built from the marks (`legend_of_marks`); titles are the words' labels and static verdicts.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from matplotlib.figure import Figure

from ..core.kinds import Kind
from ..core.marks import RUN_FAMILIES, RUNS, SERIES, series
from ..core.timeline import Event, Timeline
from ..core.words import FigureWords
from . import Drawing, figure_for, legend_of_marks, modes_of, style

STORE = "store"
QUIET = (Kind.SNAPSHOT, Kind.ENQUEUE)  # events that are no step of their own

# a figure's own labels, made from an event's kind and its data (`_kind`): never recorded, so no `Kind`
EXTEND_LOST, WRITE_REFUSED = "extend-lost", "write-refused"
# kind -> the course's mark (`emqlab.core.marks`); `held`/`accepted` flags pick the kind (`_kind`), a reap
# that took nothing back is `reap-idle` (`_mark`), any kind not here is `other`
MARKS: dict[str, str] = {
    Kind.CLAIM: "claim",
    Kind.ACQUIRE: "claim",
    Kind.TOKEN: "claim",
    Kind.EXTEND: "extend",
    EXTEND_LOST: "told",
    Kind.EFFECT: "effect",
    Kind.WRITE: "effect",
    Kind.WORK_DONE: "done",
    Kind.COMPLETE: "done",
    Kind.EFFECT_REFUSED: "refused",
    Kind.COMPLETE_REFUSED: "refused",
    WRITE_REFUSED: "refused",
    Kind.RELEASE_REFUSED: "refused",
    Kind.REAP: "taken-back",
    Kind.FREEZE: "freeze",
    Kind.PAUSE_START: "freeze",
    Kind.CRASH: "crash",
}
OTHER = "other"
CARD_W, CARD_H = 0.46, 0.12  # a growth figure's card per mode (axes fractions)


def _kind(e: Event) -> str:
    if e.kind in (Kind.EXTEND, Kind.LATE_EXTEND) and e.data.get("held") is False:
        return EXTEND_LOST
    if e.kind == Kind.WRITE and not e.data.get("accepted", True):
        return WRITE_REFUSED
    return e.kind


def _mark(e: Event) -> str:
    """The mark of one step's event: its kind's; a reap that took nothing back, the idle reap's."""
    kind = _kind(e)
    if kind == Kind.REAP and not e.data.get("jobs"):
        return "reap-idle"
    return MARKS.get(kind, OTHER)


def _text(e: Event) -> str:
    """What one step's mark says: the event's own fields, no sentence about the run."""
    d, kind = e.data, _kind(e)
    job = d.get("job", "")
    if kind == Kind.CLAIM:
        return f"claim {job} · attempts {d.get('attempts')}"
    if kind in (Kind.EXTEND, EXTEND_LOST):
        return f"extend {job}: {'held' if kind == Kind.EXTEND else 'lost'}".replace("  ", " ")
    if kind == Kind.EFFECT:  # under which attempts it was written: what the fence judges
        applied = d.get("applied")
        return f"effect {job} · attempts {d.get('attempts')}" + (f" · applied ×{applied}" if applied and applied > 1
                                                                 else "")
    if kind == Kind.WRITE:
        return f"write · ×{d['applied']}" if d.get("applied") else "write accepted"
    if kind in (Kind.EFFECT_REFUSED, Kind.COMPLETE_REFUSED, WRITE_REFUSED):
        return f"{'effect' if kind != Kind.COMPLETE_REFUSED else 'complete'} {job} refused".replace("  ", " ")
    if kind == Kind.COMPLETE:
        return f"complete {job}"
    if kind == Kind.REAP:
        jobs = d.get("jobs") or []
        return f"reap {', '.join(jobs)}" if jobs else "reap: none due"
    if kind == Kind.FREEZE:
        return f"freeze {d.get('seconds', 0):g} s"
    if kind == Kind.CRASH:
        return "crash"
    if kind == Kind.CLAIM_EMPTY:
        return "claim: none ready"
    return kind.replace("_", " ")


def _steps(tl: Timeline) -> list[tuple[int, Event, Event | None]]:
    """(step number, the step's event, the store's snapshot after it); step 0 is the start."""
    events = tl.events
    numbered = any("step" in e.data for e in events)
    out: list[tuple[int, Event, Event | None]] = []
    for e in events:
        if e.kind in QUIET or (e.actor == STORE and e.kind == Kind.SNAPSHOT):
            continue
        k = e.data["step"] if numbered else len(out) + 1
        if numbered and out and out[-1][0] == k:
            continue  # one mark per step: its first event says what it was
        out.append((k, e, None))
    snaps = {e.data["step"]: e for e in events if e.kind == Kind.SNAPSHOT and "step" in e.data}
    return [(k, e, snaps.get(k)) for k, e, _ in out]


def _lanes(tl: Timeline, steps) -> list[str]:
    actors = [e.actor for _, e, _ in steps]
    workers = sorted({a for a in actors if a.startswith("worker")} | {a for a in tl.actors if a.startswith("worker")})
    others = list(dict.fromkeys(a for a in actors if a not in workers))
    return workers + others


def _where(snap: Event | None) -> str:
    if snap is None:
        return ""
    lines = []
    left = snap.data.get("lease_left", {})
    for job, row in snap.data.get("jobs", {}).items():
        places = " + ".join(row.get("places") or ["nowhere"])
        lease = left.get(job)
        tail = "" if lease is None or "active" not in (row.get("places") or []) else (
            f" {round(lease, 1):g} s" if lease > 0 else " lapsed")
        lines.append(f"{job} {places}{tail}")
    return "\n".join(lines)


def _holder(tl: Timeline, snap: Event | None, job: str, upto: float) -> str | None:
    """The worker whose claim gave the job the attempts the snapshot shows (the store's holder)."""
    if snap is None:
        return None
    row = snap.data.get("jobs", {}).get(job, {})
    if "active" not in (row.get("places") or []) or row.get("state") != "active":
        return None
    claim = tl.last(Kind.CLAIM, where=lambda e: e.data.get("job") == job
                    and e.data.get("attempts") == row.get("attempts") and e.data.get("step", 0) <= upto)
    return claim.actor if claim else None


def _beliefs(tl: Timeline, steps) -> list[tuple[str, int, int]]:
    """(worker, from step, to step): from a claim to the step the worker let the job go."""
    out: list = []
    open_: dict = {}
    last = steps[-1][0] if steps else 0
    for k, e, _ in steps:
        kind = _kind(e)
        if kind == Kind.CLAIM:
            open_[e.actor] = k
        elif e.actor in open_ and (kind in (Kind.COMPLETE, Kind.EFFECT_REFUSED, Kind.COMPLETE_REFUSED, EXTEND_LOST,
                                            Kind.CRASH)
                                   or (kind == Kind.EFFECT and e.data.get("fenced"))):
            out.append((e.actor, open_.pop(e.actor), k))
    out += [(a, k, last + 0.5) for a, k in open_.items()]
    return out


def _panel(ax, name: str, tl: Timeline, words: FigureWords, n_max: int, brk: tuple[int, str] | None) -> None:
    gid = f"mode:{name}"
    style.lane(ax, name)
    steps = _steps(tl)
    lanes = _lanes(tl, steps)
    snaps = [e for e in tl.events if e.kind == Kind.SNAPSHOT]
    jobs = max((len(e.data.get("jobs", {})) for e in snaps), default=0)
    store_h = 0.0 if not snaps else 0.45 + 0.42 * jobs
    ys = {a: store_h + (0.75 if snaps else 0.5) + (len(lanes) - 1 - k) for k, a in enumerate(lanes)}
    width_in = ax.get_figure().get_figwidth() * 0.86 / (n_max + 1)
    chars = max(9, int(width_in * 72 / (style.FONT["tick"] * 0.56)))
    # what each worker believes it holds, and where the store says it does
    for actor, a, b in _beliefs(tl, steps):
        y = ys[actor]
        style.band(ax, "belief", a, y + 0.12, b - a, 0.22, gid=gid)
    by_step = {k: snap for k, _, snap in steps}
    first_snap = next((e for e in snaps if e.data.get("step") == 0), None)
    for k, _, snap in steps:
        if snap is None:
            continue
        for job in snap.data.get("jobs", {}):
            holder = _holder(tl, snap, job, k)
            if holder is None or holder not in ys:
                continue
            left = snap.data.get("lease_left", {}).get(job)
            lapsed = left is not None and left <= 0
            nxt = min((j for j in by_step if j > k), default=k + 0.5)
            style.band(ax, "lapsed-lease" if lapsed else "lease", k, ys[holder] + 0.12, nxt - k, 0.22, alpha=0.75,
                       gid=gid)
    for k, e, snap in steps:
        mark = _mark(e)
        y = ys[e.actor]
        style.marker(ax, mark, [k], [y], size=15 if mark == "crash" else 12, gid=gid, zorder=3)
        if e.actor.startswith("worker"):  # under the mark: the lane below starts with a band, clear of it
            label = "\n".join(textwrap.fill(part, chars) for part in _text(e).split(" · "))  # a part a line
            ax.annotate(label, (k, y), xytext=(0, -11), textcoords="offset points",
                        ha="center", va="top", fontsize=style.FONT["tick"], gid=gid)
        else:  # beside the mark: the lane below may be the store's, whose words sit right under its edge
            ax.annotate(_text(e), (k, y), xytext=(10, 0), textcoords="offset points", ha="left", va="center",
                        fontsize=style.FONT["tick"], gid=gid)
    if snaps:
        style.hline(ax, "lane-line", store_h, lw=1, gid=gid)  # the store lane's edge
        for k, snap in ([(0, first_snap)] if first_snap else []) + [(k, s) for k, _, s in steps]:
            text = _where(snap)
            if text:
                ax.text(k, store_h - 0.12, "\n".join(textwrap.fill(line, chars) for line in text.split("\n")),
                        ha="center", va="top", fontsize=style.FONT["tick"], color=style.INK["text"], gid=gid)
    if brk is not None:
        k, invariant = brk
        k = steps[-1][0] if k is None and steps else k
        style.span(ax, "breaks", k - 0.45, k + 0.45, alpha=0.35, gid=gid)
        ax.annotate(f"{invariant} breaks", (k, 1.0), xycoords=("data", "axes fraction"), xytext=(0, -3),
                    textcoords="offset points", ha="center", va="top", fontsize=style.FONT["tick"],
                    color=style.INK["text"], fontweight="bold", gid=gid)
    ticks = [0] * bool(first_snap) + [k for k, _, _ in steps]
    times = {0: 0.0, **{k: (snap or e).t for k, e, snap in steps}}  # when the step ended: the store read after it
    ax.set_xticks(ticks, [("start" if k == 0 else f"{k}") + f"\n{times[k]:g} s" for k in ticks])
    ax.set_yticks([*ys.values(), *([store_h / 2] if snaps else [])], [*ys, *(["store"] if snaps else [])])
    ax.set_xlim(-0.6 if first_snap else 0.4, n_max + 0.6)
    ax.set_ylim(0 if snaps else min(ys.values()) - 0.9, max(ys.values()) + (1.0 if brk is not None else 0.6))
    ax.tick_params(labelsize=style.FONT["tick"], length=0)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    mode = words.modes[name]
    ax.set_title(f"{mode.label}\n{mode.static}", fontsize=style.FONT["label"], loc="left")


def draw_schedule(timelines: Any, words: FigureWords, fig: Figure | None = None, *,
                  breaks: Mapping[str, tuple[int, str]] | None = None,
                  figsize: tuple[float, float] = (12, 7.2)) -> Drawing:
    """Schedules step by step (runs of `emqlab.scenarios.explore` and `replay`, or a history's windows),
    one panel per mode; `breaks`: {mode: (step, invariant)} shades the step where an invariant broke (step
    None: the last)."""
    modes = modes_of(timelines, words, "draw_schedule")
    fig = figure_for(fig, figsize)
    n_max = max((max((k for k, _, _ in _steps(tl)), default=1) for tl in modes.values()), default=1)
    axes = fig.subplots(len(modes), 1, squeeze=False)[:, 0]
    for ax, (name, tl) in zip(axes, modes.items()):
        _panel(ax, name, tl, words, n_max, (breaks or {}).get(name))
    numbered = any("step" in e.data for tl in modes.values() for e in tl.events)
    axes[-1].set_xlabel("step, and the model time it ended at" if numbered else "event, and its time (model seconds)",
                        fontsize=style.FONT["label"])
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False, handlelength=1.4,
                    columnspacing=1.0)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")
    return Drawing(fig, words, dict(modes), readout)


def growth_looks(modes: Mapping[str, Timeline]) -> dict[str, tuple[str, str, str | None]]:
    """Each run's (colour, marker, its series' name or None). Runs of different designs take their design's
    look from the benchmarks' table (`marks.SERIES`, as lessons 04 and 08 draw a design; named "emqlab
    <design>"); runs of one design, in order, the side-by-side looks (`marks.RUNS`). Neither table holds a
    look a course marker has (tests/plot/test_marks.py), so no run reads as an event."""
    designs = [getattr(tl.params, "design", None) for tl in modes.values()]
    if None not in designs and len(set(designs)) == len(designs) and all(f"emqlab {d}" in SERIES for d in designs):
        return {name: (*series(f"emqlab {design}"), f"emqlab {design}") for name, design in zip(modes, designs)}
    return {name: (*RUNS[k % len(RUNS)], None) for k, name in enumerate(modes)}


def draw_growth(timelines: Any, words: FigureWords, fig: Figure | None = None, *,
                figsize: tuple[float, float] = (12, 6)) -> Drawing:
    """How the search space grows: new states at each depth (bars) and all states so far (a line), one
    run's look (colour, marker) per mode (runs of `emqlab.scenarios.explore`: their verdicts' `levels`)."""
    modes = modes_of(timelines, words, "draw_growth")
    fig = figure_for(fig, figsize)
    ax = fig.subplots()
    width = 0.8 / len(modes)
    top = 1
    looks = growth_looks(modes)
    ends: set[tuple[int, int]] = set()
    for k, (name, tl) in enumerate(modes.items()):
        gid = f"mode:{name}"
        levels = list(tl.verdict.levels)
        xs = [d + (k - (len(modes) - 1) / 2) * width for d in range(len(levels))]
        colour, symbol, named = looks[name]
        bars_said, line_said = (f"{named}, {family}" if named else f"{family}: {words.modes[name].label}"
                                for family in RUN_FAMILIES)
        for bar in ax.bar(xs, levels, width=width * 0.95, color=colour, alpha=0.55):
            bar.set_gid(gid)
            bar.set_label(bars_said)
        running, total = [], 0
        for n in levels:
            total += n
            running.append(total)
        ax.plot(range(len(levels)), running, color=colour, marker=symbol, lw=2, gid=gid, label=line_said)
        if (len(levels), total) not in ends:  # runs that end at one count share its number (lines on one another)
            ends.add((len(levels), total))
            ax.annotate(f"{total:,}", (len(levels) - 1, total), xytext=(6, 0), textcoords="offset points",
                        va="center", fontsize=style.FONT["tick"], color=colour, gid=gid)
        top = max(top, total)
        # each mode's lane: a card at the top left with its label and verdict, the target a pointer hovers
        mode = words.modes[name]
        y0 = 0.985 - CARD_H * (k + 1)
        style.lane(ax, name, xy=(0.01, y0), size=(CARD_W, CARD_H * 0.9)).set_edgecolor(colour)
        ax.text(0.02, y0 + CARD_H * 0.45, f"{mode.label}\n{mode.static}", transform=ax.transAxes, va="center",
                ha="left", fontsize=style.FONT["tick"], color=colour, gid=gid)
    ax.set_ylim(0, top * (1.25 + 0.15 * len(modes)))
    ax.set_xlabel("depth: steps from the start", fontsize=style.FONT["label"])
    ax.set_ylabel("distinct states", fontsize=style.FONT["label"])
    ax.tick_params(labelsize=style.FONT["tick"])
    ax.set_title("distinct states the search met, by depth", fontsize=style.FONT["label"], loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")
    return Drawing(fig, words, dict(modes), readout)


# -- the state space, walkable ---------------------------------------------------------------------------------
STATE = "state {}".format  # a state's mode: "state 23"
CURVE = 0.22  # how far a step back to a state met before bends away from the straight line (axes height)


def space_layout(states: list) -> dict[int, tuple[float, float]]:
    """Where each state sits: x its depth, y its place in its depth's column (0 at the bottom, 1 at the top),
    the states of a column in the order of their parents' places, then of the steps that reached them, so the
    steps from a parent to the states it found first never cross."""
    columns: dict[int, list] = {}
    for s in states:
        columns.setdefault(s["depth"], []).append(s)
    place: dict[int, tuple[float, float]] = {}
    order: dict[int, float] = {}
    for depth in sorted(columns):
        col = columns[depth]

        def rank(s: dict) -> tuple:
            parent = s["parent"]
            if parent is None:
                return (0.0, 0)
            steps = [e["step"] for e in states[parent]["next"]]
            return (-order.get(parent, 0.0), steps.index(s["step"]) if s["step"] in steps else len(steps))

        col.sort(key=rank)
        n = len(col)
        for k, s in enumerate(col):
            y = 0.5 if n == 1 else 1 - k / (n - 1)
            place[s["id"]] = (float(depth), y)
            order[s["id"]] = y
    return place


def _edge(a: tuple[float, float], b: tuple[float, float], right: float) -> tuple[list[float], list[float]]:
    """A step's line from state a to state b: straight to the next column; curved to a state met before (in
    its own column or an earlier one), so it does not run over the states between, bowed toward the middle of
    the figure (or to the right, between two states of one column) and never past y 0..1 nor x `right`."""
    (x0, y0), (x1, y1) = a, b
    if x1 == x0 + 1:
        return [x0, x1], [y0, y1]
    dx, dy = x1 - x0, y1 - y0
    norm = max((dx * dx + dy * dy) ** 0.5, 1e-9)
    nx, ny = -dy / norm, dx / norm  # the left normal
    mx, my = (x0 + x1) / 2, (y0 + y1) / 2
    sign = (1 if ny * (0.5 - my) >= 0 else -1) if abs(ny) > 1e-6 else (1 if nx > 0 else -1)
    cx = min(max(mx + sign * nx * CURVE, -0.3), right)
    cy = min(max(my + sign * ny * CURVE, 0.0), 1.0)
    ts = [k / 16 for k in range(17)]
    return ([(1 - t) ** 2 * x0 + 2 * (1 - t) * t * cx + t * t * x1 for t in ts],
            [(1 - t) ** 2 * y0 + 2 * (1 - t) * t * cy + t * t * y1 for t in ts])


def draw_space(space: Any, words: FigureWords, fig: Figure | None = None, *,
               figsize: tuple[float, float] = (12, 7.2)) -> Drawing:
    """The explored graph (`emqlab.scenarios.explore.state_space`): a column per depth, a `state` mark per
    state reached, a `step-tried` line per step tried from it (straight to the next column, curved to a state
    met before; a step that leads back to its own state is in its words only), a step that broke an invariant
    a short line to a `broken-state` mark (the search does not go on from it), the shortest counterexample a
    `counterexample` line over its states. Each state is a mode (`STATE(id)`): its dot, its lane (a tile
    under the dot) and the steps from it carry its gid, so pointing at it lights it and the steps that lead
    on, and the readout says its keys, what each worker believes and where each step leads (`words`)."""
    fig = figure_for(fig, figsize)
    ax = fig.subplots()
    states = space.states
    place = space_layout(states)
    depth = max(p[0] for p in place.values())
    counts = dict(enumerate(space.timeline.verdict.levels))  # the states the search counted at each depth
    tallest = max(sum(1 for s in states if s["depth"] == d) for d in range(int(depth) + 1))
    tile_h = min(0.9 / max(tallest - 1, 1), 0.08)
    for s in states:  # the lanes first, in the order of the states' ids: Tab walks the search's own order
        x, y = place[s["id"]]
        tile = style.lane(ax, STATE(s["id"]), transform=ax.transData, xy=(x - 0.12, y - tile_h / 2),
                          size=(0.24, tile_h))
        tile.set_zorder(1.5)  # over the steps' lines (a line crossing a tile would take the pointer), under the path
    for s in states:
        gid = f"mode:{STATE(s['id'])}"
        a = place[s["id"]]
        stubs = [e for e in s["next"] if e["to"] is None]
        for e in s["next"]:
            if e["to"] is None or e["to"] == s["id"]:
                continue
            xs, ys = _edge(a, place[e["to"]], depth + 0.3)
            style.line(ax, "step-tried", xs, ys, lw=0.7, alpha=0.6, gid=gid, zorder=1)
        for k, _ in enumerate(stubs):  # a broken step: a short line, fanned, to where the search stopped
            dy = (k - (len(stubs) - 1) / 2) * tile_h * 0.8
            end = (a[0] + 0.32, a[1] + dy)
            style.line(ax, "step-tried", [a[0], end[0]], [a[1], end[1]], lw=0.7, alpha=0.6, gid=gid, zorder=1)
            style.marker(ax, "broken-state", [end[0]], [end[1]], size=4.5, gid=gid, zorder=3)
        name = "broken-state" if s.get("broken") else "state"
        style.marker(ax, name, [a[0]], [a[1]], size=9 if s.get("broken") else 6, gid=gid, zorder=4)
    if len(space.path) > 1:
        xs, ys = zip(*(place[i] for i in space.path))
        style.line(ax, "counterexample", xs, ys, lw=3, zorder=2)
    end = states[space.path[-1]] if space.path else None
    if end is not None and end.get("broken"):
        x, y = place[end["id"]]
        ax.annotate(f"{end['broken']['invariant']} breaks", (x, y), xytext=(0, 12), textcoords="offset points",
                    ha="center", va="bottom", fontsize=style.FONT["tick"], fontweight="bold", color=style.INK["text"],
                    zorder=5)  # with the path: lit whatever state is
    ticks = list(range(int(depth) + 1))
    ax.set_xticks(ticks, [f"{'start' if d == 0 else d}\n{counts.get(d, 0)} state{'s' * (counts.get(d, 0) != 1)}"
                          for d in ticks])
    ax.set_yticks([])
    ax.set_xlim(-0.45, depth + 0.5)
    ax.set_ylim(-0.06, 1.06)
    ax.tick_params(labelsize=style.FONT["tick"], length=0)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("steps from the start (depth), and the states the search met there", fontsize=style.FONT["label"])
    v = space.timeline.verdict
    ax.set_title(f"{v.label}\n{v.static}", fontsize=style.FONT["label"], loc="left")
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")
    return Drawing(fig, words, {}, readout)
