"""The one registry of Lua scripts: each `emqlab/lua/<name>.lua` is read once and registered once per client.

Each script's facts are declared here once, in `SCRIPTS`: its key count (beside the registration, not in
the file name) and its family (a lease's or a queue's). A call with the wrong number of keys is a
programming error and fails before it reaches the server.

A block several scripts share is written once, in `emqlab/lua/includes/<name>.lua`, and a script
takes it with a line of its own (BullMQ's form):

    --- @include "includes/server_now"

`source(name)` replaces that line with the include's text (includes may include others), each
include at most once per script, so everything that reads a script (the registry, the class
server's function library, a lesson showing it) reads what the server runs.

A registry may run a caller's own text in place of one of the package's scripts (`overrides`, e.g.
a test's model of another system's script, or a deliberately broken copy): same name, same key
count, its includes resolved from the package's; only the client it was made for runs it.
"""

from __future__ import annotations

import re
from importlib import resources
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

LEASE, QUEUE = "lease", "queue"  # a script's family: a lease's own (emqlab.lease) or a queue's (emqlab.queue)
ANY = -1  # a key count: any number of keys


@dataclass(frozen=True)
class Script:
    """One Lua script's facts: its name (the file `emqlab/lua/<name>.lua`), how many KEYS it takes (ANY: any
    number) and its family. A queue script acts on one queue's keys only; the class server loads exactly those."""

    name: str
    keys: int
    family: str


SCRIPTS: dict[str, Script] = {s.name: s for s in (
    Script("extend_lease", 1, LEASE),
    Script("release_lease", 1, LEASE),
    Script("extend_leases", ANY, LEASE),  # one key per lease: renewal_plane calls it by sha, in pipelines
    Script("enqueue", 4, QUEUE),
    Script("claim", 2, QUEUE),
    Script("complete", 3, QUEUE),
    Script("retry", 5, QUEUE),
    Script("reap", 4, QUEUE),
    Script("promote", 3, QUEUE),
    Script("extend_active", 1, QUEUE),
    Script("record_effect", 4, QUEUE),
    Script("session_open", 2, QUEUE),  # the queue's `session` design: one lease per worker
    Script("session_renew", 2, QUEUE),
    Script("session_close", 3, QUEUE),
)}


def family(name: str) -> list[str]:
    """The names of the scripts of one family (LEASE or QUEUE), in the registry's order."""
    if name not in (LEASE, QUEUE):
        raise KeyError(f"no script family {name!r}; known: {LEASE}, {QUEUE}")
    return [s.name for s in SCRIPTS.values() if s.family == name]


def script(name: str) -> Script:
    """The registry's entry for `name`; KeyError naming the known scripts when there is none."""
    try:
        return SCRIPTS[name]
    except KeyError:
        raise KeyError(f"no Lua script named {name!r}; known: {', '.join(sorted(SCRIPTS))}") from None


INCLUDE_RE = re.compile(r'^[ \t]*--- @include "includes/([A-Za-z0-9_]+)"[ \t]*$')
INCLUDE_MARK = "--- @include"


class IncludeError(ValueError):
    """A script's `--- @include` line names no include, is malformed, or closes a cycle."""


def resolve(script: str, text: str, read_include: Callable[[str], str | None]) -> str:
    """`text` (the script `script`) with every `--- @include "includes/<inc>"` line replaced by the text
    `read_include(inc)` gives (None: there is no such include), resolved the same way in turn. An
    include already taken into this script is not taken again (its later lines are dropped)."""
    taken: set[str] = set()

    def expand(text: str, chain: tuple[str, ...]) -> str:
        out = []
        for line in text.splitlines(keepends=True):
            if not line.lstrip().startswith(INCLUDE_MARK):
                out.append(line)
                continue
            m = INCLUDE_RE.match(line.rstrip("\r\n"))
            where = " -> ".join((script, *chain))
            if not m:
                raise IncludeError(f"script {where}: malformed include line {line.strip()!r}; "
                                   'write --- @include "includes/<name>"')
            inc = m.group(1)
            if inc in chain:
                cycle = " -> ".join(f"includes/{i}" for i in (*chain[chain.index(inc):], inc))
                raise IncludeError(f"script {where}: include cycle: {cycle}")
            if inc in taken:
                continue
            body = read_include(inc)
            if body is None:
                raise IncludeError(f"script {where}: no include named {inc!r} "
                                   f"(there is no emqlab/lua/includes/{inc}.lua)")
            taken.add(inc)
            body = expand(body, (*chain, inc))
            out.append(body if body.endswith("\n") else body + "\n")
        return "".join(out)

    return expand(text, ())


def _lua_dir():
    return resources.files("emqlab").joinpath("lua")


def _package_include(inc: str) -> str | None:
    path = _lua_dir().joinpath("includes").joinpath(f"{inc}.lua")
    return path.read_text(encoding="utf-8") if path.is_file() else None


def source(name: str) -> str:
    """The text of `emqlab/lua/<name>.lua` with its includes resolved: what the server runs."""
    script(name)
    text = _lua_dir().joinpath(f"{name}.lua").read_text(encoding="utf-8")
    return resolve(name, text, _package_include)


def source_of(name: str, text: str) -> str:
    """`text` standing in for the package's script `name` (a model of another system's script, a broken
    copy): its includes resolved from the package's, as `source` resolves the package's own."""
    script(name)
    return resolve(name, text, _package_include)


class ScriptRegistry:
    """Scripts registered on one client. Made by a Backend; not a module global. `overrides`: {name:
    Lua text} run instead of the package's script of that name, on this client only."""

    def __init__(self, client: Any, overrides: Mapping[str, str] | None = None):
        self._client = client
        texts = {name: source_of(name, text) for name, text in (overrides or {}).items()}
        self.overridden = tuple(sorted(texts))
        self._scripts = {name: client.register_script(texts.get(name) or source(name)) for name in SCRIPTS}

    def load_all(self) -> None:
        """SCRIPT LOAD every script, so that the first real call is one EVALSHA, not three round trips."""
        for script in self._scripts.values():
            self._client.script_load(script.script)

    def __call__(self, name: str, keys: Sequence[str], args: Sequence[Any] = (), client: Any = None) -> Any:
        """Run a script; `client` may be a pipeline of the same connection to batch calls in one round trip."""
        expected = SCRIPTS[name].keys
        if expected != ANY and len(keys) != expected:
            raise TypeError(f"script {name} takes {expected} key(s), got {len(keys)}")
        return self._scripts[name](keys=list(keys), args=list(args), client=client)

    def sha(self, name: str) -> str:
        return self._scripts[name].sha
