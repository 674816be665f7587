"""When two states of the explorer are one: the state key the search deduplicates on.

A state is what the store holds (every key under the queue's prefix, `emqlab.store.snapshot`), what each
worker believes (`Hand`) and what the run has seen the store no longer shows (`Seen`). Two keys:

- **exact** (`exact_form`): every key relative to the prefix with its raw value and scores, the server's
  TIME, each worker's deadline and freeze as absolute times; only session tokens are renamed, in order
  of first appearance (they are random, and a script can only compare them). Sound for any script: the
  key used whenever a script is replaced, and on request (`exact=True`).
- **canonical** (`canonical_form`), for the package's own scripts, whose futures depend on time only
  through deadlines: a deadline (active, sessions, schedule, a job's hard deadline, a holder's granted
  deadline, a freeze's end) as its distance from now, every one already passed as "due" (time only moves
  forward, and no script reads a passed deadline except to find it passed); pending, dead and a
  session's `held:` index by order alone (a reaped job's score 0 kept as 0, a score equal to TIME kept as
  "now"); a session token as whether it is still the worker's current one; the reap counter and the wake
  list left out (no script's effect on any other key depends on them). With `symmetric`, the workers
  are renamed in a canonical order (by everything each one holds and believes) in every key, member,
  field and value that names one, so states that differ only by which worker is which are one.

`differs` says which abstraction a key uses, in words for the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...store import snapshot as store_snapshot
from .world import Hand, Seen

DEADLINES = ("active", "sessions", "schedule")  # sorted sets scored by a deadline on the server's clock
ORDERED = ("pending", "dead")  # sorted sets whose scores only order their members
LEFT_OUT = ("reaped", "wake")  # written by scripts, read by none for any other key
HELD = "held:"
TOKENS = "session_tokens"

EXACT_WORDS = "exact: absolute times and raw values (session tokens renamed in order of first appearance)"
CANONICAL_WORDS = "canonical: deadlines as time left, orders by rank, tokens as current or stale"
SYMMETRIC_WORDS = ", workers interchangeable"


def _due(score: float, now: float) -> Any:
    return score if math.isinf(score) else ("due" if score <= now else score - now)


def _ordered(pairs: Sequence[tuple[str, float]], now: int) -> tuple:
    past = sorted({s for _, s in pairs if s != 0 and s != now})
    rank = {s: k + 1 for k, s in enumerate(past)}
    return tuple((m, 0 if s == 0 else "now" if s == now else rank[s]) for m, s in pairs)


def exact_form(base: str, stored: store_snapshot.Stored, hands: Sequence[Hand], seen: Seen, now_ms: float) -> tuple:
    """The exact state key: nothing abstracted but the prefix and the tokens' random names."""
    tokens: dict[str, str] = {}

    def token(value: str | None) -> str | None:
        return None if value is None else tokens.setdefault(value, f"t{len(tokens) + 1}")

    held = tuple((h.name, h.alive, h.job, h.attempts, h.written, token(h.token), h.deadline, h.frozen_until, h.hard)
                 for h in hands)
    keys = []
    for key, entry in stored.entries.items():
        value = entry.value
        rel = key[len(base):]
        if entry.type == "hash" and rel == TOKENS:
            value = tuple((f, token(v)) for f, v in value)
        keys.append((rel, entry.type, value, entry.pttl))
    return stored.server_ms, now_ms, tuple(keys), held, seen.issued, tuple(sorted(seen.refused))


def canonical_form(base: str, stored: store_snapshot.Stored, hands: Sequence[Hand], seen: Seen, now_ms: float,
                   symmetric: bool = True, with_names: bool = False) -> Any:
    """The canonical state key (see the module's doc): equal keys, equal futures, for the package's scripts.
    `with_names`: (the key, {each worker's name: its name in the key}), so a search can carry what it knows
    about a state's steps from one copy of it to another."""
    now = stored.server_ms
    entries = {key[len(base):]: entry for key, entry in stored.entries.items()}
    tokens = dict(entries[TOKENS].value) if TOKENS in entries else {}

    def hand(h: Hand) -> tuple:
        deadline = None if h.deadline is None else _due(h.deadline, now)
        if not h.alive:  # a crashed worker: only the lease the store still owes it matters
            return (False, h.job, h.attempts, deadline) if deadline not in (None, "due") else (False,)
        session = None if h.token is None else ("current" if tokens.get(h.name) == h.token else "stale")
        frozen = None if h.frozen_until is None else max(0.0, h.frozen_until - now_ms)
        hard = _due(h.hard, now) if h.hard else None
        return True, h.job, h.attempts, h.written, session, deadline, frozen, hard

    if symmetric:
        def signature(h: Hand) -> str:
            w = h.name
            sessions = dict(entries["sessions"].value) if "sessions" in entries else {}
            held = entries.get(HELD + w)
            return repr((hand(h), _due(sessions[w], now) if w in sessions else None, w in tokens,
                         None if held is None else tuple(m for m, _ in held.value)))
        order = sorted(hands, key=signature)
        rename = {h.name: f"w{k}" for k, h in enumerate(order, start=1)}
    else:
        order = list(hands)
        rename = {h.name: h.name for h in hands}

    def who(value: Any) -> Any:
        return rename.get(value, value)

    keys = []
    for rel, entry in entries.items():
        if rel in LEFT_OUT:
            continue
        value = entry.value
        name = rel
        if rel.startswith(HELD):
            name = HELD + who(rel[len(HELD):])
            value = _ordered(value, now)
        elif entry.type == "zset" and rel in DEADLINES:
            value = tuple(sorted((who(m), _due(s, now)) for m, s in value)) if rel == "sessions" else \
                tuple((m, _due(s, now)) for m, s in value)
        elif entry.type == "zset" and rel in ORDERED:
            value = _ordered(value, now)
        elif entry.type == "hash" and rel.startswith("job:"):
            value = tuple((f, _due(float(v), now) if f == "hard" else who(v) if f == "worker" else v)
                          for f, v in value)
        elif entry.type == "hash" and rel == TOKENS:
            value = tuple(sorted((who(f), "t") for f, _ in value))
        keys.append((name, entry.type, value, entry.pttl))
    held = tuple((who(h.name), *hand(h)) for h in order)
    form = tuple(sorted(keys)), held, seen.issued, tuple(sorted(seen.refused))
    return (form, rename) if with_names else form


def state_key(base: str, stored: store_snapshot.Stored, hands: Sequence[Hand], seen: Seen, now_ms: float,
              abstract: bool, symmetric: bool) -> tuple[tuple, dict[str, str]]:
    """The key the search deduplicates on (canonical for the package's scripts, exact otherwise), and each
    worker's name in it."""
    if abstract:
        return canonical_form(base, stored, hands, seen, now_ms, symmetric, with_names=True)
    return exact_form(base, stored, hands, seen, now_ms), {h.name: h.name for h in hands}


def differs(abstract: bool, symmetric: bool) -> str:
    """The state key in words."""
    return (CANONICAL_WORDS + (SYMMETRIC_WORDS if symmetric else "")) if abstract else EXACT_WORDS
