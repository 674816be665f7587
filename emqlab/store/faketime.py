"""The clock of an embedded valkey-server that emqlab steps: libfaketime, preloaded into that server alone.

`library()` finds libfaketime.so.1: `EMQLAB_LIBFAKETIME` if set, else Debian's `faketime` package
(`/usr/lib/<arch>/faketime/`, which `./run install` installs where it can), else the copy bundled in PyPI's
`libfaketime` package (python-libfaketime; its wheel carries an x86-64 Linux build only, so it is taken
only where it matches this machine). Neither: one line naming what to install.

`ServerClock` owns the server's timestamp file, in the server's own folder. The server starts with it at
"+0"; `jump(real_seconds)` adds to the offset and rewrites the file at once (a temporary file, then
`os.replace`: the server reads either the old offset or the new, never half a line). libfaketime reads it
at every clock reading (`FAKETIME_NO_CACHE=1`) and parses "%+f" (signed seconds, microsecond fractions:
"+0.600000", "-60.000000"); the monotonic clock is left alone (`FAKETIME_DONT_FAKE_MONOTONIC=1`), so the
server's timers and timeouts do not see the step, only its wall clock (`TIME`, key expiry) does.

Valkey reads its wall clock about once a millisecond and serves every command in between from that
reading, so a step is not seen by the very next command for certain: `jump` is given a way to read the
server's `TIME` and returns only once the server shows the new offset.
"""

from __future__ import annotations

import glob
import math
import os
import struct
import sys
import tempfile
import threading
import time
from importlib.util import find_spec
from typing import Callable, Iterable, Mapping

from ..core.environment import LIBFAKETIME_ENV
from ..core.errors import BackendUnavailable, BadParameter, StoreError

SONAME = "libfaketime.so.1"
# Debian's multiarch folder first (faketime / libfaketime packages), then the other layouts distributions use
SYSTEM_PATHS = (f"/usr/lib/*/faketime/{SONAME}", f"/usr/lib/faketime/{SONAME}", f"/usr/lib64/faketime/{SONAME}",
                f"/usr/local/lib/faketime/{SONAME}")
INSTALL_HINT = ("apt-get install faketime (./run install does it where it can; without root, on x86-64 Linux: "
                "pip install libfaketime)")
FILE_NAME = "faketime-offset"
SEEN_TIMEOUT_S = 10.0  # how long a step may take to show in the server's TIME before emqlab calls it failed


class FaketimeMissing(BackendUnavailable):
    """No libfaketime on this machine: a live clock jump cannot be made. A choice the caller can change
    (install it, or use the fake store), so the CLI exits 2 on it, like a refused parameter."""

    exit_code = 2


def _elf_machine(path: str) -> tuple[int, int] | None:
    """(ELF class, machine) of a binary, or None if it is not an ELF file."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    order = "<" if head[5] == 1 else ">"
    return head[4], struct.unpack(order + "H", head[18:20])[0]


def _loadable(path: str) -> bool:
    """A file ld.so can preload into a server built for this machine: an ELF of this interpreter's class and
    machine, with no character LD_PRELOAD would split its path at."""
    if not os.path.isfile(path) or any(c in path for c in " :\t\n"):
        return False
    mine = _elf_machine("/proc/self/exe") or _elf_machine(sys.executable)
    return mine is None or _elf_machine(path) == mine


def _pypi_copy() -> str | None:
    """The library python-libfaketime bundles (`libfaketime/vendor/libfaketime/src/`), found without
    importing the package (its import pulls in dateutil and pytz)."""
    try:
        spec = find_spec("libfaketime")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = os.path.join(folder, "vendor", "libfaketime", "src", SONAME)
        if os.path.isfile(candidate):
            return candidate
    return None


def library(search: Iterable[str] | None = None) -> str:
    """The path of libfaketime.so.1 to preload into a server. `search`: folders or glob patterns looked in,
    in order, instead of the defaults (the `EMQLAB_LIBFAKETIME` override, Debian's paths, then PyPI's copy).
    Raises FaketimeMissing (one line, naming what to install) when none is usable."""
    if search is None:
        override = os.environ.get(LIBFAKETIME_ENV)
        if override:
            if _loadable(override):
                return override
            raise FaketimeMissing(f"{LIBFAKETIME_ENV}={override} is not a libfaketime this machine can preload; "
                                  f"unset it, or {INSTALL_HINT}")
        candidates = [p for pattern in SYSTEM_PATHS for p in sorted(glob.glob(pattern))]
        pypi = _pypi_copy()
        candidates += [pypi] if pypi else []
    else:
        candidates = []
        for entry in search:
            entry = os.fspath(entry)
            if os.path.isdir(entry):
                entry = os.path.join(entry, SONAME)
            candidates += sorted(glob.glob(entry))
    for path in candidates:
        if _loadable(path):
            return path
    raise FaketimeMissing(f"a live clock jump needs libfaketime, which this machine lacks: {INSTALL_HINT}")


def _offset_text(seconds: float) -> str:
    """An offset as libfaketime reads it: signed seconds with six decimals ("+0.600000", "-60.000000"), the
    format libfaketime itself writes. Never a letter: libfaketime multiplies by 60 on an 'm', and so on."""
    return "%+f\n" % seconds


class ServerClock:
    """The wall clock of one embedded valkey-server, stepped by rewriting libfaketime's timestamp file.

    Made before the server starts (it finds the library then, so a missing one is refused before any
    server runs); `EmbeddedValkey` calls `attach(folder)` with the server's folder and starts the server with
    `environment()`. `offset_s` is the cumulative step in real seconds."""

    def __init__(self, lib: str | None = None):
        self.library = lib or library()
        self.offset_s = 0.0
        self.path: str | None = None
        self._lock = threading.Lock()

    def attach(self, folder: str) -> str:
        """Put the timestamp file, at "+0", in `folder` (the server's own); returns its path."""
        self.path = os.path.join(folder, FILE_NAME)
        self.offset_s = 0.0
        self._write(0.0)
        return self.path

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """`base` (default: this process's environment) with the server's libfaketime settings: the library
        preloaded ahead of any other, the timestamp file, read at every clock reading, the monotonic clock
        real. Any other FAKETIME* setting inherited is dropped: it would change what the file means."""
        if self.path is None:
            raise StoreError("the server clock has no timestamp file yet: attach it to the server's folder first")
        env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith("FAKETIME")}
        preload = env.get("LD_PRELOAD", "").strip()
        env["LD_PRELOAD"] = f"{self.library}:{preload}" if preload else self.library
        env.update(FAKETIME_TIMESTAMP_FILE=self.path, FAKETIME_NO_CACHE="1", FAKETIME_DONT_FAKE_MONOTONIC="1")
        return env

    def _write(self, offset: float) -> None:
        folder = os.path.dirname(self.path)
        fd, tmp = tempfile.mkstemp(prefix=FILE_NAME + ".", dir=folder)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(_offset_text(offset))
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def jump(self, real_seconds: float, server_time: Callable[[], float] | None = None) -> float:
        """Step the server's wall clock by `real_seconds` (back when negative), on top of any step before;
        returns the new offset. `server_time`: reads the server's `TIME` (seconds); given, `jump` returns only
        once the server shows the step (it reads its clock about once a millisecond), and raises StoreError
        if it never does (the library was not loaded into it)."""
        real_seconds = float(real_seconds)
        if not math.isfinite(real_seconds):
            raise BadParameter(f"a clock step must be a finite number of seconds, not {real_seconds!r}")
        with self._lock:
            if self.path is None or not os.path.isdir(os.path.dirname(self.path)):
                raise StoreError("the server whose clock this is has stopped: there is no clock to step")
            before, after = self.offset_s, self.offset_s + real_seconds
            self._write(after)
            self.offset_s = after
            if server_time is not None and real_seconds:
                self._wait_seen(server_time, before, after)
            return after

    @staticmethod
    def _wait_seen(server_time: Callable[[], float], before: float, after: float) -> None:
        """Read the server's TIME until its offset from this machine's clock is nearer the new offset than the
        old one (the same machine, the same real clock: the offset is the step and the read's half round trip)."""
        deadline = time.monotonic() + SEEN_TIMEOUT_S
        while True:
            t0 = time.time()
            shown = server_time()
            t1 = time.time()
            offset = shown - (t0 + t1) / 2
            if abs(offset - after) < abs(offset - before):
                return
            if time.monotonic() > deadline:
                raise StoreError(f"the embedded valkey-server's clock did not move by {after - before:+.3f} s within "
                                 f"{SEEN_TIMEOUT_S:.0f} s: libfaketime is not working in it")
            time.sleep(0.0005)


__all__ = ["FaketimeMissing", "ServerClock", "library"]
