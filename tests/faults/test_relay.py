"""The fault-injecting link (emqlab.faults.relay): it delays each way, holds traffic while stalled, cuts
connections, and leaves no thread or socket behind. An echo server on loopback stands in for Valkey
(no Valkey starts here); every wait polls with a deadline."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from emqlab.faults import relay as relay_mod
from emqlab.core.errors import BadParameter
from emqlab.faults.relay import Relay
from realtime import timeout_s
from support.records import REAL_SLACK_S

# a round trip's time is asserted on the real clock, with margins sized from this host (tests/realtime.py)
pytestmark = pytest.mark.realtime

MARGIN_S = REAL_SLACK_S  # how late a loaded machine of this host's speed may return a round trip
# each leg's delay: the margin is a third of the two legs' (0.75 s a leg on the fast host, whose margin is 0.5 s)
DELAY = round(1.5 * MARGIN_S, 3)


@pytest.fixture
def echo():
    """A loopback echo server: returns its port; stopped (and joined) at the end."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()
    conns: list[socket.socket] = []

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (socket.timeout, OSError):
                continue
            conns.append(conn)
            threading.Thread(target=pump, args=(conn,), daemon=True).start()

    def pump(conn):
        try:
            while data := conn.recv(4096):
                conn.sendall(data)
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(5)
    for conn in conns:
        conn.close()
    listener.close()


def _client(relay: Relay) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", relay.port), timeout=timeout_s(5))
    return sock


def _round_trip(sock: socket.socket, payload: bytes = b"ping") -> float:
    start = time.monotonic()
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(4096)
        assert chunk, "the connection closed"
        got += chunk
    assert got == payload
    return time.monotonic() - start


def test_no_delay_relays_bytes_both_ways(echo):
    with Relay(echo) as relay, _client(relay) as sock:
        _round_trip(sock, b"x" * 200_000)  # more than one chunk, in order
        assert relay.connections == 1


def test_delay_is_added_each_way(echo):
    with Relay(echo, delay=DELAY) as relay, _client(relay) as sock:
        rtt = _round_trip(sock)
        assert 2 * DELAY - 0.02 <= rtt < 2 * DELAY + MARGIN_S  # two legs of the delay; margin for a loaded machine


def test_jitter_adds_at_most_its_bound_and_keeps_order(echo):
    delay, jitter = DELAY / 4, 3 * DELAY / 4  # at most 2 × (delay + jitter) = 2 × DELAY: three margins
    with Relay(echo, delay=delay, jitter=jitter, seed=7) as relay, _client(relay) as sock:
        for k in range(5):
            rtt = _round_trip(sock, f"msg{k}".encode())
            assert 2 * delay - 0.02 <= rtt < 2 * (delay + jitter) + MARGIN_S


def test_stall_holds_traffic_until_release(echo):
    with Relay(echo) as relay, _client(relay) as sock:
        _round_trip(sock)
        relay.stall()
        sock.sendall(b"held")
        sock.settimeout(timeout_s(0.3))
        with pytest.raises(socket.timeout):
            sock.recv(10)  # nothing gets through while stalled
        relay.release()
        sock.settimeout(timeout_s(5))
        got = b""
        while len(got) < 4:
            got += sock.recv(10)
        assert got == b"held"


def test_cut_closes_the_connection_and_new_ones_are_accepted(echo):
    with Relay(echo) as relay:
        sock = _client(relay)
        _round_trip(sock)
        relay.cut()
        deadline = time.monotonic() + timeout_s(5)
        closed = False
        while time.monotonic() < deadline and not closed:
            try:
                closed = sock.recv(10) == b""
            except (ConnectionResetError, BrokenPipeError):
                closed = True
        sock.close()
        assert closed
        with _client(relay) as again:
            _round_trip(again)
        assert relay.connections == 2


def test_stop_leaves_no_thread_or_socket(echo):
    relay = Relay(echo, delay=0.01).start()
    port = relay.port
    sock = _client(relay)
    _round_trip(sock)
    assert relay in relay_mod.running()
    relay.stop()
    sock.close()
    assert not relay.alive
    assert relay not in relay_mod.running()
    assert not [t for t in threading.enumerate() if t.name == "emqlab-relay"]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()  # nobody listens any more


def test_a_relay_stopped_while_connections_arrive_ends_quietly(echo, caplog):
    """Ctrl-C mid-run stops the relay while clients still dial in: nothing may be printed (a handler cancelled
    before its first step made asyncio log a traceback) and no coroutine may be left for the closed loop."""
    import sys

    unraisable: list = []
    previous, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        for n in range(60):
            relay = Relay(echo).start()
            socks: list[socket.socket] = []

            def dial():
                for _ in range(5):
                    try:
                        socks.append(socket.create_connection(("127.0.0.1", relay.port), timeout=1))
                    except OSError:
                        pass  # refused: the relay had stopped listening

            dialer = threading.Thread(target=dial)
            dialer.start()
            time.sleep(0.0005 * (n % 7))  # stop at a different point of the dialling each time
            relay.stop()
            dialer.join()
            for sock in socks:
                sock.close()
        import gc

        gc.collect()  # a coroutine abandoned with its loop is reported when it is collected
    finally:
        sys.unraisablehook = previous
    assert not [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    assert not unraisable, [str(u.exc_value) for u in unraisable]


def test_bad_delay_is_refused(echo):
    for bad in (-1, float("nan"), 4000, "1", True):
        with pytest.raises(BadParameter):
            Relay(echo, delay=bad)
