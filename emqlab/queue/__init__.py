"""The EchoMQ applied form: a queue whose leases live on the server clock.

`jobs` (the queue's keyspace and its scripts: enqueue, claim, complete, retry, reap, promote),
`consumer` (one supervised loop, one beat at a time: reap, promote, drain, park), `reap_backlog` (a
backlog of expired leases back to pending in bounded slices), `procs` (consumers as OS processes on a live server).
"""

from .jobs import REAP_LIMIT, Claimed, Queue

__all__ = ["Claimed", "Queue", "REAP_LIMIT"]
