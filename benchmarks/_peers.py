"""The peer libraries' lock holders for benchmarks/renewal_cost.py: python-redis-lock (one renewal
thread per lock) and redis-py's Lock extended from a threading.Timer per lock, each on a plain
redis-py client as a user would make it, every renewal call timed. Not a test: nothing asserts speed."""

from __future__ import annotations

import gc
import statistics
import threading
import time
from collections import Counter, defaultdict

import redis

from emqlab.store.commandstats import ServerCounter


def busy_ms(spans: list[tuple[float, float]]) -> float:
    """How long at least one renewal call was in flight: the union of the call intervals."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if a > end:
            total, end = total + (b - a), b
        elif b > end:
            total, end = total + (b - end), b
    return total * 1000


class _Peer:
    """Lock holders of a peer library on a plain redis-py client (what a user would hold), renewal
    calls timed per lock. `max_connections` None keeps redis-py's default pool (100 connections)."""

    def __init__(self, url: str, k: int, lease_real: float, max_connections: int | None):
        kw = {"max_connections": max_connections} if max_connections else {}
        self.client = redis.Redis.from_url(url, decode_responses=True, **kw)
        self.k, self.lease_real = k, lease_real
        self.calls: dict[int, list[tuple[float, float]]] = defaultdict(list)
        self.errors: Counter = Counter()
        self.locks: list = []

    def timed(self, index: int, fn, *args, **kw):
        start = time.perf_counter()
        try:
            return fn(*args, **kw)
        except Exception as exc:
            self.errors[type(exc).__name__] += 1
            raise
        finally:
            self.calls[index].append((start, time.perf_counter()))

    def cleanup(self) -> None:
        for pattern in ("emqlab:bench:*", "lock*:emqlab:bench:*"):  # python-redis-lock prefixes "lock:"
            keys = list(self.client.scan_iter(match=pattern, count=1000))
            for i in range(0, len(keys), 1000):
                self.client.unlink(*keys[i:i + 1000])
        self.client.close()


_TIMED_LOCK = {}


def _timed_lock_class(peer_ref: list):
    """One subclass for the whole run: python-redis-lock registers its scripts once per process
    (a module global), so a second subclass would find its scripts missing."""
    if "cls" not in _TIMED_LOCK:
        import redis_lock

        class TimedLock(redis_lock.Lock):
            def extend(self, expire=None):
                return peer_ref[0].timed(self.index, super().extend, expire)

        _TIMED_LOCK["cls"] = TimedLock
    return _TIMED_LOCK["cls"]


_CURRENT_PEER: list = [None]


def _python_redis_lock(peer: _Peer):
    _CURRENT_PEER[0] = peer
    cls = _timed_lock_class(_CURRENT_PEER)
    expire = max(1, round(peer.lease_real))
    warm = cls(peer.client, "emqlab:bench:warm", expire=expire)  # loads its scripts before the window
    warm.index = -1
    warm.acquire(blocking=False)
    warm.extend()
    warm.release()
    peer.calls.clear()
    return expire * 2 / 3, lambda: _take(peer, lambda i: _prl_take(cls, peer, i, expire)), \
        (lambda lock: lock.get_owner_id() == lock.id), (lambda lock: lock.release())


def _prl_take(cls, peer, i, expire):
    lock = cls(peer.client, f"emqlab:bench:{{w}}:{i}", expire=expire, auto_renewal=True)
    lock.index = i
    lock.acquire(blocking=False)
    return lock


def _take(peer: _Peer, take) -> None:
    for i in range(peer.k):
        peer.locks.append(take(i))


def _redis_py_lock(peer: _Peer):
    interval = peer.lease_real / 2
    stop = threading.Event()
    timers: dict[int, threading.Timer] = {}
    warm = peer.client.lock("emqlab:bench:warm", timeout=peer.lease_real, thread_local=False)
    warm.acquire(blocking=False)
    warm.extend(peer.lease_real, replace_ttl=True)  # loads the extend script before the window
    warm.release()

    def renew(i, lock):
        if stop.is_set():
            return
        try:
            peer.timed(i, lock.extend, peer.lease_real, replace_ttl=True)
        except Exception:
            return  # the timer stops; nobody else is told, as with a hand-written renewer
        timer = timers[i] = threading.Timer(interval, renew, (i, lock))
        timer.daemon = True
        timer.start()

    def take(i):
        lock = peer.client.lock(f"emqlab:bench:{{w}}:{i}", timeout=peer.lease_real, thread_local=False)
        lock.acquire(blocking=False)
        lock.index = i
        timer = timers[i] = threading.Timer(interval, renew, (i, lock))
        timer.daemon = True
        timer.start()
        return lock

    def release(lock):
        stop.set()
        timers[lock.index].cancel()
        lock.release()
    return interval, lambda: _take(peer, take), (lambda lock: lock.owned()), release


def _join_new(before: set, timeout: float = 15.0) -> None:
    """Wait for the renewal threads this run started, so the next run counts only its own."""
    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread not in before:
            thread.join(max(0.0, deadline - time.monotonic()))


def run_peer(url: str, kind: str, k: int, lease_real: float, ticks: int, max_threads: int,
             max_connections: int | None = None) -> dict:
    if k > max_threads:
        return {"rt_per_tick": None, "threads": k, "all_held": None,
                "broke": f"not run: needs {k:,} renewal threads, over the cap of {max_threads:,}"}
    peer = _Peer(url, k, lease_real, max_connections)
    before = set(threading.enumerate())
    base_threads = len(before)
    old_hook = threading.excepthook
    threading.excepthook = lambda args: None  # a failed renewal thread dies silently: counted below
    row: dict = {"connections": None}
    try:
        setup = _python_redis_lock if kind.startswith("python-redis-lock") else _redis_py_lock
        interval, take_all, owned, release = setup(peer)
        server = ServerCounter(peer.client).start()
        try:
            take_all()
        except Exception as exc:  # thread or connection limits
            row.update(rt_per_tick=None, threads=threading.active_count() - base_threads, all_held=False,
                       broke=f"failed while taking {len(peer.locks):,} of {k:,} locks: {type(exc).__name__}: {exc}")
            for lock in peer.locks:
                try:
                    release(lock)
                except Exception:
                    pass
            return row
        row["cadence_s"] = round(interval, 3)
        time.sleep(interval * (ticks + 0.5))
        row["threads"] = threading.active_count() - base_threads
        held = sum(1 for lock in peer.locks if owned(lock))
        server.stop()
        for lock in peer.locks:
            try:
                release(lock)
            except Exception:
                pass  # a lock that lapsed cannot be released
        done = [spans for spans in peer.calls.values()]
        n_ticks = min((len(s) for s in done), default=0) if len(done) == k else 0
        per_tick = [busy_ms([s[n] for s in done]) for n in range(n_ticks)]
        calls = sum(len(s) for s in done)
        full_ticks = calls / k
        # neither library pipelines: each renewal is one EVALSHA, one round trip (SET and release are
        # not EVALSHA, and the release runs after the window), so the server's count is the round trips
        row.update(
            rt_per_tick=round(server.calls("evalsha") / full_ticks) if full_ticks else None,
            wall_ms_per_tick=statistics.median(per_tick) if per_tick else None, wall_ms_ticks=per_tick,
            server_us_per_tick=round(server.usec("evalsha") / full_ticks, 1) if full_ticks else None,
            connections=peer.client.connection_pool._created_connections,
            all_held=held == k, held=held, failed_renewals=sum(peer.errors.values()), errors=dict(peer.errors))
        if per_tick and max(per_tick) > interval * 1000:
            row["broke"] = f"a tick took {max(per_tick) / 1000:.1f} s, longer than the {interval:g} s cadence"
        if held != k:
            why = ", ".join(f"{n:,} {e}" for e, n in peer.errors.items()) or "none raised"
            lapsed = (f"{k - held:,} of {k:,} locks lapsed; failed renewals: {why}; no holder was told")
            row["broke"] = f"{row['broke']}; {lapsed}" if "broke" in row else lapsed
        return row
    finally:
        _join_new(before)
        threading.excepthook = old_hook
        peer.cleanup()
        del peer
        gc.collect()
