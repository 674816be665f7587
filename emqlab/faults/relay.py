"""A fault-injecting link: a loopback TCP relay between a client and a server.

`Relay(target_port)` listens on 127.0.0.1 and forwards every connection to the target, each way
after a one-way delay (`delay` real seconds, plus up to `jitter` more, order kept). It can hold
all traffic (`stall()`, until `release()`) and cut every connection it carries (`cut()`). It runs
an asyncio loop in one daemon thread of its own; every relay this process starts is owned by the one
tracker (`emqlab.core.children.TRACKER`) and stopped by `stop()`, the context manager, or the tracker at
interpreter exit: no thread or socket is left.

No maintained Python library does this without a server of its own (toxiproxy-python drives the
Go toxiproxy binary; pproxy tunnels but cannot delay or stall), so it is kept small here.
"""

from __future__ import annotations

import asyncio
import random
import threading
from typing import Any

from ..core.children import TRACKER
from ..core.errors import BackendUnavailable, BadParameter
from ..core.ranges import within

CHUNK = 65536


def running() -> list["Relay"]:
    """The relays of this process that are running now."""
    return TRACKER.owned(Relay)


class Relay:
    """One listening port on 127.0.0.1 that forwards to `target_host:target_port`."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1", delay: float = 0.0, jitter: float = 0.0,
                 seed: int | None = None):
        self.target = (target_host, int(within("port", target_port)))
        self.delay, self.jitter = self._seconds("delay", delay), self._seconds("jitter", jitter)
        self._random = random.Random(seed)
        self.port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._open: asyncio.Event | None = None  # set while traffic flows; cleared by stall()
        self._links: set[asyncio.Task] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._carriers: set[asyncio.Task] = set()  # a task per connection, kept here (the loop holds it weakly)
        self._closing = False  # set by the shutdown: a connection that arrives from then on is closed at once
        self.connections = 0  # connections accepted so far

    @staticmethod
    def _seconds(what: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 3600:
            raise BadParameter(f"a relay's {what} is a number of real seconds from 0 to 3600, got {value!r}")
        return float(value)

    # -- life ----------------------------------------------------------------------------------
    def start(self) -> "Relay":
        started = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = self._loop = asyncio.new_event_loop()
            try:
                self._open = asyncio.Event()
                self._open.set()
                self._server = loop.run_until_complete(asyncio.start_server(self._connected, "127.0.0.1", 0))
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:  # reported to start(), which raises it as one error
                failure.append(exc)
                started.set()
                loop.close()
                return
            started.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self._shutdown())
                loop.close()

        self._thread = threading.Thread(target=main, name="emqlab-relay", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            self._thread.join()
            raise BackendUnavailable(f"the relay could not listen on 127.0.0.1: {failure[0]}")
        TRACKER.own(self, self.stop)
        return self

    def stop(self) -> None:
        """Close every connection and the listening socket, end the loop and join its thread."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
        self._thread = None
        TRACKER.release(self)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> "Relay":
        return self.start() if not self.alive else self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def connection_kwargs(self) -> dict[str, Any]:
        return {"host": "127.0.0.1", "port": self.port}

    # -- faults, from any thread ---------------------------------------------------------------
    def _call(self, fn) -> None:
        if not self.alive:
            raise BackendUnavailable("the relay is not running")
        done = threading.Event()

        def run() -> None:
            try:
                fn()
            finally:
                done.set()

        self._loop.call_soon_threadsafe(run)
        done.wait(timeout=10)

    def set_delay(self, delay: float, jitter: float = 0.0) -> None:
        """Change the one-way delay (real seconds) for data read from now on."""
        self.delay, self.jitter = self._seconds("delay", delay), self._seconds("jitter", jitter)

    def stall(self) -> None:
        """Hold all traffic, both ways, until `release()` (connections stay open)."""
        self._call(lambda: self._open.clear())

    def release(self) -> None:
        """Let held traffic through, in order."""
        self._call(lambda: self._open.set())

    def cut(self) -> None:
        """Cut every connection the relay carries now (both ends see it close); new ones are accepted."""
        def cut_all() -> None:
            for writer in list(self._writers):
                writer.transport.abort()
            for task in list(self._links):
                task.cancel()

        self._call(cut_all)

    # -- the loop's side -----------------------------------------------------------------------
    def _connected(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        """A new connection: carried by a task of the relay's own. (A coroutine handed to start_server would get
        asyncio's own task, whose done-callback raises when the shutdown cancels it before its first step.)"""
        if self._closing:
            client_w.transport.abort()
            return
        task = self._loop.create_task(self._carry(client_r, client_w))
        self._carriers.add(task)
        task.add_done_callback(self._carriers.discard)

    async def _carry(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.add(client_w)
        try:
            server_r, server_w = await asyncio.open_connection(*self.target)
        except OSError:
            client_w.transport.abort()
            self._writers.discard(client_w)
            return
        self._writers.add(server_w)
        tasks = [asyncio.ensure_future(self._pipe(client_r, server_w)),
                 asyncio.ensure_future(self._pipe(server_r, client_w))]
        self._links.update(tasks)
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for writer in (client_w, server_w):
                writer.transport.abort()
                self._writers.discard(writer)
            self._links.difference_update(tasks)

    def _arrival(self, last: float) -> float:
        extra = self._random.uniform(0, self.jitter) if self.jitter else 0.0
        return max(last, self._loop.time() + self.delay + extra)  # jitter never reorders a stream

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read from one side; deliver each chunk to the other after the delay, while not stalled."""
        queue: asyncio.Queue = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                wait = due - self._loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                await self._open.wait()
                if not data:
                    return
                writer.write(data)
                await writer.drain()

        sender = asyncio.ensure_future(deliver())
        last = 0.0
        try:
            while True:
                try:
                    data = await reader.read(CHUNK)
                except OSError:
                    data = b""
                last = self._arrival(last)
                queue.put_nowait((last, data))
                if not data:
                    break
            await sender  # the EOF is delivered after the data before it
        finally:
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)

    async def _shutdown(self) -> None:
        """Stop listening, cut every connection and end every task: the loop closes with nothing pending (a
        connection accepted just before is closed on arrival)."""
        self._closing = True
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        while pending := [t for t in asyncio.all_tasks(self._loop) if t is not asyncio.current_task()]:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
