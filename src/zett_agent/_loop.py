"""One run of an :class:`~zett_agent.Agent`: the loop.

:meth:`_Run.events` is the whole loop. Each turn (one model call) is the same
few named steps, until a step ends the run or ``max_turns`` is reached:

==================  ==========================================================
``_next_call``      what to send: a recovery's retry as planned, else the
                    conversation (after extensions' pending messages)
``_call_model``     stream it: MODEL_STARTED and the deltas; the response, or
                    the error, is left on the :class:`_Call`
``_settle``         ``_decide`` the :class:`Step` (a ``match`` over the closed
                    :class:`~zett_agent.stop.StopReason` set: the decision table
                    of :mod:`zett_agent._agent`), then let an extension recover
``_store_answer``   ``after_model`` hooks, a structured run's verdict (the typed
                    value stored on the answer), store it, log the step;
                    MODEL_COMPLETED (and MODEL_STOPPED for an abnormal stop)
``match step``      RUN_TOOLS, CONTINUE, RETRY, RETRY_OUTPUT: another turn;
                    COMPLETE: end unless a stop hook vetoes; END: end
==================  ==========================================================

Guardrails (:mod:`zett_agent._run_guardrails`, a run's
:class:`~zett_agent._run_guardrails.RunGuardrails`): the input guardrails start
beside the run's first ``_call_model`` (its deltas held back meanwhile) and are
awaited before ``_settle``; a tripwire stores the answer with the guardrail's stop
(``_store_tripped``) and ends the run, no step of the table acting on it. Output
guardrails run in ``_store_answer`` on an answer that would COMPLETE the run.

Budgets (:mod:`zett_agent._run_budget`; the ledger is
:class:`~zett_agent.model._budgets.RunBudget`): checked before each call like
``max_turns`` (``_limit_reached``), and after an answer whose step is RUN_TOOLS or
RETRY_OUTPUT: when that answer crossed a budget its calls are answered "not run"
(:func:`~zett_agent._run_budget.not_run`) and the run ends.

A structured run (``output_type``) judges each answer before it is stored
(:meth:`~zett_agent._structured.StructuredRun.judge`; the stop decides first) and the
verdict can change the step: ACCEPTED completes, STOPPED ends, RETRY sends the
errors back (RETRY_OUTPUT), FAILED raises
:class:`~zett_agent.errors.OutputValidationError` (:mod:`zett_agent._structured`).

The run's pieces: its messages are a :class:`~zett_agent._conversation.Conversation`,
its recoveries a :class:`~zett_agent._recovery.RunRecoveries`, and its tool calls
pass a :class:`~zett_agent.tools.ToolGate` (its rules, in their order, are in
:mod:`zett_agent.tools._gate`).
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, assert_never

import anyio

from zett_agent._await import maybe_await as _maybe_await
from zett_agent._clock import loop_time, wall_now
from zett_agent._conversation import Conversation
from zett_agent._events import _TOOL_EVENTS, AgentEvent, AgentEventType, DeltaEvents
from zett_agent._exchange import ModelRequest, ModelResponse, TextDelta
from zett_agent._guardrails import Tripped
from zett_agent._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from zett_agent._recovery import (
    Action,
    Recovery,
    RecoveryContext,
    RunRecoveries,
    action_of,
    failed_call,
)
from zett_agent._resume import PartialAnswer, ResumePlan, is_cancellation, prefill_rejected
from zett_agent._run_budget import counting_in, not_run, run_ledger, stops_tools
from zett_agent._run_guardrails import RunGuardrails
from zett_agent._structured import Outcome, PartialOutputs, StructuredRun, Verdict
from zett_agent._telemetry import Telemetry, log_step
from zett_agent.model._model import ModelClient, stream_chunks
from zett_agent.protocols._builder import apply_output_limit
from zett_agent.stop import StopInfo, StopReason
from zett_agent.tools._approvals import ApprovalRequest, Decision, decided_results
from zett_agent.tools._definition import is_idempotent
from zett_agent.tools._gate import NOT_OFFERED_TOOL_CALLS, Screening, ToolGate, distinct_call_ids
from zett_agent.tools._outcomes import NO_JOURNAL, ToolJournal, outcome_unknown

if TYPE_CHECKING:
    from zett_agent._agent import Agent

__all__ = ["MAX_TURNS_RAW", "Step"]

_E = AgentEventType

MAX_TURNS_RAW = "max_turns"


class Step(Enum):
    """What the loop does after one model call (a closed set)."""

    RUN_TOOLS = "run_tools"
    CONTINUE = "continue"  # PAUSED: send the conversation again
    COMPLETE = "complete"  # normal end, stop hooks may veto
    END = "end"  # abnormal end: refusal, interruption, context full, ...
    RETRY = "retry"  # a recovery: send its request next
    RETRY_OUTPUT = "retry_output"  # structured: the validation errors go back, ask again


# the step after a recovery was performed
_STEP_AFTER: dict[Action, Step] = {"retry": Step.RETRY, "continue": Step.CONTINUE, "end": Step.END}

# the step after a structured run's verdict (None: the step the stop decided)
_STEP_FOR: dict[Outcome, Step | None] = {
    Outcome.NOT_FINAL: None,
    Outcome.STOPPED: Step.END,
    Outcome.ACCEPTED: Step.COMPLETE,
    Outcome.RETRY: Step.RETRY_OUTPUT,
    Outcome.FAILED: Step.END,
}


@dataclass
class _Call:
    """One model call: what was sent, to which model, and how it ended."""

    request: ModelRequest
    model: ModelClient
    started: float = field(default_factory=loop_time)  # the event loop's clock
    at: datetime.datetime = field(default_factory=wall_now)  # prices the answer
    span: Any = None
    response: ModelResponse | None = None
    error: Exception | None = None  # failed with no output
    prefill_refused: bool = False  # resume: ask again with a continuation turn


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
        decided: tuple[ApprovalRequest, Mapping[str, Decision]] | None = None,
        run_id: str | None = None,
        journal: ToolJournal | None = None,
        structured: StructuredRun | None = None,
    ) -> None:
        self.agent = agent
        self.structured = structured  # output_type: how answers are asked for and judged
        self.verdict: Verdict | None = None  # the last answer's, when structured
        self.decided = decided  # approvals: run these decisions before the first model call
        self.pending: ApprovalRequest | None = None  # the run ended waiting for approval
        self.config = agent.config
        self.model: ModelClient = agent.model  # a RetryRequest may switch it for the run
        self.conversation = Conversation(messages, on_message, on_replace=on_replace, plan=plan)
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.step = 0
        self.pauses = 0
        self.recoveries = RunRecoveries(self.run_id)
        self.telemetry = Telemetry(self.config.tracer_provider, enabled=self.config.telemetry)
        self.span: Any = None
        self.usage = Usage()
        self.budget = run_ledger(self.config)  # a run started by a run's tool: one ledger
        self.resuming = plan is not None
        self.tools = ToolGate(
            agent.tools,
            agent.extensions,
            self.telemetry,
            self.config.parallel_tools,
            timeout=self.config.tool_timeout,
            max_calls=self.config.max_tool_calls,
            max_argument_chars=self.config.max_tool_argument_chars,
            max_result_chars=self.config.max_tool_result_chars,
            max_result_bytes=self.config.max_tool_result_bytes,
            approval=self.config.approval,
            journal=journal or NO_JOURNAL,
            run_id=self.run_id,
        )
        self.screening = Screening()  # the last answer's calls, after the gate's rules 1-3
        self.end_after_tools = False  # a pause out of continuations: its calls, then end
        # a durable run checks one step after another (its steps' order is replayed)
        concurrent = not getattr(agent, "guardrails_before_model", False)
        self.guardrails = RunGuardrails(self.config, self.budget, concurrent=concurrent)

    # ------------------------------------------------------------ the loop

    async def events(self, prompt: str | UserMessage | None) -> AsyncGenerator[AgentEvent, None]:
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
            self.budget.check_prices(self.model)  # max_cost with an unknown price: nothing sent
            async for event in self._settle_unfinished():
                yield event
            if prompt is not None:
                asked = prompt if isinstance(prompt, UserMessage) else UserMessage(prompt)
                await self.conversation.add(asked)
            # a run that brings no new input (an approval's continuation, a resume)
            new_input = self.decided is None and not self.resuming
            self.guardrails.arm(self.conversation.messages, new_input=new_input)
            if self.decided is not None:
                async for event in self._run_decided(*self.decided):
                    yield event
            while True:
                limit = self._limit_reached()  # max_turns, max_cost, max_total_tokens
                if limit is not None:
                    reached, final = limit
                    await self.conversation.add(final)
                    yield self.event(reached, stop=final.stop, message=final)
                    break
                self.step += 1
                call = await self._next_call()
                await self.guardrails.start()  # beside the run's first model call
                async with aclosing(self._call_model(call)) as streamed:
                    async for event in streamed:
                        yield event
                if self.guardrails.checking and not call.prefill_refused:
                    tripped, held = await self.guardrails.input_verdict()
                    if tripped is not None:  # final: no recovery, no tool, no retry
                        final = await self._store_tripped(call, tripped)
                        yield self.event(_E.MODEL_COMPLETED, message=final)
                        yield self.event(_E.MODEL_STOPPED, stop=final.stop, message=final)
                        yield self._tripped_event(final)
                        break
                    for event in held:  # passed: what was held back is shown
                        yield event
                if call.prefill_refused:  # ask with a continuation turn instead
                    self.step -= 1  # the refused call does not count
                    await self.conversation.continue_without_prefill(self.agent.continue_prompt)
                    continue
                response, step, recovery = await self._settle(call)
                if call.error is not None and recovery is None:
                    self._log_step(call, response)  # a failed call is a step too
                    yield self.event(_E.RUN_FAILED, error=call.error)
                    raise call.error
                answer = await self._store_answer(
                    call, response, judged=recovery is None, step=step
                )
                final = self.recoveries.final(answer, recovery, final)
                yield self.event(_E.MODEL_COMPLETED, message=answer)
                stopped = answer.stop is not None and not answer.stop.ok  # abnormal only (seed)
                if stopped and (step is not Step.CONTINUE or recovery is not None):
                    yield self.event(_E.MODEL_STOPPED, stop=answer.stop, message=answer)
                if self.guardrails.tripped is not None:  # an output guardrail: the run ends here
                    final = answer
                    yield self._tripped_event(answer)
                    break
                verdict, self.verdict = self.verdict, None
                if verdict is not None:
                    step = _STEP_FOR[verdict.outcome] or step
                    if verdict.errors and verdict.outcome is not Outcome.STOPPED:
                        yield self.event(_E.OUTPUT_INVALID, text=verdict.errors, message=answer)
                    if verdict.error is not None:
                        yield self.event(_E.RUN_FAILED, error=verdict.error)
                        raise verdict.error
                    if verdict.outcome is Outcome.ACCEPTED:
                        for message in verdict.messages:  # the output call's result
                            await self.conversation.add(message)

                if step in (Step.RUN_TOOLS, Step.RETRY_OUTPUT) and answer.tool_calls:
                    over = stops_tools(self.budget, self.config, self.model)
                    if over is not None:  # the call that crossed finishes; its tools never start
                        calls = self._calls_of(answer)
                        results, final = not_run(calls, self.screening.answered, over)
                        async for event in self._store_results(calls, results):
                            yield event
                        await self.conversation.add(final)
                        yield self.event(_E.BUDGET_REACHED, stop=final.stop, message=final)
                        break

                match step:
                    case Step.RUN_TOOLS:
                        async for event in self._run_tools(answer):
                            yield event
                        if self.pending is not None or self.end_after_tools:
                            break  # calls wait for approval, or a pause ran out
                    case Step.CONTINUE:
                        for message in self.recoveries.take_follow():
                            await self.conversation.add(message)
                    case Step.RETRY:
                        pass  # the recovery's request is sent next
                    case Step.RETRY_OUTPUT:
                        assert verdict is not None
                        for message in verdict.messages:  # the errors, sent back
                            await self.conversation.add(message)
                        if self.screening.runnable or self.screening.answered:
                            async for event in self._run_tools(answer):  # its other calls
                                yield event
                            if self.pending is not None:
                                break
                    case Step.COMPLETE:
                        assert final is not None
                        veto = await self._stop_hook_veto(final)
                        if veto is None:
                            break
                        await self.conversation.add(UserMessage(veto))
                    case Step.END:
                        break
                    case _:
                        assert_never(step)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self.guardrails.cancel()
            self.telemetry.end_run(
                self.span,
                final=final,
                usage=self.budget.usage,
                steps=self.step,
                recoveries=len(self.recoveries.records),
                error=failure,
                cost=self.budget.cost,
            )
        yield self.event(
            _E.RUN_COMPLETED,
            message=final,
            stop=final.stop if final else None,
            approval=self.pending,
            usage=self.budget.usage,
            cost=self.budget.cost,
            output=final.output if final else None,
        )

    async def _next_call(self) -> _Call:
        """A recovery's retry, sent as planned (on its model, if it names one, for
        the rest of the run); else the conversation, after the extensions'
        pending messages (not for a resumed answer's first request)."""
        retry = self.recoveries.take_retry()
        if retry is not None:
            if retry.model is not None:
                self.model = retry.model
            return _Call(retry.request, self.model)
        if not self.conversation.resuming:
            for extension in self.agent.extensions:
                for message in await _maybe_await(extension.pending_messages()) or ():
                    await self.conversation.add(message)
        return _Call(await self._request(), self.model)

    async def _call_model(self, call: _Call) -> AsyncGenerator[AgentEvent, None]:
        """Stream ``call``, yielding MODEL_STARTED and the deltas; how it ended is
        left on ``call``. Cancelled while streaming: what was received so far is
        stored (INTERRUPTED, cancelled), then the cancellation propagates."""
        yield self.event(_E.MODEL_STARTED)
        call.span = self.telemetry.start_chat(self.span, call.request, call.model.provider)
        received = PartialAnswer()
        deltas = DeltaEvents(self.run_id, self.step)  # one event per chunk: the hot path
        text = received.text
        partials = PartialOutputs(self.structured) if self.structured is not None else None
        guard = self.guardrails.guard
        try:
            # a Model passes each network chunk's events as one list: one hop per chunk
            async with aclosing(stream_chunks(call.model, call.request)) as stream:
                async for got in stream:
                    for item in got if isinstance(got, list) else (got,):
                        if type(item) is TextDelta:
                            text.append(item.text)
                            event = deltas.text(item.text)
                        elif isinstance(item, ModelResponse):
                            call.response = apply_output_limit(item, call.request.max_tokens)
                            continue
                        else:
                            received.add(item)
                            event = deltas.of(item)
                        if guard is not None:  # input guardrails checking: hold back
                            if guard.passed:
                                for held in guard.held:
                                    yield held
                                guard.held.clear()
                                guard = None
                            else:
                                guard.held.append(event)
                                value = partials.feed(item) if partials is not None else None
                                if value is not None:
                                    guard.held.append(self.event(_E.PARTIAL_OUTPUT, output=value))
                                continue
                        yield event
                        if partials is not None:
                            value = partials.feed(item)
                            if value is not None:
                                yield self.event(_E.PARTIAL_OUTPUT, output=value)
        except Exception as exc:
            if self.conversation.prefill is not None and prefill_rejected(exc):
                self.telemetry.end_chat(call.span, None, error=exc)
                call.prefill_refused = True
            else:
                call.error = exc
        except BaseException as exc:
            self.telemetry.end_chat(call.span, None, error=exc)
            if is_cancellation(exc):
                with anyio.CancelScope(shield=True):
                    await self.conversation.add_answer(
                        received.cancelled(call.model), self.agent.model
                    )
            raise

    async def _settle(self, call: _Call) -> tuple[ModelResponse, Step, Recovery | None]:
        """Decide the step, then let an extension recover; a failed call becomes
        a recorded empty answer only when one does. Ends the call's span."""
        if call.error is None:
            assert call.response is not None, "a model stream must end with a ModelResponse"
            response, step = self._decide(call.response)
        else:
            response, step = failed_call(call.error, call.model), Step.END
        found = await self._recover(call, response)
        recovery: Recovery | None = None
        acted: tuple[str, Action] | None = None
        if found is not None:
            by, recovery = found
            kept = self._withhold(response)  # an answer a recovery acted on runs no tools
            failed = call.error is not None
            response = self.recoveries.apply(self.step, by, recovery, kept, failed=failed)
            acted = (by, action_of(recovery))
            step = _STEP_AFTER[acted[1]]
        self.telemetry.end_chat(call.span, response, error=call.error, recovery=acted)
        return response, step, recovery

    async def _store_answer(
        self, call: _Call, response: ModelResponse, *, judged: bool = True, step: Step | None = None
    ) -> AssistantMessage:
        """``after_model`` hooks (not for a failed call), a structured run's verdict
        (``judged``: no recovery acted on the answer), the output guardrails (an
        answer that would complete the run: ``step``), store, count usage, log."""
        if call.error is None:
            for extension in self.agent.extensions:
                await _maybe_await(extension.after_model(response))
        response, repeated = distinct_call_ids(response)  # repeated ids: not run
        message = response.to_message(call.model.provider)
        message = self.budget.priced_answer(message, call.request.model, call.at)
        screened = message
        if self.structured is not None and call.error is None and judged:
            self.verdict = await self.structured.judge(message)
            if self.verdict.outcome is Outcome.ACCEPTED:
                message = message.replace(output=self.verdict.value)
            outputs = self.structured.output_calls(message)  # never pass the gate
            if outputs:
                kept = tuple(c for c in message.tool_calls if c not in outputs)
                screened = message.replace(tool_calls=kept)
        completes = (_STEP_FOR[self.verdict.outcome] if self.verdict else None) or step
        if judged and call.error is None and completes is Step.COMPLETE:
            guarded = await self.guardrails.check_output(message)
            if guarded is not None:  # replaces the answer; nothing of it is the result
                message = screened = guarded
                self.verdict = None
        self.screening = self.tools.screen(screened, call.request, answered=repeated)
        if self.screening.not_offered:  # the host hears of calls the request never allowed
            stop = (message.stop or response.stop_info).with_detail(
                **{NOT_OFFERED_TOOL_CALLS: list(self.screening.not_offered)}
            )
            message = message.replace(stop=stop)
        return await self._keep_answer(call, response, message)

    async def _keep_answer(
        self, call: _Call, response: ModelResponse, message: AssistantMessage
    ) -> AssistantMessage:
        """Store an answer, count its usage in the run and its ledger, log the step."""
        answer = await self.conversation.add_answer(message, self.agent.model)
        self.usage = self.usage + answer.usage
        self.budget.add(answer, failed=call.error is not None)
        self._log_step(call, response)
        return answer

    def _log_step(self, call: _Call, response: ModelResponse) -> None:
        log_step(
            run_id=self.run_id,
            agent=self.config.name,
            step=self.step,
            provider=call.model.provider,
            model=call.model.name,
            response=response,
            elapsed_ms=(loop_time() - call.started) * 1000,
        )

    async def _run_tools(self, answer: AssistantMessage) -> AsyncIterator[AgentEvent]:
        """Run the answer's tool calls through the gate (:attr:`screening` holds what
        its rules 1-3 made of them); each result is stored as soon as its call ends,
        then every result is reported, in the calls' order (a consumer that stops
        listening after one report loses none). Calls that wait for approval are
        announced after the others and left in ``self.pending``."""
        screening = self.screening
        waiting = screening.waiting
        calls = [c for c in self._calls_of(answer) if c not in waiting]
        for call in calls:
            yield self.event(_E.TOOL_CALL_STARTED, tool_call=call)
        results: dict[str, ToolResultMessage] = {}
        async for event in self._reporting(calls, results, answered=screening.answered):
            yield event
        for call in calls:
            yield self.event(_E.TOOL_CALL_COMPLETED, tool_call=call, tool_result=results[call.id])
        if waiting:
            self.pending = ApprovalRequest(tuple(waiting), self.run_id)
            for call in waiting:
                yield self.event(_E.TOOL_APPROVAL_REQUESTED, tool_call=call, approval=self.pending)

    async def _store_tripped(self, call: _Call, tripped: Tripped) -> AssistantMessage:
        """The first answer, stopped by an input guardrail: stored without its
        content, its usage counted; no hook, recovery or verdict acts on it."""
        if call.error is None and call.response is not None:
            response = call.response
            message = response.to_message(call.model.provider)
            message = self.budget.priced_answer(message, call.request.model, call.at)
        else:
            assert call.error is not None
            response = failed_call(call.error, call.model)
            message = response.to_message(call.model.provider)
        answer = self.guardrails.trip_input(message, tripped)
        self.telemetry.end_chat(call.span, response, error=call.error)
        return await self._keep_answer(call, response, answer)

    def _tripped_event(self, answer: AssistantMessage) -> AgentEvent:
        data = self.guardrails.tripped_data()
        return self.event(_E.GUARDRAIL_TRIPPED, stop=answer.stop, message=answer, data=data)

    def _calls_of(self, answer: AssistantMessage) -> list[ToolCall]:
        """The answer's tool calls, without a structured run's output calls (they
        never pass the gate)."""
        outputs = self.structured.output_calls(answer) if self.structured is not None else []
        return [c for c in answer.tool_calls if c not in outputs]

    async def _store_results(
        self, calls: list[ToolCall], results: list[ToolResultMessage]
    ) -> AsyncIterator[AgentEvent]:
        """Results of calls that did not start (one per call), stored and reported;
        the run's messages then hold them in the calls' order."""
        start = len(self.conversation.messages)
        for call, result in zip(calls, results, strict=True):
            await self.conversation.add(result)
            yield self.event(_E.TOOL_CALL_COMPLETED, tool_call=call, tool_result=result)
        self.conversation.order_results(start, [c.id for c in calls])

    async def _gate_calls(
        self,
        calls: list[ToolCall],
        results: dict[str, ToolResultMessage],
        *,
        answered: Mapping[str, ToolResultMessage] | None = None,
    ) -> None:
        """``calls`` through the gate (rules 4-8; ``answered`` were decided by 1-3).
        Each result is stored as it comes (cancelled: the gate hands every
        unfinished call its result first, and those are stored too); the run's
        messages then hold them in the calls' order."""
        start = len(self.conversation.messages)

        async def keep(index: int, result: ToolResultMessage) -> None:
            results[calls[index].id] = result
            await self.conversation.add(result)

        try:
            with counting_in(self.budget):  # runs the tools start count here
                await self.tools.run(calls, self.span, keep, answered=answered)
        finally:
            self.conversation.order_results(start, [c.id for c in calls])

    async def _reporting(
        self,
        calls: list[ToolCall],
        results: dict[str, ToolResultMessage],
        *,
        answered: Mapping[str, ToolResultMessage] | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """:meth:`_gate_calls`, yielding what the tools report while they run
        (TOOL_PROGRESS, TOOL_LOG, TOOL_INPUT_REQUESTED). Only when a call's tool
        ``reports_events``: the calls then run in a task of their own beside this
        stream (its context is this one's, with the sink set); cancelling the run
        cancels that task, and the gate hands every unfinished call its result
        before the cancellation goes on."""
        tools = self.agent.tools
        if not any(getattr(tools.get(c.name), "reports_events", False) for c in calls):
            await self._gate_calls(calls, results, answered=answered)
            return
        queue: asyncio.Queue[AgentEvent] = asyncio.Queue()

        def sink(kind: AgentEventType, call: ToolCall, data: Mapping[str, Any]) -> None:
            queue.put_nowait(self.event(kind, tool_call=call, data=dict(data)))

        token = _TOOL_EVENTS.set(sink)
        try:
            task = asyncio.ensure_future(self._gate_calls(calls, results, answered=answered))
        finally:
            _TOOL_EVENTS.reset(token)
        try:
            while True:
                while not queue.empty():
                    yield queue.get_nowait()
                if task.done():
                    break
                getter = asyncio.ensure_future(queue.get())
                got: AgentEvent | None = None
                try:
                    await asyncio.wait({task, getter}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if getter.done() and not getter.cancelled():
                        got = getter.result()
                    else:
                        getter.cancel()
                if got is not None:
                    yield got
            task.result()  # the gate's own error (a hook's exception) goes on
        finally:
            if not task.done():
                task.cancel()
                with anyio.CancelScope(shield=True):
                    await asyncio.wait({task})

    async def _run_decided(
        self, request: ApprovalRequest, decisions: Mapping[str, Decision]
    ) -> AsyncIterator[AgentEvent]:
        """Resume after approval: the approved calls go on through the gate (rules
        4-8; they passed 1-3 when the request was made), then each denied call is
        answered with an error result carrying its reason."""
        approved, denied = decided_results(request, decisions)
        for call in approved:
            yield self.event(_E.TOOL_CALL_STARTED, tool_call=call)
        results: dict[str, ToolResultMessage] = {}
        async for event in self._reporting(approved, results):
            yield event
        for call in approved:
            yield self.event(_E.TOOL_CALL_COMPLETED, tool_call=call, tool_result=results[call.id])
        for call in request.calls:
            if call.id in denied:
                result = ToolResultMessage(call.id, call.name, denied[call.id], is_error=True)
                await self.conversation.add(result)
                yield self.event(_E.TOOL_CALL_COMPLETED, tool_call=call, tool_result=result)

    async def _settle_unfinished(self) -> AsyncIterator[AgentEvent]:
        """Calls of the history's last answer that a crash left without a result,
        and that the journal recorded as started: on a resume, an idempotent tool's
        call runs again (through the gate's rules 4-8); any other is answered "may
        or may not have taken effect" (stored, and a TOOL_OUTCOME_UNKNOWN event
        names it). Calls that never started are left to history repair ("not
        run"); so are the calls a decision is about to answer."""
        unfinished = _unfinished_calls(self.conversation.messages)
        if self.decided is not None:
            deciding = {c.id for c in self.decided[0].calls}
            unfinished = [c for c in unfinished if c.id not in deciding]
        started = [c for c in unfinished if self.tools.journal.was_started(c.id)]
        again = [c for c in started if self.resuming and self._idempotent(c)]
        for call in started:
            if call not in again:
                result = outcome_unknown(call)
                await self.conversation.add(result)
                yield self.event(_E.TOOL_OUTCOME_UNKNOWN, tool_call=call, tool_result=result)
        if again:
            for call in again:
                yield self.event(_E.TOOL_CALL_STARTED, tool_call=call)
            results: dict[str, ToolResultMessage] = {}
            await self._gate_calls(again, results)
            for call in again:
                yield self.event(
                    _E.TOOL_CALL_COMPLETED, tool_call=call, tool_result=results[call.id]
                )

    def _idempotent(self, call: ToolCall) -> bool:
        tool = self.agent.tools.get(call.name)
        return tool is not None and is_idempotent(tool)

    # ------------------------------------------------------------ decisions

    def _decide(self, response: ModelResponse) -> tuple[ModelResponse, Step]:
        has_calls = bool(response.tool_calls)
        match response.stop_info.reason:
            case StopReason.REFUSAL | StopReason.INTERRUPTED:
                return self._withhold(response), Step.END
            case StopReason.PAUSED:
                # reported only when the continuations run out (seed 001); a pause with
                # client tool calls runs them, and that is its continuation
                if self.pauses >= self.agent.max_pause_continuations:
                    self.end_after_tools = has_calls  # run them (no orphan), then end
                    return response, Step.RUN_TOOLS if has_calls else Step.END
                self.pauses += 1
                if has_calls:
                    return _continued_by_its_calls(response), Step.RUN_TOOLS
                return response, Step.CONTINUE
            case StopReason.MAX_OUTPUT | StopReason.CONTEXT_FULL:
                # cut off: complete calls run, cut ones get an error result (the gate)
                return response, Step.RUN_TOOLS if has_calls else Step.END
            case StopReason.END_TURN | StopReason.TOOL_USE | StopReason.OTHER:
                return response, Step.RUN_TOOLS if has_calls else Step.COMPLETE
            case _:
                assert_never(response.stop_info.reason)

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

    def _limit_reached(self) -> tuple[AgentEventType, AssistantMessage] | None:
        """Before a model call: the event and the marker the run ends with when
        ``max_turns`` (retries count) or a budget is used up, else None."""
        if self.step >= self.config.max_turns:
            return _E.MAX_TURNS_REACHED, self._max_turns()
        spent = self.budget.exhausted(self.model)
        return (_E.BUDGET_REACHED, spent) if spent is not None else None

    def _max_turns(self) -> AssistantMessage:
        """The run's last message when ``max_turns`` is used up: an empty answer
        whose stop says so. It is stored (a session shows why the run ended, as
        Claude Code appends ``[max_turns_reached]``) but never sent to a model."""
        limit = self.config.max_turns
        calls = "model call" if limit == 1 else "model calls"
        stop = StopInfo(
            StopReason.OTHER,
            raw=MAX_TURNS_RAW,
            category=MAX_TURNS_RAW,
            message=f"The run reached its limit of {limit} {calls}.",
            detail={"max_turns": limit, "marker": True},
        )
        return AssistantMessage(stop=stop, model=self.model.name, provider=self.model.provider)

    async def _stop_hook_veto(self, message: AssistantMessage) -> str | None:
        for extension in self.agent.extensions:
            reason = await _maybe_await(extension.on_complete(message, self.conversation.messages))
            if isinstance(reason, str) and reason:
                return reason
        return None

    async def _recover(self, call: _Call, response: ModelResponse) -> tuple[str, Recovery] | None:
        if not self.agent.extensions or self.conversation.resuming:
            return None
        context = RecoveryContext(
            request=call.request,
            response=None if call.error is not None else response,
            error=call.error,
            stop=response.stop_info,
            messages=tuple(self.conversation.messages),
            run_start=self.conversation.first_index,
            recoveries=tuple(self.recoveries.records),
            model=call.model,
            run_id=self.run_id,
            step=self.step,
        )
        with counting_in(self.budget):  # a recovery's model calls count here
            return await self.recoveries.ask(self.agent.extensions, context)

    # ------------------------------------------------------------ events and requests

    def event(self, type: AgentEventType, **fields: Any) -> AgentEvent:  # noqa: A002
        return AgentEvent(type, self.run_id, self.step, **fields)

    async def _request(self) -> ModelRequest:
        config = self.config
        messages: list[Message] = []
        if config.instructions:
            messages.append(SystemMessage(config.instructions))
        messages.extend(self.conversation.to_send())
        max_tokens = self.recoveries.take_max_tokens()
        request = ModelRequest(
            model=self.model.name,
            messages=messages,
            tools=[tool.spec for tool in self.agent.tools.values()],
            max_tokens=config.max_tokens if max_tokens is None else max_tokens,
            temperature=config.temperature,
            tool_choice=self._tool_choice(),
            extra_body=dict(config.model_options),
            reasoning=config.reasoning,
            server_tools=tuple(config.server_tools),
            prompt_cache=config.prompt_cache,
            prompt_cache_key=config.prompt_cache_key,
        )
        if self.structured is not None:  # the output: a native format, or output tools
            request = self.structured.prepare(request, self.model)
        with counting_in(self.budget):  # a hook's model calls count here
            for extension in self.agent.extensions:
                changed = await _maybe_await(extension.before_model(request))
                if isinstance(changed, ModelRequest):
                    request = changed
        return request

    def _tool_choice(self) -> str | None:
        choice = self.config.tool_choice
        if not self.agent.tools:
            return None
        forcing = choice not in (None, "auto", "none")
        if forcing and self.config.reset_tool_choice and self.conversation.tools_ran():
            return None  # reset_tool_choice: once tools ran, the provider's auto
        return choice  # "none" stays: the host said no tool may run in this run


def _continued_by_its_calls(response: ModelResponse) -> ModelResponse:
    """A pause whose content holds client tool calls (Anthropic ``pause_turn`` with a
    ``tool_use`` block): the calls run and their results continue the turn, so the
    step is a tool step (no stop on the message, no MODEL_STOPPED) with the provider's
    value kept in ``detail["paused"]``."""
    info = response.stop_info
    detail = {**info.detail, "paused": info.raw or info.reason.value}
    return replace(response, stop_info=StopInfo(StopReason.TOOL_USE, info.raw, detail=detail))


def _unfinished_calls(messages: list[Message]) -> list[ToolCall]:
    """The calls of the last answer that have no result, when nothing but tool
    results follows that answer (a crash while its calls ran)."""
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            answered.add(message.tool_call_id)
            continue
        if isinstance(message, AssistantMessage):
            return [c for c in message.tool_calls if c.id not in answered]
        return []
    return []
