"""The cluster lesson: where one queue's keys live on a three-node Valkey cluster, with and without
the `{q}` hashtag, and what the server says to a script over them.

`placement(cluster, hashtag)` runs on a real `emqlab.store.local_cluster.LocalCluster`:
1. it sends the queue's enqueue script (four keys) straight to the node that owns its first key,
   and records the server's reply, or its refusal (CROSSSLOT);
2. it writes one small value to each of seven of the queue's keys (`KEYS`: those enqueue, claim,
   completion and the effect write touch; `Queue` names ten fixed keys, plus `job:<id>` per job and
   `held:<worker>` per session worker) with a one-key command through the cluster client, which
   routes each write to the node that owns the key's slot;
3. it asks every node, directly, which of the queue's keys it holds (SCAN), with each key's slot
   (CLUSTER KEYSLOT) and the node's slot range (CLUSTER SLOTS).
The Timeline's events are what the nodes answered; the verdict and the words are read from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis
from redis.exceptions import ClusterCrossSlotError

from ..store.local_cluster import ClusterBackend, LocalCluster
from ..queue.jobs import Queue
from ..store.scripts import source
from ..core.kinds import Kind
from ..core.timeline import Record, Timeline, Verdict
from ..core.words import ModeWords, plural
from .run_harness import mode_words
from .reaper import JOB_ID

MODES = {"hashtag": "with the {orders} hashtag", "none": "without a hashtag"}


@dataclass(frozen=True, kw_only=True)
class Params(Record):
    """A placement's parameters: whether the queue's keys carry the `{q}` hashtag, the job, the nodes."""

    hashtag: bool
    job: str
    nodes: int

    @property
    def mode(self) -> str:
        return "hashtag" if self.hashtag else "none"


@dataclass(frozen=True, kw_only=True)
class PlacementVerdict(Verdict):
    """Where one queue's keys went on the cluster, as its nodes answered, and what the enqueue script got."""

    mode: str  # the mode's label
    keys: list  # {name, key, slot, node} of each key a node holds
    key_count: int
    slots_used: int
    nodes_used: int
    nodes: list
    script_node: str
    script_accepted: bool
    script_reply: int | None
    script_error: str | None
    crossslot: bool
ENQUEUE_KEYS = ("job", "pending", "schedule", "wake")  # the enqueue script's KEYS[1..4]
KEYS = (*ENQUEUE_KEYS, "active", "done", "effects")  # the keys the lesson places: seven of the queue's, not all


def _keys(q: Queue, job_id: str) -> dict[str, str]:
    return {"job": q.job_key(job_id), "pending": q.pending, "schedule": q.schedule, "wake": q.wake_key,
            "active": q.active, "done": q.done, "effects": q.effects}


def placement(cluster: LocalCluster, hashtag: bool = True, job_id: str = JOB_ID) -> Timeline:
    """Place one queue's keys on `cluster` (with or without the hashtag); the nodes' answers."""
    cb = ClusterBackend(cluster)
    q = Queue(cb, "orders", hashtag=hashtag)  # under emqlab's own prefix; only these seven keys are touched
    keys = _keys(q, job_id)
    tl = Timeline("cluster", Params(hashtag=hashtag, job=job_id, nodes=len(cluster.nodes)), backend="cluster",
                  clock="real")
    try:
        for i, (first, last) in enumerate(cluster.slot_ranges()):
            tl.add(0, f"node {i + 1}", Kind.SLOTS, first=first, last=last)
        # 1. the script, on the node that owns its first key: the server's own answer
        names = [keys[k] for k in ENQUEUE_KEYS]
        owner = cluster.node_index(names[0])
        node = cluster.node_for(names[0])
        try:
            reply = node.evalsha(node.script_load(source("enqueue")), len(names), *names, job_id, "pay", 0)
            tl.add(0, f"node {owner + 1}", Kind.SCRIPT, script="enqueue", keys=list(ENQUEUE_KEYS), accepted=True,
                   reply=int(reply))
        except redis.ResponseError as exc:
            # redis-py keeps the server's error code as the exception's class: put the word back
            code = "CROSSSLOT " if isinstance(exc, ClusterCrossSlotError) else ""
            tl.add(0, f"node {owner + 1}", Kind.SCRIPT, script="enqueue", keys=list(ENQUEUE_KEYS), accepted=False,
                   error=code + str(exc))
        finally:
            node.close()
        # 2. every key, one single-key write each, routed by the cluster client
        c = cb.client
        c.hset(keys["job"], mapping={"state": "pending", "attempts": 0})
        c.zadd(keys["pending"], {job_id: 0})
        c.zadd(keys["schedule"], {"later": 0})
        c.rpush(keys["wake"], 1)
        c.zadd(keys["active"], {"held": 0})
        c.sadd(keys["done"], "finished")
        c.hset(keys["effects"], "finished", 1)
        # 3. what each node holds, asked of the node itself
        short = {key: name for name, key in keys.items()}
        for i in range(len(cluster.nodes)):
            with redis.Redis(**cluster.nodes[i].connection_kwargs, decode_responses=True) as n:
                for key in sorted(k for k in n.scan_iter(match=q.base + "*", count=1000) if k in short):
                    slot = int(n.execute_command("CLUSTER", "KEYSLOT", key))
                    tl.add(0, f"node {i + 1}", Kind.HOLDS, key=key, name=short.get(key, key), slot=slot)
    finally:
        for key in keys.values():
            cb.client.delete(key)
        cb.close()
    tl.verdict = verdict(tl)
    return tl


def verdict(tl: Timeline) -> PlacementVerdict:
    held = tl.of(Kind.HOLDS)
    [script] = tl.of(Kind.SCRIPT)
    v = PlacementVerdict(
        mode=MODES[tl.params.mode],
        keys=[{"name": e.data["name"], "key": e.data["key"], "slot": e.data["slot"], "node": e.actor} for e in held],
        key_count=len(held),
        slots_used=len({e.data["slot"] for e in held}),
        nodes_used=len({e.actor for e in held}),
        nodes=[e.actor for e in tl.of(Kind.SLOTS)],
        script_node=script.actor,
        script_accepted=script.data["accepted"],
        script_reply=script.data.get("reply"),
        script_error=script.data.get("error"),
        crossslot="CROSSSLOT" in (script.data.get("error") or ""),
    )
    return v.worded(words(v))


def words(v: PlacementVerdict) -> ModeWords:
    """The placement in words: a headline (where the keys went, and whether the script ran), the server's
    reply as a fact; every clause read from `v`."""
    n, slots, nodes = v.key_count, v.slots_used, v.nodes_used
    if slots == 1:
        where = (f"the {n} keys placed all hash to slot {v.keys[0]['slot']}, so {v.keys[0]['node']} "
                 "holds them all")
    else:
        where = f"the {n} keys placed hash to {plural(slots, 'slot')} on {plural(nodes, 'node')}"
    if v.script_accepted:
        said, fact = f"{v.script_node} ran the enqueue script", f"its reply: {v.script_reply}"
        short = "enqueue runs"
    else:
        said = f"{v.script_node} refused the enqueue script" + (" (CROSSSLOT)" if v.crossslot else "")
        fact = f"the server's error: {v.script_error}"
        short = "enqueue refused (CROSSSLOT)" if v.crossslot else "enqueue refused"
    static = f"{plural(n, 'key')} · {plural(slots, 'slot')} · {plural(nodes, 'node')} · {short}"
    return ModeWords(v.mode, f"{v.mode}: {where}; {said}.", static, (fact,))


figure_words = mode_words(
    "Seven of one queue's keys on a three-node Valkey cluster. With the {orders} hashtag "
    "only the name between the braces is hashed, so every key gets the same slot and "
    "the same node, and a script over several keys can run there. Without it each "
    "whole key is hashed, the keys scatter, and the server refuses the script.",
    "Point at a panel to read where the keys went and what the server said.")
