"""Subagents: an agent used as a tool of a parent agent, in the foreground or the background.

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

    async with BackgroundTasks() as tasks:                          # owns the child tasks
        parent = await create_agent(model, tools=[tasks.tool(researcher)],  # "start_researcher"
                                    extensions=[tasks.extension])
        await parent.run("...")          # the model starts a task; the tool returns its id
        done = await tasks.wait()        # BackgroundTask: status, note, result, notice
        await parent.run(None)           # the model reads the completion notice

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

Background completion notices reach the parent model through
``tasks.extension`` (``before_model``): a notice not yet delivered is appended
to the next outgoing request as a user message. Extensions may only change the
request, never the stored history, so a delivered notice is *pinned*: every
later request the extension shapes carries it again right after the message it
first followed (matched by equality, so this also holds for a reloaded
history). The durable record is ``BackgroundTasks.notices`` (each with the
message it follows); a host that stores sessions stores those with them.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from zett_agent.agent import Agent
from zett_agent.errors import ProviderError, TransportError
from zett_agent.events import AgentEventType, _maybe_await
from zett_agent.extensions import Extension
from zett_agent.messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from zett_agent.protocols.base import ModelRequest
from zett_agent.stop import StopInfo, StopReason
from zett_agent.tools import Tool

__all__ = [
    "BackgroundTask",
    "BackgroundTasks",
    "CompletionNotice",
    "SubAgent",
    "SubAgentResult",
    "TaskStatus",
]

log = logging.getLogger("zett_agent.subagents")

ERROR_RAW = "error"
CANCELLED_RAW = "cancelled"
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,58}")


class _TaskArguments(BaseModel):
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
            name, description, self._tool_function, _TaskArguments, subagent=self
        )
        """The foreground tool: runs the child and answers with its report."""

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
            text = _last_text(messages)
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
        task = _parse_task(call)
        if isinstance(task, ToolResultMessage):
            return task
        assert self.subagent is not None
        result = await self.subagent.run(task, tool_call_id=call.id)
        return ToolResultMessage(
            call.id, call.name, result.report(), is_error=result.error is not None
        )


def _parse_task(call: ToolCall) -> str | ToolResultMessage:
    try:
        return _TaskArguments.model_validate(call.parsed_arguments()).task
    except (ValueError, ValidationError) as error:
        return ToolResultMessage(call.id, call.name, f"invalid arguments: {error}", is_error=True)


def _last_text(messages: Sequence[Message]) -> str:
    return next((m.text for m in reversed(messages) if isinstance(m, AssistantMessage)), "")


# ---------------------------------------------------------------- background tasks


class TaskStatus(StrEnum):
    """Where a background task is. A child that stopped early is COMPLETED (it ended)."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass
class BackgroundTask:
    """One subagent run in the background. ``result`` is set once it is no longer RUNNING."""

    id: str
    name: str
    task: str
    status: TaskStatus = TaskStatus.RUNNING
    result: SubAgentResult | None = None
    delivered: bool = False
    """Whether the completion notice was given to the parent model."""
    _done: anyio.Event = field(default_factory=anyio.Event, repr=False)
    _scope: anyio.CancelScope = field(default_factory=anyio.CancelScope, repr=False)

    @property
    def stop(self) -> StopInfo | None:
        """Why the child did not end normally (None while running or after a normal end)."""
        return self.result.stop if self.result is not None else None

    @property
    def note(self) -> str:
        """One line: the status, and why the child stopped when it stopped early."""
        if self.status is TaskStatus.COMPLETED and self.stop is not None:
            return f"completed, but the subagent stopped early: {self.stop.describe()}"
        if self.status is TaskStatus.FAILED and self.stop is not None:
            return f"failed: {self.stop.describe()}"
        return self.status.value

    def notice(self) -> str:
        """The completion notice the parent model reads: a header line, then the text."""
        header = f'[background task {self.id} ("{self.name}") {self.note}]'
        text = self.result.text if self.result is not None else ""
        return f"{header}\n{text}" if text else header

    def cancel(self) -> None:
        """Cancel the child; the task ends CANCELLED (a no-op once it has ended)."""
        self._scope.cancel()

    async def wait(self) -> BackgroundTask:
        """Wait until the task is no longer RUNNING."""
        await self._done.wait()
        return self


@dataclass(frozen=True)
class CompletionNotice:
    """A notice given to the parent model: ``message`` was sent right after ``after``
    (the last message of the request it was first added to; None: at the start)."""

    task: BackgroundTask
    message: UserMessage
    after: Message | None


class BackgroundTasks:
    """Runs subagents in the background inside one anyio task group.

    Enter it as an async context manager; on exit every task still running is
    cancelled (and ends CANCELLED), so nothing outlives the ``async with``.

    Args:
        on_complete: called (awaited if async) with each task that ends, whatever
            its status. On exit-time cancellation it gets ``cancel_grace`` seconds.
        cancel_grace: seconds a callback may take while the manager is closing.
    """

    def __init__(
        self,
        *,
        on_complete: Callable[[BackgroundTask], Any] | None = None,
        cancel_grace: float = 1.0,
    ) -> None:
        self.on_complete = on_complete
        self.cancel_grace = cancel_grace
        self.tasks: dict[str, BackgroundTask] = {}
        self.notices: list[CompletionNotice] = []
        self.extension: Extension = _NoticeExtension(self)
        """Add to the parent's extensions to deliver completion notices to its model."""
        self._group: TaskGroup | None = None
        self._ids = itertools.count(1)
        self._finished: list[BackgroundTask] = []
        self._waited = 0
        self._changed: anyio.Event | None = None

    async def __aenter__(self) -> BackgroundTasks:
        self._changed = anyio.Event()
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        group, self._group = self._group, None
        assert group is not None
        group.cancel_scope.cancel()
        return await group.__aexit__(*exc)

    @property
    def running(self) -> list[BackgroundTask]:
        return [t for t in self.tasks.values() if t.status is TaskStatus.RUNNING]

    def start(
        self, subagent: SubAgent, task: str, *, tool_call_id: str | None = None
    ) -> BackgroundTask:
        """Start ``subagent`` on ``task`` and return at once.

        Raises RuntimeError outside ``async with``.
        """
        if self._group is None:
            raise RuntimeError("BackgroundTasks is not running: use `async with BackgroundTasks()`")
        handle = BackgroundTask(f"bg-{next(self._ids)}", subagent.name, task)
        self.tasks[handle.id] = handle
        self._group.start_soon(self._run, subagent, handle, tool_call_id, name=handle.id)
        return handle

    def cancel(self, task_id: str) -> None:
        """Cancel task ``task_id`` (KeyError when unknown)."""
        self.tasks[task_id].cancel()

    async def wait(self, task_id: str | None = None) -> BackgroundTask:
        """Wait for task ``task_id``, or for the next ended task not yet returned by ``wait()``.

        Raises LookupError when no task is running and every ended one was returned.
        """
        if task_id is not None:
            return await self.tasks[task_id].wait()
        while self._waited >= len(self._finished):
            if not self.running:
                raise LookupError("no background task is running or waiting to be collected")
            assert self._changed is not None
            await self._changed.wait()
        self._waited += 1
        return self._finished[self._waited - 1]

    async def wait_all(self) -> list[BackgroundTask]:
        """Wait until no task is running; returns every task, in start order."""
        for handle in list(self.tasks.values()):
            await handle.wait()
        return list(self.tasks.values())

    def tool(self, subagent: SubAgent) -> Tool:
        """The tool ``start_<name>(task)``: starts ``subagent`` here, answers with the task id."""

        async def start(task: str) -> str:  # pragma: no cover - _StartTool.call is used
            return task

        return _StartTool(
            f"start_{subagent.name}",
            f"Start in the background: {subagent.description} Returns a task id at once; "
            "the result is sent to you as a message when the task ends.",
            start,
            _TaskArguments,
            manager=self,
            subagent=subagent,
        )

    async def _run(self, subagent: SubAgent, handle: BackgroundTask, call_id: str | None) -> None:
        messages: list[Message] = []
        try:
            with handle._scope:
                result = await subagent._execute(handle.task, call_id, messages)
            if handle._scope.cancelled_caught:
                result = _cancelled(subagent.name, handle.task, messages, call_id)
                handle.status = TaskStatus.CANCELLED
            else:
                failed = result.error is not None
                handle.status = TaskStatus.FAILED if failed else TaskStatus.COMPLETED
        except anyio.get_cancelled_exc_class():
            handle.result = _cancelled(subagent.name, handle.task, messages, call_id)
            handle.status = TaskStatus.CANCELLED
            with anyio.move_on_after(self.cancel_grace, shield=True):
                await self._finish(subagent, handle, handle.result)
            raise
        await self._finish(subagent, handle, result)

    async def _finish(
        self, subagent: SubAgent, handle: BackgroundTask, result: SubAgentResult
    ) -> None:
        handle.result = result
        self._finished.append(handle)
        handle._done.set()
        if self._changed is not None:
            self._changed.set()
        self._changed = anyio.Event()
        log.info("background task %s (%s): %s", handle.id, handle.name, handle.note)
        await subagent._record(result)
        if self.on_complete is not None:
            await _maybe_await(self.on_complete(handle))

    def _deliver(self, request: ModelRequest) -> ModelRequest | None:
        for handle in self._finished:
            if not handle.delivered:
                handle.delivered = True
                after = request.messages[-1] if request.messages else None
                self.notices.append(CompletionNotice(handle, UserMessage(handle.notice()), after))
        if not self.notices:
            return None
        messages = list(request.messages)
        placed: list[CompletionNotice] = []
        for notice in self.notices:
            if notice.after is None:
                index = 0
            else:
                found = _find(messages, notice.after)
                if found is None:
                    continue  # a different conversation: this notice does not belong here
                index = found + 1
            while index < len(messages) and any(messages[index] is p.message for p in placed):
                index += 1  # after notices already placed at the same point
            messages.insert(index, notice.message)
            placed.append(notice)
        return replace(request, messages=messages)


def _find(messages: Sequence[Message], target: Message) -> int | None:
    """Index of ``target`` in ``messages``: the same object, else the first equal one."""
    same = next((i for i, m in enumerate(messages) if m is target), None)
    if same is not None:
        return same
    return next((i for i, m in enumerate(messages) if m == target), None)


def _cancelled(
    name: str, task: str, messages: list[Message], call_id: str | None
) -> SubAgentResult:
    stop = StopInfo(
        StopReason.INTERRUPTED,
        raw=CANCELLED_RAW,
        category=CANCELLED_RAW,
        message="The background task was cancelled.",
    )
    return SubAgentResult(name, task, _last_text(messages), tuple(messages), stop, None, call_id)


@dataclass(frozen=True)
class _StartTool(Tool):
    manager: BackgroundTasks | None = field(default=None, compare=False, repr=False)
    subagent: SubAgent | None = field(default=None, compare=False, repr=False)

    async def call(self, call: ToolCall) -> ToolResultMessage:
        task = _parse_task(call)
        if isinstance(task, ToolResultMessage):
            return task
        tasks, subagent = self.manager, self.subagent
        assert tasks is not None
        assert subagent is not None
        try:
            handle = tasks.start(subagent, task, tool_call_id=call.id)
        except RuntimeError as error:
            return ToolResultMessage(call.id, call.name, str(error), is_error=True)
        text = (
            f'Started background task {handle.id} ("{subagent.name}"). '
            "Its result will be sent to you as a message when it ends."
        )
        return ToolResultMessage(call.id, call.name, text)


class _NoticeExtension(Extension):
    """Delivers completion notices to the parent model (see the module docstring)."""

    def __init__(self, tasks: BackgroundTasks) -> None:
        self.tasks = tasks

    def before_model(self, request: ModelRequest) -> ModelRequest | None:
        return self.tasks._deliver(request)
