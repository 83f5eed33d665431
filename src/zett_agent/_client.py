"""Run an agent inside named sessions that survive the process.

::

    client = AgentClient(agent, "sessions.sqlite3")       # or store=SQLiteSessionStore(...)
    async for event in client.stream("Summarize this repository", session_id="s1"):
        ...
    message = await client.run("And the tests?", session_id="s1")
    message = await client.resume("s1")     # after an INTERRUPTED or MAX_OUTPUT answer
    message = await client.approve("s1", {"call_1": approve()})   # calls waiting for approval

Each run loads the session, runs :meth:`Agent.stream <zett_agent.Agent.stream>`
on it, and writes every message to the store as soon as it is complete, so a
crashed or killed process loses only the answer that was streaming. A cancelled
run stores the text received so far (INTERRUPTED, ``detail["cancelled"]``).

A run that ends with tool calls waiting for approval stores them as an approval
request row; :meth:`AgentClient.approve` stores the decisions as a row before any
tool runs, then goes on. Until then a new prompt or a plain resume of that session
raises :class:`~zett_agent.approvals.PendingApprovalError`. The decision row is a
compare-and-set keyed by the request (:meth:`SessionStore.append_if_absent`): of
two clients (or processes) deciding the same calls, exactly one stores its
decision and runs them; the other gets
:class:`~zett_agent.approvals.ApprovalConflictError` and runs nothing.

A request made by a durable run (``ApprovalRequest.durable_agent``) is continued
by a worker, never in the deciding process: the client stores the decision and
hands it to its ``handoff`` (:class:`~zett_agent.tools._approvals.ApprovalHandoff`,
e.g. :class:`zett_agent.durable.DurableRuns`); without one it refuses
(:class:`~zett_agent.errors.ConfigError`) before storing anything.

Runs of one session in one client wait for each other; runs of different
sessions go concurrently, and several processes may share one SQLite file.
Two processes running the *same* session at once would interleave their
messages: the store stays sound, but the conversation does not make sense.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import aclosing, asynccontextmanager
from functools import partial
from typing import Any, Generic, Self, TypeVar, overload

import anyio

from zett_agent._agent import Agent, OutputT
from zett_agent._events import AgentEvent, AgentEventDispatcher, AgentEventType, final_message
from zett_agent._messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from zett_agent._output import output_type_of
from zett_agent._records import is_record
from zett_agent._sync import iterate_sync, run_sync
from zett_agent.errors import ConfigError
from zett_agent.sessions import (
    InMemorySessionStore,
    SessionInfo,
    SessionStore,
    SQLiteSessionStore,
    StoredRow,
    live_rows,
)
from zett_agent.sessions._base import check_session_id, messages_of
from zett_agent.sessions._decisions import take_decision, waiting_request
from zett_agent.sessions._journal import SessionJournal
from zett_agent.tools._approvals import (
    ApprovalConflictError,
    ApprovalDecision,
    ApprovalHandoff,
    ApprovalRequest,
    Decision,
    pending_request,
    refuse_while_pending,
)

logger = logging.getLogger("zett_agent.client")  # a stable name, not the module path

__all__ = ["AgentClient", "new_session_id"]


_APPROVAL_ROWS = (ApprovalRequest, ApprovalDecision)


def _check_no_pending(session_id: str, rows: list[StoredRow]) -> None:
    refuse_while_pending(session_id, [row.message for row in rows])


_R = TypeVar("_R")
"""A run's own ``output_type=``."""


def new_session_id() -> str:
    """A fresh session id (a random UUID, hex)."""
    return uuid.uuid4().hex


class AgentClient(Generic[OutputT]):
    """An :class:`~zett_agent.Agent` run in sessions of a :class:`SessionStore`.

    Generic as its agent is (``AgentClient(agent)`` of an ``Agent[City]`` is an
    ``AgentClient[City]``): :meth:`run` and :meth:`resume` return
    ``AssistantMessage[City]``, or the type of a run's own ``output_type=``.
    :meth:`approve` and :meth:`messages` return what may come from the store (a
    durable run's answer, stored rows), whose output is JSON until loaded again
    with an ``output_type``: ``AssistantMessage[Any]``.

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

    ``handoff`` continues decided requests that a durable run made (see the
    module docstring); None: such a request cannot be decided here.
    """

    def __init__(
        self,
        agent: Agent[OutputT],
        store: SessionStore | str | os.PathLike[str] | None = None,
        *,
        session_id: str | None = None,
        handoff: ApprovalHandoff | None = None,
    ) -> None:
        self.handoff = handoff
        self.agent = agent
        self._own_store = not isinstance(store, SessionStore)
        if store is None:
            store = InMemorySessionStore()
        elif not isinstance(store, SessionStore):
            store = SQLiteSessionStore(store)
        self.store: SessionStore = store
        self.session_id = new_session_id() if session_id is None else check_session_id(session_id)
        self._locks: dict[str, anyio.Lock] = {}
        self._stored_approval: dict[str, ApprovalRequest] = {}

    async def aclose(self) -> None:
        """Close the store if the client made it. The agent is left open."""
        if self._own_store:
            await self.store.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------ the sync API

    @overload
    def run_sync(
        self,
        prompt: str | UserMessage | None,
        *,
        session_id: str | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: None = None,
    ) -> AssistantMessage[OutputT]: ...
    @overload
    def run_sync(
        self,
        prompt: str | UserMessage | None,
        *,
        session_id: str | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: type[_R],
    ) -> AssistantMessage[_R]: ...
    @overload
    def run_sync(
        self,
        prompt: str | UserMessage | None,
        *,
        session_id: str | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: object,
    ) -> AssistantMessage[Any]: ...
    def run_sync(
        self,
        prompt: str | UserMessage | None,
        *,
        session_id: str | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: Any = None,
    ) -> AssistantMessage[Any]:
        """:meth:`run` on the process's private loop thread (:mod:`zett_agent._sync`),
        with the same parameters and result: for scripts and notebooks; Ctrl-C
        cancels the run (the answer so far is stored as INTERRUPTED) and raises
        ``KeyboardInterrupt``."""
        return run_sync(
            lambda: self.run(
                prompt, session_id=session_id, dispatcher=dispatcher, output_type=output_type
            )
        )

    def stream_sync(
        self,
        prompt: str | UserMessage | None,
        *,
        session_id: str | None = None,
        output_type: Any = None,
    ) -> Iterator[AgentEvent]:
        """:meth:`stream` as a plain iterator of the same events."""
        return iterate_sync(
            lambda: self.stream(prompt, session_id=session_id, output_type=output_type)
        )

    def resume_sync(
        self, session_id: str | None = None, *, dispatcher: AgentEventDispatcher | None = None
    ) -> AssistantMessage[OutputT]:
        """:meth:`resume` on the private loop thread."""
        return run_sync(lambda: self.resume(session_id, dispatcher=dispatcher))

    def messages_sync(
        self, session_id: str | None = None, *, output_type: Any = None
    ) -> list[Message]:
        """:meth:`messages` on the private loop thread."""
        return run_sync(lambda: self.messages(session_id, output_type=output_type))

    def close_sync(self) -> None:
        """:meth:`aclose` on the private loop thread."""
        run_sync(self.aclose)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_sync()

    # ------------------------------------------------------------ running

    async def stream(
        self,
        prompt: str | UserMessage | None,
        *,
        session_id: str | None = None,
        output_type: Any = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """Run ``prompt`` in the session and yield its events.

        ``prompt`` is text, or a :class:`~zett_agent.UserMessage` with
        ``parts`` (images, documents, audio: stored with the session, their large
        bytes once per session); None answers the session as it is. Close the generator (use
        ``contextlib.aclosing``) when leaving early: that cancels the run and stores
        the text received so far. ``output_type``: this run's typed result (else
        the agent's); its JSON form is stored with the answer.
        """
        sid = self._sid(session_id)
        async with self._session(sid) as rows:
            _check_no_pending(sid, rows)
            append = partial(self.store.append, sid)
            events = self.agent.stream(
                prompt,
                history=messages_of(rows),
                on_message=append,
                journal=SessionJournal(self.store, sid, rows),
                output_type=output_type,
            )
            async with aclosing(events):
                async for event in events:
                    await self._keep_approval(sid, event)
                    yield event

    @overload
    async def run(
        self,
        prompt: str | UserMessage | None,
        *,
        session_id: str | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: None = None,
    ) -> AssistantMessage[OutputT]: ...
    @overload
    async def run(
        self,
        prompt: str | UserMessage | None,
        *,
        session_id: str | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: type[_R],
    ) -> AssistantMessage[_R]: ...
    @overload
    async def run(
        self,
        prompt: str | UserMessage | None,
        *,
        session_id: str | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: object,
    ) -> AssistantMessage[Any]: ...
    async def run(
        self,
        prompt: str | UserMessage | None,
        *,
        session_id: str | None = None,
        dispatcher: AgentEventDispatcher | None = None,
        output_type: Any = None,
    ) -> AssistantMessage[Any]:
        """Run ``prompt`` in the session to the end; return the final assistant message.

        As :meth:`Agent.run <zett_agent.Agent.run>`: an abnormal stop is on
        ``message.stop``, never raised.
        """
        events = self.stream(prompt, session_id=session_id, output_type=output_type)
        return await final_message(events, dispatcher)

    async def resume_stream(
        self, session_id: str | None = None
    ) -> AsyncGenerator[AgentEvent, None]:
        """Continue the session's cut-off last answer, yielding events.

        See :func:`~zett_agent._resume.plan_resume`. A continuation joined to the
        cut-off answer (prefill) is stored as a new row that replaces the cut-off
        one in the loaded session (:meth:`SessionStore.append` ``replaces=``); the
        cut-off row itself stays. Raises :class:`~zett_agent.errors.ResumeError`
        before anything is sent when the session cannot be resumed.
        """
        sid = self._sid(session_id)
        async with self._session(sid) as rows:
            _check_no_pending(sid, rows)
            journal = SessionJournal(self.store, sid, rows)
            rows = [r for r in rows if not is_record(r.message)]

            async def replace(index: int, message: Message) -> None:
                await self.store.append(sid, message, replaces=rows[index].seq)

            events = self.agent.resume_stream(
                history=messages_of(rows),
                on_message=partial(self.store.append, sid),
                on_replace=replace,
                journal=journal,
            )
            async with aclosing(events):
                async for event in events:
                    await self._keep_approval(sid, event)
                    yield event

    async def resume(
        self, session_id: str | None = None, *, dispatcher: AgentEventDispatcher | None = None
    ) -> AssistantMessage[OutputT]:
        """:meth:`resume_stream` to the end: the final assistant message (the joined
        answer when the provider continued a prefill)."""
        return await final_message(self.resume_stream(session_id), dispatcher)

    async def approve_stream(
        self,
        session_id: str | None,
        decisions: Mapping[str, Decision],
        *,
        request_seq: int | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """Answer the session's calls waiting for approval and go on, yielding events.

        The decisions are stored (an approval decision row, a compare-and-set
        keyed by the request) before any tool runs, and before the first event is
        yielded; then approved calls run, denied ones get an error result
        carrying the reason, and the model gets its turn. A request made by a
        durable run is handed to ``handoff`` instead: the events are
        RUN_STARTED of the run a worker continues it in (``event.run_id``; the
        tools run there, not here) and, once that run ended, what it stored, as
        events (TOOL_CALL_COMPLETED per result, MODEL_STARTED/MODEL_COMPLETED per
        answer, MODEL_STOPPED, TOOL_APPROVAL_REQUESTED for a new wait), then
        RUN_COMPLETED.

        Raises, before anything runs: :class:`~zett_agent.approvals.ApprovalConflictError`
        when the calls were decided already (another process or request stored
        its decision first, even the same one); :class:`~zett_agent.errors.ResumeError`
        when nothing waits; ``ValueError`` when a pending call has no decision or
        a decision names no pending call; :class:`~zett_agent.errors.ConfigError`
        for a durable run's request without a ``handoff`` (nothing is stored
        then). ``request_seq``: the stored row of the request the decider was
        shown (a UI read the session before): when a later request waits instead,
        the decisions are refused as above and never answer it. A ``handoff``
        that fails after the decision was stored raises its own error; the
        decision stays stored (deciding again is a conflict; the continuation is
        handed on again by the next decider that tries)."""
        sid = self._sid(session_id)
        async with self._session(sid) as rows:
            row = waiting_request(sid, rows, decisions, request_seq)
            request = row.message
            assert isinstance(request, ApprovalRequest)
            handoff = self.handoff
            if request.durable_agent and handoff is None:
                raise ConfigError(
                    f"session {sid!r}: the calls wait in durable run {request.run_id!r}, "
                    "which a worker continues: decide them with `zett runs approve "
                    f"{request.run_id}`, DurableRuns.approve, or an AgentClient given "
                    "handoff=DurableRuns(...)"
                )
            try:
                taken = await take_decision(self.store, sid, row, decisions)
            except ApprovalConflictError:
                if request.durable_agent and handoff is not None:
                    # the winner may have died before handing it on: handing the
                    # stored decision on again starts nothing when it did not; a
                    # failure here must not hide the conflict from this decider
                    try:
                        await handoff.continue_decided(sid, row.seq, request)
                    except Exception:
                        logger.warning(
                            "session %s: handing the stored decision on failed",
                            sid,
                            exc_info=True,
                        )
                raise
            if request.durable_agent and handoff is not None:
                run_id = await handoff.continue_decided(sid, row.seq, request)
                yield AgentEvent(AgentEventType.RUN_STARTED, run_id)
                final = await handoff.result(run_id)
                stored = live_rows(await self.store.rows(sid))
                for event in _stored_events(
                    run_id, [r.message for r in stored if r.seq > taken.decision_seq]
                ):
                    yield event
                waiting = pending_request([r.message for r in stored])
                yield AgentEvent(
                    AgentEventType.RUN_COMPLETED,
                    run_id,
                    message=final,
                    stop=final.stop,
                    approval=waiting,
                )
                return
            events = self.agent.approve_stream(
                decisions,
                history=messages_of(rows),
                pending=request,
                on_message=partial(self.store.append, sid),
                journal=SessionJournal(self.store, sid, rows),
            )
            async with aclosing(events):
                async for event in events:
                    await self._keep_approval(sid, event)
                    yield event

    async def approve(
        self,
        session_id: str | None,
        decisions: Mapping[str, Decision],
        *,
        dispatcher: AgentEventDispatcher | None = None,
    ) -> AssistantMessage[Any]:
        """:meth:`approve_stream` to the end: the final assistant message (of
        ``AssistantMessage[Any]``: a durable run's answer comes from the store)."""
        return await final_message(self.approve_stream(session_id, decisions), dispatcher)

    async def pending_approval(self, session_id: str | None = None) -> ApprovalRequest | None:
        """The session's tool calls waiting for approval, or None."""
        rows = await self.store.rows(self._sid(session_id))
        return pending_request([row.message for row in rows])

    async def _keep_approval(self, session_id: str, event: AgentEvent) -> None:
        """Store a run's approval request once, at its first announcement (so a
        consumer that stops reading there still leaves it stored)."""
        if event.approval is None or event.type is not AgentEventType.TOOL_APPROVAL_REQUESTED:
            return
        if self._stored_approval.get(session_id) is not event.approval:
            self._stored_approval[session_id] = event.approval
            with anyio.CancelScope(shield=True):
                await self.store.append(session_id, event.approval)

    # ------------------------------------------------------------ sessions

    async def messages(
        self, session_id: str | None = None, *, output_type: Any = None
    ) -> list[Message]:
        """The session's conversation as stored. With ``output_type`` (a type as
        ``create_agent`` takes it), each stored typed result (``message.output``,
        JSON) is validated again into that type; a stored value that no longer
        fits raises pydantic's ``ValidationError``."""
        messages = await self.store.load(self._sid(session_id))
        if output_type is None:
            return messages
        typed = output_type_of(output_type)
        return [
            m.replace(output=typed.load(m.output))
            if isinstance(m, AssistantMessage) and m.output is not None
            else m
            for m in messages
        ]

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


def _stored_events(run_id: str, messages: list[object]) -> Iterator[AgentEvent]:
    """The events of what a run stored (a durable continuation a worker ran), in
    order, so a stream shows its results and answers as if each had arrived
    whole: no deltas, the same parts."""
    for message in messages:
        if isinstance(message, ToolResultMessage):
            yield AgentEvent(AgentEventType.TOOL_CALL_COMPLETED, run_id, tool_result=message)
        elif isinstance(message, AssistantMessage):
            yield AgentEvent(AgentEventType.MODEL_STARTED, run_id)
            yield AgentEvent(AgentEventType.MODEL_COMPLETED, run_id, message=message)
            if message.stop is not None and not message.stop.ok:
                stop = message.stop
                yield AgentEvent(AgentEventType.MODEL_STOPPED, run_id, stop=stop, message=message)
        elif isinstance(message, ApprovalRequest):
            for call in message.calls:
                yield AgentEvent(
                    AgentEventType.TOOL_APPROVAL_REQUESTED, run_id, tool_call=call, approval=message
                )
