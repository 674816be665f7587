"""What every scenario run shares: a backend (opened here if none is given), a key prefix of its
own (random: runs from any process or machine never meet) guarded by the run's own lease
(`emqlab.lease.runs`), deleted when the run ends however it ends, a timeline it records to (a `Run` is
the run's `ClockRecorder`), and the run's round-trip count."""

from __future__ import annotations

import math
from contextlib import contextmanager
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Iterator

import redis

from ..core.errors import BadParameter, StoreError
from ..core.ranges import ALIASES, RANGES, within, check_run, get
from ..core.timeline import ClockRecorder, Timeline
from ..core.words import FigureWords, words_of_modes
from ..lease.runs import RunLease
from ..queue.consumer import Consumer
from ..store.backend import Backend, StoreSpec, connect, not_a_virtual_clock, not_our_clock, store_spec


def positive(name: str, value: Any, unit: str = "model seconds") -> float:
    """Validate a duration or count that must be > 0, inside its range in `emqlab.core.ranges` when the
    table names it (lease, job, beat, poll, crash_at, late_at, pause, …): finite, in range, not a bool."""
    if name in RANGES or name in ALIASES:
        if not get(name).low > 0:
            raise LookupError(f"positive({name!r}): its range in emqlab/core/ranges.py starts at {get(name).low}, not > 0")
        return float(within(name, value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise BadParameter(f"{name} must be a number > 0 ({unit}), got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise BadParameter(f"{name} must be a number > 0 ({unit}), got {value!r}")
    return number


class Run(ClockRecorder):
    """One scenario run on one backend; it records to its timeline on the backend's clock."""

    def __init__(self, backend: Backend, scenario: str, params: dict[str, Any]):
        super().__init__(Timeline(scenario, params, backend=backend.name, clock=backend.clock.name), backend.clock)
        self.backend = backend
        self.prefix = backend.run_prefix(scenario)
        self.lease = RunLease(backend, self.prefix)
        self._counter_start = backend.counter.snapshot()

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    def round_trips(self) -> tuple[int, int]:
        rt, cmds = self.backend.counter.snapshot()
        return rt - self._counter_start[0], cmds - self._counter_start[1]

    def close(self) -> None:
        rt, cmds = self.round_trips()
        self.timeline.counts.update(round_trips=rt, commands=cmds)
        self.timeline.finish()


def play(run: Run, script: Any, horizon_ms: float, settle_ms: float, consumers: Sequence[Consumer]) -> None:
    """Run `script` (a SimPy generator) to its end (at most `horizon_ms`), let stopped consumers
    settle for `settle_ms`, then end any process still running, so nothing of this run touches the
    store after its keys are gone."""
    clock = run.clock
    proc = clock.process(script)
    clock.run(until=clock.env.any_of([proc, clock.timeout(horizon_ms)]))
    clock.run(until=clock.now_ms + settle_ms)
    for consumer in consumers:
        consumer.halt()
    clock.run(until=clock.now_ms + 1)


def named(modes: Any, key: Callable[[Timeline], str]) -> dict[str, Timeline]:
    """{mode: Timeline} from a dict, one Timeline or a list (each named by `key`; a repeated name
    gets its place as a suffix): what a scenario's figure_words reads."""
    if isinstance(modes, Mapping):
        return dict(modes)
    runs = [modes] if isinstance(modes, Timeline) else list(modes) if isinstance(modes, Sequence) else []
    if not runs or not all(isinstance(tl, Timeline) for tl in runs):
        raise BadParameter("a figure's words need Timelines: one, a list, or a dict {mode: Timeline}")
    names = [key(tl) for tl in runs]
    return {(n if names.index(n) == k else f"{n}-{k + 1}"): tl for k, (n, tl) in enumerate(zip(names, runs))}


def mode_words(caption: str, prompt: str) -> Callable[..., FigureWords]:
    """A scenario's `figure_words(modes, labels=None)`: its figure's caption and prompt, and each run's
    own words; a list of runs is named by each run's mode (`params.mode`), a repeated one with its place."""

    def words_of(modes: Any, labels: Mapping[str, str] | None = None) -> FigureWords:
        return words_of_modes(named(modes, lambda tl: tl.params.mode), caption, prompt, labels)

    words_of.__doc__ = f"The figure's words: {caption}"
    return words_of


def _end(run: Run) -> None:
    """Stop renewing and release the run's lease, then delete every key of the run. (The lease goes
    first: a renewer that found it deleted under it would report a lapse that never happened.)"""
    try:
        run.lease.release()
    finally:
        run.backend.delete_prefix(run.prefix)


def _end_quietly(run: Run) -> None:
    """The clean-up after a failure: on fresh connections (the failure may have cut a command off
    before its reply was read), and its own store failure never hides the first one."""
    try:
        run.backend.drop_connections()
        _end(run)
    except (redis.RedisError, OSError):
        pass  # the store is already failing: report the first failure, not this one


def server_store(backend: Backend | StoreSpec | str | None, owned: bool) -> tuple[Backend | StoreSpec, bool, bool]:
    """The store a run that steps the server's clock runs on, with whether the run owns it and whether it is a
    server started under libfaketime: fakeredis on its virtual clock as it is; for a live server, an embedded one
    of the run's own (a step forward is for good: never a server a lesson or a class shares). Refused, one line
    each: a URL or a cluster (emqlab does not move a clock it did not start) and fakeredis on a real clock (that
    reads the machine's own time)."""
    if backend is not None and not isinstance(backend, (Backend, str)):  # a cluster's client, or another store
        raise not_our_clock(f"a {getattr(backend, 'source', type(backend).__name__)}")
    if isinstance(backend, Backend):
        if backend.source == "fake" and backend.clock.real:
            raise not_a_virtual_clock()
        if backend.source == "fake" or backend.server_clock is not None:
            return backend, owned, False
        if backend.source != "valkey":
            raise not_our_clock(backend.describe())
        return store_spec("valkey", clock="real", scale=backend.clock.scale), True, True
    spec = store_spec(backend)
    if spec.source == "fake":
        if spec.real:
            raise not_a_virtual_clock()
        return spec, owned, False
    if spec.source != "valkey":
        raise not_our_clock()
    return spec, owned, True


@contextmanager
def run_on(backend: Backend | StoreSpec | str | None, scenario: str, params: Any,
           cost: tuple[float, float] | None = None, server_clock: bool = False) -> Iterator[Run]:
    """Open (or reuse) a backend, give the run its own prefix and lease, and always delete the run's
    keys. `backend`: an open Backend, or a StoreSpec (a text is read into one: `store_spec`). `cost`:
    (model span in seconds, store steps) the run will take at most; a run over the
    limits of `emqlab.core.ranges.check_run` is refused here, before any store is opened. If the store
    fails (or a signal ends the run), the clean-up is tried and its own failure never hides the first
    one; a run whose lease lapsed under it fails rather than report counts a `emqlab clean` beside it
    may have cut short. `server_clock`: the run steps the server's clock (a clock jump), which emqlab does only
    on fakeredis's virtual clock or on a live server it starts for the run alone (`server_store`)."""
    owned, stepped = not isinstance(backend, Backend), False
    if server_clock:  # before anything reads the store's spec: a cluster's client is no spec
        backend, owned, stepped = server_store(backend, owned)
    elif owned:
        backend = store_spec(backend)
    if cost is not None:  # a clock of the spec's kind answers how long the run lasts, before any store opens
        check_run(f"this {scenario.replace('_', '-')} run", *cost,
                  clock=backend.make_clock() if owned else backend.clock)
    be = connect(backend, server_clock=stepped) if owned else backend
    try:
        run = Run(be, scenario, params)
        try:
            run.lease.take()  # before the run writes any key: a key without a live lease is a dead run's
            run._counter_start = be.counter.snapshot()  # the run's own round trips, not its bookkeeping
            yield run
            if run.lease.lost:
                raise StoreError(f"this run's own lease ({run.lease.key}) lapsed while it ran (was the process "
                                 "stopped?): `emqlab clean` may have removed its keys, so its counts are not trusted")
            run.close()  # count before the clean-up's own round trips
        except BaseException:
            _end_quietly(run)
            raise
        try:
            _end(run)
        except BaseException:  # a signal mid-clean-up: once more (the CLI ignores any further signal)
            _end_quietly(run)
            raise
    finally:
        if owned:
            be.close()
