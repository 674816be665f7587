"""RQ: a worker killed mid-job leaves its job in the started registry until its heartbeat lapses; then the job
is moved to the failed registry as abandoned — not run twice, but not run at all unless it is retried.

What the library does (`rq/worker/base.py`, `rq/executions.py`, `rq/registry.py`, read and then run here):
a worker forks a work horse per job and, every `job_monitoring_interval` (default 30 s), renews the job's
entry in the started registry (`rq:wip:<queue>`, scored with its expiry) to now + that interval + 60 s:
the 60 s are fixed (the interval is capped by the job's `job_timeout` left). A worker cleans the registries
when `maintenance_interval` (default 600 s) has passed since its last cleaning, and it looks only between
jobs or when its wait for a job times out (`worker_ttl` − 15 s, 405 s by default), so an idle worker cleans
every 810 s by default: `StartedJobRegistry.cleanup` takes each entry whose score has passed and, if the
job has retries left (`Retry`), requeues it (asked for in rq/rq#1461), else moves it to the failed registry
("AbandonedJobError"). So a job whose worker died is noticed no sooner than 60 s after its last heartbeat
(the job heartbeat came with PR rq/rq#1349, for workers killed hard). A retry is blind: a worker that was only slow (frozen, not dead) still
finishes the job when it comes back, and so does the retry.

The run: two RQ workers (`rq.Worker`, forking work horses, `job_monitoring_interval` `timeout` and
`maintenance_interval` 1 s), one job of `task` seconds; `KILL_AT_S` into it the worker that took it and its
work horse are SIGKILLed (fate `killed`), or SIGSTOPped until the job is run again (fate `slow`).
- failure: no retry: the job ends in the failed registry, never done;
- fix: `Retry(max=1)`: the abandoned job is requeued and the other worker runs it; once when the first
  worker was killed, twice when it was only slow.
The sampler reads the started registry's entry (its score: the heartbeat's expiry), the failed registry,
the queue and the job's status. RQ's keys always start with `rq:` (it has no prefix option): they live on a
server of the run's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..core.environment import TOOLS_ACTOR_ENV, TOOLS_URL_ENV
from ..core.errors import BadParameter
from ..core.kinds import Kind
from ..core.ranges import within
from ..core.timeline import Timeline
from ..core.words import ModeWords, plural, seconds, times
from .declaration import Library, Option, Repeat
from .harness import LibraryRun, Probe, check_budget, require
from .report import main, work
from .story import ToolParams, ToolVerdict, add_work_lanes, bodies, counts, judged, lease, states

QUEUE, JOB_ID = "emqlab-tools", "job-1"
WORKERS = ("worker-1", "worker-2")
TASK_S = 2.0
KILL_AT_S = 0.5  # into the job
FIXED_S = 60  # what RQ adds to every heartbeat's expiry (`get_heartbeat_ttl`)
MONITOR_S = 1.0  # job_monitoring_interval here (RQ's default: 30 s)
FATES = ("killed", "slow")
DEFAULTS = {"job_monitoring_interval": 30, "maintenance_interval": 600, "heartbeat ttl": "interval + 60 s"}


@dataclass(frozen=True, kw_only=True)
class Params(ToolParams):
    """An RQ run: the task (seconds), what happens to the first worker (`killed`: SIGKILL with its work
    horse; `slow`: SIGSTOP until the job is run again), the heartbeat interval (job_monitoring_interval,
    seconds); with `fix` the job carries `Retry(max=1)`."""

    fate: str = "killed"
    monitoring_interval: float = MONITOR_S
    kill_at: float = KILL_AT_S

    @property
    def mode(self) -> str:
        return ("fix" if self.fix else "failure") + ("" if self.fate == "killed" else "+slow")

    def span(self) -> float:
        """The story at most: the heartbeat's expiry (interval + RQ's 60 s, in whole seconds), a cleaning,
        and the retry's run."""
        return self.kill_at + self.monitoring_interval + FIXED_S + 3 + self.task + 2


@dataclass(frozen=True, kw_only=True)
class RqVerdict(ToolVerdict):
    """An RQ run's facts: the first worker's fate and when, the expiry the started registry held for the job
    (a whole second: RQ scores it so), when the entry left the registry (the job abandoned), whether it was
    retried, and where the job ended (its status, its registry)."""

    fate: str
    retry: bool
    monitoring_interval: float
    fate_at: float | None
    heartbeat_deadline: float | None
    abandoned_at: float | None
    retried: bool
    final_status: str | None
    in_failed_registry: bool


VERDICT = RqVerdict  # what `emqlab.tools.load` reads a run's verdict back as


def body(seconds_: float) -> int:
    """The job (run by a work horse): the task body, reported on the lane of the worker that forked it."""
    import os

    return work(float(seconds_), os.environ.get(TOOLS_ACTOR_ENV, "worker"))


class RqProbe(Probe):
    """RQ's keys: the started registry's entry for the job (scored with its expiry), the failed registry,
    the queue, the job's status and retries left."""

    def commands(self, pipe) -> None:
        pipe.zrange(f"rq:wip:{QUEUE}", 0, -1, withscores=True)
        pipe.zscore(f"rq:failed:{QUEUE}", JOB_ID)
        pipe.llen(f"rq:queue:{QUEUE}")
        pipe.hmget(f"rq:job:{JOB_ID}", "status", "retries_left")

    def state(self, replies: list[Any], now: float) -> dict[str, Any]:
        wip, failed, queued, (status, retries) = replies
        entry = next(((member, score) for member, score in wip if member.startswith(JOB_ID + ":")), None)
        return {"execution": entry[0].split(":", 1)[1][:8] if entry else None,
                "started_deadline": entry[1] if entry else None,
                "failed": failed is not None, "queued": queued, "status": status, "retries_left": retries}


def rq(fix: bool = False, task: float = TASK_S, timeout: float | None = None, fate: str = "killed") -> Timeline:
    """Run RQ's story (see the module) on a server of its own; the Timeline, verdict included.

    fix: the job carries Retry(max=1); fate: killed | slow; timeout: job_monitoring_interval (seconds, RQ
    adds 60 to it)."""
    task = float(within("task", task))
    monitor = float(within("timeout", timeout)) if timeout is not None else MONITOR_S
    if not monitor.is_integer():
        raise BadParameter(f"RQ's job_monitoring_interval (--timeout) is whole seconds, got {monitor:g}")
    if fate not in FATES:
        raise BadParameter(f"fate must be one of {', '.join(FATES)}, got {fate!r}")
    if task <= KILL_AT_S:
        raise BadParameter(f"the task must outlast the worker's {fate} moment at {KILL_AT_S:g} s, got {task:g} s")
    params = Params(fix=bool(fix), task=task, fate=fate, monitoring_interval=monitor)
    check_budget(LIBRARY.name, params.span())
    version = require(LIBRARY)
    with LibraryRun(LIBRARY.name, params, lambda prefix: RqProbe(), version) as run:
        for name in WORKERS:
            run.spawn(name, ["-m", __name__, "worker", name, repr(monitor)], **{TOOLS_ACTOR_ENV: name})
        run.wait_ready(("blmove", "blpop", "brpoplpush"), len(WORKERS))
        run.begin()
        _enqueue(run, task, fix)
        started = run.wait_until("the job's start", lambda: run.reported(Kind.START), 30)[0]
        first_worker = started["actor"]
        run.sleep_until(started["ts"] - run.t0 + params.kill_at)
        if fate == "killed":
            run.crash(first_worker)
        else:
            run.pause(first_worker)
        deadline = run.t + params.span()  # from the fate: a slow worker's wait for RQ to give up counts in it
        if fate == "slow":  # it comes back once RQ has given up on it (and the retry, if any, is running)
            run.wait_until("RQ to give the job up", lambda: _given_up(run, first_worker), params.span() + 30)
            run.resume(first_worker)

        def over() -> bool:
            return (run.sampler.last.get("status") in ("finished", "failed")
                    and run.bodies_ended(cut=int(fate == "killed")))

        tl = run.end(over, deadline - run.t)
    return judged(tl, lanes, verdict)


def _enqueue(run: LibraryRun, task: float, fix: bool) -> None:
    import redis
    from rq import Queue, Retry

    run.record("producer", Kind.SEND, job=JOB_ID, retry="Retry(max=1)" if fix else None)
    with redis.Redis.from_url(run.url) as conn:
        Queue(QUEUE, connection=conn).enqueue(f"{__name__}.body", task, job_id=JOB_ID, job_timeout=600,
                                              retry=Retry(max=1) if fix else None)


def _given_up(run: LibraryRun, first_worker: str) -> bool:
    """RQ has given the job up: it is in the failed registry, or a retry's run has started elsewhere."""
    again = [r for r in run.reported(Kind.START) if r["actor"] != first_worker]
    return bool(again) or bool(run.sampler.last.get("failed"))


# -- reading the run ---------------------------------------------------------------------------------
def lanes(tl: Timeline) -> None:
    """The work lanes, and on the lane of the worker whose job it was, the started registry's entry: from
    when it appeared to the expiry its score gave (the heartbeat's deadline), or its removal."""
    add_work_lanes(tl)
    runs = bodies(tl)
    entry: dict[str, Any] = {}

    def close(t: float) -> None:
        if entry:
            deadline = entry["deadline"]
            body_ = min(runs, key=lambda b: abs(b.start - entry["start"]), default=None)
            actor = body_.actor if body_ is not None else "server"
            abandoned = t >= deadline - 0.05
            lease(tl, actor, entry["start"], deadline, "abandoned" if abandoned else "removed", None if abandoned else t,
                  what="started registry", beats=entry["beats"])
            if abandoned:
                tl.add(t, "server", Kind.ABANDONED, worker=actor)
            entry.clear()

    for t, s in states(tl):
        execution, deadline = s.get("execution"), s.get("started_deadline")
        if entry and execution != entry["execution"]:
            close(t)
        if execution is not None:
            if not entry:
                entry.update(execution=execution, start=t, deadline=deadline, beats=0)
            elif deadline > entry["deadline"] + 0.5:
                entry["deadline"], entry["beats"] = deadline, entry["beats"] + 1
        if s.get("failed") and not tl.of(Kind.FAILED, "server"):
            tl.add(t, "server", Kind.FAILED, status=s.get("status"))
        if s.get("queued") and not tl.of(Kind.REQUEUED, "server") and tl.of(Kind.ABANDONED, "server"):
            tl.add(t, "server", Kind.REQUEUED, retries_left=s.get("retries_left"))
    if entry:
        close(max(e.t for e in tl.events))
    tl.finish()


def verdict(tl: Timeline) -> RqVerdict:
    p = tl.params
    c = counts(tl)
    last = states(tl)[-1][1] if states(tl) else {}
    fate = tl.first(Kind.CRASH) or tl.first(Kind.FREEZE)
    abandoned = tl.first(Kind.ABANDONED, "server")
    band = next(iter(tl.spans("lease")), None)
    retried = len(bodies(tl)) > 1
    v = RqVerdict(
        **c, lost=c["effects"] == 0,
        holder_told=False if p.fate == "slow" and abandoned is not None else None,
        fate=p.fate, retry=p.fix, monitoring_interval=p.monitoring_interval, fate_at=fate.t if fate else None,
        heartbeat_deadline=band.data["deadline"] if band else None, abandoned_at=abandoned.t if abandoned else None,
        retried=retried, final_status=last.get("status"), in_failed_registry=bool(last.get("failed")))
    return v.worded(words(p, v))


# -- the one place an RQ run is put into words --------------------------------------------------------------
CAPTION = ("RQ: two workers, one job; the worker that takes it is killed mid-job (or only frozen), with no retry "
           "and with Retry(max=1), and emqlab's own design facing a worker that dies. Bands: the job's entry in "
           "the started registry, to the expiry the server held.")
# the caption's words for emqlab's own run: a figure without that run drops them
OURS = ", and emqlab's own design facing a worker that dies"


def outcome(label: str, p: Params, v: RqVerdict) -> tuple[str, str]:
    """The headline and the static verdict: what the run came to."""
    first_worker = v.workers[0] if v.workers else "the worker"
    what = "killed" if p.fate == "killed" else "frozen"
    gone = seconds(v.abandoned_at)
    if v.lost:
        head = f"{label}: the {what} worker's job waited until {gone}, then RQ failed it as abandoned; it never ran."
        return head, "lost: failed as abandoned"
    if v.runs >= 2:
        head = f"{label}: RQ gave the job up at {gone} and ran it again, while {first_worker}, thawed, finished it too: {times(v.runs)}."
        return head, f"runs {times(v.runs)}"
    head = f"{label}: RQ gave the job up at {gone}, requeued it, and it ran once."
    return head, f"runs once, after {gone}"


def words(p: Params, v: RqVerdict) -> ModeWords:
    first_worker = v.workers[0] if v.workers else "the worker"
    what = "killed (SIGKILL, its work horse too)" if p.fate == "killed" else "frozen (SIGSTOP)"
    label = ("Retry(max=1)" if p.fix else "no retry") + (", the worker only slow" if p.fate == "slow" else "")
    said = [f"rq {v.version}; job_monitoring_interval {seconds(p.monitoring_interval)}, RQ adds a fixed "
            f"{FIXED_S} s; the job works {seconds(p.task)}"]
    if v.fate_at is not None:
        said.append(f"{first_worker} was {what} at {seconds(v.fate_at)}, mid-job")
    if v.heartbeat_deadline is not None:
        said.append(f"the started registry held the job until {seconds(v.heartbeat_deadline)} (its heartbeat's expiry)")
    if v.abandoned_at is not None:
        said.append(f"a worker's cleaning took it out at {seconds(v.abandoned_at)}, "
                    + ("and Retry requeued it" if v.retried else "as abandoned, to the failed registry"))
    said.append(f"the body ran to its end {times(v.runs)} ({plural(v.effects, 'effect')})"
                + (f", in {', '.join(v.finished_in)}" if v.runs else ""))
    said.append(f"the job's status: {v.final_status}" + (", in the failed registry" if v.in_failed_registry else ""))
    return ModeWords(label, *outcome(label, p, v), tuple(said))


# -- a worker, as its own process ---------------------------------------------------------------------------
def worker_main(_role: str, argv: list[str]) -> int:
    """`python -m emqlab.tools.rq_run worker NAME MONITORING_INTERVAL`: one RQ worker (forking a work horse
    per job) on the server in $EMQLAB_TOOLS_URL; it cleans the registries every second."""
    import os

    import redis
    from rq import Queue, Worker

    name, monitor = argv[0], float(argv[1])
    conn = redis.Redis.from_url(os.environ[TOOLS_URL_ENV])
    worker = Worker([Queue(QUEUE, connection=conn)], connection=conn, name=f"{name}-{os.getpid()}",
                    job_monitoring_interval=int(monitor), maintenance_interval=1, worker_ttl=16)
    worker.work(logging_level="WARNING")
    return 0


LIBRARY = Library(
    name="rq", title="RQ", place=3, run="rq", imports="rq", distribution="rq",
    requires={"rq": "rq>=2.12,<2.13"},
    task="2", timeout="job_monitoring_interval (whole seconds, default 1: RQ adds 60)",
    options=(Option("fate", "rq only: the first worker is killed (SIGKILL, default) or only slow (SIGSTOP until RQ "
                            "gives up)", choices=FATES),),
    runs=MappingProxyType({"failure": {}, "fix": {"fix": True}, "fix+slow": {"fix": True, "fate": "slow"}}),
    counterpart=("reaper", {"design": "session"}),
    failure="the worker and its work horse SIGKILLed mid-job: abandoned after the heartbeat's expiry (interval + "
            "RQ's fixed 60 s), failed, never run",
    fix="`Retry(max=1)`: run once; `--fate slow` (SIGSTOP, not SIGKILL): run twice",
    repeats=(Repeat((), "lost", lambda v: v["lost"] is True, ("lost", "runs")),
             Repeat(("--fix",), "runs 1 (worker killed)", lambda v: v["runs"] == 1 and not v["lost"], ("runs",)),
             Repeat(("--fix", "--fate", "slow"), "runs 2 (worker only slow)", lambda v: v["runs"] == 2, ("runs",))),
    fixed_wait_s=FIXED_S,
)


if __name__ == "__main__":
    main(worker_main, ("worker",))
