"""The MCP connection the current task serves, and "a person is being asked".

The SDK calls zett back from tasks a connection started (an OAuth redirect, an
elicitation); those tasks inherit the connection from the context. Kept apart from
``_connection`` so that what only needs to stop the clocks (``_auth``) does not
import the connection (and the connection can import ``_auth``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Protocol

__all__ = ["CURRENT", "person_asked"]


class _Pausable(Protocol):
    def person_asked(self) -> AbstractContextManager[None]: ...


CURRENT: ContextVar[_Pausable | None] = ContextVar("zett_mcp_connection", default=None)
"""The connection whose session task (or a task it started) is running."""


@contextmanager
def person_asked() -> Iterator[None]:
    """While the block runs, the clocks of the current connection's requests stop
    (code called from the SDK for a session: an OAuth redirect, an elicitation);
    nothing when there is no current connection."""
    connection = CURRENT.get()
    if connection is None:
        yield
        return
    with connection.person_asked():
        yield
