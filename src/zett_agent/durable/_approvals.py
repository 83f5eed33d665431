"""Tool calls that wait for approval in durable runs: the run ends at the request,
and the decision starts a continuation run.

A durable run whose answer holds calls that wait for a person ends as a plain
run does (:mod:`zett_agent.tools._approvals`): the other calls run, the request
is stored in the session (naming the durable agent, so every decider knows a
worker must continue it), the DBOS event :data:`~zett_agent.durable._runtime.APPROVAL_EVENT`
is set to its calls, and the workflow ends ``SUCCESS`` with the answer as its
output. Nothing waits in DBOS: no worker slot is held, a worker can die or be
upgraded meanwhile, and a request can wait for days.

A decision is taken once in the session (:func:`~zett_agent.sessions._decisions.take_decision`,
the compare-and-set every decider shares) and then enqueued as the
continuation workflow :data:`DECIDED_WORKFLOW_NAME`, whose id is derived from
the request (:func:`decided_run_id`: ``<run id>.decided-1``, ``...-2`` for the
next request of that chain), so however many deciders hand it on, it runs once.
It is enqueued without an application version, so the workers of the newest
version take it (an upgrade between request and decision strands nothing). Its
inputs are the agent's name, the session id and the request's row; it reads the
session up to the decision's row, runs the approved calls through the gate on
the worker (the started marker and the call are steps, so a ``kill -9`` during
the tool is "may or may not have taken effect" unless the tool is idempotent),
answers denied calls with their reason, and goes on with the model.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator

from dbos import DBOS

from zett_agent._agent import Agent
from zett_agent._events import AgentEvent
from zett_agent._messages import Message
from zett_agent.durable._runtime import OnMessage, agent_named, drive, drive_messages
from zett_agent.durable._steps import TEMPORAL, DurableJournal, _on_temporal
from zett_agent.errors import ConfigError
from zett_agent.sessions import StoredRow, live_rows
from zett_agent.sessions._decisions import decision_row
from zett_agent.tools._approvals import ApprovalDecision, ApprovalRequest

__all__ = [
    "DECIDED_WORKFLOW_NAME",
    "decided_body",
    "decided_cut",
    "decided_run_id",
    "decided_workflow",
]

DECIDED_WORKFLOW_NAME = "zett_agent.durable.decided"
"""The DBOS workflow name of a continuation after a decision: persisted data."""

_ROUND = re.compile(r"^(?P<base>.+)\.decided-(?P<n>[0-9]+)$")


def decided_run_id(run_id: str) -> str:
    """The id of the run that continues the request made by run ``run_id``
    (a run makes at most one request): ``r1`` -> ``r1.decided-1``,
    ``r1.decided-1`` -> ``r1.decided-2``."""
    found = _ROUND.match(run_id)
    if found is None:
        return f"{run_id}.decided-1"
    return f"{found['base']}.decided-{int(found['n']) + 1}"


@DBOS.workflow(name=DECIDED_WORKFLOW_NAME)
async def decided_workflow(agent_name: str, session_id: str, request_seq: int) -> str:
    """The run that carries on the request stored as row ``request_seq`` with the
    decision stored for it: the final assistant message as stored JSON text."""
    return await decided_body(agent_name, session_id, request_seq)


def decided_cut(
    session_id: str, rows: list[StoredRow], request_seq: int
) -> tuple[ApprovalRequest, ApprovalDecision, list[StoredRow]]:
    """The request of row ``request_seq``, its stored decision and the live rows
    up to the decision; ConfigError when there is no such pair."""
    request = next((r.message for r in rows if r.seq == request_seq), None)
    decided = decision_row(rows, request_seq)
    if not isinstance(request, ApprovalRequest) or decided is None:
        raise ConfigError(
            f"session {session_id!r}: row {request_seq} is not an approval request with "
            "a stored decision"
        )
    decision = decided.message
    assert isinstance(decision, ApprovalDecision)
    return request, decision, live_rows([r for r in rows if r.seq <= decided.seq])


async def decided_body(agent_name: str, session_id: str, request_seq: int) -> str:
    """The body of the continuation on either engine."""
    durable = agent_named(agent_name)
    temporal = _on_temporal()
    if temporal:
        read_decided = TEMPORAL["read_decided"]

        history, started, request, decision = await read_decided(durable, session_id, request_seq)
    else:
        rows = await durable.store.rows(session_id)
        request, decision, cut = decided_cut(session_id, rows, request_seq)

    def start(
        agent: Agent,
        history: list[Message],
        on_message: OnMessage,
        journal: DurableJournal,
        run_id: str,
    ) -> AsyncGenerator[AgentEvent, None]:
        return agent.approve_stream(
            decision.decisions,
            history=history,
            pending=request,
            on_message=on_message,
            journal=journal,
            run_id=run_id,
        )

    if temporal:
        return await drive_messages(durable, session_id, history, started, start)
    return await drive(durable, session_id, cut, start)
