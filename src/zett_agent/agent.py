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

Guards: ``max_turns`` model calls per run (the run then completes with
``stop.raw == "max_turns"``), the model's idle timeout, stop hooks (extensions'
``on_complete``). One structured log record per model call goes to the
``zett_agent.steps`` logger.
"""

from __future__ import annotations

import json
import logging
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
from zett_agent.tools import Tool, as_tool

__all__ = ["Agent", "AgentRunConfig", "create_agent"]

step_log = logging.getLogger("zett_agent.steps")

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


class Step(Enum):
    """What the loop does after one model call (a closed set)."""

    RUN_TOOLS = "run_tools"
    CONTINUE = "continue"  # PAUSED: send the conversation again
    COMPLETE = "complete"  # normal end, stop hooks may veto
    END = "end"  # abnormal end: refusal, interruption, context full, ...


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
        self.messages = messages
        self.on_message = on_message
        self.on_replace = on_replace
        self.first_index = len(messages)  # where this run's messages start
        self.run_id = uuid.uuid4().hex[:12]
        self.step = 0
        self.pauses = 0
        # resume: the first answer takes the place of messages[replacing], joined
        # to ``prefill`` (sent as the last message of the first request) if set
        self.replacing = plan.replaces if plan else None
        self.prefill = plan.prefill if plan else None

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
        if prompt is not None:
            await self.add(UserMessage(prompt))
        final: AssistantMessage | None = None
        while True:
            if self.step >= self.config.max_turns:
                final = await self._max_turns(final)
                assert final.stop is not None
                yield self.event(_E.MAX_TURNS_REACHED, stop=final.stop, message=final)
                break
            self.step += 1
            if self.replacing is None:  # a resumed answer's first request is left as planned
                await self._add_pending_messages()
            response: ModelResponse | None = None
            started = time.perf_counter()
            yield self.event(_E.MODEL_STARTED)
            received = PartialAnswer()
            try:
                async with aclosing(self.agent.model.stream(await self._request())) as stream:
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
            except Exception as error:
                if self.prefill is not None and prefill_rejected(error):
                    await self._continue_without_prefill()
                    continue
                yield self.event(_E.RUN_FAILED, error=error)
                raise
            except BaseException as error:
                if received and is_cancellation(error):
                    with anyio.CancelScope(shield=True):
                        await self.add_answer(received.cancelled(self.agent.model))
                raise
            assert response is not None, "a model stream must end with a ModelResponse"
            response, step = self._decide(response)
            for extension in self.agent.extensions:
                await _maybe_await(extension.after_model(response))
            final = await self.add_answer(response.to_message(self.agent.model.provider))
            self._log(response, started)
            yield self.event(_E.MODEL_COMPLETED, message=final)
            if final.stop is not None and step is not Step.CONTINUE:
                yield self.event(_E.MODEL_STOPPED, stop=final.stop, message=final)

            if step is Step.RUN_TOOLS:
                async for event in self._run_tools(final):
                    yield event
                continue
            if step is Step.CONTINUE:
                continue
            if step is Step.COMPLETE:
                reason = await self._stop_hook_veto(final)
                if reason is not None:
                    await self.add(UserMessage(reason))
                    continue
            break
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
            provider_record=self.agent.model.without_tool_calls(response.provider_record),
        )

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
        messages.extend(repair_orphaned_tool_calls(history))
        request = ModelRequest(
            model=self.agent.model.name,
            messages=messages,
            tools=[tool.spec for tool in self.agent.tools.values()],
            max_tokens=config.max_tokens,
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

    def _log(self, response: ModelResponse, started: float) -> None:
        info = response.stop_info
        record = {
            "run_id": self.run_id,
            "agent": self.config.name,
            "step": self.step,
            "provider": self.agent.model.provider,
            "model": response.model or self.agent.model.name,
            "finish_reason_raw": info.raw,
            "finish_reason": info.reason.value,
            "content_len": len(response.text),
            "tool_calls_count": len(response.tool_calls),
            "withheld_tool_calls": len(info.detail.get("withheld_tool_calls", ())),
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 1),
        }
        step_log.info(json.dumps(record), extra={"zett_step": record})


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
