"""The cluster lesson's figure: one queue's keys on the cluster's nodes, with and without the hashtag.

`draw_cluster(modes, words, fig=None) -> Drawing`, one panel per mode (a `placement` run). In a
panel each row is one of the queue's keys and each column one node (headed by the slots the node
serves, as CLUSTER SLOTS reported them): a key's box (the course's `key` band) sits under the node
that holds it, with its slot. A dotted divider sets off a last column, the enqueue script sent to
the node that owns its first key: its four keys marked KEYS[1..4], and the server's answer (ran,
in the colour of a job done, or refused with CROSSSLOT, in the colour of a refusal). Everything is
read from the run's events; titles and the readout are the scenario's words.
"""

from __future__ import annotations

from typing import Any

from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from ..core.kinds import Kind
from ..core.timeline import Timeline
from ..core.words import FigureWords
from . import Drawing, figure_for, legend_of_marks, modes_of, style

ORDER = ("job", "pending", "schedule", "wake", "active", "done", "effects")  # enqueue's four keys first


def placed(tl: Timeline) -> dict[str, list[dict[str, Any]]]:
    """{node: the keys it reported holding (name, key, slot)}, every node present, in node order."""
    nodes: dict[str, list[dict[str, Any]]] = {e.actor: [] for e in tl.of(Kind.SLOTS)}
    for e in tl.of(Kind.HOLDS):
        nodes.setdefault(e.actor, []).append(dict(e.data))
    return nodes


def _panel(ax, name: str, tl: Timeline, words: FigureWords) -> None:
    gid = f"mode:{name}"
    style.lane(ax, name)
    slots = {e.actor: (e.data["first"], e.data["last"]) for e in tl.of(Kind.SLOTS)}
    nodes = placed(tl)
    held = [k for keys in nodes.values() for k in keys]
    rows = [n for n in ORDER if any(k["name"] == n for k in held)] + \
        sorted({k["name"] for k in held} - set(ORDER))
    ys = {n: float(len(rows) - 1 - i) for i, n in enumerate(rows)}
    keyname = {k["name"]: k["key"] for k in held}
    for col, (node, keys) in enumerate(nodes.items()):
        for k in keys:
            y = ys[k["name"]]
            ax.add_patch(FancyBboxPatch((col - 0.36, y - 0.32), 0.72, 0.64, boxstyle="round,pad=0,rounding_size=0.08",
                                        **style.band_kw("key", gid=gid)))
            ax.text(col, y, f"slot {k['slot']}", ha="center", va="center", fontsize=style.FONT["tick"],
                    color=style.INK["text"], gid=gid)
    [script] = tl.of(Kind.SCRIPT)
    col = len(nodes)
    ok = script.data["accepted"]
    colour = style.colour("done" if ok else "refused")
    for i, key in enumerate(script.data["keys"]):
        if key in ys:
            ax.text(col, ys[key], f"KEYS[{i + 1}]", ha="center", va="center", fontsize=style.FONT["tick"],
                    color=colour, gid=gid)
    rest = [ys[n] for n in rows if n not in script.data["keys"]]
    reply = script.data.get("reply")  # enqueue.lua: 1 when it added the job, 0 when the id was already there
    said = {1: "1: job added", 0: "0: id already there"}.get(reply, reply)
    answer = f"ran on {script.actor}\nreplied {said}" if ok else \
        f"refused by {script.actor}:\n" + ("CROSSSLOT" if "CROSSSLOT" in script.data.get("error", "") else "error")
    ax.text(col, sum(rest) / len(rest) if rest else -0.8, answer, ha="center", va="center", fontsize=style.FONT["tick"],
            color=colour, fontweight="bold", gid=gid)
    style.vline(ax, "divider", col - 0.5, lw=1, gid=gid)  # the script's column
    heads = [f"{node}\nslots {a}–{b}" for node, (a, b) in slots.items()] + ["enqueue script"]
    ax.set_xticks(range(len(heads)), heads)
    ax.xaxis.tick_top()
    ax.set_yticks(list(ys.values()), [keyname[n] for n in ys])
    ax.set_xlim(-0.5, len(heads) - 0.5)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.tick_params(labelsize=style.FONT["tick"], length=0)
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    mode = words.modes[name]
    ax.set_title(f"{mode.label}\n{mode.static}", fontsize=style.FONT["label"], loc="left")


def draw_cluster(timelines: Any, words: FigureWords, fig: Figure | None = None, *,
                 figsize: tuple[float, float] = (12, 7.2)) -> Drawing:
    """The cluster lesson (`placement` runs): one panel per mode, keys by node."""
    modes = modes_of(timelines, words, "draw_cluster")
    fig = figure_for(fig, figsize)
    axes = fig.subplots(len(modes), 1, squeeze=False)[:, 0]
    for ax, (name, tl) in zip(axes, modes.items()):
        _panel(ax, name, tl, words)
    legend_of_marks(fig, loc="outside upper center", fontsize=style.FONT["tick"], frameon=False)
    readout = fig.text(0.01, 0.01, words.prompt, fontsize=style.FONT["readout"], ha="left", va="bottom",
                       gid="readout")  # Drawing.fit wraps it and keeps room for it under the axes
    return Drawing(fig, words, dict(modes), readout)
