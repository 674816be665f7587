"""A run as text, for a lesson to print: its verdict as facts, its events, its beats, a queue's keyspace,
and the Lua scripts the queue runs (whole, or the lines a lesson talks about)."""

from __future__ import annotations

from ...core.kinds import Kind
from ...core.words import plain, seconds

# how `facts` says a verdict field its name does not say well; any other is its name in words, a time's
# without its "_at" ("reclaimed_at": "reclaimed", "holders_at_once": "holders at once")
FACT_WORDS = {"renew_lost_at": "extend replied 0", "double_run": "ran twice at once"}


def facts(timeline, *keys: str) -> str:
    """A run's verdict as `name: value` pairs, each name in words (`FACT_WORDS`), times as every run's words
    quote them (`words.seconds`), every other field through `words.plain` (yes / no, n/a, no Python
    reprs). Default keys: lapsed_at, runs, double_run, finished_once."""
    keys = keys or ("lapsed_at", "runs", "double_run", "finished_once")
    shown = []
    for key in keys:
        got = getattr(timeline.verdict, key) if hasattr(timeline.verdict, key) else timeline.counts.get(key)
        name = FACT_WORDS.get(key, key.removesuffix("_at").replace("_", " "))
        shown.append(f"{name}: {seconds(got) if key.endswith('_at') else plain(got)}")
    return " · ".join(shown)


def events(timeline, actor: str | None = None, skip: tuple[str, ...] = (Kind.ACQUIRE_FAILED,)) -> str:
    """A run's events, one per line (polling noise left out)."""
    return "\n".join(f"{seconds(e.t):>8}  {e.actor:<10} {e.kind}" for e in timeline.events
                     if (actor is None or e.actor == actor) and e.kind not in skip)


# -- the reaper --------------------------------------------------------------------------------------
class Script(str):
    """A Lua script's text as the package ships it; a notebook shows it as the file reads."""

    def __repr__(self) -> str:
        return str(self)


def script(name: str) -> Script:
    """The text of `emqlab/lua/<name>.lua`, read from the package itself (`emqlab.store.scripts.source`), so
    the lesson shows the script the queue runs, never a copy: `lab.script("reap")`."""
    from ...store.scripts import source

    return Script(source(name))


def excerpt(name: str, *needles: str) -> str:
    """The lines of `lab.script(name)` that hold any of `needles`, each with its line number: the lines a
    lesson talks about, read from the script the queue runs. The numbers count the script as the server gets
    it, its includes pasted in, so past an `@include` line they differ from the file's own."""
    return "\n".join(f"{n:3}  {line}" for n, line in enumerate(script(name).splitlines(), 1)
                     if any(needle in line for needle in needles))


def keyspace(queue, *job_ids: str) -> str:
    """A queue's keys as EchoMQ names them (`emq:{q}:pending`, …), one a line, from `emq:` on: what sits
    before it (the notebook's own prefix) differs from run to run and says nothing about the queue."""
    keys = [queue.pending, queue.active, *(queue.job_key(j) for j in job_ids), queue.schedule, queue.wake_key,
            queue.done, queue.dead]
    return "\n".join(key[len(queue.prefix):] for key in keys)


def beats(timeline, actor: str | None = None, moved_only: bool = False) -> str:
    """A run's beats, one step per line in the order they ran: beat number, time (from–to for a step that
    ran a while, such as a drain that ran its job), step, what it moved, and for a reap the server TIME it
    compared the scores with (on the run's time base, pinned at the run's first claim). `moved_only`: only
    the steps that moved something."""
    claim = timeline.first(Kind.CLAIM, where=lambda e: e.data.get("time_s") is not None)
    lines = []
    for e in timeline.of(Kind.STEP, actor):
        d = e.data
        if moved_only and not d.get("moved"):
            continue
        what = f"moved {d['moved']}" if "moved" in d else ("woke on a wake token" if d.get("woken") else "no wake token")
        if d.get("ended") == "crash":
            what += ", cut short by the crash"
        if d["step"] == "reap" and claim is not None:
            what += f", TIME {seconds(claim.t + d['time_s'] - claim.data['time_s'])}"
        # a step that ran a while (a drain that ran the job it claimed) says when it began and ended
        began = d.get("started")
        when = f"{seconds(began)}–{seconds(e.t)}" if began is not None and e.t - began >= 0.05 else f"at {seconds(e.t)}"
        lines.append(f"{e.actor:<9} beat {d['beat']:>2}  {d['step']:<6} {when}: {what}")
    return "\n".join(lines)
