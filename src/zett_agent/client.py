"""Run an agent inside named sessions that survive the process.

::

    client = AgentClient(agent, "sessions.sqlite3")       # or store=SQLiteSessionStore(...)
    async for event in client.stream("Summarize this repository", session_id="s1"):
        ...
    message = await client.run("And the tests?", session_id="s1")
    message = await client.resume("s1")     # after an INTERRUPTED or MAX_OUTPUT answer

Each run loads the session, runs :meth:`Agent.stream <zett_agent.agent.Agent.stream>`
on it, and writes every message to the store as soon as it is complete, so a
crashed or killed process loses only the answer that was streaming. A cancelled
run stores the text received so far (INTERRUPTED, ``detail["cancelled"]``).

Runs of one session in one client wait for each other; runs of different
sessions go concurrently, and several processes may share one SQLite file.
Two processes running the *same* session at once would interleave their
messages: the store stays sound, but the conversation does not make sense.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from functools import partial

import anyio

from zett_agent.agent import Agent
from zett_agent.events import AgentEvent, AgentEventDispatcher, final_message
from zett_agent.messages import AssistantMessage, Message
from zett_agent.sessions import (
    InMemorySessionStore,
    SessionInfo,
    SessionStore,
    SQLiteSessionStore,
    StoredRow,
    live_rows,
)
from zett_agent.sessions.base import check_session_id

__all__ = ["AgentClient", "new_session_id"]


def new_session_id() -> str:
    """A fresh session id (a random UUID, hex)."""
    return uuid.uuid4().hex


class AgentClient:
    """An :class:`~zett_agent.agent.Agent` run in sessions of a :class:`SessionStore`.

    Args:
        agent: the agent; its own ``messages`` are not used or changed.
        store: a :class:`SessionStore`, or a path for a :class:`SQLiteSessionStore`.
            None: an :class:`InMemorySessionStore`, gone with the process (pass a
            path to keep sessions).
        session_id: the session used when a call names none; default a new id
            from :func:`new_session_id`, kept in :attr:`session_id`. An empty id
            (here or in a call) raises :class:`~zett_agent.errors.SessionStoreError`.

    A store the client made from a path (or the default one) is closed by
    :meth:`aclose`; a store passed in is the caller's to close.
    """

    def __init__(
        self,
        agent: Agent,
        store: SessionStore | str | os.PathLike[str] | None = None,
        *,
        session_id: str | None = None,
    ) -> None:
        self.agent = agent
        self._own_store = not isinstance(store, SessionStore)
        if store is None:
            store = InMemorySessionStore()
        elif not isinstance(store, SessionStore):
            store = SQLiteSessionStore(store)
        self.store: SessionStore = store
        self.session_id = new_session_id() if session_id is None else check_session_id(session_id)
        self._locks: dict[str, anyio.Lock] = {}

    async def aclose(self) -> None:
        """Close the store if the client made it. The agent is left open."""
        if self._own_store:
            await self.store.aclose()

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------ running

    async def stream(
        self, prompt: str | None, *, session_id: str | None = None
    ) -> AsyncGenerator[AgentEvent, None]:
        """Run ``prompt`` in the session and yield its events.

        ``prompt`` None answers the session as it is. Close the generator (use
        ``contextlib.aclosing``) when leaving early: that cancels the run and stores
        the text received so far.
        """
        sid = self._sid(session_id)
        async with self._session(sid) as rows:
            history = [row.message for row in rows]
            append = partial(self.store.append, sid)
            events = self.agent.stream(prompt, history=history, on_message=append)
            async with aclosing(events):
                async for event in events:
                    yield event

    async def run(
        self,
        prompt: str | None,
        *,
        session_id: str | None = None,
        dispatcher: AgentEventDispatcher | None = None,
    ) -> AssistantMessage:
        """Run ``prompt`` in the session to the end; return the final assistant message.

        As :meth:`Agent.run <zett_agent.agent.Agent.run>`: an abnormal stop is on
        ``message.stop``, never raised.
        """
        return await final_message(self.stream(prompt, session_id=session_id), dispatcher)

    async def resume_stream(
        self, session_id: str | None = None
    ) -> AsyncGenerator[AgentEvent, None]:
        """Continue the session's cut-off last answer, yielding events.

        See :func:`~zett_agent.resume.plan_resume`. A continuation joined to the
        cut-off answer (prefill) is stored as a new row that replaces the cut-off
        one in the loaded session (:meth:`SessionStore.append` ``replaces=``); the
        cut-off row itself stays. Raises :class:`~zett_agent.errors.ResumeError`
        before anything is sent when the session cannot be resumed.
        """
        sid = self._sid(session_id)
        async with self._session(sid) as rows:

            async def replace(index: int, message: Message) -> None:
                await self.store.append(sid, message, replaces=rows[index].seq)

            events = self.agent.resume_stream(
                history=[row.message for row in rows],
                on_message=partial(self.store.append, sid),
                on_replace=replace,
            )
            async with aclosing(events):
                async for event in events:
                    yield event

    async def resume(
        self, session_id: str | None = None, *, dispatcher: AgentEventDispatcher | None = None
    ) -> AssistantMessage:
        """:meth:`resume_stream` to the end: the final assistant message (the joined
        answer when the provider continued a prefill)."""
        return await final_message(self.resume_stream(session_id), dispatcher)

    # ------------------------------------------------------------ sessions

    async def messages(self, session_id: str | None = None) -> list[Message]:
        """The session's conversation as stored."""
        return await self.store.load(self._sid(session_id))

    async def sessions(self) -> list[SessionInfo]:
        """The stored sessions, most recently written first."""
        return await self.store.list_sessions()

    async def delete(self, session_id: str | None = None) -> bool:
        """Delete the session; False when there was none."""
        return await self.store.delete(self._sid(session_id))

    def new_session(self) -> str:
        """Make a new session id the default for calls that name none, and return it."""
        self.session_id = new_session_id()
        return self.session_id

    def _sid(self, session_id: str | None) -> str:
        """The session a call names: ``session_id``, or the default when None. An
        empty id raises :class:`~zett_agent.errors.SessionStoreError`."""
        return self.session_id if session_id is None else check_session_id(session_id)

    @asynccontextmanager
    async def _session(self, session_id: str) -> AsyncIterator[list[StoredRow]]:
        lock = self._locks.setdefault(session_id, anyio.Lock())
        try:
            async with lock:
                yield live_rows(await self.store.rows(session_id))
        finally:
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._locks.pop(session_id, None)
