"""The course's first figure: the renewal heartbeat, one stacked panel per mode.

Each panel has two lanes, holder and contender. A lane shows the lease band (from the `lease`
intervals, whose ends are the deadlines the server reported), the work (`run`), renewal ticks,
stop-the-world pauses, the lapse, and the stretch where both workers ran the job at once. Under
the panels sits the readout line; each panel's title carries its static verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from ..renewal import parse_cadence
from ..timeline import Timeline, minus
from . import as_modes, style

LANES = {"holder": 1.0, "contender": 0.0}
BAND_Y, BAND_H = 0.06, 0.30  # lease band, above the lane's centre line
RUN_Y, RUN_H = -0.30, 0.20  # work bar, below it


def seconds(x: float | None) -> str:
    """A model time for a sentence, rounded to the half second: a live run's few milliseconds of
    jitter (the server's PTTL, scaled) must not change what a learner reads."""
    if x is None:
        return "never"
    return f"{round(x * 2) / 2:g} s"


def mode_label(timeline: Timeline) -> str:
    return parse_cadence(timeline.params.get("renew")).label


def readout(timeline: Timeline, label: str | None = None) -> str:
    """One sentence: what happened in this run, in the figure's words."""
    p, v = timeline.params, timeline.verdict
    label, lease, job = label or mode_label(timeline), seconds(p["lease"]), seconds(p["job"])
    # A holder told by a 0 reply is the pause story, even if it worked on for an instant after
    # waking (on a real clock the renewer's reply lands a few milliseconds after the work resumes).
    if v.get("renew_lost_at") is not None:
        who = ("the contender reclaimed the job and finished it" if v.get("reclaimed_at") is not None
               else "nobody finished the job")
        return (f"{label}: the lease lapsed at {seconds(v['lapsed_at'])} while the holder was frozen; its next "
                f"extend at {seconds(v['renew_lost_at'])} replied 0, it stopped at once, and {who}.")
    if v.get("double_run"):
        return (f"{label}: the {lease} lease lapsed at {seconds(v['lapsed_at'])}; the contender took the key "
                f"at {seconds(v['reclaimed_at'])} and started the job again, so it ran twice at once.")
    if v.get("lapsed_at") is None and v.get("finished_once"):
        if p.get("cadence"):  # the cadence, not the count: on a live clock the last tick can race the job's end
            return (f"{label}: a token-checked extend every {seconds(p['cadence'] * p['lease'])} kept the "
                    f"{lease} lease alive; the {job} job finished once.")
        return f"{label}: the {lease} lease outlasted the {job} job; it finished once."
    return f"{label}: the lease lapsed at {seconds(v.get('lapsed_at'))}; the job ran {v.get('runs', 0)} time(s)."


def static_verdict(timeline: Timeline) -> str:
    """The short verdict printed beside the mode, as on the course page."""
    p, v = timeline.params, timeline.verdict
    if v.get("renew_lost_at") is not None:
        return f"lapses at {seconds(v['lapsed_at'])} in the pause · extend replies 0 · holder stops"
    if v.get("double_run"):
        return f"lease ends at {seconds(v['lapsed_at'])} and lapses · reclaimed · the job runs twice"
    if v.get("lapsed_at") is None and v.get("finished_once"):
        every = (p.get("cadence") or 0) * p["lease"]
        return f"pushed out every {seconds(every)} · held past {seconds(p['job'])} · the job finishes once"
    return f"lapses at {seconds(v.get('lapsed_at'))} · {v.get('runs', 0)} run(s)"


def _as_modes(timelines: Any) -> dict[str, Timeline]:
    return as_modes(timelines, lambda tl: str(tl.params.get("renew", tl.scenario)), "draw_heartbeat")


def _end_of(timeline: Timeline) -> float:
    ends = [e.t for e in timeline.events]
    for i in timeline.intervals:
        ends.extend(x for x in (i.start, i.end) if x is not None)
    return max(ends, default=0.0)


def _draw_lane(ax, timeline: Timeline, actor: str, gid: str, x_max: float) -> None:
    y = LANES[actor]
    for lease in timeline.spans("lease", actor):
        end = lease.end if lease.end is not None else lease.data.get("deadline", x_max)
        ax.add_patch(Rectangle((lease.start, y + BAND_Y), max(end - lease.start, 0.15), BAND_H, color=style.LEASE,
                               alpha=0.55, lw=0, gid=gid))
    pauses = [(p.start, p.end) for p in timeline.spans("pause", actor)]
    for run in timeline.spans("run", actor):
        end = run.end if run.end is not None else x_max
        for a, b in minus(run.start, end, pauses):  # a frozen worker does no work
            ax.add_patch(Rectangle((a, y + RUN_Y), b - a, RUN_H, color=style.RUN, alpha=0.9, lw=0, gid=gid))
    for pause in timeline.spans("pause", actor):
        ax.add_patch(Rectangle((pause.start, y - 0.42), pause.end - pause.start, 0.84, facecolor="none",
                               edgecolor=style.PAUSE, hatch="///", lw=1.0, gid=gid))
        ax.text(pause.end, y + 0.44, "paused ", ha="right", va="bottom", fontsize=style.FONT["tick"],
                color="#555555", gid=gid)

    def marks(kind, **kw):
        ts = [e.t for e in timeline.of(kind, actor)]
        if ts:
            ax.plot(ts, [kw.pop("dy", 0) + y] * len(ts), linestyle="none", gid=gid, **kw)
        return ts

    marks("acquire_failed", marker="|", markersize=5, color=style.PAUSE, alpha=0.6, dy=BAND_Y + BAND_H / 2)
    marks("renew", marker="|", markersize=22, markeredgewidth=2.5, color=style.RENEW, dy=BAND_Y + BAND_H / 2)
    deadlines = [e.data["deadline"] for e in timeline.of("renew", actor) if "deadline" in e.data]
    if deadlines:
        ax.plot(deadlines, [y + BAND_Y + BAND_H + 0.06] * len(deadlines), linestyle="none", marker="v",
                markersize=6, color=style.LEASE, gid=gid)
    for t in marks("lapse", marker="X", markersize=13, color=style.LAPSE, markeredgecolor="white",
                   dy=BAND_Y + BAND_H / 2):
        ax.annotate("lapse", (t, y + BAND_Y + BAND_H), xytext=(0, 8), textcoords="offset points", ha="center",
                    fontsize=style.FONT["tick"], color=style.LAPSE, fontweight="bold", gid=gid)
    for t in marks("renew_lost", marker="x", markersize=11, markeredgewidth=2.5, color="black",
                   dy=BAND_Y + BAND_H / 2):
        ax.annotate("extend → 0", (t, y + BAND_Y + BAND_H), xytext=(4, 8), textcoords="offset points",
                    fontsize=style.FONT["tick"], gid=gid)
    marks("reclaim", marker="D", markersize=8, color=style.CONTENDER, markeredgecolor="white",
          dy=BAND_Y + BAND_H / 2)
    for t in marks("saw_done", marker="s", markersize=7, color=style.CONTENDER, dy=BAND_Y + BAND_H / 2):
        ax.annotate("saw done, let go", (t, y + BAND_Y + BAND_H), xytext=(4, 6), textcoords="offset points",
                    fontsize=style.FONT["tick"], gid=gid)
    marks("work_done", marker="o", markersize=8, color=style.RUN, markeredgecolor="black", dy=RUN_Y + RUN_H / 2)


def _draw_mode(ax, name: str, timeline: Timeline, x_max: float, label: str) -> None:
    gid = f"mode:{name}"
    ax.add_patch(Rectangle((0, 0), 1, 1, transform=ax.transAxes, facecolor="#F2F2F2", edgecolor="black",
                           lw=0, zorder=-10, gid=f"lane:{name}"))
    for start, end in timeline.verdict.get("overlap", []):
        ax.axvspan(start, end, color=style.OVERLAP, alpha=0.16, lw=0, gid=gid)
        ax.text((start + end) / 2, 1.5, "both run the job", ha="center", va="center", color=style.OVERLAP,
                fontsize=style.FONT["label"], fontweight="bold", gid=gid)
    for actor in LANES:
        _draw_lane(ax, timeline, actor, gid, x_max)
    ax.set_title(label, loc="left", fontsize=style.FONT["title"], fontweight="bold", gid=gid)
    ax.set_title(static_verdict(timeline), loc="right", fontsize=style.FONT["label"], gid=gid)
    ax.set_ylim(-0.55, 1.75)
    ax.set_yticks(list(LANES.values()), list(LANES), fontsize=style.FONT["label"])
    ax.tick_params(axis="x", labelsize=style.FONT["tick"])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _legend(fig) -> None:
    handles = [
        Patch(color=style.LEASE, alpha=0.55, label="lease (server deadline)"),
        Patch(color=style.RUN, label="working"),
        Line2D([], [], color=style.RENEW, marker="|", markersize=14, markeredgewidth=2.5, ls="none", label="extend"),
        Line2D([], [], color=style.LEASE, marker="v", ls="none", label="new deadline"),
        Line2D([], [], color=style.LAPSE, marker="X", markersize=10, ls="none", label="lapse"),
        Line2D([], [], color=style.CONTENDER, marker="D", ls="none", label="reclaim"),
        Patch(color=style.OVERLAP, alpha=0.16, label="double run"),
        Patch(facecolor="none", edgecolor=style.PAUSE, hatch="///", label="pause"),
    ]
    fig.legend(handles=handles, loc="outside upper center", ncols=8, fontsize=style.FONT["tick"], frameon=False,
               handlelength=1.2, columnspacing=1.0)


def default_readout(modes: dict[str, Timeline], labels: dict[str, str]) -> str:
    first = next(iter(modes.values())).params
    if len(modes) > 2:
        return f"A {first['job']:g} s job. Point at a mode to read whether it survives."
    labels = " and ".join(f"“{labels[name]}”" for name in modes)
    return (f"A {first['job']:g} s job under a {first['lease']:g} s lease. Point at {labels} "
            "to read whether the job survives.")


def draw_heartbeat(timelines: Any, fig: Figure | None = None, *, labels: Mapping[str, str] | None = None,
                   figsize: tuple[float, float] = (12, 7.2)) -> Figure:
    """Draw figure 1 from heartbeat Timelines (a dict {mode: Timeline}, a list, or one) and return the Figure.

    `labels` names modes in words ({mode: label}); by default a mode is named by its cadence.
    Follows the figure protocol of `emqlab.plot`: mode artists carry gid "mode:<name>", one lane
    patch per mode carries "lane:<name>", and the figure gets `emqlab_modes`, `emqlab_caption`,
    `emqlab_readout` (the text artist showing the readout) and `emqlab_timelines`.
    """
    modes = _as_modes(timelines)
    names = {name: (labels or {}).get(name) or mode_label(tl) for name, tl in modes.items()}
    if fig is None:
        fig = Figure(figsize=figsize, layout="constrained")
    elif not isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine):
        fig.set_layout_engine("constrained")  # the outside legend and the readout's room need it
    x_max = max(_end_of(tl) for tl in modes.values()) + 3
    axes = fig.subplots(len(modes), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (name, tl) in zip(axes, modes.items()):
        _draw_mode(ax, name, tl, x_max, names[name])
    axes[-1].set_xlim(0, x_max)
    axes[-1].set_xlabel("model seconds since the holder took the lock", fontsize=style.FONT["label"])
    _legend(fig)
    bottom = 0.5 / fig.get_figheight()  # half an inch for the readout line
    fig.get_layout_engine().set(rect=(0, bottom, 1, 1 - bottom))
    text = default_readout(modes, names)
    readout_artist = fig.text(0.01, 0.015, text, fontsize=style.FONT["readout"], ha="left", va="bottom",
                              gid="readout", wrap=True)
    first = next(iter(modes.values())).params
    fig.emqlab_caption = (f"The renewal heartbeat: a {first['job']:g} s job under a {first['lease']:g} s lease, "
                          + " against ".join(names.values()) + ".")
    fig.emqlab_modes = {name: {"label": names[name], "readout": readout(tl, names[name]),
                               "verdict": static_verdict(tl)} for name, tl in modes.items()}
    fig.emqlab_readout = readout_artist
    fig.emqlab_default_readout = text
    fig.emqlab_timelines = dict(modes)
    return fig


def draw_boundary(result: Mapping[str, Any], fig: Figure | None = None, *,
                  figsize: tuple[float, float] = (10, 6.5)) -> Figure:
    """Held or lost, for each (cadence, pause) run of `emqlab.lab.cadence_boundary`, over the rule's line."""
    if fig is None:
        fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.subplots()
    lease, at = result["lease"], result["at"]
    for held, color, marker, label in ((True, style.RUN, "o", "held: the job finished once"),
                                       (False, style.LAPSE, "X", "lost: the lease lapsed in the pause")):
        pts = [(f, p) for f, p, h in result["points"] if h == held]
        if pts:
            ax.scatter(*zip(*pts), color=color, marker=marker, s=80, label=label, edgecolor="white", zorder=3)
    fractions = sorted({f for f, _, _ in result["points"]})
    fine = [fractions[0] + i * (fractions[-1] - fractions[0]) / 400 for i in range(401)]
    ax.plot(fine, [lease - at % (f * lease) for f in fine], color="black", lw=1.5,
            label=f"rule: pause < lease − time since the last extend (pause at {at:g} s)")
    ax.set_xlabel("cadence, as a fraction of the lease", fontsize=style.FONT["label"])
    ax.set_ylabel("pause length (model seconds)", fontsize=style.FONT["label"])
    ax.set_title(f"Held or lost: a {lease:g} s lease, a stop-the-world pause at {at:g} s",
                 fontsize=style.FONT["title"])
    ax.tick_params(labelsize=style.FONT["tick"])
    fig.legend(fontsize=style.FONT["tick"], loc="outside lower center", ncols=2, frameon=False)
    fig.emqlab_caption = "Where the boundary lies between a held lease and a lost one, from measured runs."
    return fig
