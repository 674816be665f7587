"""The applied form's figures: the reaper timeline, the fencing timeline, the heartbeat on the
queue, and the chaos run. Each takes Timelines (one, a list, or {mode: Timeline}) and follows the
figure protocol of `emqlab.plot`: one panel per mode, a `lane:<mode>` background patch, every
artist of a mode tagged `mode:<mode>`, `fig.emqlab_modes` and `fig.emqlab_caption`.

Lease bands are the `lease` intervals as the run recorded them: their ends are the deadlines the
server stamped (claim and extend replies), never arithmetic done here.
"""

from __future__ import annotations

from typing import Any, Callable

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..timeline import Timeline
from . import as_modes, style

BAND_Y, BAND_H = 0.06, 0.30
RUN_Y, RUN_H = -0.30, 0.20
EFFECT = style.OKABE_ITO["sky"]


def _figure(fig: Figure | None, panels: int, height: float = 3.0) -> Figure:
    if fig is None:
        fig = Figure(figsize=(11, 1.2 + height * panels), layout="constrained")
    else:
        fig.clear()
    return fig


def _actors(timeline: Timeline) -> list[str]:
    return sorted(a for a in timeline.actors if a.startswith("worker"))


def _end(timeline: Timeline) -> float:
    ends = [e.t for e in timeline.events]
    ends += [x for i in timeline.intervals for x in (i.start, i.end) if x is not None]
    return max(ends, default=1.0)


def _lanes(ax, name: str, tl: Timeline, x_max: float) -> None:
    gid = f"mode:{name}"
    ax.add_patch(Rectangle((0, 0), 1, 1, transform=ax.transAxes, facecolor="#F2F2F2", lw=0, zorder=-10,
                           gid=f"lane:{name}"))
    actors = _actors(tl)
    ys = {a: float(len(actors) - 1 - k) for k, a in enumerate(actors)}
    for actor, y in ys.items():
        for lease in tl.spans("lease", actor):
            end = lease.end if lease.end is not None else lease.data.get("deadline", x_max)
            ax.add_patch(Rectangle((lease.start, y + BAND_Y), max(end - lease.start, 0.15), BAND_H, color=style.LEASE,
                                   alpha=0.55, lw=0, gid=gid))
            ax.text(lease.start + 0.3, y + BAND_Y + BAND_H / 2, f"lease · attempts {lease.data.get('attempts')}",
                    va="center", fontsize=style.FONT["tick"], color="white", gid=gid)
            if lease.data.get("ended") == "lapsed":
                ax.plot([end], [y + BAND_Y + BAND_H / 2], marker="X", markersize=12, color=style.LAPSE,
                        markeredgecolor="white", linestyle="none", gid=gid)
        for run in tl.spans("run", actor):
            end = run.end if run.end is not None else x_max
            ax.add_patch(Rectangle((run.start, y + RUN_Y), end - run.start, RUN_H, color=style.RUN, lw=0, gid=gid))
        for pause in tl.spans("pause", actor):
            end = pause.end if pause.end is not None else x_max
            ax.add_patch(Rectangle((pause.start, y - 0.42), end - pause.start, 0.84, facecolor="none",
                                   edgecolor=style.PAUSE, hatch="///", lw=1.0, gid=gid))
            ax.text((pause.start + end) / 2, y - 0.44, "stopped (pause)", ha="center", va="top",
                    fontsize=style.FONT["tick"], color="#555555", gid=gid)
        marks = [("crash", "X", "black", "crash"), ("reap", "D", style.CONTENDER, "reap → pending"),
                 ("renew", "|", style.RENEW, None), ("complete", "o", style.RUN, "done"),
                 ("complete_refused", "x", "black", "refused: stale attempts"), ("effect", "P", EFFECT, None)]
        for kind, marker, colour, label in marks:
            for e in tl.of(kind, actor):
                ax.plot([e.t], [y + BAND_Y + BAND_H + 0.12], marker=marker, markersize=10, color=colour,
                        markeredgewidth=2, linestyle="none", gid=gid)
                text = label or (f"effect ×{e.data['applied']}" if kind == "effect" else None)
                if text:
                    # effects and reaps label above the mark, outcomes below, so same-instant marks stay legible
                    dy = 5 if kind in ("effect", "reap", "crash") else -16
                    ax.annotate(text, (e.t, y + BAND_Y + BAND_H + 0.12), xytext=(6, dy), textcoords="offset points",
                                fontsize=style.FONT["tick"], gid=gid,
                                color=style.LAPSE if kind == "effect" and e.data.get("applied", 1) > 1 else "black")
    ax.set_yticks(list(ys.values()), list(ys))
    ax.set_ylim(-0.6, max(ys.values(), default=0) + 0.8)
    ax.set_xlim(min(0.0, min((e.t for e in tl.events), default=0.0)) - 1, x_max * 1.04 + 1)
    ax.tick_params(labelsize=style.FONT["tick"])
    ax.set_xlabel("model seconds", fontsize=style.FONT["label"])


def _draw(timelines: Any, fig: Figure | None, *, what: str, key: Callable[[Timeline], str],
          label: Callable[[str, Timeline], str], verdict: Callable[[Timeline], str], caption: str) -> Figure:
    modes = as_modes(timelines, key, what)
    fig = _figure(fig, len(modes))
    x_max = max(_end(tl) for tl in modes.values())
    axes = fig.subplots(len(modes), 1, squeeze=False, sharex=True)[:, 0]
    fig.emqlab_modes = {}
    for ax, (name, tl) in zip(axes, modes.items()):
        _lanes(ax, name, tl, x_max)
        ax.set_title(f"{label(name, tl)}\n{verdict(tl)}", fontsize=style.FONT["label"], loc="left")
        fig.emqlab_modes[name] = {"label": label(name, tl), "readout": tl.summary, "verdict": verdict(tl)}
    fig.emqlab_caption = caption
    return fig


# -- the reaper ----------------------------------------------------------------------------------
def reaper_verdict_line(tl: Timeline) -> str:
    v = tl.verdict
    if v.get("reaped_at") is None:
        return "never reaped"
    return (f"reaped at {v['reaped_at']:g} s · re-claimed, attempts {v['reclaim_attempts']} · "
            f"stale completion {'refused' if v['stale_complete_refused'] else 'ACCEPTED'} · "
            f"lost {tl.counts.get('lost')}")


def draw_reaper(timelines: Any, fig: Figure | None = None) -> Figure:
    """Crash recovery (`emqlab.scenarios.reaper.reaper`): one panel per run (e.g. in-process and OS processes)."""
    return _draw(timelines, fig, what="draw_reaper",
                 key=lambda tl: "processes" if tl.params.get("procs") else "in-process",
                 label=lambda name, tl: f"reaper ({name})", verdict=reaper_verdict_line,
                 caption="A consumer dies holding a job; its lease passes on the server clock, the next beat's "
                         "reap returns the job, another consumer re-claims it, and the dead one's late completion "
                         "is refused.")


# -- the heartbeat on the queue ------------------------------------------------------------------
def draw_queue_heartbeat(timelines: Any, fig: Figure | None = None) -> Figure:
    """The 75 s job under a 30 s lease on the queue (`queue_heartbeat`): one panel per renewal mode."""
    from ..renewal import parse_cadence

    def verdict(tl: Timeline) -> str:
        v = tl.verdict
        if v.get("reaped_at") is not None:
            return f"lapses at {v['lapsed_at']:g} s · reaped · the job runs {v['runs']} times"
        return f"{v['renewals']} batched extends · held to the end · the job finishes once"

    return _draw(timelines, fig, what="draw_queue_heartbeat", key=lambda tl: str(tl.params.get("renew")),
                 label=lambda name, tl: parse_cadence(tl.params.get("renew")).label, verdict=verdict,
                 caption="The heartbeat on the queue: without renewal the reaper hands the job to a second "
                         "consumer while the first still runs it; one batched extend per tick holds it.")


# -- fencing -------------------------------------------------------------------------------------
def draw_fencing(timelines: Any, fig: Figure | None = None) -> Figure:
    """Lesson 06 (`emqlab.scenarios.fencing.fencing`): one panel per mode, fencing off and on."""

    def verdict(tl: Timeline) -> str:
        v = tl.verdict
        if v.get("stale_write_landed"):
            return f"late write lands · effect applied {v['effects_applied']}×"
        if v.get("stale_write_refused"):
            return "late write refused (attempts 1 ≠ 2) · effect applied once"
        return f"no takeover · effect applied {v.get('effects_applied')}×"

    from ..scenarios.fencing import MODES

    return _draw(timelines, fig, what="draw_fencing", key=lambda tl: str(tl.params.get("fencing")),
                 label=lambda name, tl: MODES.get(tl.params.get("fencing"), name), verdict=verdict,
                 caption="A worker stopped past its lease wakes and writes: without fencing the write lands a "
                         "second time; with the attempts check the store refuses it.")


# -- chaos ---------------------------------------------------------------------------------------
def draw_chaos(timelines: Any, fig: Figure | None = None) -> Figure:
    """A chaos run (`emqlab.scenarios.chaos.chaos`): pending / active / done over time, with the
    crashes and pauses marked; one panel per fencing mode."""
    modes = as_modes(timelines, lambda tl: f"fencing {tl.params.get('fencing')}", "draw_chaos")
    fig = _figure(fig, len(modes), height=3.4)
    axes = fig.subplots(len(modes), 1, squeeze=False)[:, 0]
    fig.emqlab_modes = {}
    for ax, (name, tl) in zip(axes, modes.items()):
        gid = f"mode:{name}"
        ax.add_patch(Rectangle((0, 0), 1, 1, transform=ax.transAxes, facecolor="#F2F2F2", lw=0, zorder=-10,
                               gid=f"lane:{name}"))
        samples = tl.of("sample")
        ts = [e.t for e in samples]
        for field, colour in (("pending", style.PAUSE), ("active", style.LEASE), ("done", style.RUN)):
            ax.plot(ts, [e.data[field] for e in samples], color=colour, lw=2, label=field, gid=gid)
        for e in tl.of("crash"):
            ax.axvline(e.t, color=style.LAPSE, lw=1.2, alpha=0.8, gid=gid)
        for span in tl.spans("pause"):
            ax.axvspan(span.start, span.end if span.end is not None else span.start, color=style.PAUSE, alpha=0.25,
                       lw=0, gid=gid)
        c = tl.counts
        verdict = (f"{c['completed']}/{c['jobs']} done · lost {c['lost']} · duplicate effects "
                   f"{c['duplicate_effects']} · {c['kills']} crashes (red) · {c['pauses']} pauses (grey)")
        ax.set_title(f"{name}\n{verdict}", fontsize=style.FONT["label"], loc="left")
        ax.set_xlabel("model seconds", fontsize=style.FONT["label"])
        ax.set_ylabel("jobs", fontsize=style.FONT["label"])
        ax.tick_params(labelsize=style.FONT["tick"])
        ax.legend(loc="center right", fontsize=style.FONT["tick"])
        fig.emqlab_modes[name] = {"label": name, "readout": tl.summary, "verdict": verdict}
    fig.emqlab_caption = ("Many consumers, random crashes and stop-the-world pauses: the reaper recovers every "
                          "lease; only the attempts-fenced effect store keeps each effect to one.")
    return fig
