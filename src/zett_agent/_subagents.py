"""Subagents: an agent used as a tool of a parent agent.

Seed 001, "Subagents and goals": *a subagent that was refused still returns a
message, and its text can be empty or partial. The parent model is told: the
report starts with a notice, and SubAgentResult.stop carries the reason. A
background task whose child stopped early is still completed, because the child
ended, and says so in stop, in its note, and in the completion notice.*

Shapes::

    researcher = SubAgent(child_agent, name="researcher", description="Finds sources.")
    parent = await create_agent(model, tools=[researcher.tool])     # tool "researcher"(task)
    await parent.run("...")
    researcher.results[-1].stop        # StopInfo | None, as the child reported it


Background runs are in :mod:`zett_agent._background`.

Every child run starts from a fresh history (the child ``Agent.messages`` is left
alone). The parent model reads :meth:`SubAgentResult.report`: the child's text,
preceded by a one-line notice when the child did not end normally, e.g.
``[subagent "researcher" stopped: refusal (cyber): This request was declined.]``.
The parent *host* gets the same :class:`SubAgentResult` on ``SubAgent.results``,
through ``SubAgent.result_for(tool_call_id)`` and the ``on_result`` callback.

An exception in the child (``ProviderError``, ``TransportError``, anything but a
cancellation) is never raised into the parent run: the parent model gets an error
tool result (``is_error=True``) and the result records ``error`` and a ``stop``
made for it (INTERRUPTED for provider and transport errors, as in seed 001's
table, OTHER otherwise; ``raw == "error"``), so ``stop`` is set whenever the
child did not end normally. A cancelled child gets ``raw == "cancelled"``.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from zett_agent._agent import Agent
from zett_agent._await import maybe_await as _maybe_await
from zett_agent._events import AgentEventType
from zett_agent._messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from zett_agent.errors import ProviderError, TransportError
from zett_agent.stop import StopInfo, StopReason
from zett_agent.tools import Tool

__all__ = ["SubAgent", "SubAgentResult"]

log = logging.getLogger("zett_agent.subagents")

ERROR_RAW = "error"
CANCELLED_RAW = "cancelled"
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,58}")


class TaskArguments(BaseModel):
    """The one argument of a subagent tool (foreground or background)."""

    model_config = ConfigDict(extra="forbid")
    task: str = Field(description="What the subagent should do, with everything it needs to know.")


@dataclass(frozen=True)
class SubAgentResult:
    """One run of a subagent.

    Attributes:
        name: the subagent's name.
        task: the task it was given.
        text: the text of the child's final answer; empty or partial when it
            stopped early.
        messages: the child's conversation of that run (task first).
        stop: None when the child ended normally; otherwise why it did not (the
            child's own ``StopInfo``, or one made for an error or a cancellation).
        error: the exception that ended the child, if one did.
        tool_call_id: the parent's tool call this answered (None when run directly).
    """

    name: str
    task: str
    text: str
    messages: tuple[Message, ...]
    stop: StopInfo | None = None
    error: Exception | None = None
    tool_call_id: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the child ended normally."""
        return self.stop is None and self.error is None

    def notice(self) -> str | None:
        """The one-line notice for the parent model, or None after a normal end."""
        if self.stop is None:
            return None
        verb = "failed" if self.error is not None else "stopped"
        return f'[subagent "{self.name}" {verb}: {self.stop.describe()}]'

    def report(self) -> str:
        """What the parent model reads: the notice (if any), then the child's text."""
        notice = self.notice()
        if notice is None:
            return self.text or f'[subagent "{self.name}" returned no text]'
        return f"{notice}\n{self.text}" if self.text else notice


class SubAgent:
    """An agent offered to a parent as a tool taking one ``task`` argument.

    Args:
        agent: the child agent (its own model, tools, extensions and config).
        name: the tool name the parent model sees.
        description: what the parent model is told the subagent does.
        on_result: called (awaited if async) with each :class:`SubAgentResult`.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        name: str,
        description: str,
        on_result: Callable[[SubAgentResult], Any] | None = None,
    ) -> None:
        if not _TOOL_NAME.fullmatch(name):
            raise ValueError(f"subagent name {name!r} must match {_TOOL_NAME.pattern}")
        self.agent = agent
        self.name = name
        self.description = description
        self.on_result = on_result
        self.results: list[SubAgentResult] = []
        self.tool: Tool = _SubAgentTool(
            name, description, self._tool_function, TaskArguments, timeout=math.inf, subagent=self
        )
        """The foreground tool: runs the child and answers with its report. It has no
        timeout (the child's own turn and model-call limits bound it); set one with
        ``as_tool(subagent.tool, timeout=...)``."""

    async def _tool_function(self, task: str) -> str:  # the Tool's function, for completeness
        return (await self.run(task)).report()

    def result_for(self, tool_call_id: str) -> SubAgentResult | None:
        """The result that answered the parent's tool call ``tool_call_id``."""
        return next((r for r in reversed(self.results) if r.tool_call_id == tool_call_id), None)

    async def run(self, task: str, *, tool_call_id: str | None = None) -> SubAgentResult:
        """Run the child on ``task`` with a fresh history and record the result.

        Never raises for an abnormal stop or an error of the child (see the
        module docstring); cancellation propagates.
        """
        return await self._record(await self._execute(task, tool_call_id, []))

    async def _record(self, result: SubAgentResult) -> SubAgentResult:
        self.results.append(result)
        if result.stop is not None:
            log.info("subagent %s: %s", self.name, result.notice())
        if self.on_result is not None:
            await _maybe_await(self.on_result(result))
        return result

    async def _execute(
        self, task: str, tool_call_id: str | None, messages: list[Message]
    ) -> SubAgentResult:
        """Run the child; ``messages`` collects its conversation as it happens."""
        final: AssistantMessage | None = None
        try:
            stream = self.agent.stream(task, history=[], on_message=messages.append)
            async with aclosing(stream) as events:
                async for event in events:
                    if event.type is AgentEventType.RUN_COMPLETED:
                        final = event.message
        except Exception as error:
            reason = (
                StopReason.INTERRUPTED
                if isinstance(error, ProviderError | TransportError)
                else StopReason.OTHER
            )
            stop = StopInfo(
                reason,
                raw=ERROR_RAW,
                category=type(error).__name__,
                message=str(error),
                detail={"error": type(error).__name__},
            )
            text = last_text(messages)
            return SubAgentResult(self.name, task, text, tuple(messages), stop, error, tool_call_id)
        assert final is not None
        return SubAgentResult(
            self.name, task, final.text, tuple(messages), final.stop, None, tool_call_id
        )


@dataclass(frozen=True)
class _SubAgentTool(Tool):
    """A Tool whose call runs a SubAgent and can answer ``is_error=True``."""

    subagent: SubAgent | None = field(default=None, compare=False, repr=False)

    async def call(self, call: ToolCall) -> ToolResultMessage:
        task = parse_task(call)
        if isinstance(task, ToolResultMessage):
            return task
        assert self.subagent is not None
        result = await self.subagent.run(task, tool_call_id=call.id)
        return ToolResultMessage(
            call.id, call.name, result.report(), is_error=result.error is not None
        )


def parse_task(call: ToolCall) -> str | ToolResultMessage:
    """The ``task`` of a subagent tool call, or an error result for the model."""
    try:
        return TaskArguments.model_validate(call.parsed_arguments()).task
    except (ValueError, ValidationError) as error:
        return ToolResultMessage(call.id, call.name, f"invalid arguments: {error}", is_error=True)


def last_text(messages: Sequence[Message]) -> str:
    """The text of the last assistant message in ``messages`` ("" when none)."""
    return next((m.text for m in reversed(messages) if isinstance(m, AssistantMessage)), "")
