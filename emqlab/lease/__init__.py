"""One lock and keeping it fresh.

`leases` (acquire with SET NX PX and a random token; extend and release only with it), `cadence`
(how often a holder renews, named once), `planes` and `designs` (the renewal designs: per-job
timers, one sweep, one session per worker), `runs` (every run's own lease over its keys, and the
clean-up of runs that died).
"""

from .leases import Grant, Leases, new_token

__all__ = ["Grant", "Leases", "new_token"]
