"""Every EMQLAB_* environment variable, named once: a module that reads or sets one imports its name from
here, so each is spelled in one place (the names themselves are a contract: docs/command-line.md lists them).
The variables emqlab sets for other programs (JUPYTER_PATH, PYTHONUNBUFFERED, libfaketime's) stay with the
code that starts them."""

from __future__ import annotations

BACKEND_ENV = "EMQLAB_BACKEND"  # the store a run opens when none is given: fake, valkey or a URL
URL_ENV = "EMQLAB_URL"  # a live server's URL (wins over BACKEND_ENV)
SCALE_ENV = "EMQLAB_SCALE"  # the real clock's scale the lessons run at on a live store
RUN_LEASE_ENV = "EMQLAB_RUN_LEASE"  # the lease (s) a run holds on its own key prefix
CHILD_STORE_ENV = "EMQLAB_CHILD_STORE"  # a consumer process's store: its specification (address, clock, scale); never on a command line
CLASS_URL_ENV = "EMQLAB_CLASS_URL"  # a class's address (it carries a password); never on a command line
LIBFAKETIME_ENV = "EMQLAB_LIBFAKETIME"  # the libfaketime a live clock jump preloads, where the search finds none
TOOLS_URL_ENV = "EMQLAB_TOOLS_URL"  # a library's worker: the server it reports to
TOOLS_PREFIX_ENV = "EMQLAB_TOOLS_PREFIX"  # a library's worker: the run's key prefix
TOOLS_ACTOR_ENV = "EMQLAB_TOOLS_ACTOR"  # a library's worker: its name on the timeline
