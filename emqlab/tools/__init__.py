"""The tools learners ship, run for real (`emqlab tools`): the same lapses the course teaches, in Celery, RQ,
BullMQ, redis-py's `Lock` and python-redis-lock.

Each library has one module here (`celery_run`, `bullmq_run`, `rq_run`, `redis_lock_run`,
`python_redis_lock_run`: named so that none shadows the library it runs), which declares it in one record
(`LIBRARY`, a `declaration.Library`: everything that lists the libraries reads those): its story, run with the real,
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

from collections.abc import Iterable
from functools import lru_cache
from importlib import import_module
from typing import Any

from .declaration import Library

RUN_SUFFIX = "_run"  # a library's module: emqlab/tools/<run>_run.py (its run function `<run>`), its record LIBRARY


@lru_cache(maxsize=1)
def libraries() -> dict[str, Library]:
    """{the command line's name: its record}, in the lessons' order: every module of this package named
    `*_run` declares one library (imported now: the modules import their library only when a run asks)."""
    from pkgutil import iter_modules

    found = [import_module(f"{__name__}.{info.name}").LIBRARY
             for info in iter_modules(__path__) if info.name.endswith(RUN_SUFFIX)]
    return {lib.name: lib for lib in sorted(found, key=lambda lib: (lib.place, lib.name))}


def entry(library: str) -> Library:
    """`library`'s record, or BadParameter (one line) naming the libraries there are."""
    from ..core.errors import BadParameter

    known = libraries()
    if library not in known:
        raise BadParameter(f"no library named {library!r}; known: {', '.join(known)}")
    return known[library]


def module(library: str):
    """The module that runs `library` (imported now: nothing of it loads before)."""
    return import_module(f"{__name__}.{entry(library).run}{RUN_SUFFIX}")


def run(library: str, fix: bool = False, task: float | None = None, timeout: float | None = None, **own: Any):
    """Run one library's story (its failure, or with `fix` the library's fix) and return its Timeline.

    task, timeout: seconds (None: the story's own); `own`: the story's own options (celery: crash; rq: fate),
    None meaning the default. An option another library's story has is refused."""
    from ..core.errors import BadParameter

    mod = module(library)
    spec = entry(library)
    function, options = spec.run, [option.name for option in spec.options]
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
    if library not in libraries():
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


def all_runs(names: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """The lesson runs of the libraries `names` (default: every one; {library: {mode: Timeline}}), the libraries
    side by side (each library's own runs one after another, but at once where the library always waits a fixed
    while, RQ's minute): about as long as that while. For the exported figures."""
    from concurrent.futures import ThreadPoolExecutor

    names = list(libraries() if names is None else names)
    if not names:
        return {}
    with ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="emqlab-tools") as pool:
        futures = {library: pool.submit(runs, library, entry(library).fixed_wait_s > 0) for library in names}
        return {library: future.result() for library, future in futures.items()}


def installed() -> bool:
    """Whether the `tools` extra is installed: every package a library's record requires (nothing is imported
    to tell)."""
    from importlib import metadata

    try:
        for lib in libraries().values():
            for requirement in lib.requires.values():
                metadata.version(requirement_name(requirement))
    except metadata.PackageNotFoundError:
        return False
    return True


def requirement_name(requirement: str) -> str:
    """The distribution a requirement names: `celery[redis]>=5.7,<5.8` -> `celery`."""
    import re

    return re.match(r"[A-Za-z0-9._-]+", requirement).group(0)


def versions() -> dict[str, str]:
    """{library: its installed version, or "not installed"}: what the runs and the lesson used."""
    from importlib import metadata

    found = {}
    for name, requirement in {k: v for lib in libraries().values() for k, v in lib.requires.items()}.items():
        try:
            found[name] = metadata.version(requirement_name(requirement))
        except metadata.PackageNotFoundError:
            found[name] = "not installed (pip install 'emqlab[tools]')"
    return found
