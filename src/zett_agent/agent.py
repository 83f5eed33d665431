"""The agent loop: send the conversation, act on why the model stopped, repeat.

After each model call the loop takes one of a small closed set of decisions
(:class:`Step`), read from the normalized :class:`~zett_agent.stop.StopReason`
and from the content (tool calls run when the content holds them, whatever the
label says, except under REFUSAL and INTERRUPTED):

=============  ==========================================================
REFUSAL,       withhold tool calls (never started; names in
INTERRUPTED    ``stop.detail["withheld_tool_calls"]``), end, report
PAUSED         continue, up to ``Agent.max_pause_continuations``; then report
CONTEXT_FULL   end, report
MAX_OUTPUT     report; tool calls with cut-off arguments get an error result
               and the model gets its turn again; no tool calls: end
OTHER          report, and carry on (run tools, or complete)
END_TURN,      run tools if any, else complete (a stop hook may veto)
TOOL_USE
=============  ==========================================================

Cancelled (a cancel scope, task cancellation, or the consumer closing
``agent.stream``) while a model call streams: the output received so far is
stored as an answer with stop INTERRUPTED, ``detail["cancelled"] = True`` (its
tool calls withheld), in a shielded write; then the cancellation propagates.

:meth:`Agent.resume` continues a conversation whose last answer stopped as
INTERRUPTED or MAX_OUTPUT (see :func:`plan_resume`); REFUSAL and CONTEXT_FULL
cannot be resumed (:class:`~zett_agent.errors.ResumeError`).

Recovery: after each model call (and after a call that failed with no output)
extensions are asked ``recover(context)``; the first answer is one of a closed
set (RETRY another request, CONTINUE with added messages, END with a stop) that
:meth:`_Run._apply` performs and records on the stored answer's stop (see
:mod:`zett_agent.recovery`). Without such an extension nothing changes: the core
never works around a stop by itself. Answers a retry superseded stay in history
and are never sent again.

Guards: ``max_turns`` model calls per run (the run then completes with
``stop.raw == "max_turns"``; retries count), the model's idle timeout, stop hooks
(extensions' ``on_complete``). One structured log record per model call goes to
the ``zett_agent.steps`` logger, and OpenTelemetry spans are made when the
``otel`` extra is installed (both in :mod:`zett_agent.telemetry`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

import anyio

from zett_agent.events import AgentEvent, AgentEventDispatcher, AgentEventType, _maybe_await
from zett_agent.extensions import Extension
from zett_agent.history import repair_orphaned_tool_calls
from zett_agent.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from zett_agent.models import ModelClient, resolve_model
from zett_agent.protocols.base import (
    ModelRequest,
    ModelResponse,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)
from zett_agent.recovery import (
    Action,
    ContinueWith,
    EndRun,
    Recovery,
    RecoveryContext,
    RecoveryRecord,
    RetryRequest,
    failed_call,
    is_superseded,
    join_pieces,
    record,
    recovery_log,
)
from zett_agent.resume import (
    CONTINUE_PROMPT,
    PartialAnswer,
    ResumePlan,
    is_cancellation,
    join_answers,
    plan_resume,
    prefill_rejected,
)
from zett_agent.stop import StopInfo, StopReason
from zett_agent.telemetry import Telemetry, log_recovery, log_step
from zett_agent.tools import Tool, as_tool

__all__ = ["Agent", "AgentRunConfig", "create_agent"]

_E = AgentEventType


@dataclass
class AgentRunConfig:
    """How an agent runs.

    Attributes:
        name: a name for logs and spans.
        instructions: the system prompt, if any.
        max_turns: most model calls in one run; then the run completes with
            ``stop.raw == "max_turns"`` (reason OTHER) instead of going on.
        max_tokens: output limit per model call, in tokens (None: provider default).
        temperature: sampling temperature (None: provider default).
        tool_choice: ``"auto"``, ``"none"``, ``"required"`` or a tool name.
        reset_tool_choice: once tools have run in a run, send later requests
            without ``tool_choice`` (the provider's auto), so a forced choice
            cannot loop until ``max_turns``.
        parallel_tools: run the tool calls of one step concurrently (results keep
            the model's order).
        model_options: provider-specific fields merged into the request body.
        telemetry: make OpenTelemetry spans (when the ``otel`` extra is installed).
        tracer_provider: the OpenTelemetry ``TracerProvider`` for them (None: the
            global one).
    """

    name: str = "agent"
    instructions: str | None = None
    max_turns: int = 20
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: str | None = None
    reset_tool_choice: bool = True
    parallel_tools: bool = True
    model_options: dict[str, Any] = field(default_factory=dict)
    telemetry: bool = True
    tracer_provider: Any = None


class Step(Enum):
    """What the loop does after one model call (a closed set)."""

    RUN_TOOLS = "run_tools"
    CONTINUE = "continue"  # PAUSED: send the conversation again
    COMPLETE = "complete"  # normal end, stop hooks may veto
    END = "end"  # abnormal end: refusal, interruption, context full, ...
    RETRY = "retry"  # a recovery: send its request next


MAX_TURNS_RAW = "max_turns"
_CUT_OFF = "The arguments of this tool call were cut off at the output limit; it was not run."


class Agent:
    """Runs a model with tools. Make one with :func:`create_agent`.

    ``messages`` is the conversation so far: each :meth:`run` / :meth:`stream`
    continues it unless given ``history=``.
    """

    max_pause_continuations: int = 5
    """PAUSED steps continued automatically per run before the pause is reported."""

    continue_prompt: str = CONTINUE_PROMPT
    """The user turn :meth:`resume` sends when the protocol cannot take a prefill."""

    def __init__(
        self,
        model: ModelClient,
        config: AgentRunConfig | None = None,
        tools: Sequence[Callable[..., Any] | Tool] = (),
        extensions: Sequence[Extension] = (),
    ) -> None:
        self.model = model
        self.config = config or AgentRunConfig()
        self.tools = {tool.name: tool for tool in map(as_tool, tools)}
        self.extensions = list(extensions)
        self.messages: list[Message] = []

    async def aclose(self) -> None:
        """Close the model (its HTTP client, and a local server it started)."""
        await self.model.aclose()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def run(
        self,
        prompt: str | None,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
    ) -> AssistantMessage:
        """Run to the end and return the final assistant message.

        Never raises for a refusal or another abnormal stop: check
        ``message.stop`` or call ``message.raise_for_stop()``. Raises
        :class:`~zett_agent.errors.ProviderError` /
        :class:`~zett_agent.errors.TransportError` when a call fails with no
        output after its retries.
        """
        final: AssistantMessage | None = None
        async with aclosing(self.stream(prompt, history=history)) as events:
            async for event in events:
                if dispatcher is not None:
                    await dispatcher.dispatch(event)
                if event.type is _E.RUN_COMPLETED:
                    final = event.message
        assert final is not None
        return final

    async def stream(
        self,
        prompt: str | None,
        *,
        history: Sequence[Message] | None = None,
        on_message: Callable[[Message], Any] | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """Run and yield :class:`~zett_agent.events.AgentEvent` values as they happen.

        ``prompt`` None runs on the history as it is (to continue it).
        ``on_message`` is called (and awaited if async) with each message as soon
        as it is complete, for durable storage.
        """
        run = _Run(self, list(self.messages if history is None else history), on_message)
        async with aclosing(self._drive(run, prompt, keep=history is None)) as events:
            async for event in events:
                yield event

    async def resume(
        self,
        *,
        history: Sequence[Message] | None = None,
        dispatcher: AgentEventDispatcher | None = None,
    ) -> AssistantMessage:
        """Continue the conversation (``messages``, or ``history``) whose last answer
        was cut off, and return the final assistant message.

        How it continues is in :func:`plan_resume`. Raises
        :class:`~zett_agent.errors.ResumeError` when there is nothing to resume or
        the last answer was a REFUSAL or CONTEXT_FULL; otherwise as :meth:`run`.
        """
        final: AssistantMessage | None = None
        async with aclosing(self.resume_stream(history=history)) as events:
            async for event in events:
                if dispatcher is not None:
                    await dispatcher.dispatch(event)
                if event.type is _E.RUN_COMPLETED:
                    final = event.message
        assert final is not None
        return final

    async def resume_stream(
        self,
        *,
        history: Sequence[Message] | None = None,
        on_message: Callable[[Message], Any] | None = None,
        on_replace: Callable[[int, Message], Any] | None = None,
    ) -> AsyncGenerator[AgentEvent, None]:
        """:meth:`resume`, yielding events as :meth:`stream` does.

        ``on_message`` is called with each new message; ``on_replace(index,
        message)`` (awaited if async) when the first answer takes the place of the
        cut-off answer at ``index`` of the conversation (a joined prefill
        continuation, or a retry of an answer with no text). ResumeError is raised
        when iteration starts, before anything is sent.
        """
        messages = list(self.messages if history is None else history)
        plan = plan_resume(messages, self.model, self.continue_prompt)
        run = _Run(self, messages, on_message, on_replace=on_replace, plan=plan)
        async with aclosing(self._drive(run, plan.prompt, keep=history is None)) as events:
            async for event in events:
                yield event

    async def _drive(
        self, run: _Run, prompt: str | None, *, keep: bool
    ) -> AsyncGenerator[AgentEvent, None]:
        # aclosing: closing the outer generator closes run.events() at once, so a
        # cancelled model call is stored before the close returns.
        try:
            async with aclosing(run.events(prompt)) as events:
                async for event in events:
                    yield event
        finally:
            if keep:
                self.messages = run.messages


class _Run:
    """State of one run; :meth:`events` is the loop."""

    def __init__(
        self,
        agent: Agent,
        messages: list[Message],
        on_message: Callable[[Message], Any] | None,
        *,
        on_replace: Callable[[int, Message], Any] | None = None,
        plan: ResumePlan | None = None,
    ) -> None:
        self.agent = agent
        self.config = agent.config
        self.model: ModelClient = agent.model  # a RetryRequest may switch it for the run
        self.messages = messages
        self.on_message = on_message
        self.on_replace = on_replace
        self.run_id = uuid.uuid4().hex[:12]
        self.first_index = len(messages)  # where this run's messages start
        self.step = 0
        self.pauses = 0
        # resume: the first answer takes the place of messages[replacing], joined
        # to ``prefill`` (sent as the last message of the first request) if set
        self.replacing = plan.replaces if plan else None
        self.prefill = plan.prefill if plan else None
        # recovery state
        self.recoveries: list[RecoveryRecord] = []
        self.retry: RetryRequest | None = None  # the request to send next
        self.follow: list[Message] = []  # ContinueWith messages, added after the answer
        self.next_max_tokens: int | None = None
        self.pieces: list[AssistantMessage] = []  # answers joined into the final message
        # telemetry
        self.telemetry = Telemetry(self.config.tracer_provider, enabled=self.config.telemetry)
        self.span: Any = None
        self.usage = Usage()

    def event(self, type: AgentEventType, **fields: Any) -> AgentEvent:  # noqa: A002
        return AgentEvent(type, self.run_id, self.step, **fields)

    async def add(self, message: Message) -> None:
        self.messages.append(message)
        if self.on_message is not None:
            with anyio.CancelScope(shield=True):  # a complete message is stored, cancelled or not
                await _maybe_await(self.on_message(message))

    async def add_answer(self, answer: AssistantMessage) -> AssistantMessage:
        """Store a model answer; on resume the first one replaces the cut-off answer."""
        if self.replacing is None:
            await self.add(answer)
            return answer
        index, self.replacing = self.replacing, None
        cut = self.messages[index]
        if self.prefill is not None and isinstance(cut, AssistantMessage):
            answer = join_answers(self.prefill, cut, answer, self.agent.model)
            self.prefill = None
        self.messages[index] = answer
        if self.on_replace is not None:
            with anyio.CancelScope(shield=True):
                await _maybe_await(self.on_replace(index, answer))
        return answer

    async def _continue_without_prefill(self) -> None:
        """The provider refused the prefill (Claude 4.6 models do): ask with a
        continuation turn instead; the cut-off answer stays as it is."""
        self.prefill = None
        self.replacing = None
        self.step -= 1
        await self.add(UserMessage(self.agent.continue_prompt))

    async def events(self, prompt: str | None) -> AsyncGenerator[AgentEvent, None]:
        yield self.event(_E.RUN_STARTED)
        self.span = self.telemetry.start_run(
            agent=self.config.name,
            run_id=self.run_id,
            provider=self.model.provider,
            model=self.model.name,
        )
        final: AssistantMessage | None = None
        failure: BaseException | None = None
        try:
            if prompt is not None:
                await self.add(UserMessage(prompt))
            while True:
                if self.step >= self.config.max_turns:
                    final = await self._max_turns(final)
                    assert final.stop is not None
                    yield self.event(_E.MAX_TURNS_REACHED, stop=final.stop, message=final)
                    break
                self.step += 1
                retry, self.retry = self.retry, None
                if retry is None and self.replacing is None:
                    # a retry, and a resumed answer's first request, are sent as planned
                    await self._add_pending_messages()
                request = retry.request if retry is not None else await self._request()
                model = self.model
                response: ModelResponse | None = None
                error: Exception | None = None
                started = time.perf_counter()
                yield self.event(_E.MODEL_STARTED)
                chat = self.telemetry.start_chat(self.span, request, model.provider)
                received = PartialAnswer()
                try:
                    async with aclosing(model.stream(request)) as stream:
                        async for item in stream:
                            if isinstance(item, ModelResponse):
                                response = item
                                continue
                            received.add(item)
                            if isinstance(item, TextDelta):
                                yield self.event(_E.TEXT_DELTA, text=item.text)
                            elif isinstance(item, ReasoningDelta):
                                yield self.event(_E.REASONING_DELTA, text=item.text)
                            elif isinstance(item, ToolCallDelta):
                                partial = ToolCall(item.id or "", item.name or "", item.arguments)
                                yield self.event(
                                    _E.TOOL_CALL_DELTA, text=item.arguments, tool_call=partial
                                )
                except Exception as exc:
                    if self.prefill is not None and prefill_rejected(exc):
                        self.telemetry.end_chat(chat, None, error=exc)
                        await self._continue_without_prefill()
                        continue
                    error = exc
                except BaseException as exc:
                    self.telemetry.end_chat(chat, None, error=exc)
                    if received and is_cancellation(exc):
                        with anyio.CancelScope(shield=True):
                            await self.add_answer(received.cancelled(model))
                    raise

                response, step, recovery = await self._settle(request, model, response, error)
                self.telemetry.end_chat(
                    chat,
                    response,
                    error=error,
                    recovery=(recovery[0], _action(recovery[1])) if recovery else None,
                )
                if error is not None and recovery is None:
                    yield self.event(_E.RUN_FAILED, error=error)
                    raise error
                if error is None:
                    for extension in self.agent.extensions:
                        await _maybe_await(extension.after_model(response))
                answer = await self.add_answer(response.to_message(model.provider))
                self.usage = self.usage + answer.usage
                self._log(response, model, started)
                final = self._view(answer, step, recovery, final)
                yield self.event(_E.MODEL_COMPLETED, message=answer)
                if answer.stop is not None and (step is not Step.CONTINUE or recovery):
                    yield self.event(_E.MODEL_STOPPED, stop=answer.stop, message=answer)

                if step is Step.RUN_TOOLS:
                    async for event in self._run_tools(answer):
                        yield event
                    continue
                if step is Step.CONTINUE:
                    for message in self.follow:
                        await self.add(message)
                    self.follow = []
                    continue
                if step is Step.RETRY:
                    continue
                if step is Step.COMPLETE:
                    assert final is not None
                    reason = await self._stop_hook_veto(final)
                    if reason is not None:
                        await self.add(UserMessage(reason))
                        continue
                break
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self.telemetry.end_run(
                self.span,
                final=final,
                usage=self.usage,
                steps=self.step,
                recoveries=len(self.recoveries),
                error=failure,
            )
        yield self.event(_E.RUN_COMPLETED, message=final, stop=final.stop if final else None)

    # ------------------------------------------------------------ decisions

    def _decide(self, response: ModelResponse) -> tuple[ModelResponse, Step]:
        reason = response.stop_info.reason
        has_calls = bool(response.tool_calls)
        match reason:
            case StopReason.REFUSAL | StopReason.INTERRUPTED:
                return self._withhold(response), Step.END
            case StopReason.PAUSED:
                if self.pauses < self.agent.max_pause_continuations:
                    self.pauses += 1
                    return response, Step.CONTINUE
                return response, Step.END
            case StopReason.CONTEXT_FULL:
                return response, Step.END
            case StopReason.MAX_OUTPUT:
                return response, Step.RUN_TOOLS if has_calls else Step.END
            case StopReason.END_TURN | StopReason.TOOL_USE | StopReason.OTHER:
                return response, Step.RUN_TOOLS if has_calls else Step.COMPLETE

    def _withhold(self, response: ModelResponse) -> ModelResponse:
        if not response.tool_calls:
            return response
        names = [call.name for call in response.tool_calls]
        return replace(
            response,
            tool_calls=(),
            stop_info=response.stop_info.with_detail(withheld_tool_calls=names),
            provider_record=self.model.without_tool_calls(response.provider_record),
        )

    # ------------------------------------------------------------ recovery

    async def _settle(
        self,
        request: ModelRequest,
        model: ModelClient,
        response: ModelResponse | None,
        error: Exception | None,
    ) -> tuple[ModelResponse, Step, tuple[str, Recovery] | None]:
        """Decide the step, then let an extension recover; a failed call becomes
        a recorded empty answer only when one does."""
        if error is None:
            assert response is not None, "a model stream must end with a ModelResponse"
            response, step = self._decide(response)
        else:
            response, step = failed_call(error, model), Step.END
        found = await self._recover(request, model, response, error)
        if found is None:
            return response, step, None
        by, recovery = found
        if not isinstance(recovery, EndRun) and response.stop_info.ok:
            recovery_log.warning(
                "%s: %s ignored on a step that ended normally", by, type(recovery).__name__
            )
            return response, step, None
        return *self._apply(by, recovery, response, failed=error is not None), found

    async def _recover(
        self,
        request: ModelRequest,
        model: ModelClient,
        response: ModelResponse,
        error: Exception | None,
    ) -> tuple[str, Recovery] | None:
        if not self.agent.extensions or self.replacing is not None:
            return None
        context = RecoveryContext(
            request=request,
            response=None if error is not None else response,
            error=error,
            stop=response.stop_info,
            messages=tuple(self.messages),
            run_start=self.first_index,
            recoveries=tuple(self.recoveries),
            model=model,
            run_id=self.run_id,
            step=self.step,
        )
        for extension in self.agent.extensions:
            recovery = await _maybe_await(extension.recover(context))
            if recovery is None:
                continue
            if not isinstance(recovery, RetryRequest | ContinueWith | EndRun):
                raise TypeError(
                    f"{type(extension).__name__}.recover returned {recovery!r}: "
                    "expected RetryRequest, ContinueWith, EndRun or None"
                )
            return type(extension).__name__, recovery
        return None

    def _apply(
        self, by: str, recovery: Recovery, response: ModelResponse, *, failed: bool
    ) -> tuple[ModelResponse, Step]:
        """Perform ``recovery`` (a closed set) and record it on the answer's stop."""
        stop = response.stop_info
        kept = self._withhold(response)  # an answer a recovery acted on runs no tools
        superseded = failed  # a failed call is a record, never an answer to send
        match recovery:
            case RetryRequest(model=switch):
                self.retry = recovery
                if switch is not None:
                    self.model = switch
                action: Action = "retry"
                step, superseded = Step.RETRY, True
            case ContinueWith(messages=messages, max_tokens=limit):
                self.follow = list(messages)
                self.next_max_tokens = limit
                action, step = "continue", Step.CONTINUE
            case EndRun(stop=end):
                extra: dict[str, Any] = {}
                if kept.stop_info.detail.get("withheld_tool_calls"):
                    extra["withheld_tool_calls"] = kept.stop_info.detail["withheld_tool_calls"]
                if not stop.ok:
                    extra["replaced_stop"] = {"reason": stop.reason.value, "raw": stop.raw}
                kept = replace(kept, stop_info=end.with_detail(**extra))
                action, step = "end", Step.END
        self.recoveries.append(RecoveryRecord(self.step, by, action, stop.reason, recovery.note))
        log_recovery(
            run_id=self.run_id,
            step=self.step,
            by=by,
            action=action,
            reason=stop.reason.value,
            note=recovery.note,
        )
        return record(kept, by, action, recovery.note, superseded), step

    def _view(
        self,
        answer: AssistantMessage,
        step: Step,
        recovery: tuple[str, Recovery] | None,
        final: AssistantMessage | None,
    ) -> AssistantMessage | None:
        """The run's final message so far: a superseded attempt leaves it as it was;
        answers continued with ``ContinueWith(join=True)`` are joined to the next."""
        if step is Step.RETRY:
            return final
        if recovery is not None and isinstance(recovery[1], ContinueWith) and recovery[1].join:
            self.pieces.append(answer)
            return answer
        if not self.pieces:
            return answer
        pieces, self.pieces = [*self.pieces, answer], []
        return join_pieces(pieces)

    async def _max_turns(self, final: AssistantMessage | None) -> AssistantMessage:
        limit = self.config.max_turns
        stop = StopInfo(
            StopReason.OTHER,
            raw=MAX_TURNS_RAW,
            category=MAX_TURNS_RAW,
            message=f"The run reached its limit of {limit} model calls.",
            detail={"max_turns": limit},
        )
        return (final or AssistantMessage()).replace(stop=stop)

    def _tool_choice(self) -> str | None:
        if not self.agent.tools:
            return None
        if self.config.reset_tool_choice and any(
            isinstance(m, ToolResultMessage) for m in self.messages[self.first_index :]
        ):
            return None
        return self.config.tool_choice

    async def _add_pending_messages(self) -> None:
        for extension in self.agent.extensions:
            for message in await _maybe_await(extension.pending_messages()) or ():
                await self.add(message)

    async def _stop_hook_veto(self, message: AssistantMessage) -> str | None:
        for extension in self.agent.extensions:
            reason = await _maybe_await(extension.on_complete(message, self.messages))
            if isinstance(reason, str) and reason:
                return reason
        return None

    # ------------------------------------------------------------ requests

    async def _request(self) -> ModelRequest:
        config = self.config
        messages: list[Message] = []
        if config.instructions:
            messages.append(SystemMessage(config.instructions))
        history: Sequence[Message] = self.messages
        if self.replacing is not None:  # resume: the cut-off answer is resent as a prefill, or not
            prefill = [self.prefill] if self.prefill is not None else []
            history = [*self.messages[: self.replacing], *prefill]
        sent = [m for m in history if not is_superseded(m)]  # recorded attempts stay home
        messages.extend(repair_orphaned_tool_calls(sent))
        max_tokens, self.next_max_tokens = self.next_max_tokens, None
        request = ModelRequest(
            model=self.model.name,
            messages=messages,
            tools=[tool.spec for tool in self.agent.tools.values()],
            max_tokens=config.max_tokens if max_tokens is None else max_tokens,
            temperature=config.temperature,
            tool_choice=self._tool_choice(),
            extra_body=dict(config.model_options),
        )
        for extension in self.agent.extensions:
            changed = await _maybe_await(extension.before_model(request))
            if isinstance(changed, ModelRequest):
                request = changed
        return request

    # ------------------------------------------------------------ tools

    async def _run_tools(self, message: AssistantMessage) -> AsyncIterator[AgentEvent]:
        calls = message.tool_calls
        cut_off = message.stop is not None and message.stop.reason is StopReason.MAX_OUTPUT
        for call in calls:
            yield self.event(_E.TOOL_CALL_STARTED, tool_call=call)
        results: list[ToolResultMessage | None] = [None] * len(calls)

        async def run_one(index: int, call: ToolCall) -> None:
            results[index] = await self._call_tool(call, cut_off)

        if self.config.parallel_tools and len(calls) > 1:
            async with anyio.create_task_group() as group:
                for index, call in enumerate(calls):
                    group.start_soon(run_one, index, call)
        else:
            for index, call in enumerate(calls):
                await run_one(index, call)
        for call, result in zip(calls, results, strict=True):
            assert result is not None
            await self.add(result)
            yield self.event(_E.TOOL_CALL_COMPLETED, tool_call=call, tool_result=result)

    async def _call_tool(self, call: ToolCall, cut_off: bool) -> ToolResultMessage:
        if cut_off and not _is_json_object(call.arguments):
            return ToolResultMessage(call.id, call.name, _CUT_OFF, is_error=True)
        span = self.telemetry.start_tool(self.span, call)
        try:
            with self.telemetry.current(span):
                result = await self._execute_tool(call)
        except BaseException as error:
            self.telemetry.end_tool(span, None, error)
            raise
        self.telemetry.end_tool(span, result)
        return result

    async def _execute_tool(self, call: ToolCall) -> ToolResultMessage:
        for extension in self.agent.extensions:
            early = await _maybe_await(extension.before_tool(call))
            if isinstance(early, ToolResultMessage):
                return early
        tool = self.agent.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.agent.tools)) or "none"
            result = ToolResultMessage(
                call.id, call.name, f"Unknown tool {call.name!r}. Tools: {known}.", is_error=True
            )
        else:
            result = await tool.call(call)
        for extension in self.agent.extensions:
            changed = await _maybe_await(extension.after_tool(call, result))
            if isinstance(changed, ToolResultMessage):
                result = changed
        return result

    # ------------------------------------------------------------ logging

    def _log(self, response: ModelResponse, model: ModelClient, started: float) -> None:
        log_step(
            run_id=self.run_id,
            agent=self.config.name,
            step=self.step,
            provider=model.provider,
            model=model.name,
            response=response,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )


def _action(recovery: Recovery) -> Action:
    match recovery:
        case RetryRequest():
            return "retry"
        case ContinueWith():
            return "continue"
        case EndRun():
            return "end"


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text or "{}"), dict)
    except ValueError:
        return False


async def create_agent(
    model: ModelClient | str,
    config: AgentRunConfig | None = None,
    *,
    tools: Sequence[Callable[..., Any] | Tool] = (),
    extensions: Sequence[Extension] = (),
    **model_options: Any,
) -> Agent:
    """Make an :class:`Agent`.

    ``model`` is a model object or ``"provider:model-name"``
    (``"anthropic:claude-sonnet-4-5"``, ``"openrouter:google/gemini-2.5-flash"``);
    ``model_options`` (``base_url=``, ``api_key=``, ``idle_timeout=``...) go to
    :class:`~zett_agent.models.Model` when a string is given. Raises
    :class:`~zett_agent.errors.ConfigError` for an unknown provider or a missing key.
    """
    resolved = resolve_model(model, **model_options) if isinstance(model, str) else model
    return Agent(resolved, config, tools, extensions)
