"""One exception family. Every message is a plain sentence: what was wrong, what is allowed."""

from __future__ import annotations


class EmqlabError(Exception):
    """Base of everything emqlab raises on purpose."""

    exit_code = 1


class BadParameter(EmqlabError, ValueError):
    """A caller passed a value outside what is allowed (CLI exit 2)."""

    exit_code = 2


class BackendUnavailable(EmqlabError):
    """The store could not be reached or started (CLI exit 1)."""


class ForeignKeys(EmqlabError):
    """A reset was refused because the database holds keys outside emqlab's prefix."""


class LeaseError(EmqlabError):
    """A lease operation was refused; carries the key and the token that asked."""

    def __init__(self, message: str, *, key: str | None = None, token: str | None = None):
        super().__init__(message)
        self.key = key
        self.token = token


class LeaseLost(LeaseError):
    """An extend replied 0: the key is gone or holds another token. Stop working at once."""


class StaleToken(LeaseError):
    """A release or a write came with a token (or attempt count) that is no longer current."""


class StoreError(EmqlabError):
    """The store replied something emqlab did not expect, or a run could not go on (CLI exit 1)."""
