"""The tools learners ship, run for real (`emqlab tools`): the same lapses the course teaches, in Celery, RQ,
BullMQ, redis-py's `Lock` and python-redis-lock.

Each library has one module here (`celery_run`, `bullmq_run`, `rq_run`, `redis_lock_run`,
`python_redis_lock_run`: named so that none shadows the library it runs): its story, run with the real,
unmodified package from the registry (the `tools` extra: `pip install 'emqlab[tools]'`) against an
embedded Valkey of the run's own, once the way its users report the failure and once with the library's
own fix or knob; its typed Params and Verdict; its one words function. What they share: `harness` (the
server, the processes, the sampler that records what the library's keys say on the server's clock),
`report` (what a task body or a holder reports from inside the library's process), `story` (reading a run:
its lanes, its counts).

Nothing here imports a library until a run asks for it: `emqlab` works without the extra, and
`emqlab tools` without it says which extra to install.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from types import MappingProxyType
from typing import Any

FAILURE_AND_FIX = MappingProxyType({"failure": {}, "fix": {"fix": True}})  # most lessons' runs: mode -> options


@dataclass(frozen=True)
class Library:
    """One library's entry: its module here, its run function, the story's own options beyond fix/task/timeout,
    and the lesson's runs ({mode: the run's options}; most libraries: its failure and its fix)."""

    module: str
    function: str
    options: tuple[str, ...] = ()
    runs: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: FAILURE_AND_FIX)


# the command line's name -> its entry
LIBRARIES: dict[str, Library] = {
    "celery": Library("celery_run", "celery", ("crash",),
                      runs=MappingProxyType({"failure": {}, "fix+crash": {"fix": True, "crash": True}})),
    "bullmq": Library("bullmq_run", "bullmq"),
    "rq": Library("rq_run", "rq", ("fate",),
                  runs=MappingProxyType({"failure": {}, "fix": {"fix": True}, "fix+slow": {"fix": True, "fate": "slow"}})),
    "redis-lock": Library("redis_lock_run", "redis_lock"),
    "python-redis-lock": Library("python_redis_lock_run", "python_redis_lock", ("pause_at",)),
}


def entry(library: str) -> Library:
    """`library`'s entry, or BadParameter (one line) naming the libraries there are."""
    from ..core.errors import BadParameter

    if library not in LIBRARIES:
        raise BadParameter(f"no library named {library!r}; known: {', '.join(LIBRARIES)}")
    return LIBRARIES[library]


def module(library: str):
    """The module that runs `library` (imported now: nothing of it loads before)."""
    return import_module(f"{__name__}.{entry(library).module}")


def run(library: str, fix: bool = False, task: float | None = None, timeout: float | None = None, **own: Any):
    """Run one library's story (its failure, or with `fix` the library's fix) and return its Timeline.

    task, timeout: seconds (None: the story's own); `own`: the story's own options (celery: crash; rq: fate),
    None meaning the default. An option another library's story has is refused."""
    from ..core.errors import BadParameter

    mod = module(library)
    spec = entry(library)
    function, options = spec.function, spec.options
    given = {k: v for k, v in own.items() if v is not None and v is not False}
    foreign = sorted(set(given) - set(options))
    if foreign:
        raise BadParameter(f"{library}'s run takes no {', '.join('--' + k.replace('_', '-') for k in foreign)}"
                           + (f" (it takes {', '.join('--' + o.replace('_', '-') for o in options)})" if options else ""))
    kw: dict[str, Any] = {"fix": fix, "timeout": timeout, **given}
    if task is not None:
        kw["task"] = task
    return getattr(mod, function)(**kw)


def figure_words(library: str):
    """`library`'s figure's words, `figure_words(modes, labels=None)`: its module's caption (without its words
    for emqlab's own run, `OURS`, when the figure draws the library's runs alone), and each run's own words."""
    from .story import words_of

    mod = module(library)
    return words_of(mod.CAPTION, mod.OURS)


def load(data: dict[str, Any]):
    """A library's run read back from its JSON (`emqlab tools … --json`), its params and verdict typed."""
    from ..core.errors import BadParameter
    from ..core.timeline import Timeline

    library = data.get("library") or str(data.get("scenario", "")).removeprefix("tools-")
    if library not in LIBRARIES:
        raise BadParameter(f"not a library's run: {data.get('scenario')!r}")
    mod = module(library)
    return Timeline.from_dict(data, mod.Params, mod.VERDICT)


def runs(library: str, at_once: bool = False) -> dict[str, Any]:
    """The lesson's runs of `library` ({mode: Timeline}: the runs its entry names), one after another, or
    `at_once` (each on a server of its own, in threads: RQ's take a minute each)."""
    lesson = entry(library).runs
    if not at_once:
        return {mode: run(library, **options) for mode, options in lesson.items()}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(lesson), thread_name_prefix=f"emqlab-{library}") as pool:
        futures = {mode: pool.submit(run, library, **options) for mode, options in lesson.items()}
        return {mode: future.result() for mode, future in futures.items()}


def all_runs(libraries: Iterable[str] = LIBRARIES) -> dict[str, dict[str, Any]]:
    """The lesson runs of `libraries` (default: every one; {library: {mode: Timeline}}), the libraries side by
    side (each library's own runs one after another, RQ's at once): with RQ, about as long as RQ's minute.
    For the exported figures."""
    from concurrent.futures import ThreadPoolExecutor

    libraries = list(libraries)
    if not libraries:
        return {}
    with ThreadPoolExecutor(max_workers=len(libraries), thread_name_prefix="emqlab-tools") as pool:
        futures = {library: pool.submit(runs, library, library == "rq") for library in libraries}
        return {library: future.result() for library, future in futures.items()}


def installed() -> bool:
    """Whether the `tools` extra is installed (every library importable; nothing is imported to tell)."""
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in ("celery", "kombu", "bullmq", "rq", "redis_lock"))


DISTRIBUTIONS = {"celery": "celery", "kombu": "kombu", "bullmq": "bullmq", "rq": "rq", "redis-py": "redis",
                 "python-redis-lock": "python-redis-lock"}


def versions() -> dict[str, str]:
    """{library: its installed version, or "not installed"}: what the runs and the lesson used."""
    from importlib import metadata

    found = {}
    for name, distribution in DISTRIBUTIONS.items():
        try:
            found[name] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            found[name] = "not installed (pip install 'emqlab[tools]')"
    return found
