"""A library's run, drawn the way the course draws its own (`emqlab tools`, the libraries lessons).

`draw_tools(modes, words, fig=None) -> Drawing`, one panel per mode (the library's failure, its fix, and, when
given, emqlab's own design facing a worker that stops, side by side; a lesson's second figure leaves it out).
In each panel, a lane per worker or holder, top to bottom in the order they first acted, and under them the
`server` lane:

- on a worker's lane, above its line, the lease band the server granted it (a job's lock, a message's
  visibility, the started registry's entry, a lease): it starts when the server first showed it and ends at
  the deadline the server reported (PTTL, a score), or where it was released or acked; a lapse cross where it
  ran out on the server; over it, for a holder that extends, an arrow from each extend to the deadline it
  left (the PTTL read right after it);
- under the line, the task body while it ran (the work band; hatched where it held its event loop; broken
  where the process was frozen, since a frozen process does no work), a freeze (SIGSTOP, the pause band), and
  the marks of what the process did or was told: the effect it wrote, a kill, an exception that told it it
  had lost the lock, a refused release or completion, a renewal thread that died, a job it found done; in a
  run with no completion to ask for (emqlab's lock, facing redis-py's), the job done where its work ran to
  its end;
- on the `server` lane, what the library's keys did: claimed, delivered again, acked (the message's entry
  deleted), taken back (stalled, reaped), abandoned, requeued, failed, done; for emqlab's own runs, the
  store's answer to each write (an effect written, or refused) and the reap or reclaim that took a job
  back. Marks that fall at one moment stack upward, in the order they were recorded, so none hides another.

Every mark is the course's (`emqlab.core.marks`) and a recorded event or interval of the run; the titles and
the readout are the run's words.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.transforms import offset_copy

from ..core.kinds import Kind
from ..core.timeline import Timeline
from ..core.words import FigureWords
from ..store.clock import to_s
from . import Drawing, figure_for, legend_of_marks, modes_of, style, wrap

BAND_Y, BAND_H = 0.08, 0.28  # the server's grant, above a lane's line
RUN_Y, RUN_H = -0.30, 0.22  # the body, below it
SERVER = "server"
QUIET = ("server", "producer", "store")

# a figure's own labels, made from an event and its data: never recorded, so no `Kind` (a library's error that
# says its lock was gone at the completion; emqlab's store taking or refusing a write)
COMPLETION_REFUSED, WRITE_ACCEPTED, WRITE_REFUSED = "completion_refused", "write_accepted", "write_refused"
# a worker's own marks: event kind -> the table's mark, and where on the lane it sits (PLACE). A mark of what the
# process did sits on its body (the effect) or its line; the server's answer to it sits on its band
OWN = {
    Kind.EFFECT: "effect",
    Kind.CRASH: "crash",
    Kind.TOLD: "told",
    Kind.RENEW_LOST: "told",
    Kind.RENEWAL_THREAD_DIED: "thread-died",
    Kind.RELEASE_REFUSED: "refused",
    Kind.COMPLETE_REFUSED: "refused",
    COMPLETION_REFUSED: "refused",
    Kind.SKIPPED: "saw-done",
}
PLACE = {Kind.EFFECT: "body", Kind.CRASH: "line", Kind.TOLD: "body", Kind.RENEW_LOST: "body",
         Kind.RENEWAL_THREAD_DIED: "line", Kind.RELEASE_REFUSED: "band", Kind.COMPLETE_REFUSED: "band",
         COMPLETION_REFUSED: "band", Kind.SKIPPED: "line"}
# the server lane's marks: event kind -> the table's mark
ON_SERVER = {
    Kind.DELIVERED: "claim",
    Kind.REDELIVERED: "redelivered",
    Kind.ACKED: "acked",  # the message's entry deleted: by the ack of whichever run ended first, not the job done
    Kind.COMPLETED: "done",
    WRITE_ACCEPTED: "effect",  # emqlab's store taking a write: the effect, written
    Kind.STALLED: "taken-back",
    Kind.REAP: "taken-back",
    Kind.ABANDONED: "abandoned",
    Kind.REQUEUED: "requeued",
    Kind.FAILED: "failed",
    WRITE_REFUSED: "refused",
}
# each mark's size, in points
SIZE = {"effect": 10, "crash": 14, "told": 11, "thread-died": 10, "refused": 11, "saw-done": 9, "claim": 10,
        "redelivered": 11, "done": 10, "acked": 10, "taken-back": 9, "abandoned": 11, "requeued": 11, "failed": 10,
        "lapse": 12}
ENDED_ON_SERVER = ("lapsed", "abandoned", "delivered again")
TAKEN_BACK = (Kind.REAP, Kind.RECLAIM)  # emqlab's own runs: a reaper's reap, a contender's reclaim of a lapsed lease
COMPLETIONS = (Kind.COMPLETE, Kind.COMPLETE_REFUSED, COMPLETION_REFUSED)  # a run whose job is settled by a completion
NEAR = 0.012  # marks on one lane closer than this part of the axis stack upward
STACK = 9.0  # how far (points) a stacked mark sits above the one before it


def _end(tl: Timeline) -> float:
    ends = [e.t for e in tl.events] + [x for i in tl.intervals for x in (i.start, i.end) if x is not None]
    return max(ends + [t for _, _, t in extend_deadlines(tl)], default=1.0)


def extend_deadlines(tl: Timeline) -> list[tuple[str, float, float]]:
    """(lane, when, deadline) for every extend a holder reported with the PTTL the server gave right after it."""
    return [(e.actor, e.t, e.t + to_s(e.data["pttl"])) for e in tl.events
            if e.kind == Kind.EXTEND and isinstance(e.data.get("pttl"), (int, float)) and e.data["pttl"] > 0]


def lanes_of(tl: Timeline) -> list[str]:
    """The processes' lanes, in the order they first acted (a run's server, producer and store apart)."""
    seen: dict[str, None] = {}
    for item in sorted([*tl.events, *tl.intervals], key=lambda x: getattr(x, "t", getattr(x, "start", 0))):
        if item.actor not in QUIET:
            seen.setdefault(item.actor, None)
    return list(seen)


def server_marks(tl: Timeline) -> list[tuple[float, str]]:
    """(t, kind) for every mark on the server lane: the library's events, and emqlab's store and reaps."""
    found = [(e.t, e.kind) for e in tl.events if e.actor == SERVER and e.kind in ON_SERVER]
    found += [(e.t, WRITE_ACCEPTED if e.data.get("accepted") else WRITE_REFUSED)
              for e in tl.events if e.actor == "store" and e.kind == Kind.WRITE]
    found += [(e.t, Kind.REAP) for e in tl.events if e.kind in TAKEN_BACK and e.actor != SERVER]
    return sorted(found, key=lambda x: x[0])


def stacked(times: list[float], near: float) -> list[float]:
    """How high (points) above the lane's line each mark at `times` (sorted) sits: 0, or a step above the marks
    within `near` before it, so marks at one moment (a job taken back and failed by one script) stay apart."""
    heights: list[float] = []
    for k, t in enumerate(times):
        below = [h for s, h in zip(times[:k], heights) if t - s < near]
        heights.append(max(below) + STACK if below else 0.0)
    return heights


def worked(start: float, end: float, pauses: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The stretches of [start, end] outside every pause: a frozen process does no work."""
    pieces = [(start, end)]
    for p0, p1 in sorted(pauses):
        pieces = [piece for a, b in pieces for piece in ((a, min(b, p0)), (max(a, p1), b)) if piece[1] > piece[0]]
    return pieces


def _mark(ax, t: float, y: float, name: str, gid: str, up: float = 0.0, **kw: Any) -> None:
    """Mark `name` at (t, y), `up` points higher (a mark stacked over another at the same moment)."""
    if up:
        kw["transform"] = offset_copy(ax.transData, fig=ax.figure, y=up, units="points")
    style.marker(ax, name, [t], [y], SIZE[name], gid=gid, zorder=4, clip_on=False, **kw)  # whole at t = 0


def _lane(ax, tl: Timeline, actor: str, y: float, gid: str, x_max: float) -> None:
    for band in tl.spans("lease", actor):
        end = band.end if band.end is not None else band.data.get("deadline", x_max)
        style.band(ax, "lease", band.start, y + BAND_Y, max(end - band.start, 0.02 * x_max), BAND_H, gid=gid)
        if band.data.get("ended") in ENDED_ON_SERVER:
            _mark(ax, end, y + BAND_Y + BAND_H / 2, "lapse", gid)
    for who, at, deadline in extend_deadlines(tl):
        if who == actor:  # from the extend to the deadline it left, just above the band
            style.arrow(ax, "moved", (at, y + BAND_Y + BAND_H + 0.06), (deadline, y + BAND_Y + BAND_H + 0.06),
                        gid=gid, zorder=4, mutation_scale=10, lw=1.1)
    pauses = [(p.start, p.end if p.end is not None else x_max) for p in tl.spans("pause", actor)]
    for run in tl.spans("run", actor):
        end = run.end if run.end is not None else x_max
        for start, stop in worked(run.start, end, pauses):
            frozen = any(stop == p0 for p0, _ in pauses)  # it stops where the pause begins, however short
            style.band(ax, "work-loop-held" if run.data.get("loop") == "blocked" else "work", start, y + RUN_Y,
                       stop - start if frozen else max(stop - start, 0.01 * x_max), RUN_H, gid=gid)
    for start, end in pauses:
        style.band(ax, "pause", start, y - 0.40, end - start, 0.80, lw=1.0, gid=gid)
    settles = not any(e.kind in COMPLETIONS for e in tl.events)  # a lock's story: the work's end is the job done
    for e in tl.events:
        if e.actor != actor:
            continue
        kind = e.kind
        if kind == Kind.LIBRARY_ERROR and any(w in e.data.get("message", "")
                                              for w in ("Missing lock", "Lock mismatch")):
            kind = COMPLETION_REFUSED
        if kind in OWN:
            at = {"body": y + RUN_Y + RUN_H / 2, "band": y + BAND_Y + BAND_H / 2, "line": y}[PLACE[kind]]
            _mark(ax, e.t, at, OWN[kind], gid)
        elif kind == Kind.WORK_DONE and settles and not tl.scenario.startswith("tools-"):
            _mark(ax, e.t, y + RUN_Y + RUN_H / 2, "done", gid)


def _panel(ax, name: str, tl: Timeline, words: FigureWords, chars: int) -> None:
    gid = f"mode:{name}"
    x_max = _end(tl) * 1.05 + 0.05
    style.lane(ax, name)
    actors = lanes_of(tl)
    ys = {a: float(len(actors) - k) for k, a in enumerate(actors)}
    for actor, y in ys.items():
        style.hline(ax, "lane-line", y, lw=0.8, zorder=0, gid=gid)
        _lane(ax, tl, actor, y, gid, x_max)
    style.hline(ax, "lane-line", 0, lw=1.2, zorder=0, gid=gid)
    found = server_marks(tl)
    for (t, kind), h in zip(found, stacked([t for t, _ in found], NEAR * x_max)):
        _mark(ax, t, 0.0, ON_SERVER[kind], gid, up=h)
    ax.set_yticks([*ys.values(), 0.0], [*ys, SERVER], fontsize=style.FONT["tick"])
    ax.set_ylim(-0.6, len(actors) + 0.6)
    ax.set_xlim(0, x_max)
    ax.tick_params(axis="x", labelsize=style.FONT["tick"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    unit = "real seconds" if tl.clock == "real" and tl.scenario.startswith("tools-") else "model seconds"
    ax.set_xlabel(f"{unit} since the run began", fontsize=style.FONT["tick"], labelpad=1)
    mode = words.modes[name]
    ax.set_title(mode.label, loc="left", fontsize=style.FONT["label"], fontweight="bold",
                 pad=4 + 14 * (wrap(mode.static, chars).count("\n") + 1))
    ax.text(0, 1.01, wrap(mode.static, chars), transform=ax.transAxes, ha="left", va="bottom",
            fontsize=style.FONT["tick"], color=style.INK["text"], gid=gid)


def draw_tools(timelines: Any, words: FigureWords, fig: Figure | None = None, *,
               figsize: tuple[float, float] = (12, 7.2)) -> Drawing:
    """A library's runs (and emqlab's own design, if given): one panel per mode (two columns from
    four modes on), lanes per process and the server's lane; the readout line under the panels."""
    modes = modes_of(timelines, words, "draw_tools")
    fig = figure_for(fig, figsize)
    cols = 1 if len(modes) < 4 else 2
    rows = -(-len(modes) // cols)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    chars = max(30, int(fig.get_figwidth() / cols * 72 / (style.FONT["tick"] * 0.56)) - 6)
    for ax, (name, tl) in zip(axes, modes.items()):
        _panel(ax, name, tl, words, chars)
    for ax in axes[len(modes):]:
        ax.set_visible(False)
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False, handlelength=1.6,
                    columnspacing=1.0)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")  # Drawing.fit wraps it and keeps room for it under the axes
    return Drawing(fig, words, dict(modes), readout)
