"""The steps of a durable run: the model call, the tool call with its marker, and
extension hooks, each a DBOS step whose output is a JSON checkpoint
(:mod:`zett_agent.durable._checkpoints`).

Step names are persisted data (DBOS checks them on replay): they are derived from
the durable agent's name, never from object ids, and pinned by a test:

=================================  ==========================================
``<agent>.session``                the session's last row when the run began
``<agent>.model``                  one model call (the whole answer)
``<agent>.tool.<name>.started``    marker: the tool call is about to run
``<agent>.tool.<name>``            the tool call (its result)
``<agent>.<Extension>.<hook>``     an extension hook's answer
``<agent>.guardrail.<kind>.<name>`` a guardrail's verdict (kind ``input`` or
                                   ``output``): a recovered run does not check
                                   again what a guardrail decided
=================================  ==========================================

Tool calls pass the same gate as in any run (:mod:`zett_agent.tools._gate`); only
the run's journal differs (:class:`DurableJournal`): the started marker is a step
(which also stores the session's ``tool_started`` row), and the call, with the
gate's idempotency rule and timeout, is a step whose checkpoint is the result. A
tool whose marker is in the checkpoints but whose result is not was running when
the process died (or when the run was cancelled: DBOS then drops the step's
result). On replay it runs again only if it is idempotent; otherwise it is
answered with :data:`TOOL_INTERRUPTED` (an error result) and the run goes on, as a
cancelled run answers an unfinished call.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import replace
from typing import Any, TypeVar

from dbos import DBOS, StepOptions

from zett_agent._await import maybe_await as _maybe_await
from zett_agent._exchange import ModelRequest, ModelResponse, StreamEvent
from zett_agent._guardrails import Guardrail, Tripwire, as_guardrails, check_one
from zett_agent._messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from zett_agent._recovery import ContinueWith, EndRun, RecoveryContext, RetryRequest
from zett_agent.durable._checkpoints import (
    decode_messages,
    decode_model_call,
    decode_recovery,
    decode_request,
    decode_tool_result,
    encode_messages,
    encode_model_error,
    encode_model_response,
    encode_recovery,
    encode_request,
    encode_tool_result,
)
from zett_agent.errors import ConfigError, SessionStoreError
from zett_agent.extensions._extension import Extension
from zett_agent.model._model import ModelClient
from zett_agent.sessions import SessionStore
from zett_agent.tools._definition import idempotent, is_idempotent
from zett_agent.tools._outcomes import OUTCOME_UNKNOWN, ToolStarted

__all__ = [
    "TOOL_INTERRUPTED",
    "DurableExtension",
    "DurableGuardrail",
    "DurableJournal",
    "DurableModel",
    "idempotent",
    "is_idempotent",
    "step",
]

TOOL_INTERRUPTED = OUTCOME_UNKNOWN
"""The result of a call whose process died while it ran (the core's
:data:`~zett_agent.tools.OUTCOME_UNKNOWN`)."""

_T = TypeVar("_T")


RUN_SESSION: ContextVar[tuple[SessionStore, str] | None] = ContextVar(
    "zett_durable_run_session", default=None
)
"""The store and session id of the durable run the current task drives (set by
the workflow body; on Temporal the steps resolve blob references with it)."""


TEMPORAL: dict[str, Any] = {}
"""What the Temporal engine plugs in (``durable/_temporal.py`` fills it when it is
imported: ``launch(TemporalConfig(...))`` imports it): the modules below it call
the engine through this table, so none of them imports it."""


def _on_temporal() -> bool:
    """Whether the caller is Temporal workflow code (never imports temporalio)."""
    return "in_workflow" in TEMPORAL and bool(TEMPORAL["in_workflow"]())


async def step(name: str, function: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run ``function`` as a step called ``name``: a DBOS step, or a Temporal
    local activity in a Temporal workflow (no engine retries either way: the
    model's own retries happen inside, and a tool's side effect must not repeat)."""
    if _on_temporal():
        result: _T = await TEMPORAL["temporal_step"](name, function)
        return result
    options: StepOptions = {"name": name, "retries_allowed": False}
    return await DBOS.run_step_async(options, function)


class DurableModel:
    """A :class:`~zett_agent.model.ModelClient` whose every call is one step.

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
        run_session = RUN_SESSION.get() if _on_temporal() else None

        async def call() -> str:
            deltas.clear()
            asked = request
            try:
                if run_session is not None:
                    resolve_messages = TEMPORAL["resolve_messages"]

                    store, session_id = run_session
                    messages = await resolve_messages(request.messages, store, session_id)
                    asked = replace(request, messages=messages)
                async for item in self.inner.stream(asked):
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


class DurableGuardrail:
    """A guardrail whose verdict is one step (``<prefix>.guardrail.<kind>.<name>``):
    on replay the checkpointed verdict is returned and the check does not run."""

    def __init__(self, inner: Guardrail, step_name: str) -> None:
        self.inner = inner
        self.step_name = step_name
        self.__name__ = inner.name

    async def __call__(self, value: Any) -> Tripwire | None:
        async def run() -> str:
            tripped = await check_one(self.inner, value)
            return json.dumps({"tripped": tripped.reason if tripped is not None else None})

        verdict = json.loads(await step(self.step_name, run))
        reason = verdict.get("tripped")
        return Tripwire(str(reason)) if reason is not None else None


def durable_guardrails(guardrails: Sequence[Any], prefix: str, kind: str) -> tuple[Guardrail, ...]:
    """``guardrails`` with each verdict a step of its own (the name kept)."""
    return tuple(
        Guardrail(DurableGuardrail(g, f"{prefix}.guardrail.{kind}.{g.name}"), g.name)
        for g in as_guardrails(guardrails)
    )


class DurableJournal:
    """The :class:`~zett_agent.tools.ToolJournal` of a durable run.

    :meth:`started` is the marker step ``<prefix>.<tool>.started``, which stores the
    session's ``tool_started`` row (keyed, so a replay stores it once) and returns
    whether this is the first time (False on a replay that finds the marker);
    :meth:`run` is the step ``<prefix>.<tool>`` whose checkpoint is the result.
    ``started_before``: the call ids the session recorded as started before the run.
    """

    def __init__(
        self,
        step_prefix: str,
        store: SessionStore,
        session_id: str,
        started_before: frozenset[str] = frozenset(),
    ) -> None:
        self.step_prefix = step_prefix
        self.store = store
        self.session_id = session_id
        self._before = started_before

    async def started(self, call: ToolCall, run_id: str) -> bool:
        fresh = False

        async def mark() -> str:
            nonlocal fresh
            fresh = True
            row = ToolStarted(call.id, call.name, run_id)
            await self.store.append(self.session_id, row, key=f"{run_id}:started:{call.id}")
            return call.id

        await step(f"{self.step_prefix}.{call.name}.started", mark)
        return fresh

    async def run(
        self, call: ToolCall, execute: Callable[[], Awaitable[ToolResultMessage]]
    ) -> ToolResultMessage:
        on_temporal = _on_temporal()

        async def run() -> str:
            result = await execute()
            if on_temporal:  # a long text stands in the workflow as a reference
                ref_result = TEMPORAL["ref_result"]

                result = await ref_result(result, self.store, self.session_id)
            blobs: dict[str, bytes | None] = {}
            text = encode_tool_result(result, blobs)
            try:
                for data in blobs.values():  # stored before the checkpoint that refers to them
                    if data is not None:
                        await self.store.put_blob(self.session_id, data)
            except SessionStoreError:  # a store that keeps no blobs: the bytes inline
                text = encode_tool_result(result)
            return text

        checkpoint = await step(f"{self.step_prefix}.{call.name}", run)
        result = decode_tool_result(checkpoint, self.store.blob_reader(self.session_id))
        assert result is not None
        return result

    def was_started(self, call_id: str) -> bool:
        return call_id in self._before


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

        async def run() -> str:
            changed = await _maybe_await(self.inner.before_model(request))
            return encode_request(changed if isinstance(changed, ModelRequest) else None)

        return decode_request(await self._hook("before_model", run))

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

        async def run() -> str:
            recovery = await _maybe_await(self.inner.recover(context))
            if isinstance(recovery, RetryRequest) and recovery.model is not None:
                raise ConfigError(
                    f"{type(self.inner).__name__}.recover: a durable run cannot switch "
                    "models in a recovery (the model would be checkpointed with its key)"
                )
            if recovery is not None and not isinstance(
                recovery, RetryRequest | ContinueWith | EndRun
            ):
                raise TypeError(
                    f"{type(self.inner).__name__}.recover returned {recovery!r}: "
                    "expected RetryRequest, ContinueWith, EndRun or None"
                )
            return encode_recovery(recovery)

        return decode_recovery(await self._hook("recover", run))
