"""The :class:`~zett_agent.tools.ToolJournal` of a session: a
:class:`~zett_agent.tools.ToolStarted` row just before each tool call is
entered, in its own write (never batched with the answer's row)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence

from zett_agent._messages import ToolCall, ToolResultMessage
from zett_agent.sessions._base import SessionStore, StoredRow
from zett_agent.tools._outcomes import ToolStarted

__all__ = ["SessionJournal", "started_calls"]


def started_calls(rows: Iterable[StoredRow]) -> frozenset[str]:
    """The call ids that ``rows`` record as started."""
    return frozenset(r.message.call_id for r in rows if isinstance(r.message, ToolStarted))


class SessionJournal:
    """Records starts as rows of session ``session_id`` in ``store``; knows the
    starts ``rows`` (the session as loaded) recorded before."""

    def __init__(self, store: SessionStore, session_id: str, rows: Sequence[StoredRow]) -> None:
        self.store = store
        self.session_id = session_id
        self._before = started_calls(rows)

    async def started(self, call: ToolCall, run_id: str) -> bool:
        await self.store.append(self.session_id, ToolStarted(call.id, call.name, run_id))
        return True

    async def run(
        self, call: ToolCall, execute: Callable[[], Awaitable[ToolResultMessage]]
    ) -> ToolResultMessage:
        return await execute()

    def was_started(self, call_id: str) -> bool:
        return call_id in self._before
