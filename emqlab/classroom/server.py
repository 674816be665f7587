"""A class on one server: the class queue, its least-privilege users, and the queue's operations
loaded once as Valkey Functions.

One class lives under one run prefix, `emqlab:class-<16 hex>:` (P below), held by a run-lease:

    P emq:{class}:…        the class queue (emqlab.queue's keyspace)
    P fence               "1" fencing on, "0" off (the instructor's switch; every learner reads it)
    P fence-was-off       set once fencing has been off: duplicate effects are then expected
    P enqueued            how many jobs the instructor enqueued (ids j1 … jN)
    P seen                hash id -> attempts at the last check (attempts only ever grow)
    P ctl:<slot>          hash: the instructor's order to one learner (crash | pause), read-only to it
    P learner:<slot>:…    the learner's own keys: alive (PX presence), name, lane (its recent events)

Users, on the server's ACL: `class-<hex>-l01` … one per learner and `class-<hex>-instructor`. A
learner may FCALL the class functions and run, on each queue key, only the commands the functions
run there (Valkey checks a function's commands against its caller's ACL: there is no definer's
rights), plus its own keys and read access to its order and the fence. It can load no code.
The functions check that every key they are given is the class's own, and `record_effect` takes
the fence from the server, not from its caller: a learner cannot turn fencing off for itself.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any, Sequence
from urllib.parse import quote, urlparse

import redis

from ..core.errors import BadParameter
from ..core.ranges import within
from ..queue.jobs import queue_base
from ..store.scripts import QUEUE as QUEUE_SCRIPTS, SCRIPTS, family, source

QUEUE = "class"
USER_RE = re.compile(r"class-([0-9a-f]{16})-(l[0-9]{2,3}|instructor)")

CALL_RE = re.compile(r"redis\.call\('([A-Z]+)'")
PARK = ("lpop", "blpop")  # the consumer parks on the wake list with plain commands


def ops() -> list[str]:
    """The queue's operations: the scripts of emqlab/lua whose family is the queue's (each a class function)."""
    return family(QUEUE_SCRIPTS)


def queue_commands() -> list[str]:
    """The commands the queue's functions run on its keys (read from their source: Valkey checks every
    command a function runs against its caller's ACL, so the caller must hold each of them)."""
    found = {m.lower() for op in ops() for m in CALL_RE.findall(source(op))} - {"time"}
    return sorted(found | set(PARK))


# no SELECT: the class lives in the address's database, and a key in another one would outlive the class
CONNECTION = ("ping", "hello", "echo", "client|setname", "client|setinfo", "client|id", "time")
OWN_COMMANDS = ("get", "set", "del", "unlink", "exists", "pexpire", "pttl", "hset", "hget", "hgetall", "hincrby",
                "rpush", "ltrim", "lrange", "llen", "incr")


def slots(n: int) -> list[str]:
    return [f"l{i:02d}" for i in range(1, int(within("learners", n)) + 1)]


@dataclass(frozen=True)
class ClassKeys:
    """Every name of one class, from its 16-hex id."""

    hexid: str

    @property
    def prefix(self) -> str:
        return f"emqlab:class-{self.hexid}:"

    @property
    def base(self) -> str:
        return queue_base(self.prefix, QUEUE)

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    def ctl(self, slot: str) -> str:
        return self.key("ctl", slot)

    def own(self, slot: str, what: str = "") -> str:
        return self.key("learner", slot, what) if what else self.key("learner", slot) + ":"

    def user(self, slot: str) -> str:
        return f"class-{self.hexid}-{slot}"

    @property
    def library(self) -> str:
        return f"emqlab_class_{self.hexid}"

    def function(self, op: str) -> str:
        return f"emqlab_{self.hexid}_{op}"

    @classmethod
    def new(cls) -> "ClassKeys":
        return cls(secrets.token_hex(8))


def who(url: str) -> tuple[ClassKeys, str]:
    """(the class, the slot or 'instructor') a join address is for, read from its user name."""
    user = urlparse(url).username or ""
    m = USER_RE.fullmatch(user)
    if not m:
        raise BadParameter("this address is not a class's: its user must be class-<16 hex>-lNN or -instructor "
                           "(use a line of the join file `emqlab class serve` wrote)")
    return ClassKeys(m.group(1)), m.group(2)


def address(keys: ClassKeys, slot: str, password: str, host: str, port: int, db: int = 0) -> str:
    host = f"[{host}]" if ":" in host else host
    return f"redis://{keys.user(slot)}:{quote(password, safe='')}@{host}:{port}/{db}"


# -- the functions ------------------------------------------------------------------------------
def _lua_str(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def library_source(keys: ClassKeys) -> str:
    """The class library: each queue script wrapped in a function that first checks every key it is
    given lies in the class queue. enqueue counts the job (only the instructor may write that counter);
    record_effect takes the fence from the server, not from its caller."""
    out = [f"#!lua name={keys.library}", f"local BASE = {_lua_str(keys.base)}",
           f"local FENCE = {_lua_str(keys.key('fence'))}", f"local ENQUEUED = {_lua_str(keys.key('enqueued'))}",
           "local function ours(KEYS)",
           "  for _, k in ipairs(KEYS) do",
           "    if string.sub(k, 1, #BASE) ~= BASE then return false end",
           "  end",
           "  return true",
           "end"]
    for op in ops():
        guard = [f"if not ours(KEYS) then return redis.error_reply('ERR {op}: a key outside this class queue') end"]
        body = source(op)
        if op == "enqueue":  # only the instructor enqueues; a new job is counted
            guard.append("if not redis.acl_check_cmd('INCR', ENQUEUED) then "
                         "return redis.error_reply('NOPERM only the instructor enqueues') end")
            body = ("local added = (function()\n" + body + "\nend)()\n"
                    "if added == 1 then redis.call('INCR', ENQUEUED) end\nreturn added")
        if op == "record_effect":
            guard.append("if redis.call('GET', FENCE) ~= '0' then ARGV[3] = '1' end")
        out.append(f"redis.register_function('{keys.function(op)}', function(KEYS, ARGV)\n"
                   + "\n".join(guard) + "\n" + body + "\nend)")
    return "\n".join(out) + "\n"


class FunctionCalls:
    """What `emqlab.queue.Queue` calls as `backend.scripts(name, keys, args, client=…)`: FCALL of the
    class library instead of EVALSHA (a learner may not load scripts)."""

    def __init__(self, client: Any, keys: ClassKeys):
        self._client, self._keys = client, keys

    def __call__(self, name: str, keys: Sequence[str], args: Sequence[Any] = (), client: Any = None) -> Any:
        if name not in SCRIPTS or SCRIPTS[name].family != QUEUE_SCRIPTS:
            raise BadParameter(f"the class queue has no operation {name!r}")
        return (client or self._client).fcall(self._keys.function(name), len(keys), *keys, *args)


@dataclass
class ClassStore:
    """A connection to a class's server as one of its users: what a `Queue` needs (`client`,
    `scripts`, `clock`, `prefix`), and who it is (`keys`, `slot`)."""

    client: redis.Redis
    clock: Any
    keys: ClassKeys
    slot: str
    url: str

    def __post_init__(self):
        self.scripts = FunctionCalls(self.client, self.keys)
        self.prefix = self.keys.prefix
        self.live, self.source = True, "url"

    def close(self) -> None:
        self.client.close()


def open_class(url: str, clock: Any = None, *, timeout: float = 10.0) -> ClassStore:
    """Connect to a class with a join address (a learner's or the instructor's)."""
    from ..store.clock import make_clock

    keys, slot = who(url)
    client = redis.Redis.from_url(url, decode_responses=True, socket_connect_timeout=5, socket_timeout=timeout)
    store = ClassStore(client, clock or make_clock("real", 1.0), keys, slot, url)
    try:
        client.ping()
    except redis.RedisError:
        store.close()
        raise
    return store


# -- users ----------------------------------------------------------------------------------------
def learner_rules(keys: ClassKeys, slot: str, password: str) -> list[str]:
    """ACL SETUSER rules of one learner: its own keys, read-only its order and the fence, FCALL of the
    queue's functions, and on the queue's keys only the commands those functions run."""
    own = keys.own(slot) + "*"
    rules = ["reset", "on", f">{password}", "resetchannels", "-@all",
             *(f"+{c}" for c in CONNECTION + OWN_COMMANDS), f"~{own}",
             f"%R~{keys.ctl(slot)}", f"%R~{keys.key('fence')}",
             # FCALL's declared keys are checked in one selector: the queue's, for FCALL alone
             f"(+fcall +fcall_ro ~{keys.base}*)"]
    rules.append(f"({' '.join('+' + c for c in queue_commands())} ~{keys.base}*)")
    return rules


def instructor_rules(keys: ClassKeys, password: str) -> list[str]:
    """The instructor: any data command on the class's keys, FCALL; nothing dangerous, no SCAN/KEYS."""
    return ["reset", "on", f">{password}", "resetchannels", "-@all", "+@read", "+@write", "-@dangerous",
            "-@scripting", "-@admin", "-scan", "-keys", "+fcall", "+fcall_ro", *(f"+{c}" for c in CONNECTION),
            f"~{keys.prefix}*"]


def set_user(admin: redis.Redis, name: str, rules: list[str]) -> None:
    admin.execute_command("ACL", "SETUSER", name, *rules)


def class_users(admin: redis.Redis, keys: ClassKeys) -> list[str]:
    """The ACL users of this class that exist on the server."""
    prefix = f"class-{keys.hexid}-"
    return sorted(u for u in admin.acl_users() if u.startswith(prefix))


def new_password() -> str:
    return secrets.token_urlsafe(24)


# -- the class on its server (what `class serve` holds) --------------------------------------------
class Classroom:
    """One class on a server, set up and taken down with an admin connection (`backend`: an
    emqlab Backend whose user may run ACL and FUNCTION): its library, its users, its run-lease."""

    def __init__(self, backend, learners: int, host: str, port: int, *, db: int = 0,
                 keys: ClassKeys | None = None):
        self.backend, self.admin = backend, backend.client
        self.keys = keys or ClassKeys.new()
        self.slots = slots(learners)
        self.host, self.port, self.db = host, port, db
        self._passwords: dict[str, str] = {}
        self.lease = None

    def open(self) -> "Classroom":
        from ..lease.runs import RunLease

        self.lease = RunLease(self.backend, self.keys.prefix).take()  # `emqlab clean` leaves a live class alone
        self.admin.function_load(library_source(self.keys), replace=True)
        k = self.keys
        self.admin.mset({k.key("fence"): "1", k.key("enqueued"): "0", k.key("learners"): len(self.slots)})
        for slot in self.slots:
            self._passwords[slot] = new_password()
            set_user(self.admin, k.user(slot), learner_rules(k, slot, self._passwords[slot]))
        self._passwords["instructor"] = new_password()
        set_user(self.admin, k.user("instructor"), instructor_rules(k, self._passwords["instructor"]))
        return self

    def address(self, slot: str) -> str:
        return address(self.keys, slot, self._passwords[slot], self.host, self.port, self.db)

    def write_join_file(self, path: str) -> tuple[str, str]:
        """One learner address a line to `path`, the instructor's to `path.instructor`; both mode 0600
        (created so: the passwords are never readable by another local user, not even for a moment)."""
        import os

        written = []
        for target, lines in ((path, [self.address(s) for s in self.slots]),
                              (path + ".instructor", [self.address("instructor")])):
            if os.path.exists(target):
                os.chmod(target, 0o600)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("\n".join(lines) + "\n")
            written.append(target)
        return written[0], written[1]

    def close(self) -> dict[str, int]:
        """Remove the class: its users (Valkey drops their connections), its library, every key under
        its prefix, its run-lease. Safe to call twice."""
        users = class_users(self.admin, self.keys)
        if users:
            self.admin.acl_deluser(*users)
        try:
            self.admin.function_delete(self.keys.library)
        except redis.ResponseError:  # already gone
            pass
        if self.lease is not None:
            lease, self.lease = self.lease, None
            lease.release()
        removed = self.backend.delete_prefix(self.keys.prefix)
        return {"users_removed": len(users), "keys_removed": removed}


def is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def embedded_server(host: str = "127.0.0.1", port: int | None = None):
    """Start a class server on `host` (and loopback) with credentials on: an admin user of its own
    (its password lives in this process only) and the password-less default user switched off.
    (server, an admin Backend, port)."""
    import os

    from ..store.backend import connect
    from ..store.embedded import EmbeddedValkey

    if port is not None:
        port = int(within("port", port))
    bind = host if is_loopback(host) else f"{host} 127.0.0.1"
    server = EmbeddedValkey(config={"bind": bind, "protected-mode": "yes"}, port=port).start()
    try:
        kw = server.connection_kwargs
        password, user = new_password(), f"emqlab-admin-{os.getpid()}"
        with redis.Redis(decode_responses=True, **kw) as boot:
            boot.execute_command("ACL", "SETUSER", user, "reset", "on", f">{password}", "~*", "&*", "+@all")
            # off, and with a password nobody knows: protected mode refuses the LAN while default is nopass
            boot.execute_command("ACL", "SETUSER", "default", "off", "resetpass", f">{new_password()}")
        url = f"redis://{user}:{password}@{kw['host']}:{kw['port']}/0"
        return server, connect(url, clock="real", scale=1.0), kw["port"]
    except BaseException:
        server.stop()
        raise
