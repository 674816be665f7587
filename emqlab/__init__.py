"""emqlab: run, record and draw how a distributed-lock lease is kept fresh.

The model (clock, backend, lease, renewal, queue, scenarios, timeline) never imports matplotlib
or ipywidgets; `emqlab.plot` and `emqlab.widgets` read timelines and draw them.
"""

from .backend import Backend, connect
from .errors import BackendUnavailable, BadParameter, EmqlabError, LeaseLost, StaleToken

__version__ = "0.1.0"

__all__ = ["Backend", "connect", "EmqlabError", "BadParameter", "BackendUnavailable", "LeaseLost", "StaleToken"]
