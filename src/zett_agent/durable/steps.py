"""The steps of a durable run: the model call, the tool call with its marker, and
extension hooks, each a DBOS step whose output is a JSON checkpoint
(:mod:`zett_agent.durable.checkpoints`).

Step names are persisted data (DBOS checks them on replay): they are derived from
the durable agent's name, never from object ids, and pinned by a test:

=================================  ==========================================
``<agent>.session``                the session's last row when the run began
``<agent>.model``                  one model call (the whole answer)
``<agent>.tool.<name>.started``    marker: the tool call is about to run
``<agent>.tool.<name>``            the tool call (its result)
``<agent>.<Extension>.<hook>``     an extension hook's answer
=================================  ==========================================

A tool whose marker is in the checkpoints but whose result is not was running
when the process died (or when the run was cancelled: DBOS then drops the step's
result). On replay it runs again only if it was declared
idempotent; otherwise it is answered with :data:`TOOL_INTERRUPTED` (an error
result) and the run goes on, as a cancelled run answers an unfinished call.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from dbos import DBOS, StepOptions

from zett_agent.durable.checkpoints import (
    decode_messages,
    decode_model_call,
    decode_tool_result,
    encode_messages,
    encode_model_error,
    encode_model_response,
    encode_tool_result,
)
from zett_agent.errors import ConfigError
from zett_agent.events import _maybe_await
from zett_agent.extensions import Extension, RecoveryContext, RetryRequest
from zett_agent.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from zett_agent.models import ModelClient
from zett_agent.protocols.base import ModelRequest, ModelResponse, StreamEvent
from zett_agent.telemetry import Telemetry
from zett_agent.tools import Tool, ToolRunner

__all__ = [
    "TOOL_INTERRUPTED",
    "DurableExtension",
    "DurableModel",
    "StepTool",
    "idempotent",
    "is_idempotent",
    "step",
]

TOOL_INTERRUPTED = (
    "This tool call was running when its run stopped (the process died or the run "
    "was cancelled); it may or may not have taken effect."
)

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])
_IDEMPOTENT = "__zett_idempotent__"


def idempotent(function: _F) -> _F:
    """Declare a tool function safe to run again when the process died while it
    ran (a durable run then runs it again instead of answering
    :data:`TOOL_INTERRUPTED`). Returns the function itself, marked."""
    setattr(function, _IDEMPOTENT, True)
    return function


def is_idempotent(tool: Tool) -> bool:
    """Whether ``tool``'s function was marked with :func:`idempotent`."""
    return getattr(tool.function, _IDEMPOTENT, False) is True


async def step(name: str, function: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run ``function`` as a DBOS step called ``name`` (no engine retries: the
    model's own retries happen inside, and a tool's side effect must not repeat)."""
    options: StepOptions = {"name": name, "retries_allowed": False}
    return await DBOS.run_step_async(options, function)


class DurableModel:
    """A :class:`~zett_agent.models.ModelClient` whose every call is one step.

    The step streams the wrapped model to the end and checkpoints the whole
    answer; the deltas are yielded after it, and not at all on replay. A call
    that failed with no output checkpoints the error, which is raised again on
    replay (the same class and fields)."""

    def __init__(self, inner: ModelClient, step_name: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.step_name = step_name

    @property
    def provider(self) -> str:
        return self.inner.provider

    def without_tool_calls(self, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        return self.inner.without_tool_calls(record)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def stream(
        self, request: ModelRequest
    ) -> AsyncGenerator[StreamEvent | ModelResponse, None]:
        deltas: list[StreamEvent] = []

        async def call() -> str:
            deltas.clear()
            try:
                async for item in self.inner.stream(request):
                    if isinstance(item, ModelResponse):
                        return encode_model_response(item)
                    deltas.append(item)
            except Exception as error:  # recorded; raised again below, live or replayed
                return encode_model_error(error)
            raise RuntimeError("a model stream must end with a ModelResponse")

        outcome = decode_model_call(await step(self.step_name, call))
        for delta in deltas:
            yield delta
        if isinstance(outcome, Exception):
            raise outcome
        yield outcome


@dataclass(frozen=True)
class StepTool(Tool):
    """A :class:`~zett_agent.tools.Tool` whose call is a marker step, then a step.

    The tool's timeout is applied inside the step (by a one-call
    :class:`~zett_agent.tools.ToolRunner`, so the timeout's error result is the
    core's own), and so is checkpointed: the run's runner sees no limit on the
    step itself (``timeout`` is ``math.inf``), which would otherwise cut the step
    off and store a result no checkpoint holds.
    """

    step_prefix: str = ""
    idempotent: bool = False
    inner: Tool | None = None
    inner_timeout: float | None = None

    @classmethod
    def wrap(
        cls, tool: Tool, step_prefix: str, *, idempotent: bool, default_timeout: float | None
    ) -> StepTool:
        """``tool`` as steps; ``default_timeout`` is the run's (``tool_timeout``)."""
        return cls(
            tool.name,
            tool.description,
            tool.function,
            tool.arguments,
            math.inf,
            step_prefix=step_prefix,
            idempotent=idempotent,
            inner=tool,
            inner_timeout=tool.timeout if tool.timeout is not None else default_timeout,
        )

    async def call(self, call: ToolCall) -> ToolResultMessage:
        fresh = False

        async def mark() -> str:
            nonlocal fresh
            fresh = True
            return call.id

        await step(f"{self.step_prefix}.{self.name}.started", mark)

        async def run() -> str:
            if not fresh and not self.idempotent:  # it was running when the process died
                return encode_tool_result(
                    ToolResultMessage(call.id, call.name, TOOL_INTERRUPTED, is_error=True)
                )
            return encode_tool_result(await self._call_inner(call))

        result = decode_tool_result(await step(f"{self.step_prefix}.{self.name}", run))
        assert result is not None
        return result

    async def _call_inner(self, call: ToolCall) -> ToolResultMessage:
        """The wrapped tool's call under its timeout, as the core runs one call
        (no hooks: the run's runner calls them around this step)."""
        assert self.inner is not None
        runner = ToolRunner(
            {self.name: self.inner},
            (),
            Telemetry(enabled=False),
            parallel=False,
            timeout=self.inner_timeout,
            max_calls=None,
            max_argument_chars=None,
            max_result_chars=None,
        )
        results: list[ToolResultMessage | None] = [None]
        await runner.run(AssistantMessage(tool_calls=(call,)), None, results)
        assert results[0] is not None
        return results[0]


class DurableExtension(Extension):
    """An extension whose hooks each run as a step, so a replay reads their
    answers instead of asking again (a stop hook, pending messages, a recovery).
    A hook the extension does not override does nothing and takes no step.

    A recovery that names a model (``RetryRequest(model=...)``) is refused with
    :class:`~zett_agent.errors.ConfigError`: a model object holds its key and
    cannot be a checkpoint.
    """

    def __init__(self, inner: Extension, step_prefix: str) -> None:
        self.inner = inner
        self.prefix = f"{step_prefix}.{type(inner).__name__}"

    def _skips(self, hook: str) -> bool:
        """Whether ``hook`` is Extension's own no-op (nothing to run or checkpoint)."""
        return getattr(type(self.inner), hook) is getattr(Extension, hook)

    async def _hook(self, hook: str, function: Callable[[], Coroutine[Any, Any, str]]) -> str:
        return await step(f"{self.prefix}.{hook}", function)

    async def before_model(self, request: ModelRequest) -> Any:
        if self._skips("before_model"):
            return None

        async def run() -> ModelRequest | None:
            changed = await _maybe_await(self.inner.before_model(request))
            return changed if isinstance(changed, ModelRequest) else None

        return await step(f"{self.prefix}.before_model", run)

    async def after_model(self, response: ModelResponse) -> Any:
        if self._skips("after_model"):
            return None

        async def run() -> str:
            await _maybe_await(self.inner.after_model(response))
            return ""

        await self._hook("after_model", run)
        return None

    async def before_tool(self, call: ToolCall) -> Any:
        if self._skips("before_tool"):
            return None

        async def run() -> str:
            early = await _maybe_await(self.inner.before_tool(call))
            return encode_tool_result(early if isinstance(early, ToolResultMessage) else None)

        return decode_tool_result(await self._hook("before_tool", run))

    async def after_tool(self, call: ToolCall, result: ToolResultMessage) -> Any:
        if self._skips("after_tool"):
            return None

        async def run() -> str:
            changed = await _maybe_await(self.inner.after_tool(call, result))
            return encode_tool_result(changed if isinstance(changed, ToolResultMessage) else None)

        return decode_tool_result(await self._hook("after_tool", run))

    async def pending_messages(self) -> Any:
        if self._skips("pending_messages"):
            return []

        async def run() -> str:
            return encode_messages(list(await _maybe_await(self.inner.pending_messages()) or ()))

        return decode_messages(await self._hook("pending_messages", run))

    async def on_complete(self, message: AssistantMessage, messages: Sequence[Message]) -> Any:
        if self._skips("on_complete"):
            return None

        async def run() -> str | None:
            reason = await _maybe_await(self.inner.on_complete(message, messages))
            return reason if isinstance(reason, str) else None

        return await step(f"{self.prefix}.on_complete", run)

    async def recover(self, context: RecoveryContext) -> Any:
        if self._skips("recover"):
            return None

        async def run() -> Any:
            recovery = await _maybe_await(self.inner.recover(context))
            if isinstance(recovery, RetryRequest) and recovery.model is not None:
                raise ConfigError(
                    f"{type(self.inner).__name__}.recover: a durable run cannot switch "
                    "models in a recovery (the model would be checkpointed with its key)"
                )
            return recovery

        return await step(f"{self.prefix}.recover", run)
