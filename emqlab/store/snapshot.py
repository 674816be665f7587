"""Every key under a prefix, read as plain data and written back: a state of the store that a search
keeps and puts back before it tries its next step (`emqlab.scenarios.explore`).

`read(client, prefix)` returns a `Stored`: the server's TIME when it read, and {key: Entry}: each key's type, its value in a canonical plain form
(a hash as its sorted (field, value) pairs, a sorted set as (member, score) pairs in the store's own
order, a set sorted, a list in order, a string as it is) and its time to live (PTTL, -1 for none).
`write(client, contents, present)` deletes the keys `present` names (what the store holds now) and
writes `contents` back, in one pipeline. Scores and times are written exactly as read: a caller
that puts its clock back to when it read them first (`VirtualClock.rewind`; a time to live is written
back from the clock's now) gets the same store.

A reader keeps a `types` cache ({key: type}) between reads, so a read of keys it has seen before is
one round trip (SCAN and every typed read pipelined); a key it has not seen costs one more.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import redis

from .backend import glob_escape
from .clock import time_reply_ms

SCAN_COUNT = 10_000  # one SCAN call covers a small store (a search's own) whole


@dataclass(frozen=True)
class Entry:
    """One key: its type (hash, zset, set, list, string), its value in plain canonical form, its PTTL
    in server ms (-1: no expiry)."""

    type: str
    value: Any
    pttl: int = -1


@dataclass(frozen=True)
class Stored:
    """What `read` found: every key under the prefix (sorted), and the server's TIME (ms) in the same pipeline."""

    entries: dict[str, Entry]
    server_ms: int


def _queue_read(pipe, key: str, key_type: str, ttl: bool = True) -> None:
    if key_type == "hash":
        pipe.hgetall(key)
    elif key_type == "zset":
        pipe.zrange(key, 0, -1, withscores=True)
    elif key_type == "set":
        pipe.smembers(key)
    elif key_type == "list":
        pipe.lrange(key, 0, -1)
    elif key_type == "string":
        pipe.get(key)
    else:
        raise ValueError(f"key {key!r} has type {key_type!r}, which a snapshot does not hold")
    if ttl:
        pipe.pttl(key)


def _plain(key_type: str, raw: Any) -> Any:
    if key_type == "hash":
        return tuple(sorted(raw.items()))
    if key_type == "zset":
        return tuple((member, float(score)) for member, score in raw)
    if key_type in ("set",):
        return tuple(sorted(raw))
    if key_type == "list":
        return tuple(raw)
    return raw


def read(client: redis.Redis, prefix: str, types: dict[str, str] | None = None, ttl: bool = True) -> Stored:
    """Every key under `prefix` as {key: Entry}, sorted by key, and the server's TIME. `types`: the
    caller's cache of each key's type, kept up to date here (a key that changed its type is read again).
    `ttl=False`: no key's time to live is asked (each Entry's pttl is -1), for a caller whose scripts set
    none: half the commands."""
    per = 2 if ttl else 1
    types = {} if types is None else types
    match = glob_escape(prefix) + "*"
    for _ in range(3):  # a key whose type the cache got wrong is typed afresh, and read once more
        pipe = client.pipeline(transaction=False)
        pipe.time()
        pipe.scan(0, match=match, count=SCAN_COUNT)
        known = sorted(types)
        for key in known:
            _queue_read(pipe, key, types[key], ttl)
        got = pipe.execute(raise_on_error=False)
        now_ms = time_reply_ms(got.pop(0))
        cursor, keys = got[0]
        keys = set(keys)
        while int(cursor) != 0:
            cursor, more = client.scan(cursor, match=match, count=SCAN_COUNT)
            keys.update(more)
        out: dict[str, Entry] = {}
        stale = False
        for i, key in enumerate(known):
            raw, pttl = got[1 + per * i], (got[2 + per * i] if ttl else -1)
            if key not in keys:
                continue
            if isinstance(raw, redis.ResponseError):  # WRONGTYPE: the key holds another type now
                del types[key]
                stale = True
                continue
            out[key] = Entry(types[key], _plain(types[key], raw), int(pttl))
        new = sorted(keys - set(out))
        if new:
            pipe = client.pipeline(transaction=False)
            for key in new:
                pipe.type(key)
            for key, key_type in zip(new, pipe.execute()):
                types[key] = key_type
            stale = True
        for key in [k for k in types if k not in keys]:
            del types[key]  # gone: its type may differ when it comes back
        if not stale:
            return Stored(dict(sorted(out.items())), now_ms)
    raise RuntimeError(f"the keys under {prefix!r} kept changing type while they were read")


def write(client: redis.Redis, contents: Mapping[str, Entry], present: Iterable[str] = ()) -> None:
    """Delete the keys `present` names, then write every key of `contents` as read, in one pipeline."""
    pipe = client.pipeline(transaction=False)
    gone = sorted(set(present) | set(contents))
    if gone:
        pipe.delete(*gone)
    for key, entry in contents.items():
        value = entry.value
        if entry.type == "hash":
            if value:
                pipe.hset(key, mapping=dict(value))
        elif entry.type == "zset":
            if value:
                pipe.zadd(key, dict(value))
        elif entry.type == "set":
            if value:
                pipe.sadd(key, *value)
        elif entry.type == "list":
            if value:
                pipe.rpush(key, *value)
        elif entry.type == "string":
            pipe.set(key, value)
        else:
            raise ValueError(f"key {key!r} has type {entry.type!r}, which a snapshot does not hold")
        if entry.pttl > 0:
            pipe.pexpire(key, entry.pttl)
    pipe.execute()
