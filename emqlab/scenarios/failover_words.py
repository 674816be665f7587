"""The one place a failover run is put into words (`emqlab.scenarios.failover`): its readout, its
static verdict and its figure's caption. Every clause is a fact of the verdict; every time is
quoted through `emqlab.words.seconds`."""

from __future__ import annotations

from typing import Any

from ..words import FigureWords, ModeWords, plural, seconds
from ..words import figure_words as _figure_words
from .base import named

LABELS = {"none": "no guard", "wait": "WAIT after the acquire", "fence": "fencing token",
          "fence-wait": "fencing token confirmed by WAIT"}


def _ms(x: float) -> str:
    return f"{x:.2f} ms"


def words(p: dict[str, Any], v: dict[str, Any]) -> ModeWords:
    """The readout and the static verdict of one failover run, each clause read from `v`."""
    guard, label = p["guard"], LABELS[p["guard"]]
    tokens, acked = v["tokens"], v["wait_acked"]
    said, short = [], []
    lag = f"replication lagged {seconds(p['lag'])} behind the primary"
    if tokens["holder"] is not None:
        confirmed = guard == "fence-wait" and acked["holder"][:1] == [1]
        said.append(f"the holder took fencing token {tokens['holder']}"
                    + (" and WAIT 1 saw a replica confirm it" if confirmed else f" while {lag}"))
        said.append(f"then replication, {seconds(p['lag'])} behind, stalled" if confirmed else "then replication stalled")
    else:
        said.append(f"{lag} and stalled")
    took = v["acquired_at"]["holder"]
    if took is not None:
        said.append(f"the holder took the lease on the primary at {seconds(took)}")
    if guard == "wait" and not v["holder_started"]:
        said.append("its WAIT 1 timed out with no replica acknowledging, so it never started and let the lease go")
        short.append("holder never starts")
    elif not v["holder_started"]:
        said.append("the holder never started")
        short.append("holder never starts")
    if v["killed_at"] is not None:
        kept = "with the holder's lease" if v["lease_on_new_primary"] else "without the lease"
        said.append(f"the primary was killed at {seconds(v['killed_at'])} and the replica promoted "
                    f"at {seconds(v['promoted_at'])} {kept}")
        if v["lease_on_new_primary"]:
            short.append("lease survives")
        elif v["lost_in_failover"]:
            short.append("lease lost in the failover")
    got = v["acquired_at"]["contender"]
    if got is not None:
        token = f" with token {tokens['contender']}" if tokens["contender"] is not None else ""
        said.append(f"the contender took the lease on the new primary at {seconds(got)}{token}")
        if p["guard"] in ("wait", "fence-wait") and v["contender_started"]:
            said.append("the server that rejoined as a replica acknowledged its WAIT")
    else:
        said.append("the contender never got the lease")
    at_once = v["holders_at_once"]
    if at_once >= 2:
        both = (f": both ran the job for {seconds(v['both_ran_s'])} at the same time"
                if v["double_run"] and v["both_ran_s"] >= 0.05 else "")
        said.append(f"two holders at once{both}")
        short.append("two holders at once")
    else:
        said.append("never two holders at once")
        short.append("one holder at a time")
    if v["token_reused"]:
        said.append(f"both held token {tokens['holder']}: its increment was lost with the primary, so the storage "
                    "could not tell the two writers apart")
        short.append(f"token {tokens['holder']} reused")
    elif tokens["holder"] is not None and tokens["contender"] is not None:
        said.append(f"the tokens rose across the failover, {tokens['holder']} then {tokens['contender']}")
        short.append(f"tokens {tokens['holder']} < {tokens['contender']}")
    taken = v["writes_taken"]
    if v["stale_write_refused"]:
        said.append(f"the storage refused the holder's token {tokens['holder']} at {seconds(v['refused_at'])}, "
                    "having seen a higher one, and the holder stopped")
        short.append("stale write refused")
    if taken["holder"] and taken["contender"]:
        said.append(f"the storage took {plural(taken['holder'], 'write')} from the holder and "
                    f"{plural(taken['contender'], 'write')} from the contender")
        if not v["stale_write_refused"]:
            short.append("storage takes both")
    elif taken["holder"] or taken["contender"]:
        who = "holder" if taken["holder"] else "contender"
        said.append(f"the storage took {plural(taken[who], 'write')}, all from the {who}")
    if v["wait_cost_ms"] is not None:
        n, cost = v["wait_cost"]["n"], v["wait_cost_ms"]
        added = f"added {_ms(cost)} to" if cost > 0 else "added nothing measurable to"
        said.append(f"on a healthy pair WAIT 1 {added} an acquire (median of {n} acquires, "
                    f"{_ms(v['wait_cost']['acquire_ms'])} without it)")
        short.append(f"WAIT costs {_ms(max(cost, 0))} per acquire")
    readout = f"{label}: " + "; ".join(said) + "."
    return ModeWords(label, readout, " · ".join(short))


def figure_words(modes: Any, labels: dict[str, str] | None = None) -> FigureWords:
    """The failover figure's words; a list of runs is named by guard."""
    modes = named(modes, lambda tl: str(tl.params.get("guard")))
    return _figure_words(modes, "A lease lost in a failover: the holder takes it on the primary, replication "
                                "stalls, the primary is killed and its replica promoted, and the contender takes "
                                "the lease on the new primary. Each guard runs the same story.",
                         "Point at a guard to light its run and read what happened to the lease, the tokens "
                         "and the writes.", labels)
