"""The tasks of zett's A2A server: what each holds (its protobuf JSON,
:meth:`Task.to_json`) and :class:`Run`, which turns one run's zett events into the
task's state and the ``StreamResponse`` results of ``SendStreamingMessage``."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import anyio

from zett_agent._agent import Agent
from zett_agent._client import AgentClient
from zett_agent._events import AgentEvent, AgentEventType
from zett_agent.serve._context import ServeSettings
from zett_agent.serve._failure import failure_text
from zett_agent.serve._stream import approval_id
from zett_agent.stop import StopInfo
from zett_agent.tools._approvals import ApprovalRequest

from ._wire import (
    CANCELED,
    FAILED,
    REJECTED,
    SUBMITTED,
    WORKING,
    agent_message,
    task_state,
)

__all__ = ["Run", "ServerState", "Task"]

logger = logging.getLogger("zett_agent.a2a")


@dataclass
class Task:
    id: str
    context_id: str
    state: str = SUBMITTED
    message: dict[str, Any] | None = None
    text: str = ""
    stop: StopInfo | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    scope: anyio.CancelScope | None = None
    request: ApprovalRequest | None = None

    def to_json(self) -> dict[str, Any]:
        stop = self.stop.to_dict(describe=True) if self.stop is not None else None
        status: dict[str, Any] = {"state": self.state}
        if self.message is not None:
            status["message"] = self.message
        task: dict[str, Any] = {
            "id": self.id,
            "contextId": self.context_id,
            "status": status,
            "history": list(self.history),
            "metadata": {"zett": {"stop": stop}},
        }
        if self.text:
            partial = self.state in (FAILED, CANCELED, REJECTED)  # the answer is not whole
            task["artifacts"] = [
                {
                    "artifactId": f"{self.id}-answer",
                    "name": "answer",
                    "parts": [{"text": self.text}],
                    "metadata": {"zett": {"partial": partial}},
                }
            ]
        return task


@dataclass
class ServerState:
    agent: Agent
    client: AgentClient
    settings: ServeSettings
    name: str
    description: str
    tasks: dict[str, Task] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)


def _waiting_data(request: ApprovalRequest) -> dict[str, Any]:
    calls = [
        {"id": approval_id(request, call), "name": call.name, "arguments": call.arguments}
        for call in request.calls
    ]
    return {"zett": {"approvals": calls}}


class Run:
    """One task's run: zett events in, the task's state and stream responses out."""

    def __init__(self, state: ServerState, task: Task) -> None:
        self.state = state
        self.task = task
        self.chunk = 0

    def update(self, event: AgentEvent) -> list[dict[str, Any]]:
        """The ``StreamResponse`` results for ``event`` (the task updated)."""
        task = self.task
        if event.type is AgentEventType.TEXT_DELTA and event.text:
            first = not task.text
            task.text += event.text
            self.chunk += 1
            artifact: dict[str, Any] = {
                "artifactId": f"{task.id}-answer",
                "name": "answer",
                "parts": [{"text": event.text}],
            }
            return [
                {
                    "artifactUpdate": {
                        "taskId": task.id,
                        "contextId": task.context_id,
                        "artifact": artifact,
                        "append": not first,
                        "lastChunk": False,
                    }
                }
            ]
        if event.type is AgentEventType.MODEL_STARTED:
            task.text = ""  # the answer is the last model call's text
        if event.type is AgentEventType.RUN_COMPLETED:
            message = event.message
            if message is not None:
                task.text = message.text
            task.stop = event.stop
            task.request = event.approval
            task.state = task_state(event.stop, waiting=event.approval is not None)
            said = task.text or (event.stop.describe() if event.stop else "")
            if event.approval is not None:
                names = ", ".join(c.name for c in event.approval.calls)
                said = f"Approve {names}?"
            task.message = agent_message(
                said,
                context_id=task.context_id,
                task_id=task.id,
                message_id=uuid.uuid4().hex,
                stop=event.stop,
                data=_waiting_data(event.approval) if event.approval is not None else None,
            )
        return []

    def fail(self, error: Exception) -> None:
        task = self.task
        task.state = FAILED
        task.stop = None
        task.message = agent_message(
            failure_text(error),
            context_id=task.context_id,
            task_id=task.id,
            message_id=uuid.uuid4().hex,
        )

    def final(self) -> dict[str, Any]:
        task = self.task
        return {
            "statusUpdate": {
                "taskId": task.id,
                "contextId": task.context_id,
                "status": {
                    "state": task.state,
                    **({"message": task.message} if task.message else {}),
                },
                "metadata": {
                    "zett": {"stop": task.stop.to_dict(describe=True) if task.stop else None}
                },
            }
        }

    async def drive(
        self, events: AsyncGenerator[AgentEvent, None]
    ) -> AsyncIterator[dict[str, Any]]:
        """Run ``events`` to the end inside the task's cancel scope (CancelTask)."""
        task = self.task
        task.state = WORKING
        scope = task.scope = anyio.CancelScope()
        try:
            with scope:
                try:
                    async with aclosing(events) as run:
                        async for event in run:
                            for out in self.update(event):
                                yield out
                except Exception as error:
                    logger.warning("A2A task %s failed: %r", task.id, error)
                    self.fail(error)
            if scope.cancelled_caught:
                task.state = CANCELED
                task.message = agent_message(
                    "The task was canceled.",
                    context_id=task.context_id,
                    task_id=task.id,
                    message_id=uuid.uuid4().hex,
                )
        finally:
            task.scope = None
            self.state.running.discard(task.context_id)
