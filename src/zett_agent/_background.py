"""Background tasks: subagents the parent model starts and hears back from later.

Seed 001: *a background task whose child stopped early is still completed,
because the child ended, and says so in stop, in its note, and in the completion
notice.*

Shapes::

    async with BackgroundTasks() as tasks:                          # owns the child tasks
        parent = await create_agent(model, tools=[tasks.tool(researcher)],  # "start_researcher"
                                    extensions=[tasks.extension])
        await parent.run("...")          # the model starts a task; the tool returns its id
        done = await tasks.wait()        # BackgroundTask: status, note, result, notice
        await parent.run(None)           # the model reads the completion notice


Background completion notices reach the parent model through
``tasks.extension``: before the parent's next model call, each notice not yet
delivered is added to the parent's conversation as a user message
(``Extension.pending_messages``), so it is stored in history like any other
message and a session keeps it. ``BackgroundTasks.notices`` lists what was
delivered.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import anyio
from anyio.abc import TaskGroup

from zett_agent._await import maybe_await as _maybe_await
from zett_agent._messages import Message, ToolCall, ToolResultMessage, UserMessage
from zett_agent._subagents import (
    CANCELLED_RAW,
    SubAgent,
    SubAgentResult,
    TaskArguments,
    last_text,
    parse_task,
)
from zett_agent.extensions._extension import Extension
from zett_agent.model._budgets import CURRENT_LEDGER, RunBudget
from zett_agent.stop import StopInfo, StopReason
from zett_agent.tools import Tool

__all__ = ["BackgroundTask", "BackgroundTasks", "CompletionNotice", "TaskStatus"]

log = logging.getLogger("zett_agent.subagents")


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
    """A notice given to the parent model as ``message`` (a user message)."""

    task: BackgroundTask
    message: UserMessage


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
        ledger = CURRENT_LEDGER.get()  # the starting run's: the child's spend counts there
        self._group.start_soon(self._run, subagent, handle, tool_call_id, ledger, name=handle.id)
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
            TaskArguments,
            manager=self,
            subagent=subagent,
        )

    async def _run(
        self,
        subagent: SubAgent,
        handle: BackgroundTask,
        call_id: str | None,
        ledger: RunBudget | None = None,
    ) -> None:
        messages: list[Message] = []
        CURRENT_LEDGER.set(ledger)  # this task's own context: the run that started it
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

    def _pending(self) -> list[Message]:
        fresh: list[Message] = []
        for handle in self._finished:
            if not handle.delivered:
                handle.delivered = True
                notice = CompletionNotice(handle, UserMessage(handle.notice()))
                self.notices.append(notice)
                fresh.append(notice.message)
        return fresh


def _cancelled(
    name: str, task: str, messages: list[Message], call_id: str | None
) -> SubAgentResult:
    stop = StopInfo(
        StopReason.INTERRUPTED,
        raw=CANCELLED_RAW,
        category=CANCELLED_RAW,
        message="The background task was cancelled.",
    )
    return SubAgentResult(name, task, last_text(messages), tuple(messages), stop, None, call_id)


@dataclass(frozen=True)
class _StartTool(Tool):
    manager: BackgroundTasks | None = field(default=None, compare=False, repr=False)
    subagent: SubAgent | None = field(default=None, compare=False, repr=False)

    async def call(self, call: ToolCall) -> ToolResultMessage:
        task = parse_task(call)
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

    def pending_messages(self) -> list[Message]:
        return self.tasks._pending()
