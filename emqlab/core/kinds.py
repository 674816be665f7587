"""The names of the events a run records: every `kind` emqlab writes, in one place.

A `Kind` *is* its string (`Kind.CLAIM == "claim"`, `json.dumps(Kind.CLAIM) == '"claim"'`), so a run's JSON is the
same as when kinds were bare strings, and an event read back from JSON (a child process's line, a classroom lane, a
history file) keeps its plain `str` kind: never coerce one with `Kind(...)`, a history may carry any kind.

`Command` names what the classroom's instructor may order a learner's worker to do (the `cmd` of its control hash;
`classroom.board.Order` is an order given, with its command).

This module imports nothing but `enum`: it is loaded inside the libraries' and the workers' child processes.
"""
from enum import StrEnum


class Kind(StrEnum):
    """What happened, as an event's `kind`."""

    # the queue's consumer (queue/consumer.py, its child processes, the classroom's workers): a job's life
    ENQUEUE = "enqueue"
    SESSION_OPEN = "session_open"
    SESSION_CLOSE = "session_close"
    STARTED = "started"
    CLAIM = "claim"
    WORK_START = "work_start"
    WORK_DONE = "work_done"
    WORK_STOPPED = "work_stopped"
    EFFECT = "effect"
    COMPLETE = "complete"
    COMPLETE_REFUSED = "complete_refused"
    LATE_EXTEND = "late_extend"
    STEP = "step"
    REAP = "reap"
    PROMOTE = "promote"
    STOPPED = "stopped"
    CRASH = "crash"
    PAUSE_START = "pause_start"
    PAUSE_END = "pause_end"
    # a history's give-back (never recorded by emqlab: the history format allows it, queue/invariants reads it)
    RETRY = "retry"

    # one lease held by heartbeat (scenarios/heartbeat.py, failover, renewal cost, the lock libraries)
    ACQUIRE = "acquire"
    ACQUIRE_FAILED = "acquire_failed"
    RENEW = "renew"
    RENEW_MISSED = "renew_missed"
    RENEW_LOST = "renew_lost"
    LAPSE = "lapse"
    RECLAIM = "reclaim"
    SAW_DONE = "saw_done"
    RELEASE = "release"
    RELEASE_REFUSED = "release_refused"

    # the explore world (scenarios/explore/world.py): refusals and the snapshots it checks
    CLAIM_WAITS = "claim_waits"
    CLAIM_REFUSED = "claim_refused"
    CLAIM_EMPTY = "claim_empty"
    EXTEND = "extend"
    EFFECT_REFUSED = "effect_refused"
    FREEZE = "freeze"
    THAW = "thaw"
    SNAPSHOT = "snapshot"

    # the fencing store and failover (scenarios/fencing.py, failover.py): tokens, writes, the replica's promotion
    TOKEN = "token"
    WRITE = "write"
    COMPLETION = "completion"
    WAIT = "wait"
    NOT_STARTED = "not_started"
    STALL = "stall"
    KILLED = "killed"
    PROMOTED = "promoted"
    REJOINED = "rejoined"

    # renewal cost (scenarios/renewal_cost.py): the renewer's round trips and the thief's takes
    ROUND_TRIP = "round_trip"
    TICK = "tick"
    TAKE = "take"
    LEASE_LOST = "lease_lost"
    LET_GO = "let_go"

    # the cluster, chaos and the faults (scenarios/cluster.py, chaos.py, fault_plan.py, faults/clock_jump.py)
    SLOTS = "slots"
    SCRIPT = "script"
    HOLDS = "holds"
    SAMPLE = "sample"
    FAULT_UNDELIVERED = "fault_undelivered"
    CLOCK_JUMP = "clock_jump"

    # the tools runs' reports from inside a library's process (tools/report.py and the *_run.py holders)
    START = "start"
    END = "end"
    STOP = "stop"
    SKIPPED = "skipped"
    STRETCH = "stretch"
    TOLD = "told"
    LIBRARY_ERROR = "library_error"
    LIBRARY_FAILED = "library_failed"
    RENEWAL_THREAD_DIED = "renewal_thread_died"

    # the tools runs' own record and the server's view of a library's jobs (tools/harness.py, tools/*_run.py)
    SEND = "send"
    STATE = "state"
    STALLED = "stalled"
    COMPLETED = "completed"
    FAILED = "failed"
    DELIVERED = "delivered"
    REDELIVERED = "redelivered"
    ACKED = "acked"
    ABANDONED = "abandoned"
    REQUEUED = "requeued"
    LOCK_LAPSED = "lock_lapsed"


class Command(StrEnum):
    """What the classroom's instructor tells one learner's worker (the `cmd` field of its `ctl:<slot>` hash)."""

    CRASH = "crash"
    PAUSE = "pause"
