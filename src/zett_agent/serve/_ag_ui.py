"""A run's events as AG-UI 1.0 events, sans-IO (the route is :mod:`._ag_ui_route`).

:class:`AGUIEventStream` turns the :class:`~zett_agent.AgentEvent` values of one run
into the events of the *Agent User Interaction protocol* 1.0 (the schema of
``ag-ui-protocol`` 1.0.0 on PyPI, ``@ag-ui/core`` 1.0.0 on npm), JSON-compatible
dicts with the schema's camelCase keys. One zett run is one AG-UI run::

    RUN_STARTED (threadId = the session id, runId = the client's, protocolVersion 1.0)
    [TOOL_CALL_RESULT*]                              (a run that goes on after approval)
    ( STEP_STARTED "model:<n>"
      REASONING_START REASONING_MESSAGE_START REASONING_MESSAGE_CONTENT*
        REASONING_MESSAGE_END REASONING_END          (as they stream)
      TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT* TEXT_MESSAGE_END   (as they stream)
      TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END*  (the step's kept calls, at its end)
      [CUSTOM "zett.step_stop"]                      (an abnormal step)
      TOOL_CALL_RESULT*                              (as the tools finish)
      STEP_FINISHED "model:<n>" )*
    [CUSTOM "zett.step_stop"]                        (max_turns, a budget)
    CUSTOM "zett.stop"  STATE_SNAPSHOT  RUN_FINISHED (outcome, result, metadata)
    |  RUN_ERROR                                     (the run failed)

**The stop, where AG-UI has no word for it** (a proposal other servers can adopt):
AG-UI 1.0's run outcomes are ``success``, ``interrupt`` and ``cancelled``, and an
outcome a client does not know "is stripped and read as success". A refused, cut
or interrupted answer is therefore a ``success`` to a stock client, and zett says
why on two documented extension points every 1.0 client keeps: a ``CUSTOM`` event
named ``zett.stop`` just before ``RUN_FINISHED`` whose ``value`` is the run's final
:class:`~zett_agent.stop.StopInfo` (``StopInfo.to_dict(describe=True)``; ``null``
for a run that ended normally), and the same dict on ``RUN_FINISHED`` itself, in
``result.stop`` and ``metadata.zett.stop`` (metadata is open by key; ``result``
any JSON value). A step that stopped abnormally before the last one (a cut tool
call answered, then a normal answer) gets ``CUSTOM "zett.step_stop"`` with its
stop. Which terminal event each stop gets (:data:`OUTCOMES`):

==========================================  ======================================
the run's end                               terminal event (outcome)
==========================================  ======================================
normal (END_TURN, no stop)                  RUN_FINISHED (success)
REFUSAL, MAX_OUTPUT, CONTEXT_FULL, PAUSED,  RUN_FINISHED (success) + ``zett.stop``
OTHER (max_turns, a budget), INTERRUPTED
INTERRUPTED with ``detail["cancelled"]``    RUN_FINISHED (cancelled) + ``zett.stop``
calls waiting for approval                  RUN_FINISHED (interrupt: one interrupt
                                            per call) + ``zett.stop``
an error (no answer: 401, 429, a timeout)   RUN_ERROR (``message``: the one
                                            sentence of :func:`~._failure.failure_text`,
                                            ``code``: the error's class name)
==========================================  ======================================

A client that disconnects cancels its run (stored INTERRUPTED, cancelled, as in
``/api/chat``) and is sent nothing more.

**Approvals** are AG-UI interrupts: a call that waits for a person is one
``Interrupt`` (``id``: :func:`~._stream.approval_id`, ``reason``
``"tool_approval"``, ``toolCallId``, a ``responseSchema`` of ``{"approved":
boolean, "reason"?: string}``). The client resumes with a new run on the same
thread whose ``resume`` answers every interrupt (:mod:`._ag_ui_request`); the
decisions are taken by :meth:`AgentClient.approve_stream
<zett_agent.AgentClient.approve_stream>`, the compare-and-set every decider shares,
before the response starts: a decision that lost to another decider (another tab,
``/api/chat``, the CLI) is a 409 and nothing runs.

**Tool calls** are held until their step has ended, as in :mod:`._stream`: a
refused or interrupted step's calls are withheld and never appear (their names are
in ``zett.step_stop``'s ``detail.withheld_tool_calls``). **State**: the client's
``state`` object is echoed back with a ``zett`` key holding ``sessionId``,
``stop`` and ``waiting`` (the interrupt ids), so a shared-state UI sees why too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, assert_never

from zett_agent._events import AgentEvent, AgentEventType
from zett_agent._messages import AssistantMessage, ToolCall, ToolResultMessage
from zett_agent.stop import StopInfo, StopReason
from zett_agent.tools._approvals import ApprovalRequest

from ._stream import ToolCallIds, approval_id

__all__ = [
    "AG_UI_HEADERS",
    "APPROVAL_RESPONSE_SCHEMA",
    "OUTCOMES",
    "PROTOCOL_VERSION",
    "AGUIEventStream",
    "encode_event",
    "outcome_for",
]

logger = logging.getLogger("zett_agent.serve")

PROTOCOL_VERSION = "1.0"
"""The AG-UI version these events follow (sent on ``RUN_STARTED``)."""

AG_UI_HEADERS: Mapping[str, str] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-accel-buffering": "no",
}

APPROVAL_RESPONSE_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
    "additionalProperties": False,
}
"""The ``responseSchema`` of an approval interrupt (what ``resume[].payload`` holds)."""

OUTCOMES: Mapping[str, str] = {
    "normal": "RUN_FINISHED success",
    StopReason.REFUSAL.value: "RUN_FINISHED success + zett.stop",
    StopReason.MAX_OUTPUT.value: "RUN_FINISHED success + zett.stop",
    StopReason.CONTEXT_FULL.value: "RUN_FINISHED success + zett.stop",
    StopReason.PAUSED.value: "RUN_FINISHED success + zett.stop",
    StopReason.OTHER.value: "RUN_FINISHED success + zett.stop",
    StopReason.INTERRUPTED.value: "RUN_FINISHED success + zett.stop",
    "cancelled": "RUN_FINISHED cancelled + zett.stop",
    "waiting": "RUN_FINISHED interrupt + zett.stop",
    "error": "RUN_ERROR",
}
"""The terminal event per way a run ends (the table in the module docstring)."""


def outcome_for(stop: StopInfo | None, *, waiting: bool = False) -> dict[str, Any]:
    """The ``RUN_FINISHED.outcome`` for a run whose final stop is ``stop`` (the
    interrupts of a waiting run are added by :class:`AGUIEventStream`)."""
    if waiting:
        return {"type": "interrupt"}
    if stop is not None and stop.reason is StopReason.INTERRUPTED and stop.detail.get("cancelled"):
        return {"type": "cancelled"}
    return {"type": "success"}


def encode_event(event: Mapping[str, Any]) -> bytes:
    """One AG-UI event as a server-sent event (``data: {json}`` and a blank line)."""
    return b"data: " + json.dumps(event, ensure_ascii=False, default=str).encode() + b"\n\n"


class AGUIEventStream:
    """AG-UI events of one run from its zett events.

    ``thread_id``: the session id; ``run_id``: the client's run id (the AG-UI
    ``runId``); ``tool_ids``: the ids the session's calls already use (a run that
    goes on after approval); ``state``: the client's state object, echoed in
    ``STATE_SNAPSHOT``. Call :meth:`start`, :meth:`feed` per event, then
    :meth:`finish` or :meth:`fail`; each returns the events to send, in order.
    """

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        *,
        tool_ids: ToolCallIds | None = None,
        state: Mapping[str, Any] | None = None,
        model: str | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.final_stop: StopInfo | None = None
        self.zett_run_id: str | None = None
        self._state = dict(state or {})
        self._model = model
        self._tool_ids = tool_ids.copy() if tool_ids is not None else ToolCallIds()
        self._step: str | None = None
        self._steps = 0
        self._text_id: str | None = None
        self._reasoning_id: str | None = None
        self._streamed = False
        self._results = 0
        self._interrupts: list[dict[str, Any]] = []
        self._output: Any = None
        self._usage: dict[str, Any] | None = None
        self._closed = False

    # ------------------------------------------------------------ the run

    def start(self) -> list[dict[str, Any]]:
        """``RUN_STARTED``."""
        return [
            {
                "type": "RUN_STARTED",
                "threadId": self.thread_id,
                "runId": self.run_id,
                "protocolVersion": PROTOCOL_VERSION,
            }
        ]

    def feed(self, event: AgentEvent) -> list[dict[str, Any]]:
        """The AG-UI events for ``event`` (none for events AG-UI has no use for)."""
        out: list[dict[str, Any]] = []
        kind = event.type
        if self.zett_run_id is None and event.run_id:
            self.zett_run_id = event.run_id
        match kind:
            case AgentEventType.MODEL_STARTED:
                out += self._close_step()
                self._steps += 1
                self._step = f"model:{self._steps}"
                self._streamed = False
                out.append({"type": "STEP_STARTED", "stepName": self._step})
            case AgentEventType.TEXT_DELTA:
                if event.text:
                    self._streamed = True
                    out += self._text(event.text)
            case AgentEventType.REASONING_DELTA:
                if event.text:
                    self._streamed = True
                    out += self._reasoning(event.text)
            case AgentEventType.MODEL_COMPLETED:
                if event.message is not None:
                    out += self._completed(event.message)
            case AgentEventType.MODEL_STOPPED:
                if event.stop is not None:
                    out.append(_custom("zett.step_stop", event.stop.to_dict(describe=True)))
            case AgentEventType.MAX_TURNS_REACHED | AgentEventType.BUDGET_REACHED:
                out += self._close_step()
                if event.stop is not None:
                    out.append(_custom("zett.step_stop", event.stop.to_dict(describe=True)))
            case AgentEventType.TOOL_CALL_COMPLETED:
                if event.tool_result is not None:
                    out += self._result(event.tool_result)
            case AgentEventType.TOOL_APPROVAL_REQUESTED:
                if event.tool_call is not None and event.approval is not None:
                    self._interrupt(event.approval, event.tool_call)
            case AgentEventType.RUN_COMPLETED:
                self.final_stop = event.stop
                self._output = event.output
                if event.usage is not None:
                    self._usage = _usage(event.usage, self._model)
            case AgentEventType.GUARDRAIL_TRIPPED:  # the stop itself comes as zett.step_stop
                out.append(_custom("zett.guardrail_tripped", dict(event.data or {})))
            case (
                AgentEventType.RUN_STARTED
                | AgentEventType.SAMPLING_REQUESTED
                | AgentEventType.SAMPLING_COMPLETED
                | AgentEventType.TOOL_CALL_DELTA  # held: the call is sent whole
                | AgentEventType.TOOL_CALL_STARTED
                | AgentEventType.PARTIAL_OUTPUT
                | AgentEventType.OUTPUT_INVALID
                | AgentEventType.TOOL_OUTCOME_UNKNOWN
                | AgentEventType.TOOL_PROGRESS
                | AgentEventType.TOOL_LOG
                | AgentEventType.TOOL_INPUT_REQUESTED
                | AgentEventType.RUN_FAILED
            ):
                pass
            case _:
                assert_never(kind)
        return out

    def feed_all(self, events: Sequence[AgentEvent]) -> list[dict[str, Any]]:
        """``TOOL_CALL_RESULT`` of each result among ``events`` (a run that goes on)."""
        return [e for event in events for e in self.feed(event)]

    def finish(self) -> list[dict[str, Any]]:
        """Close what is open; ``zett.stop``, ``STATE_SNAPSHOT`` and ``RUN_FINISHED``."""
        stop = self.final_stop.to_dict(describe=True) if self.final_stop is not None else None
        waiting = [i["id"] for i in self._interrupts]
        outcome = outcome_for(self.final_stop, waiting=bool(self._interrupts))
        if self._interrupts:
            outcome["interrupts"] = list(self._interrupts)
        result: dict[str, Any] = {"stop": stop}
        if self._output is not None:
            from pydantic_core import to_jsonable_python

            result["output"] = to_jsonable_python(self._output)
        finished: dict[str, Any] = {
            "type": "RUN_FINISHED",
            "threadId": self.thread_id,
            "runId": self.run_id,
            "outcome": outcome,
            "result": result,
            "metadata": {"zett": {"stop": stop, "runId": self.zett_run_id}},
        }
        if self._usage is not None:
            finished["usage"] = [self._usage]
        snapshot = {
            **self._state,
            "zett": {"sessionId": self.thread_id, "stop": stop, "waiting": waiting},
        }
        self._closed = True
        return [
            *self._close_step(),
            _custom("zett.stop", stop),
            {"type": "STATE_SNAPSHOT", "snapshot": snapshot},
            finished,
        ]

    def fail(self, message: str, code: str | None = None) -> list[dict[str, Any]]:
        """Close what is open and send ``RUN_ERROR`` (``message`` is shown to a
        person: never raw exception text)."""
        error: dict[str, Any] = {"type": "RUN_ERROR", "message": message}
        if code is not None:
            error["code"] = code
        self._closed = True
        return [*self._close_step(), error]

    # ------------------------------------------------------------ parts

    def _message_id(self) -> str:
        return f"{self.run_id}-{self._steps}"

    def _text(self, delta: str) -> list[dict[str, Any]]:
        out = self._close_reasoning()
        if self._text_id is None:
            self._text_id = self._message_id()
            out.append(
                {"type": "TEXT_MESSAGE_START", "messageId": self._text_id, "role": "assistant"}
            )
        out.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": self._text_id, "delta": delta})
        return out

    def _reasoning(self, delta: str) -> list[dict[str, Any]]:
        out = self._close_text()
        if self._reasoning_id is None:
            self._reasoning_id = f"{self._message_id()}-reasoning"
            out.append({"type": "REASONING_START", "messageId": self._reasoning_id})
            out.append(
                {
                    "type": "REASONING_MESSAGE_START",
                    "messageId": self._reasoning_id,
                    "role": "reasoning",
                }
            )
        out.append(
            {"type": "REASONING_MESSAGE_CONTENT", "messageId": self._reasoning_id, "delta": delta}
        )
        return out

    def _close_text(self) -> list[dict[str, Any]]:
        if self._text_id is None:
            return []
        text_id, self._text_id = self._text_id, None
        return [{"type": "TEXT_MESSAGE_END", "messageId": text_id}]

    def _close_reasoning(self) -> list[dict[str, Any]]:
        if self._reasoning_id is None:
            return []
        rid, self._reasoning_id = self._reasoning_id, None
        return [
            {"type": "REASONING_MESSAGE_END", "messageId": rid},
            {"type": "REASONING_END", "messageId": rid},
        ]

    def _close_step(self) -> list[dict[str, Any]]:
        out = [*self._close_reasoning(), *self._close_text()]
        if self._step is not None:
            out.append({"type": "STEP_FINISHED", "stepName": self._step})
            self._step = None
        return out

    def _completed(self, message: AssistantMessage) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if not self._streamed:  # an answer that arrived whole
            if message.reasoning:
                out += self._reasoning(message.reasoning)
            if message.text:
                out += self._text(message.text)
        out += self._close_reasoning()
        out += self._close_text()
        for call in message.tool_calls:  # the kept calls (withheld ones are gone)
            call_id = self._tool_ids.add(call)
            out.append(
                {
                    "type": "TOOL_CALL_START",
                    "toolCallId": call_id,
                    "toolCallName": call.name,
                    "parentMessageId": self._message_id(),
                }
            )
            if call.arguments:
                out.append(
                    {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": call.arguments}
                )
            out.append({"type": "TOOL_CALL_END", "toolCallId": call_id})
        return out

    def _result(self, result: ToolResultMessage) -> list[dict[str, Any]]:
        call_id = self._tool_ids.answer(result.tool_call_id)
        if call_id is None:
            return []
        self._results += 1
        return [
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": f"{self.run_id}-result{self._results}",
                "toolCallId": call_id,
                "content": result.content,
                "role": "tool",
            }
        ]

    def _interrupt(self, request: ApprovalRequest, call: ToolCall) -> None:
        call_id = self._tool_ids.find(call.id) or call.id
        self._interrupts.append(
            {
                "id": approval_id(request, call),
                "reason": "tool_approval",
                "message": f"Run {call.name}?",
                "toolCallId": call_id,
                "responseSchema": dict(APPROVAL_RESPONSE_SCHEMA),
                "metadata": {"zett": {"tool": call.name, "arguments": call.arguments}},
            }
        )


def _custom(name: str, value: Any) -> dict[str, Any]:
    return {"type": "CUSTOM", "name": name, "value": value}


def _usage(usage: Any, model: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if model:
        provider, _, name = model.partition(":")
        entry["provider"], entry["model"] = provider, name
    for key, value in (
        ("inputTokens", usage.input_tokens),
        ("outputTokens", usage.output_tokens),
        ("reasoningTokens", usage.reasoning_tokens),
        ("cachedInputTokens", usage.cached_input_tokens),
        ("cacheWriteInputTokens", usage.cache_write_tokens),
    ):
        if value is not None:
            entry[key] = value
    if usage.input_tokens is not None or usage.output_tokens is not None:
        entry["totalTokens"] = usage.total_tokens
    return entry
