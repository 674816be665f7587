"""The cluster lesson (one slot per queue): a three-node Valkey cluster of the notebook's own, started
once and stopped with the kernel (emqlab's one tracker owns it), and what the queue's scripts meet on it,
with and without a hashtag."""

from __future__ import annotations

_cluster = None


def cluster():
    """A three-node Valkey cluster for the cluster lesson, started once and stopped with the kernel."""
    global _cluster
    if _cluster is None:
        from ...store.local_cluster import LocalCluster

        _cluster = LocalCluster().start()
    return _cluster


def stop_cluster() -> None:
    global _cluster
    current, _cluster = _cluster, None
    if current is not None:
        current.stop()


def slots(keys) -> dict[str, int]:
    """The cluster slot of each key (CRC16 of the hashtag if there is one, else of the whole key)."""
    from redis.crc import key_slot

    return {key: key_slot(key.encode()) for key in keys}


def _cluster_queue(hashtag: bool):
    from ...store.local_cluster import ClusterBackend
    from ...queue.jobs import Queue

    cb = ClusterBackend(cluster())
    return cb, Queue(cb, "orders", prefix=cb.prefix + "slots:", hashtag=hashtag)


def enqueue_on_cluster(hashtag: bool = True, job_id: str = "ORD0NgWEfAEJfs") -> str:
    """Send the queue's enqueue script straight to the node that owns its first key, and say what
    the server replied: with the `{q}` hashtag all its keys share a slot; without it they do not.
    (The cluster client would refuse a cross-slot call itself; going to the node shows the server's word.)"""
    import redis

    from ...store.scripts import source

    cb, q = _cluster_queue(hashtag)
    keys = q.enqueue_keys(job_id)
    node = cluster().node_for(keys[0])
    try:
        reply = node.evalsha(node.script_load(source("enqueue")), len(keys), *keys, job_id, "pay", 0)
        return f"reply {reply}: all {len(keys)} keys live in slot {slots([keys[0]])[keys[0]]}"
    except redis.ResponseError as exc:
        return f"refused by the server: {exc}"
    finally:
        node.close()
        cb.delete_prefix(cb.prefix + "slots:")
        cb.close()


def queue_keys(hashtag: bool = True, job_id: str = "ORD0NgWEfAEJfs") -> list[str]:
    """The keys one enqueue touches, as the queue names them."""
    cb, q = _cluster_queue(hashtag)
    cb.close()
    return q.enqueue_keys(job_id)


def work_on_cluster(job_id: str = "ORD0NgWEfAEJfs") -> str:
    """Enqueue, claim and complete one job through the cluster client; where the job ends up."""
    cb, q = _cluster_queue(True)
    try:
        q.enqueue(job_id, "pay")
        [claimed] = q.claim(30_000)
        q.complete(job_id, claimed.attempts)
        return f"claimed with attempts {claimed.attempts}, completed; the job is now in: {', '.join(q.where(job_id))}"
    finally:
        cb.delete_prefix(cb.prefix + "slots:")
        cb.close()


def cluster_placements() -> dict:
    """The cluster figure's two runs on the lesson's cluster: the queue's keys with and without the hashtag."""
    from ...view.figures import cluster_modes

    return cluster_modes(cluster())
