"""DurableAgent: an ordinary :class:`~zett_agent.Agent` run as DBOS workflows."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import replace

from dbos import DBOS, SetWorkflowID, WorkflowHandleAsync

import zett_agent.durable._runtime as runtime
from zett_agent._agent import Agent
from zett_agent._messages import AssistantMessage, UserMessage, message_to_dict
from zett_agent.durable._checkpoints import decode_final
from zett_agent.durable._steps import TEMPORAL, DurableExtension, DurableModel, durable_guardrails
from zett_agent.errors import ResumeError
from zett_agent.sessions import SessionStore, SQLiteSessionStore, live_rows
from zett_agent.sessions._decisions import take_decision, waiting_request
from zett_agent.tools._approvals import (
    ApprovalConflictError,
    ApprovalRequest,
    Decision,
    pending_request,
    refuse_while_pending,
)
from zett_agent.tools._definition import idempotent, is_idempotent

__all__ = ["DurableAgent", "new_run_id"]


def new_run_id() -> str:
    """A fresh run id (a random UUID, hex)."""
    return uuid.uuid4().hex


class DurableAgent:
    """Runs ``agent`` durably, in sessions of ``store``.

    Args:
        agent: the agent, as :func:`~zett_agent.create_agent` made it. It is
            read at the start of every run (model, tools, extensions, config), so
            later changes to it are used; it is never changed.
        store: the :class:`SessionStore` (or a path for a
            :class:`SQLiteSessionStore`) the runs' messages are stored in.
        name: the name runs refer to it by (default ``agent.config.name``); step
            names derive from it, so keep it stable across releases.
        idempotent_tools: names of tools that are safe to run again when the
            process died while they ran (or mark the function with
            :func:`~zett_agent.durable.idempotent`); any other such call is
            answered with :data:`~zett_agent.durable.TOOL_INTERRUPTED`.

    Make every durable agent of a process before :func:`launch` (a run recovered
    at launch needs its agent). Tool calls of one answer run one after another
    in a durable run (each is a step, and step order must be the same on replay).
    """

    def __init__(
        self,
        agent: Agent,
        store: SessionStore | str | os.PathLike[str],
        *,
        name: str | None = None,
        idempotent_tools: Iterable[str] = (),
    ) -> None:
        self.agent = agent
        self.store: SessionStore = (
            store if isinstance(store, SessionStore) else SQLiteSessionStore(store)
        )
        self.name = name or agent.config.name
        self.idempotent_tools = frozenset(idempotent_tools)
        self._own_store = not isinstance(store, SessionStore)
        runtime.register(self)

    async def aclose(self) -> None:
        """Stop answering runs for :attr:`name` in this process; close the store if
        this object made it from a path. The agent is left open."""
        runtime.unregister(self)
        if self._own_store:
            await self.store.aclose()

    async def __aenter__(self) -> DurableAgent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def step_agent(self) -> Agent:
        """The agent a run uses: the same agent with its model call, hooks and
        guardrail verdicts as steps, tool calls one after another, and the tools named in
        ``idempotent_tools`` marked idempotent. The tools themselves are the
        agent's own (their calls become steps through the run's journal,
        :class:`~zett_agent.durable._steps.DurableJournal`), so every field a tool
        has (approval, schema, timeout...) is kept."""
        source = self.agent
        prefix = self.name
        tools = [
            idempotent(tool)
            if tool.name in self.idempotent_tools and not is_idempotent(tool)
            else tool
            for tool in source.tools.values()
        ]
        config = replace(
            source.config,
            parallel_tools=False,
            input_guardrails=durable_guardrails(source.config.input_guardrails, prefix, "input"),
            output_guardrails=durable_guardrails(source.config.output_guardrails, prefix, "output"),
        )
        copy = Agent(
            DurableModel(source.model, f"{prefix}.model"),
            config,
            tools,
            [DurableExtension(extension, prefix) for extension in source.extensions],
        )
        copy.max_pause_continuations = source.max_pause_continuations
        copy.continue_prompt = source.continue_prompt
        copy.guardrails_before_model = True  # steps in one order, live and on replay
        return copy

    async def run(
        self, prompt: str | UserMessage | None, *, session_id: str, run_id: str | None = None
    ) -> AssistantMessage:
        """Run ``prompt`` in the session as a durable run in this process and return
        its final message (as :meth:`Agent.run`: an abnormal stop is on
        ``message.stop``). A ``run_id`` that exists already is not started again:
        its result is returned (waiting for it if it is still going). A
        :class:`~zett_agent.UserMessage` prompt's large parts are put in
        the store's blobs first and the workflow's input refers to them by hash.
        Raises :class:`~zett_agent.errors.ConfigError` before :func:`launch`,
        :class:`~zett_agent.approvals.PendingApprovalError` while calls of the
        session wait for approval (nothing is started or stored)."""
        runtime.require_launched()
        if runtime.on_temporal_engine():
            start_run = TEMPORAL["start_run"]

            await self._refuse_while_pending(session_id)
            inputs = [self.name, session_id, await self._input(prompt, session_id)]
            output = await start_run(inputs, run_id or new_run_id(), wait=True)
            assert output is not None
            return final_of(output)
        if run_id is not None and await DBOS.get_workflow_status_async(run_id) is not None:
            # it exists (e.g. recovered at launch after a crash): wait for it, as it is;
            # starting it again would make DBOS warn that its queue differs
            existing: WorkflowHandleAsync[str] = await DBOS.retrieve_workflow_async(run_id)
            return final_of(await existing.get_result())
        await self._refuse_while_pending(session_id)
        given = await self._input(prompt, session_id)
        with SetWorkflowID(run_id or new_run_id()):
            handle = await DBOS.start_workflow_async(
                runtime.run_workflow, self.name, session_id, given
            )
        return final_of(await handle.get_result())

    async def submit(
        self, prompt: str | UserMessage | None, *, session_id: str, run_id: str | None = None
    ) -> str:
        """Put a run on the queue for any worker (this process too, once launched)
        and return its run id. Submitting a run id again changes nothing."""
        runtime.require_launched()
        run_id = run_id or new_run_id()
        await self._refuse_while_pending(session_id)
        given = await self._input(prompt, session_id)
        if runtime.on_temporal_engine():
            start_run = TEMPORAL["start_run"]

            await start_run([self.name, session_id, given], run_id, wait=False)
            return run_id
        with SetWorkflowID(run_id):
            await DBOS.enqueue_workflow_async(
                runtime.QUEUE_NAME, runtime.run_workflow, self.name, session_id, given
            )
        return run_id

    async def _refuse_while_pending(self, session_id: str) -> None:
        """PendingApprovalError before anything starts when calls of the session wait
        (the workflow checks again: a run queued from another process)."""
        refuse_while_pending(session_id, [r.message for r in await self.store.rows(session_id)])

    async def _input(self, prompt: str | UserMessage | None, session_id: str) -> str | None:
        """The workflow's prompt input: the text, or a message's stored JSON
        (:data:`~zett_agent.durable._runtime.MESSAGE_PROMPT` + its JSON, parts by hash)."""
        if not isinstance(prompt, UserMessage):
            return prompt
        blobs: dict[str, bytes | None] = {}
        text = runtime.MESSAGE_PROMPT + json.dumps(message_to_dict(prompt, blobs))
        for data in blobs.values():
            if data is not None:
                await self.store.put_blob(session_id, data)
        return text

    # ------------------------------------------------------------ approvals

    async def pending_approval(self, session_id: str) -> ApprovalRequest | None:
        """The calls a run of this agent in the session waits for, or None."""
        request = pending_request([r.message for r in await self.store.rows(session_id)])
        return request if request is not None and request.durable_agent == self.name else None

    async def approve(self, session_id: str, decisions: Mapping[str, Decision]) -> AssistantMessage:
        """Decide the calls a run of this agent waits for in the session, as
        :meth:`AgentClient.approve <zett_agent.AgentClient.approve>` does
        (the same compare-and-set), and carry the run on: the continuation
        (:func:`~zett_agent.durable.decided_run_id`) is queued for the
        workers (this process too, once launched), and its final message returned.

        Raises :class:`~zett_agent.approvals.ApprovalConflictError` when the calls
        were decided already (nothing is stored, nothing runs),
        :class:`~zett_agent.errors.ResumeError` when nothing waits, ``ValueError``
        for decisions that do not answer exactly the waiting calls,
        :class:`~zett_agent.errors.ConfigError` before :func:`launch`."""
        runtime.require_launched()
        rows = live_rows(await self.store.rows(session_id))
        row = waiting_request(session_id, rows, decisions)
        request = row.message
        assert isinstance(request, ApprovalRequest)
        if request.durable_agent != self.name:
            raise ResumeError(
                f"session {session_id!r}: the waiting calls are not a run of durable agent "
                f"{self.name!r}'s"
            )
        try:
            await take_decision(self.store, session_id, row, decisions)
        except ApprovalConflictError:
            await self.continue_decided(session_id, row.seq, request)  # once: by its id
            raise
        return await self.result(await self.continue_decided(session_id, row.seq, request))

    async def continue_decided(
        self, session_id: str, request_seq: int, request: ApprovalRequest
    ) -> str:
        """Queue (once: its id is the request's) the run that carries on the
        decided ``request`` (row ``request_seq``); its run id. An
        :class:`~zett_agent.tools._approvals.ApprovalHandoff`."""
        runtime.require_launched()
        from zett_agent.durable._approvals import decided_run_id, decided_workflow

        run_id = decided_run_id(request.run_id)
        if runtime.on_temporal_engine():
            from zett_agent.durable._approvals import DECIDED_WORKFLOW_NAME

            start_run = TEMPORAL["start_run"]

            inputs = [request.durable_agent, session_id, request_seq]
            await start_run(inputs, run_id, wait=False, workflow_name=DECIDED_WORKFLOW_NAME)
            return run_id
        with SetWorkflowID(run_id):
            await DBOS.enqueue_workflow_async(
                runtime.QUEUE_NAME, decided_workflow, request.durable_agent, session_id,
                request_seq,
            )  # fmt: skip
        return run_id

    async def result(self, run_id: str) -> AssistantMessage:
        """Wait for run ``run_id`` to end; its final message."""
        if runtime.on_temporal_engine():
            run_result = TEMPORAL["run_result"]

            return final_of(await run_result(run_id))
        handle: WorkflowHandleAsync[str] = await DBOS.retrieve_workflow_async(run_id)
        return final_of(await handle.get_result())


def final_of(output: str) -> AssistantMessage:
    """The final message of a run from the workflow's output (stored JSON)."""
    return decode_final(output)
