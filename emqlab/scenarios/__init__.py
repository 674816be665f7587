"""The course figures as functions that run on a backend and return a Timeline."""

from .heartbeat import heartbeat

__all__ = ["heartbeat"]
