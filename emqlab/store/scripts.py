"""The one registry of Lua scripts: each `emqlab/lua/<name>.lua` is read once and registered once per client.

Key counts are declared here, beside the registration, not in the file names. A call with the
wrong number of keys is a programming error and fails before it reaches the server.
"""

from __future__ import annotations

from importlib import resources
from typing import Any, Sequence

# name -> how many KEYS the script takes
KEY_COUNTS: dict[str, int] = {
    "extend_lease": 1,
    "release_lease": 1,
    "extend_leases": -1,  # any number (one per lease): renewal_plane calls it by sha, in pipelines
    "enqueue": 4,
    "claim": 2,
    "complete": 3,
    "retry": 4,
    "reap": 4,
    "promote": 3,
    "extend_active": 1,
    "record_effect": 4,
    "session_open": 2,  # the queue's `session` design: one lease per worker
    "session_renew": 2,
    "session_close": 3,
}


def source(name: str) -> str:
    """The text of `emqlab/lua/<name>.lua`."""
    if name not in KEY_COUNTS:
        raise KeyError(f"no Lua script named {name!r}; known: {', '.join(sorted(KEY_COUNTS))}")
    return resources.files("emqlab").joinpath("lua").joinpath(f"{name}.lua").read_text(encoding="utf-8")


class ScriptRegistry:
    """Scripts registered on one client. Made by a Backend; not a module global."""

    def __init__(self, client: Any):
        self._client = client
        self._scripts = {name: client.register_script(source(name)) for name in KEY_COUNTS}

    def load_all(self) -> None:
        """SCRIPT LOAD every script, so that the first real call is one EVALSHA, not three round trips."""
        for script in self._scripts.values():
            self._client.script_load(script.script)

    def __call__(self, name: str, keys: Sequence[str], args: Sequence[Any] = (), client: Any = None) -> Any:
        """Run a script; `client` may be a pipeline of the same connection to batch calls in one round trip."""
        expected = KEY_COUNTS[name]
        if len(keys) != expected:
            raise TypeError(f"script {name} takes {expected} key(s), got {len(keys)}")
        return self._scripts[name](keys=list(keys), args=list(args), client=client)

    def sha(self, name: str) -> str:
        return self._scripts[name].sha
