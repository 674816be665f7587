"""Issue 14 item 2: a learner's credential can run the class queue's operations and write its own
keys, and the server refuses everything else (each refusal below is tried with a learner's
credential). What ACLs cannot stop is listed in emqlab/classroom/server.py and checked by the invariants."""

from __future__ import annotations

import pytest
import redis

from emqlab.store.backend import connect
from emqlab.classroom.server import Classroom, class_users, open_class
from emqlab.core.errors import StaleToken
from emqlab.queue.jobs import Queue
from emqlab.classroom.board import Board
from realtime import host

pytestmark = pytest.mark.live

# a lease on the real clock (ms) that outlasts a loaded machine's stall between a claim and its extend or reap:
# 2 s on the reference host, longer on a slower one (tests/realtime.py)
LEASE_MS = 2000 * host().scale_factor


@pytest.fixture
def room(valkey_url):
    be = connect(valkey_url, clock="real", scale=1.0)
    host, port = be.client.connection_pool.connection_kwargs["host"], be.client.connection_pool.connection_kwargs["port"]
    room = Classroom(be, 2, host, port).open()
    try:
        yield room
    finally:
        room.close()
        assert not class_users(be.client, room.keys) and not be.keys(room.keys.prefix)
        be.close()


def learner(room, slot="l01"):
    return open_class(room.address(slot))


@pytest.fixture
def board(room):
    """The instructor's board on the class; closed after."""
    board = Board.connect(room.address("instructor"))
    yield board
    board.close()


@pytest.fixture
def queue(room):
    """The class queue as learner l01 works it, with that learner's credential; closed after."""
    store = learner(room)
    yield Queue(store, "class", prefix=room.keys.prefix)
    store.close()


def refused(client, *command) -> str:
    with pytest.raises(redis.RedisError) as err:
        client.execute_command(*command)
    text = str(err.value)
    assert isinstance(err.value, (redis.exceptions.NoPermissionError, redis.ResponseError)), text
    return text


def test_every_forbidden_command_is_refused_for_a_learner(room):
    store = learner(room)
    k, c = room.keys, store.client
    other = k.own("l02", "lane")
    room.admin.rpush(other, "someone else's")
    q = Queue(store, "class", prefix=k.prefix)
    cases = [
        ("FLUSHALL",), ("FLUSHDB",), ("KEYS", "*"), ("SCAN", "0"), ("SCAN", "0", "MATCH", k.own("l01") + "*"),
        ("CONFIG", "GET", "*"), ("CONFIG", "SET", "maxmemory", "1"), ("ACL", "LIST"), ("ACL", "WHOAMI"),
        ("ACL", "SETUSER", "me", "on", "+@all"), ("EVAL", "return 1", "0"), ("EVALSHA", "0" * 40, "0"),
        ("SCRIPT", "LOAD", "return 1"), ("SCRIPT", "FLUSH"),
        ("FUNCTION", "LOAD", "#!lua name=mine\nredis.register_function('mine', function() return 1 end)"),
        ("FUNCTION", "FLUSH"), ("FUNCTION", "DELETE", k.library), ("DEBUG", "SLEEP", "0"), ("SHUTDOWN", "NOSAVE"),
        ("MONITOR",), ("CLIENT", "KILL", "ID", "1"), ("SELECT", "1"), ("SWAPDB", "0", "1"),
        ("GET", other), ("LRANGE", other, "0", "-1"), ("RPUSH", other, "x"), ("DEL", other),
        ("SET", k.ctl("l01"), "ignore my orders"), ("SET", k.key("fence"), "0"), ("HGETALL", k.ctl("l02")),
        ("SET", k.key("enqueued"), "0"), ("DEL", q.pending), ("HGETALL", q.job_key("j1")), ("UNLINK", q.done),
        ("SET", "emqlab:elsewhere", "x"), ("GET", "emqlab:elsewhere"),
    ]
    for command in cases:
        refused(c, *command)
    # its own keys and its reads are allowed
    c.set(k.own("l01", "mine"), "1")
    assert c.hgetall(k.ctl("l01")) == {} and c.get(k.key("fence")) == "1"
    # the functions refuse keys outside the class queue, even ones the learner may write
    refused(c, "FCALL", k.function("claim"), 2, k.own("l01", "a"), k.own("l01", "b"), k.base, 1000, 1)
    store.close()


def test_a_learner_works_the_queue_and_cannot_enqueue_or_unfence(board, queue):
    board.enqueue(3)
    with pytest.raises(redis.RedisError, match="only the instructor"):
        queue.enqueue("x1")
    a, b = queue.claim(LEASE_MS, 2)
    assert not queue.extend([(a.id, a.attempts)], LEASE_MS).lost
    queue.retry(b.id, b.attempts)
    queue.complete(a.id, a.attempts)
    c = queue.claim(LEASE_MS)[0]
    # the learner asks for an unfenced write of a stale attempt: the server's fence (on) refuses it
    queue.do_reap(100)
    with pytest.raises(StaleToken):
        queue.record_effect(c.id, c.attempts - 1 if c.attempts > 1 else c.attempts + 5, fenced=False)
    assert queue.record_effect(c.id, c.attempts, fenced=False) == 1  # current: applied, and settled done
    board.fencing(False)
    status = board.status()
    assert status["completed"] == 2 and status["invariants_ok"], (status["invariants"], status["lost_jobs"])


def test_the_instructor_steers_but_cannot_administer(board):
    for command in [("ACL", "LIST"), ("FUNCTION", "FLUSH"), ("FLUSHALL",), ("CONFIG", "GET", "*"), ("KEYS", "*"),
                    ("EVAL", "return 1", "0"), ("GET", "emqlab:elsewhere")]:
        refused(board.client, *command)


def test_damage_done_with_allowed_commands_is_seen(board, queue):
    """What ACLs cannot stop: a learner runs a command the functions need, directly. The invariants see it."""
    board.enqueue(2)
    queue.backend.client.zpopmin(queue.pending)  # takes a job out of pending without leasing it: allowed, and a loss
    status = board.status()
    assert status["lost"] == 1 and not status["invariants_ok"]


def test_an_order_no_worker_takes_is_reported_not_dropped(board):
    """Seat l02 has no worker: a crash or pause ordered to it falls on nobody, and the board says so."""
    for order in (board.order("l02", "crash", wait_s=0.3), board.order("l02", "pause", 5.0, wait_s=0.3)):
        assert (order.slot, order.taken) == ("l02", False)
        assert order.why == "no worker took it within 0.3 s (the seat has no live worker: it crashed or left)"
    assert order.said("l02", "pause 5 s") == ("ordered l02 (seat l02) to pause 5 s, but it did not land: no worker "
                                               "took it within 0.3 s (the seat has no live worker: it crashed or left)")
