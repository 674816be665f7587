"""A worker's link to the store with a one-way delay, as a scenario process sees it.

Every command sent over the link takes `latency_ms` (model milliseconds) to reach the store and as long again for its
reply to come back. On fakeredis (virtual clock) the two legs are clock timeouts around the store
call, so the server acts at the exact arrival instant. On a live store the worker's own connection
runs through an `emqlab.faults.relay.Relay` whose delay is the model delay in real seconds (the clock's
`real_s`); the call runs in a thread of the link's own while the SimPy process waits in model time, so the other
workers keep running meanwhile. `call` returns (when the server acted, the result): exact on the
virtual clock; on a live store, the midpoint of send and receipt (the legs are equally long).

A stop-the-world pause of the worker does not stop its messages on the wire: a reply that arrives
while the worker is frozen is read when it resumes.

Each call over a delayed link is recorded as a `trip` interval of the worker: from when the command
was sent to when its reply arrived, with `at`, when the server acted (what the figure draws as the
message's path to the store and back).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from .pauses import World
from .relay import Relay
from ..store.clock import to_ms, to_s

POLL_REAL_S = 0.0005  # a live call is looked at every half millisecond of real time


class Link:
    """The holder's link: `backend` is what its commands go through (the run's own when there is no delay)."""

    def __init__(self, run, world: World, latency_ms: float, actor: str = "holder"):
        self.run, self.clock, self.world, self.latency_ms = run, run.clock, world, float(latency_ms)
        self.actor = actor
        self.backend = run.backend
        self.relay: Relay | None = None
        self._pool: ThreadPoolExecutor | None = None
        if self.latency_ms > 0 and run.backend.live:
            host, port = run.backend.address()
            self.relay = Relay(port, host).start()  # no delay while the link's client connects and loads scripts
            try:
                self.backend = run.backend.via("127.0.0.1", self.relay.port)
                self.relay.set_delay(self.clock.real_s(to_s(self.latency_ms)))  # the one place it becomes real seconds
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="emqlab-link")
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self.backend is not self.run.backend:
            self.backend.close()
            self.backend = self.run.backend
        if self.relay is not None:
            self.relay.stop()
            self.relay = None

    def __enter__(self) -> "Link":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def call(self, fn: Callable[[], Any]):
        """A process step: send, let the store run `fn` when the command arrives, wait for the reply.
        Returns (model ms when the server acted, fn's result); fn's exception is raised at the reply."""
        if self.latency_ms <= 0:
            at = self.clock.now_ms
            return at, fn()
        # when the server acted on THIS call: kept per call, since calls overlap (a job's "done" can leave
        # while an extend's reply is still on its way back)
        acted: dict[str, float] = {}
        trip = self.run.timeline.open(self.run.t, self.actor, "trip")
        try:
            at, result = yield from (self._call_live(fn, acted) if self._pool is not None
                                     else self._call_virtual(fn, acted))
        finally:  # a reply that carries the store's refusal (LeaseLost…) still came back
            trip.end = self.run.t
            trip.data["at"] = round(self.run.ms_to_t(acted["ms"]), 3) if "ms" in acted else None
        return at, result

    def _call_virtual(self, fn, acted: dict):
        clock = self.clock

        def wire():  # both legs: not a member of the worker's world, a pause does not stop them
            yield clock.timeout(self.latency_ms)
            at, result, error = clock.now_ms, None, None
            acted["ms"] = at
            try:
                result = fn()
            except Exception as exc:  # the store's answer (LeaseLost, StaleToken…), delivered with the reply
                error = exc
            yield clock.timeout(self.latency_ms)
            return at, result, error

        at, result, error = yield from self.world.wait(clock.process(wire()))
        if error is not None:
            raise error
        return at, result

    def _call_live(self, fn, acted: dict):
        clock = self.clock
        times: list[float] = []

        def timed():
            times.append(clock.now_ms)
            try:
                return fn()
            finally:
                times.append(clock.now_ms)

        future = self._pool.submit(timed)
        step = max(1.0, to_ms(clock.model_s(POLL_REAL_S)))
        while not future.done():
            yield from self.world.wait(clock.timeout(step))
        acted["ms"] = round((times[0] + times[1]) / 2, 3)
        return acted["ms"], future.result()  # the store's exception, if any, is raised here
