"""The course's visual grammar, as plain data: every kind of mark a figure draws, its shape, its colour and
what it means, written once.

A figure never picks a colour or a marker of its own: it names a mark here (`emqlab.plot.style` draws it)
and the legend says the mark's `meaning`. One meaning has one mark; one look (artist, shape, colour) means one
thing; and two marks a figure draws side by side differ in shape, not only in colour, so a reader who cannot
tell orange from vermillion still tells them apart. `said` is how prose names a mark ("the vermillion
cross"), so a lesson's words and the figure's legend agree.

- `PALETTE`: Okabe–Ito, safe for the common colour-vision deficiencies; `INK`: the colours of words and
  furniture (text, a lane's background), which are no marks.
- `MARKS`: {name: Mark}. A mark with `legend=False` is furniture (a lane's line, a divider), named by its
  axis's tick label rather than the legend.
- `SERIES`: the looks of the lines a benchmark draws, one per design or library; `RUNS`: the looks of runs
  drawn side by side in one axes, taken in order.

The model (layers under `plot`) imports nothing that draws; this module is data, so a design or a scenario
may read a look without importing matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass

PALETTE = {
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "black": "#000000",
    "grey": "#999999",
}

# words and furniture: no mark, so no meaning in a legend
INK = {
    "text": "#333333",  # a verdict or a label beside a mark
    "quiet": "#555555",  # words that step back (a paused worker's "paused")
    "on-mark": "#FFFFFF",  # words on a band, and a filled marker's rim
    "lane": "#F2F2F2",  # a mode's background
    "lit": "#E8F1FA",  # a lit mode's background
    "frame": "#0072B2",  # a lit mode's outline
    "rule": "#777777",  # a lane's line
    "taken": "#8A5A00",  # a classmate's job, taken over (its words)
    "alarm": "#D55E00",  # bad news in words (a count that should be 0)
}

KINDS = ("band", "line", "marker", "arrow")
MARKER_WORDS = {"X": "cross", "x": "thin cross", "D": "diamond", "d": "thin diamond", "o": "dot", "s": "square",
                "*": "star", "|": "tick", "_": "dash", "^": "triangle", "v": "down-triangle", "<": "left-triangle",
                ">": "right-triangle", "P": "plus", "p": "pentagon", "h": "hexagon", "H": "flat hexagon",
                ".": "point"}
HATCH_WORDS = {"///": "striped", "\\\\": "back-striped", "..": "dotted", "xx": "cross-hatched"}
LINE_WORDS = {"-": "line", "--": "dashed line", ":": "dotted line", "-.": "dash-dot line"}
UNFILLED = ("x", "|", "_", "+", "1", "2", "3", "4", ".")  # markers drawn by their stroke alone


@dataclass(frozen=True)
class Mark:
    """One kind of mark. `shape` by artist: a band's fill ("filled" or "outline"), a line's style ("-", "--",
    ":", "-."), a marker's symbol (matplotlib's), an arrow's style. `hatch`: a band's hatching; `hollow`: a
    marker drawn as its rim; `point`: a marker on a line's middle vertex."""

    name: str
    artist: str  # what draws it: band, marker, line or arrow
    meaning: str
    colour: str
    shape: str
    hatch: str | None = None
    hollow: bool = False
    point: str | None = None
    legend: bool = True

    @property
    def look(self) -> tuple[str, str, str]:
        """(artist, shape, colour): what a reader sees; one look, one meaning."""
        return self.artist, self.form, self.colour.upper()

    @property
    def form(self) -> str:
        """The shape alone, as a reader without colour sees it."""
        if self.artist == "band":
            return " ".join(x for x in (self.shape, self.hatch) if x)
        if self.artist == "marker":
            return self.shape + (" hollow" if self.hollow else "")
        if self.artist == "line":
            return self.shape + (self.point or "")
        return self.shape

    @property
    def said(self) -> str:
        """How a sentence names the mark: its colour and its shape ("vermillion cross")."""
        colour = next((name for name, hex_ in PALETTE.items() if hex_ == self.colour), "grey")
        if self.artist == "marker":
            return f"{'hollow ' if self.hollow else ''}{colour} {MARKER_WORDS[self.shape]}"
        if self.artist == "line":
            return f"{colour} {LINE_WORDS[self.shape]}"
        if self.artist == "arrow":
            return f"{colour} arrow"
        fill, _, ls = self.shape.partition(" ")
        edge = {"": "", ":": "dotted ", "--": "dashed "}[ls]
        return f"{HATCH_WORDS[self.hatch] + ' ' if self.hatch else edge}{colour} {'band' if fill == 'filled' else 'outline'}"


def _marks(*marks: Mark) -> dict[str, Mark]:
    return {m.name: m for m in marks}


P = PALETTE
MARKS: dict[str, Mark] = _marks(
    # bands: what held, worked or waited, from when to when
    Mark("lease", "band", "lease: until let go, or to its deadline if it lapsed", P["blue"], "filled"),
    Mark("contender-lease", "band", "the contender's lease", P["purple"], "filled", hatch="\\\\"),
    Mark("lapsed-lease", "band", "lease ran out, not yet reaped", P["vermillion"], "filled", hatch=".."),
    Mark("work", "band", "working", P["green"], "filled"),
    Mark("work-loop-held", "band", "working, its event loop held", P["green"], "filled", hatch="xx"),
    Mark("waiting", "band", "waiting for a job", P["grey"], "filled"),
    Mark("pause", "band", "paused: frozen, no work", P["grey"], "outline", hatch="///"),
    Mark("stalled", "band", "replication stalled", P["grey"], "outline", hatch=".."),
    Mark("held-past", "band", "held past its lease (stale)", P["vermillion"], "outline", hatch="xx"),
    Mark("crashed-lease", "band", "a crashed worker's lease, running out", P["blue"], "outline :"),
    Mark("belief", "band", "what a worker believes it holds", P["black"], "outline --"),
    Mark("double-run", "band", "both ran the job", P["vermillion"], "filled"),
    Mark("breaks", "band", "the step an invariant breaks", P["yellow"], "filled"),
    Mark("key", "band", "a key, on the node that owns its slot", P["sky"], "filled"),
    # lines: a reading over time, a rule, a moment
    Mark("trip", "line", "a command over the slow link: to the store and back", P["sky"], "-", point="o"),
    Mark("lease-score", "line", "lease score in the active set (its deadline)", P["blue"], "--"),
    Mark("server-clock", "line", "the server's clock (TIME)", P["grey"], ":"),
    Mark("rule-pause", "line", "rule: pause < lease − time since the last extend", P["black"], "-"),
    Mark("rule-delay", "line", "rule: delay < (1 − c) × lease / 2", P["black"], "-."),
    Mark("cadence", "line", "the cadence: a tick must fit in it", P["black"], "--"),
    Mark("largest-k", "line", "the largest K kept alive", P["black"], ":"),
    Mark("hard-deadline", "line", "hard deadline", P["vermillion"], "-"),
    Mark("failover", "line", "the failover", P["vermillion"], "--"),
    Mark("clock-jump", "line", "the server's clock steps", P["vermillion"], "-."),
    Mark("rejoined-line", "line", "a replica of the new primary", P["grey"], "-."),
    Mark("pending", "line", "jobs pending", P["grey"], "--"),
    Mark("active", "line", "jobs active", P["blue"], "-"),
    Mark("done-count", "line", "jobs done", P["green"], "-."),
    Mark("dead", "line", "jobs dead (out of attempts)", P["vermillion"], ":"),
    Mark("step-tried", "line", "a step tried: to the state it leads to", P["grey"], "-"),
    Mark("counterexample", "line", "the shortest counterexample, step by step", P["orange"], "--"),
    # arrows
    Mark("moved", "arrow", "an extend moves the deadline", P["orange"], "-|>"),
    Mark("write", "arrow", "a write to the store", P["black"], "-|>"),
    # markers: one moment each
    Mark("extend", "marker", "extend", P["orange"], "|"),
    Mark("round-trip", "marker", "one round trip", P["black"], "|"),
    Mark("lapse", "marker", "lease ran out (lapsed)", P["vermillion"], "X"),
    Mark("refused", "marker", "refused: a stale write, extend or completion", P["black"], "x"),
    Mark("told", "marker", "told it lost the lock", P["black"], "p"),
    Mark("crash", "marker", "crash (killed)", P["black"], "*"),
    Mark("taken-back", "marker", "taken back: reaped or reclaimed", P["purple"], "D"),
    Mark("reap-idle", "marker", "a reap with nothing due", P["purple"], "D", hollow=True),
    Mark("saw-done", "marker", "found the job done, let it go", P["purple"], "s"),
    Mark("done", "marker", "job done", P["green"], "o"),
    Mark("acked", "marker", "acked: the message's entry deleted", P["green"], "o", hollow=True),
    Mark("effect", "marker", "effect written", P["sky"], "P"),
    Mark("claim", "marker", "claim: taken from the queue", P["blue"], ">"),
    Mark("tried", "marker", "tries the lock, refused (held)", P["grey"], "_"),
    Mark("promote", "marker", "promote: delayed jobs to pending", P["orange"], "o"),
    Mark("promote-idle", "marker", "a promote with nothing due", P["orange"], "o", hollow=True),
    Mark("drain-idle", "marker", "drain: nothing to claim", P["grey"], "|"),
    Mark("redelivered", "marker", "delivered again", P["vermillion"], "^"),
    Mark("requeued", "marker", "requeued (Retry)", P["orange"], "<"),
    Mark("abandoned", "marker", "abandoned", P["vermillion"], "h"),
    Mark("failed", "marker", "job failed", P["black"], "s"),
    Mark("thread-died", "marker", "renewal thread died", P["vermillion"], "v"),
    Mark("wait-acked", "marker", "WAIT acknowledged", P["sky"], "d"),
    Mark("wait-timeout", "marker", "WAIT timed out", P["sky"], "d", hollow=True),
    Mark("promoted", "marker", "replica promoted", P["black"], "^"),
    Mark("rejoined", "marker", "a fresh server rejoins", P["grey"], "o", hollow=True),
    Mark("held-run", "marker", "held: the holder kept its lease", P["blue"], "o"),
    Mark("freeze", "marker", "freeze: a lease and a beat pass", P["grey"], "s"),
    Mark("other", "marker", "another event", P["grey"], "."),
    Mark("broke", "marker", "broke at that K: part of a tick", P["black"], "o", hollow=True),
    Mark("state", "marker", "a state the search reached", P["grey"], "o"),
    Mark("broken-state", "marker", "an invariant broke on the step into it", P["vermillion"], "s"),
    # furniture: named by a tick label, never in a legend
    Mark("lane-line", "line", "a lane's line", INK["rule"], "-", legend=False),
    Mark("divider", "line", "a divider", INK["rule"], ":", legend=False),
    Mark("now", "line", "now", INK["quiet"], "--", legend=False),
)

# a benchmark's lines, one look per design or library (a variant of one, "…, big pool", is dashed): no look a
# marker of MARKS has, so a series never reads as an event
SERIES: dict[str, tuple[str, str]] = {
    "emqlab none": (P["vermillion"], "8"),
    "emqlab per-job": (P["orange"], "s"),
    "emqlab sweep": (P["green"], "H"),
    "emqlab session": (P["blue"], "^"),
    "python-redis-lock": (P["purple"], "p"),
    "redis-py Lock + timer": (P["sky"], "v"),
}
SERIES_LINES = {"line": "-", "variant": "--", "broke": ":"}  # a series' own line, a variant's, the way to a broken run
OTHER_SERIES = (P["black"], "P")  # a design added since: its own look, until it has one here
# runs drawn side by side in one axes (an explorer's growth), in order: no look a marker of MARKS has either
RUNS: tuple[tuple[str, str], ...] = ((P["blue"], "8"), (P["orange"], "s"), (P["green"], "^"), (P["purple"], "p"))
RUN_FAMILIES = ("new states at each depth", "states in all")  # their labels: "<family>: <the run's label>"

BY_MEANING: dict[str, Mark] = {m.meaning: m for m in MARKS.values()}


def mark(name: str) -> Mark:
    """The mark called `name`; KeyError names the marks there are."""
    try:
        return MARKS[name]
    except KeyError:
        raise KeyError(f"no mark {name!r}; the marks: {', '.join(MARKS)}") from None


def series(name: str) -> tuple[str, str]:
    """(colour, marker) of a benchmark's line for a design or library (its variants share it)."""
    return SERIES.get(name.split(",")[0], OTHER_SERIES)
