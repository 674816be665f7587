"""The course figures as functions that run on a backend and return a Timeline."""

from .heartbeat import heartbeat
from .renewal_cost import renewal_cost
from .reaper import queue_heartbeat, reaper
from .fencing import fencing
from .chaos import chaos

__all__ = ["heartbeat", "renewal_cost", "reaper", "queue_heartbeat", "fencing", "chaos"]
