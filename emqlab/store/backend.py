"""Where the scripts run: fakeredis in-process (the default), an embedded Valkey, or any URL.

A Backend owns one client, its registered scripts, the key prefix every emqlab key lives under,
the round-trip counter, and (for the embedded server) the server's whole life.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass
from typing import Any, Mapping
from urllib.parse import urlparse

import redis

from ..core.environment import BACKEND_ENV, URL_ENV
from . import fakeclock
from .clock import DEFAULT_SCALE, VirtualClock, make_clock, time_reply_s, to_s
from .embedded import EmbeddedValkey
from .faketime import ServerClock
from ..core.errors import BackendUnavailable, BadParameter, ForeignKeys, StoreError
from ..core.ranges import within
from .scripts import ScriptRegistry

PREFIX = "emqlab:"
URL_SCHEMES = ("redis", "rediss", "unix")
BACKEND_HELP = "fake, valkey, or a URL (redis://[:password@]host:port/db, rediss://…, unix:///path)"


@dataclass
class Counter:
    """Client-side count of what crossed the wire."""

    round_trips: int = 0
    commands: int = 0

    def snapshot(self) -> tuple[int, int]:
        return self.round_trips, self.commands


class _Counting:
    """Mixin for a redis-py connection class: one packed send is one round trip."""

    counter: Counter
    clock: Any = None  # a fake connection runs its commands on this clock

    def send_command(self, *args, **kwargs):
        self.counter.commands += 1
        return super().send_command(*args, **kwargs)

    def pack_commands(self, commands):
        commands = list(commands)
        self.counter.commands += len(commands)
        return super().pack_commands(commands)

    def send_packed_command(self, command, check_health=True):
        self.counter.round_trips += 1
        with fakeclock.following(self.clock):
            return super().send_packed_command(command, check_health)

    def read_response(self, *args, **kwargs):
        with fakeclock.following(self.clock):
            return super().read_response(*args, **kwargs)


def _counting_class(base: type, counter: Counter, clock: Any) -> type:
    return type(f"Counting{base.__name__}", (_Counting, base), {"counter": counter, "clock": clock})


# The user-info part of a URL: from `scheme://` to the last `@` before the host. A password may hold
# `@`, `/`, `?` or `:` when a user types it unescaped, so the last `@` of the token ends it.
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^\s'\"]*)@(?=[^@\s'\"]*(?:[\s'\"]|$))")
_QUERY_SECRET = re.compile(r"(?i)([?&;](?:password|pass|pwd|auth)=)[^&#\s'\"]*")


def _mask_userinfo(m: re.Match) -> str:
    user, colon, _ = m.group("info").partition(":")
    # `user:pw@` keeps the user; `:pw@` and a bare `pw@` (no colon) hide all of it
    return f"{m.group('scheme')}{user if colon else ''}{':' if colon else ''}***@"


def redact(text: str) -> str:
    """`text` (a URL, or any message with URLs in it) with every password replaced by ***:
    `redis://:pw@`, `redis://user:pw@`, `redis://pw@` and `?password=pw` alike."""
    return _QUERY_SECRET.sub(r"\1***", _USERINFO.sub(_mask_userinfo, str(text)))


def glob_escape(text: str) -> str:
    """`text` as a literal in a SCAN MATCH pattern: a prefix holding `*` or `[` matches itself only."""
    return re.sub(r"([\\*?\[\]])", r"\\\1", text)


def parse_backend(spec: str | None) -> tuple[str, str | None]:
    """`fake`, `valkey` or a URL -> (source, url). Raises BadParameter with what is allowed."""
    spec = (spec or os.environ.get(URL_ENV) or os.environ.get(BACKEND_ENV) or "fake").strip()
    if spec in ("fake", "valkey"):
        return spec, None
    if "://" not in spec:
        raise BadParameter(f"unknown backend {redact(spec)!r}; allowed: {BACKEND_HELP}")
    scheme, _, rest = spec.partition("://")
    spec = f"{scheme.lower()}://{rest}"  # REDIS://host reads as redis://host
    shown = redact(spec)
    try:
        parsed = urlparse(spec)  # a malformed netloc ('[::1') raises here
    except ValueError:
        raise BadParameter(f"backend URL {shown!r} is malformed; allowed: {BACKEND_HELP}") from None
    if parsed.scheme not in URL_SCHEMES:
        raise BadParameter(f"backend URL scheme {parsed.scheme!r} is not supported; allowed: {BACKEND_HELP}")
    if parsed.scheme == "unix":
        if not parsed.path:
            raise BadParameter(f"backend URL {shown!r} names no socket path; allowed: {BACKEND_HELP}")
    else:
        try:
            port = parsed.port
        except ValueError:
            raise BadParameter(f"backend URL {shown!r} has a bad port; allowed: {BACKEND_HELP}") from None
        if not parsed.hostname:
            raise BadParameter(f"backend URL {shown!r} names no host; allowed: {BACKEND_HELP}")
        if port is not None and not 0 < port < 65536:
            raise BadParameter(f"backend URL {shown!r} has port {port}; allowed: 1-65535")
        db = parsed.path.lstrip("/")
        if db and not db.isdigit():
            raise BadParameter(f"backend URL {shown!r} has database {db!r}; a database is a number, e.g. /0")
    return "url", spec


class StoreSpec(str):
    """Where a run's store is and how its time is kept, read and checked once: the text as given (a URL's
    scheme in lower case), its `source` (fake, valkey, url), `url`, `clock` (virtual or real) and `scale`
    (real seconds per model second). Made by `store_spec`, the one place a scale is range-checked and a
    clock's default worked out; a scenario, `connect` and a child process take one as it is."""

    source: str
    url: str | None
    clock: str
    scale: float

    def __new__(cls, text: str, source: str, url: str | None, clock: str, scale: float) -> "StoreSpec":
        spec = super().__new__(cls, text)
        spec.source, spec.url, spec.clock, spec.scale = source, url, clock, scale
        return spec

    @property
    def real(self) -> bool:
        return self.clock == "real"

    def make_clock(self) -> VirtualClock:
        """A new clock of this specification's kind (each run and each backend has its own)."""
        return make_clock(self.clock, self.scale)

    def dumps(self) -> str:
        """The specification as one line of text for another process (`loads` reads it back); it holds the
        URL and its password, so it travels in an environment, never on a command line."""
        return json.dumps({"store": str(self), "clock": self.clock, "scale": self.scale})

    @staticmethod
    def loads(text: str) -> "StoreSpec":
        try:
            fields = json.loads(text)
            store, clock, scale = fields["store"], fields["clock"], fields["scale"]
        except (ValueError, TypeError, KeyError):
            raise BadParameter("a store's specification must be the JSON StoreSpec.dumps() writes") from None
        return store_spec(store, clock=clock, scale=scale)  # checked as any other: a bad value says what is wrong

    def __repr__(self) -> str:  # never a password: a spec is passed about, and a repr ends up in messages
        return f"StoreSpec({redact(str(self))!r}, clock={self.clock!r}, scale={self.scale!r})"


CLOCKS = ("virtual", "real")


def store_spec(text: str | None = None, *, clock: str | None = None, scale: float | None = None) -> StoreSpec:
    """The one resolved specification of a store: `fake`, `valkey` or a URL (None reads the environment:
    $EMQLAB_URL, $EMQLAB_BACKEND, then fake), the clock (default virtual on fake, real on a live server,
    where it is the only choice) and the real clock's scale (default DEFAULT_SCALE; checked against its
    range even where the clock is virtual: a bad number is refused, not ignored). A StoreSpec given as
    `text` keeps its clock and scale unless they are given too. BadParameter, one line, names what is allowed."""
    if isinstance(text, StoreSpec):
        if clock is None and scale is None:
            return text
        source, url = text.source, text.url
        clock, scale = clock or text.clock, text.scale if scale is None else scale
    else:
        source, url = parse_backend(text)
    if clock is None:
        clock = "virtual" if source == "fake" else "real"
    if clock not in CLOCKS:
        raise BadParameter(f"unknown clock {clock!r}; allowed: {', '.join(CLOCKS)}")
    if source != "fake" and clock != "real":
        raise BadParameter("a virtual clock runs only on the fake backend; a live server keeps real time (use --clock real)")
    scale = float(within("scale", DEFAULT_SCALE if scale is None else scale))  # 1e-320 would overflow SimPy
    return StoreSpec(url or source, source, url, clock, scale)


def not_our_clock(what: str = "a server it did not start") -> BadParameter:
    """The refusal of a clock jump on a store emqlab did not start (`what`: that store, in words)."""
    return BadParameter(f"a clock jump needs a server emqlab starts itself (--backend valkey): emqlab will not move "
                        f"the clock of {what}")


def not_a_virtual_clock() -> BadParameter:
    """The refusal of a clock jump on fakeredis run on a real clock."""
    return BadParameter("a clock jump on fakeredis needs its virtual clock: on a real clock fakeredis reads the "
                        "machine's own time, which emqlab will not move")


class Backend:
    """One store, one client, one clock. Use `connect()` to make one; close it (or use `with`)."""

    server_clock: ServerClock | None = None  # the embedded server's steppable clock (`connect(server_clock=True)`)

    def __init__(self, source: str, client: redis.Redis, clock, counter: Counter, *, url: str | None = None,
                 server: EmbeddedValkey | None = None, prefix: str = PREFIX,
                 scripts: Mapping[str, str] | None = None):
        self.source = source
        self.client = client
        self.clock = clock
        self.counter = counter
        self.url = url
        self.prefix = prefix
        self._server = server
        self._script_texts = dict(scripts or {})
        self.scripts = ScriptRegistry(client, self._script_texts)
        try:
            client.ping()
            self.scripts.load_all()
        except redis.RedisError as exc:
            self.close()
            raise BackendUnavailable(f"cannot reach the store at {self.describe()}: {exc}") from exc

    # -- naming ---------------------------------------------------------------------------
    @property
    def live(self) -> bool:
        return self.source != "fake"

    def describe(self) -> str:
        if self.source == "url":
            return redact(self.url)  # never print a password
        if self.source == "valkey" and self._server is not None:
            return f"embedded valkey-server at {self._server.url}"
        return "fakeredis (in-process)"

    @property
    def name(self) -> str:
        return {"fake": "fake", "valkey": "valkey"}.get(self.source, self.describe())

    def key(self, *parts: str) -> str:
        """A key under this backend's prefix."""
        return self.prefix + ":".join(parts)

    def run_prefix(self, scenario: str) -> str:
        """A fresh key prefix for one run, `emqlab:<scenario>-<16 random hex digits>:`: random, so two
        runs never meet, whichever process or machine starts them (numbered per process, they did)."""
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", scenario):
            raise BadParameter(f"a run's name {scenario!r} must be letters, digits, '_', '.', '-'")
        return f"{self.prefix}{scenario}-{secrets.token_hex(8)}:"

    def fresh_client(self) -> redis.Redis:
        """A client of its own to this backend's live store (not counted, its own connection): what
        a run's lease renewer uses, so it never waits behind the run's own commands."""
        if not self.live:
            raise BadParameter("fakeredis lives inside one client; a second connection needs a live server")
        if self.source == "valkey":
            return redis.Redis(decode_responses=True, socket_timeout=10, **self._server.connection_kwargs)
        return redis.Redis.from_url(self.url, decode_responses=True, socket_connect_timeout=5, socket_timeout=10)

    def address(self) -> tuple[str, int]:
        """The (host, port) this live store is reached at over TCP: where a relay in front of it forwards."""
        parsed = urlparse(self.url or "")
        if not self.live or parsed.scheme != "redis" or not parsed.hostname:
            raise BadParameter(f"a delayed link needs a store reached over plain TCP (redis://host:port), "
                               f"not {self.describe()}")
        return parsed.hostname, parsed.port or 6379

    def via(self, host: str, port: int) -> "Backend":
        """This store reached at another address (a relay in front of it): a Backend of its own sharing this
        one's clock, round-trip counter and prefix (same password and database). Close it before this one."""
        self.address()  # refuses a store not reached over plain TCP
        pool = redis.ConnectionPool.from_url(self.url, connection_class=_counting_class(redis.Connection, self.counter,
                                                                                         None),
                                             decode_responses=True, socket_connect_timeout=5, socket_timeout=60)
        pool.connection_kwargs.update(host=host, port=port)
        return Backend("url", redis.Redis(connection_pool=pool), self.clock, self.counter,
                       url=f"redis://{host}:{port}", prefix=self.prefix, scripts=self._script_texts)

    # -- housekeeping ------------------------------------------------------------------------
    def keys(self, pattern_prefix: str | None = None) -> list[str]:
        match = glob_escape(pattern_prefix or self.prefix) + "*"
        return sorted(k.decode() if isinstance(k, bytes) else k for k in self.client.scan_iter(match=match, count=1000))

    def delete_prefix(self, prefix: str) -> int:
        """UNLINK every key under `prefix` (which must lie under this backend's prefix)."""
        if not prefix.startswith(self.prefix):
            raise BadParameter(f"refusing to delete keys under {prefix!r}: emqlab only touches keys under {self.prefix!r}")
        removed = 0
        batch: list[str] = []
        for key in self.client.scan_iter(match=glob_escape(prefix) + "*", count=1000):
            batch.append(key)
            if len(batch) >= 500:
                removed += self.client.unlink(*batch)
                batch.clear()
        if batch:
            removed += self.client.unlink(*batch)
        return removed

    def jump_server_clock(self, model_ms: float) -> None:
        """Step the store's own clock by `model_ms` (negative: back), the workers' clock going on as it was:
        fakeredis on its virtual clock, or an embedded server this backend started under libfaketime
        (`connect(..., server_clock=True)`). Any other store is refused: emqlab moves no clock it did not start."""
        if self.source == "fake":
            return self._jump_fake_clock(model_ms)
        server_clock = self.server_clock
        if server_clock is None:
            raise not_our_clock(self.describe())
        if self._server is None:
            raise StoreError("this backend is closed: its server, and the clock a jump would step, are gone")
        # returns once the server shows the step (Valkey reads its clock about once a millisecond): the run's
        # next command meets the new time. Read on a connection of its own: no round trip of the run's counted
        probe = redis.Redis(socket_timeout=10, **self._server.connection_kwargs)
        try:
            server_clock.jump(self.clock.real_s(to_s(model_ms)), server_time=lambda: time_reply_s(probe.time()))
        finally:
            probe.close()

    def _jump_fake_clock(self, model_ms: float) -> None:
        """Step fakeredis's clock by `model_ms` (negative: back) while the workers' clock goes on as it was:
        what the store reads from then on (TIME, every key's expiry) is that much later."""
        if self.clock.real:
            raise not_a_virtual_clock()
        self.clock.server_offset_ms += float(model_ms)

    def drop_connections(self) -> None:
        """Close this client's pooled connections; the next command opens a fresh one. After a command
        was cut off between its send and its reply (a signal, a KeyboardInterrupt), its connection may
        still hold a reply no one read, which the next command would take for its own."""
        self.client.connection_pool.disconnect()

    def reset(self) -> int:
        """Delete emqlab's keys. Refused if the database holds anything else: emqlab never flushes."""
        for key in self.client.scan_iter(count=1000):
            key = key.decode() if isinstance(key, bytes) else key
            if not key.startswith(self.prefix):
                raise ForeignKeys(
                    f"refusing to reset: the database holds keys outside {self.prefix!r} (e.g. {key!r}); "
                    "point emqlab at a database of its own"
                )
        return self.delete_prefix(self.prefix)

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self._server is not None:
                self._server.stop()
                self._server = None

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Backend {self.describe()} clock={self.clock.name}>"


def connect(spec: str | None = None, *, clock: str | None = None, scale: float | None = None,
            prefix: str = PREFIX, scripts: Mapping[str, str] | None = None, server_clock: bool = False) -> Backend:
    """Open a backend. `spec`: a StoreSpec, or what `store_spec` reads into one with `clock` and `scale`:
    fake (default), valkey (embedded), or a URL; EMQLAB_URL / EMQLAB_BACKEND choose when `spec` is None;
    the clock virtual (default on fake) or real (default, and the only choice, on a live server).
    `scripts`: {name: Lua text} this backend runs instead of the package's
    script of that name (a model of another system's script; see `emqlab.store.scripts`).
    `server_clock`: with valkey only, the embedded server this backend starts runs under libfaketime, its
    clock stepped by `Backend.jump_server_clock` (a step forward is for good: the server is this backend's
    alone); refused on any other store, and where libfaketime is missing (one line naming what to install)."""
    if server_clock and (spec.source if isinstance(spec, StoreSpec) else parse_backend(spec)[0]) != "valkey":
        raise not_our_clock()  # first, as before the store's clock is read: the jump is what cannot be
    spec = store_spec(spec, clock=clock, scale=scale)
    source, url = spec.source, spec.url
    if not re.fullmatch(r"[A-Za-z0-9_.-]+:", prefix):
        raise BadParameter(f"key prefix {prefix!r} must be letters, digits, '_', '.', '-' followed by ':'")
    clock = spec.make_clock()
    counter = Counter()

    if source == "fake":
        import fakeredis

        fakeclock.install()
        conn_class = _counting_class(fakeredis.FakeRedisConnection, counter, clock if not clock.real else None)
        client = fakeredis.FakeRedis(server=fakeredis.FakeServer(), connection_class=conn_class,
                                     decode_responses=True)
        return Backend(source, client, clock, counter, prefix=prefix, scripts=scripts)

    if source == "valkey":
        stepped = ServerClock() if server_clock else None  # no libfaketime: refused before any server starts
        server = EmbeddedValkey(faketime=stepped).start()
        try:
            pool = redis.ConnectionPool(connection_class=_counting_class(redis.Connection, counter, None),
                                        decode_responses=True, **server.connection_kwargs)
            backend = Backend(source, redis.Redis(connection_pool=pool), clock, counter, url=server.url, server=server,
                              prefix=prefix, scripts=scripts)
            backend.server_clock = stepped
            return backend
        except BaseException:
            server.stop()
            raise

    parsed = urlparse(url)
    base = {"rediss": redis.SSLConnection, "unix": redis.UnixDomainSocketConnection}.get(parsed.scheme, redis.Connection)
    try:  # redis-py checks the URL's ?options: a bad value is a ValueError, an unknown name a TypeError
        pool = redis.ConnectionPool.from_url(url, connection_class=_counting_class(base, counter, None),
                                             decode_responses=True, socket_connect_timeout=5)
        pool.connection_class(**pool.connection_kwargs)  # builds, does not connect: an unknown option fails here
    except (TypeError, ValueError) as exc:
        reason = str(exc).rstrip(".")
        raise BadParameter(f"backend URL {redact(url)!r} is not usable ({reason}); allowed: {BACKEND_HELP}") from None
    return Backend(source, redis.Redis(connection_pool=pool), clock, counter, url=url, prefix=prefix, scripts=scripts)
