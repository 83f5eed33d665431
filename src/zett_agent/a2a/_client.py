""":class:`A2AAgentTool`: a remote A2A 1.0 agent as a subagent tool of a zett agent.

::

    remote = A2AAgentTool("http://127.0.0.1:8001", name="researcher")
    parent = await create_agent(model, tools=[remote.tool])     # tool "researcher"(task)
    await parent.run("...")
    remote.results[-1].stop        # StopInfo | None, as for a local SubAgent

The tool reads the remote's agent card (``/.well-known/agent-card.json``; its
JSONRPC interface), sends each task as ``SendMessage`` (JSON-RPC, A2A 1.0, over
httpx) and makes the remote task's final state the subagent's stop, as
:class:`~zett_agent._subagents.SubAgent` does for a local child
(:func:`~._wire.stop_for_state`):

=====================  ===========================================================
remote state           the subagent result (what the parent model reads)
=====================  ===========================================================
``completed``          normal (the text of the artifacts, else the status message);
                       a zett server's own stop, when it sent one, is the stop
``rejected``           REFUSAL, the remote's message; an error result
``failed``             INTERRUPTED with the remote's message; an error result
``canceled``           INTERRUPTED, ``detail["canceled"]`` says the remote canceled
``input-required``,    PAUSED, ``detail["waiting"]``: the call waits for the host,
``auth-required``      which answers with :meth:`A2AAgentTool.answer` (the task id
                       is in :attr:`A2AAgentTool.waiting`); the parent model is told
                       the remote waits and nothing was done for it
=====================  ===========================================================

A transport failure, a JSON-RPC error or a body that is not an A2A response is an
error result (INTERRUPTED, ``raw == "error"``), never raised into the parent run;
the parent's stop rules apply (the report starts with the subagent notice, so a
refused remote answer is never presented as a success).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from zett_agent._messages import ToolCall, ToolResultMessage
from zett_agent._subagents import SubAgentResult, TaskArguments, parse_task
from zett_agent.stop import StopInfo, StopReason
from zett_agent.tools import Tool

from ._wire import (
    AUTH_REQUIRED,
    COMPLETED,
    INPUT_REQUIRED,
    PROTOCOL_VERSION,
    message_text,
    stop_for_state,
)

__all__ = ["A2AAgentTool", "A2AError", "Waiting"]


class A2AError(Exception):
    """The remote agent could not be asked: no card, no JSONRPC interface, a
    JSON-RPC error, or a body that is not an A2A response."""


@dataclass(frozen=True)
class Waiting:
    """A remote task that waits for input (``input-required``) the host gives."""

    task_id: str
    context_id: str
    question: str
    data: Any = None
    tool_call_id: str | None = None


class A2AAgentTool:
    """A remote A2A agent offered to a parent as a tool taking one ``task``.

    Args:
        url: the remote agent's base URL (its card is at
            ``<url>/.well-known/agent-card.json``).
        name: the tool name the parent model sees (default: the card's name,
            read at the first call: pass one to offer the tool before that).
        description: what the parent model is told (default the card's).
        client: an ``httpx.AsyncClient`` to use (default: one per call).
        headers: sent with every request (a bearer token).
        timeout: seconds one call may take (the whole remote task).
    """

    def __init__(
        self,
        url: str,
        *,
        name: str = "remote_agent",
        description: str = "A remote agent (A2A).",
        client: httpx.AsyncClient | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 300.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.name = name
        self.description = description
        self._client = client
        self._headers = {"A2A-Version": PROTOCOL_VERSION, **(headers or {})}
        self._timeout = timeout
        self._endpoint: str | None = None
        self.results: list[SubAgentResult] = []
        self.waiting: dict[str, Waiting] = {}
        self.tool: Tool = _A2ATool(
            name, description, self._function, TaskArguments, timeout=math.inf, remote=self
        )

    async def _function(self, task: str) -> str:
        return (await self.run(task)).report()

    # ------------------------------------------------------------ calls

    async def run(
        self, task: str, *, tool_call_id: str | None = None, context_id: str | None = None
    ) -> SubAgentResult:
        """Send ``task`` to the remote agent and wait for its task to end (or to
        wait for input). Never raises for the remote's state or a failure."""
        message: dict[str, Any] = {
            "messageId": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "parts": [{"text": task}],
        }
        if context_id is not None:
            message["contextId"] = context_id
        return await self._ask(task, message, tool_call_id)

    async def answer(self, task_id: str, data: Any, *, text: str | None = None) -> SubAgentResult:
        """Give a waiting remote task (:attr:`waiting`) its input: a data part
        ``data`` (a zett server takes ``{"approvals": {"<id>": {"approved": bool}}}``)
        and optionally text; returns the task's next result."""
        waiting = self.waiting.pop(task_id)
        parts: list[dict[str, Any]] = [{"data": data, "mediaType": "application/json"}]
        if text:
            parts.insert(0, {"text": text})
        message = {
            "messageId": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "taskId": task_id,
            "contextId": waiting.context_id,
            "parts": parts,
        }
        return await self._ask(waiting.question, message, waiting.tool_call_id)

    async def _ask(
        self, task: str, message: dict[str, Any], tool_call_id: str | None
    ) -> SubAgentResult:
        try:
            found = await self._send(message)
        except (A2AError, httpx.HTTPError, ValueError) as error:
            stop = StopInfo(
                StopReason.INTERRUPTED,
                raw="error",
                category=type(error).__name__,
                message=str(error),
                detail={"error": type(error).__name__},
            )
            result = SubAgentResult(self.name, task, "", (), stop, error, tool_call_id)
        else:
            result = self._result(task, found, tool_call_id)
        self.results.append(result)
        return result

    def _result(self, task: str, found: dict[str, Any], tool_call_id: str | None) -> SubAgentResult:
        status = found.get("status") or {}
        state = str(status.get("state", ""))
        said = message_text(status.get("message"))
        artifacts = "".join(message_text(a) for a in found.get("artifacts") or [])
        meta = (status.get("message") or {}).get("metadata") or found.get("metadata") or {}
        remote_stop = (meta.get("zett") or {}).get("stop") if isinstance(meta, dict) else None
        stop = stop_for_state(state, said, remote_stop)
        text = artifacts or said
        if state in (INPUT_REQUIRED, AUTH_REQUIRED):
            data = next(
                (p.get("data") for p in (status.get("message") or {}).get("parts") or []
                 if isinstance(p, dict) and "data" in p),
                None,
            )  # fmt: skip
            self.waiting[found["id"]] = Waiting(
                found["id"], found.get("contextId", ""), said, data, tool_call_id
            )
            text = (
                f"The remote agent waits for input before it goes on (task {found['id']}): "
                f"{said} Nothing was done for it yet; the host decides."
            )
        elif state != COMPLETED and not said and not artifacts:
            text = ""
        return SubAgentResult(self.name, task, text, (), stop, None, tool_call_id)

    async def _send(self, message: dict[str, Any]) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": uuid.uuid4().hex,
            "method": "SendMessage",
            "params": {"message": message},
        }
        async with self._http() as client:
            endpoint = await self._jsonrpc_url(client)
            response = await client.post(endpoint, json=body, headers=self._headers)
        if response.status_code != 200:
            raise A2AError(f"the remote agent answered HTTP {response.status_code}")
        data = response.json()
        if not isinstance(data, dict):
            raise A2AError("the remote agent's answer is not a JSON-RPC response")
        if isinstance(data.get("error"), dict):
            error = data["error"]
            raise A2AError(f"the remote agent refused the request ({error.get('code')}): "
                           f"{error.get('message')}")  # fmt: skip
        result = data.get("result")
        if not isinstance(result, dict):
            raise A2AError("the remote agent's answer has no result")
        if isinstance(result.get("message"), dict):  # a direct answer, no task
            reply = result["message"]
            return {"id": "", "status": {"state": COMPLETED, "message": reply}}
        found = result.get("task")
        if not isinstance(found, dict) or not isinstance(found.get("status"), dict):
            raise A2AError("the remote agent's answer has neither a task nor a message")
        return found

    async def _jsonrpc_url(self, client: httpx.AsyncClient) -> str:
        if self._endpoint is not None:
            return self._endpoint
        response = await client.get(f"{self.url}/.well-known/agent-card.json")
        if response.status_code != 200:
            raise A2AError(f"no agent card at {self.url} (HTTP {response.status_code})")
        card = response.json()
        interfaces = card.get("supportedInterfaces") if isinstance(card, dict) else None
        for interface in interfaces or []:
            if isinstance(interface, dict) and interface.get("protocolBinding") == "JSONRPC":
                version = str(interface.get("protocolVersion") or PROTOCOL_VERSION)
                if version.split(".")[0] == "1":
                    self._endpoint = str(interface["url"])
                    return self._endpoint
        raise A2AError(f"the agent card at {self.url} has no A2A 1.x JSONRPC interface")

    @asynccontextmanager
    async def _http(self) -> AsyncIterator[httpx.AsyncClient]:
        """The caller's client (left open), else one for this call."""
        if self._client is not None:
            yield self._client
            return
        async with httpx.AsyncClient(timeout=self._timeout) as client:
            yield client


@dataclass(frozen=True)
class _A2ATool(Tool):
    """A Tool whose call asks an :class:`A2AAgentTool`'s remote agent."""

    remote: A2AAgentTool | None = field(default=None, compare=False, repr=False)

    async def call(self, call: ToolCall) -> ToolResultMessage:
        task = parse_task(call)
        if isinstance(task, ToolResultMessage):
            return task
        assert self.remote is not None
        result = await self.remote.run(task, tool_call_id=call.id)
        failed = result.error is not None or (
            result.stop is not None
            and result.stop.reason in (StopReason.REFUSAL, StopReason.INTERRUPTED)
        )
        return ToolResultMessage(call.id, call.name, result.report(), is_error=failed)
