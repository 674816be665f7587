"""The words of a run, and the one object a figure's words travel in.

A run's sentences are written in one place only: its scenario's words function, fed by the
verdict computed from the run's events. That function stores them in the verdict
(`emqlab.core.timeline.Verdict`):

    verdict.label     the mode's name in words ("renew at TTL/2")
    verdict.headline  what happened in this run, one sentence with the outcome (JSON key `summary`)
    verdict.facts     the rest: one short fact each
    verdict.text      the full text: the headline, then each fact on a line of its own
    verdict.static    the short verdict line the course page prints beside the mode

`ModeWords` uses the same four names (`headline`, `facts`, `text`, `static`), `Timeline.text` is its
verdict's text, and `FigureWords.under(lit)` is what the line under a figure says. A figure's *readout*
is that line (`Drawing.readout`, the text artist), nothing else.

`FigureWords` carries what a figure says (its caption, the prompt under it before a mode is lit,
and each mode's words). Each scenario builds it with its own `figure_words(...)`; the CLI, the
figures, the widgets, the caption files and the dashboards only read it. Nothing here draws.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from typing import Any

PRECISION = 1  # decimals of a model second quoted in a sentence


HEADLINE_WORDS = 25  # a run's headline is read aloud in one breath; its facts follow as a list


def headline_words(text: str) -> int:
    """How many words a headline has, as a person reads it ("30 s" is two, "·" none)."""
    return sum(1 for w in text.split() if any(c.isalnum() for c in w))


def as_text(headline: str, facts: tuple[str, ...] | list[str]) -> str:
    """A run's words as one text: the headline, then each fact on a line of its own."""
    return "\n".join([headline, *(f"· {fact}" for fact in facts)])


def seconds(x: float | None) -> str:
    """A model time or duration in a sentence, to the tenth of a second: "30 s", "30.5 s", "never".

    The one time formatter of the project: a run's words quote every time through it, and the
    words' property tests compare each quoted number with the verdict's rounded the same way."""
    if x is None:
        return "never"
    value = round(float(x), PRECISION)
    return f"{value + 0.0:g} s"  # + 0.0: never "-0 s"


def plain(x: Any) -> str:
    """A verdict's field as a reader reads it: yes / no for a flag, "n/a" for a field that does not
    apply to this run (None), `a 34, b 35` for a mapping, a list joined by commas, else as printed."""
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, dict):
        return ", ".join(f"{k} {plain(v)}" for k, v in x.items()) or "none"
    if isinstance(x, (list, tuple)):
        return ", ".join(plain(v) for v in x) or "none"
    return str(x)


def panel_places(n: int) -> list[str]:
    """Where each of `n` stacked panels sits, as a caption names it: top, (middle,) bottom; panel k beyond."""
    if n == 1:
        return ["the panel"]
    if n <= 3:
        return ["top", "middle", "bottom"][:n - 1] + ["bottom"]
    return [f"panel {k}" for k in range(1, n + 1)]


def times(n: int, once: str = "once", twice: str = "twice") -> str:
    """1 -> "once", 2 -> "twice", n -> "n times"."""
    return once if n == 1 else twice if n == 2 else f"{n} times"


def plural(n: int, one: str, many: str | None = None) -> str:
    """"1 renewal", "3 renewals" (or the given plural)."""
    return f"{n} {one if n == 1 else many or one + 's'}"


@dataclass(frozen=True)
class ModeWords:
    """What one mode of a figure says: its label, headline, static verdict and facts."""

    label: str
    headline: str  # one sentence (at most HEADLINE_WORDS words) with the outcome
    static: str  # the short verdict line printed beside the mode
    facts: tuple[str, ...] = ()  # the rest, one short fact each

    @property
    def text(self) -> str:
        """The full text: the headline, then one line per fact."""
        return as_text(self.headline, self.facts)

    def html(self) -> str:
        """The full text as HTML: the headline, then its facts as a list."""
        facts = "".join(f"<li>{escape(fact)}</li>" for fact in self.facts)
        return escape(self.headline) + (f"<ul style='margin:0.2em 0'>{facts}</ul>" if facts else "")

    @property
    def verdict_line(self) -> str:
        """"label → static verdict", as the course page prints it."""
        return f"{self.label} → {self.static}"

    @classmethod
    def of(cls, verdict: Any, label: str | None = None) -> "ModeWords":
        """A run's words, read from the verdict its scenario wrote (a caller may rename the mode)."""
        return cls(label or verdict.label, verdict.headline, verdict.static, tuple(verdict.facts))


@dataclass(frozen=True)
class FigureWords:
    """Everything a figure says, in one object: caption, prompt, and each mode's words."""

    caption: str
    prompt: str = ""
    modes: dict[str, ModeWords] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # further lines for the caption file (e.g. one per benchmark row)
    labels: Mapping[str, str] = field(default_factory=dict)  # words printed beside marks, by the mark's key

    def under(self, lit: str | None) -> str:
        """What the line under the figure (its readout) says: the lit mode's full text, else the prompt."""
        return self.modes[lit].text if lit in self.modes else self.prompt

    def report(self) -> str:
        """Every mode's verdict line and full text (headline, then facts), indented under it: stable text
        for a checked cell."""
        return "\n".join(f"{m.verdict_line}\n" + "\n".join(f"    {line}" for line in m.text.splitlines())
                         for m in self.modes.values())

    def caption_text(self, lit: str | None = None) -> str:
        """The caption file written beside an exported figure."""
        lines = [self.caption]
        if lit is not None:
            lines.append(f"readout · {self.modes[lit].text}")
        elif self.prompt:
            lines.append(f"readout · {self.prompt}")
        if self.modes:
            lines.append("static verdicts:")
            lines.extend(f"- {m.verdict_line}" for m in self.modes.values())
            if lit is None:
                lines.extend(f"- readout for {m.label}: {m.text}" for m in self.modes.values())
        lines.extend(self.notes)
        return "\n".join(line for line in lines if line) + "\n"


def words_of_modes(modes: Mapping[str, Any], caption: str, prompt: str,
                 labels: Mapping[str, str] | None = None, notes: tuple[str, ...] = ()) -> FigureWords:
    """FigureWords for {mode: Timeline}, each mode's words read from its verdict."""
    labels = labels or {}
    return FigureWords(caption, prompt, {name: ModeWords.of(tl.verdict, labels.get(name)) for name, tl in modes.items()},
                       notes)


def boundary_words(boundary: Mapping[str, Any], caption: str) -> FigureWords:
    """A held-or-lost grid's words (`points`: (x, y, held); `agrees`: every run matched the rule)."""
    held = sum(1 for *_, h in boundary["points"] if h)
    agree = "every run agrees with the rule" if boundary["agrees"] else "some runs disagree with the rule"
    return FigureWords(caption=caption, notes=(f"{plural(boundary['runs'], 'measured run')}, {held} held; {agree}.",))
