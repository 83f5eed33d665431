"""A run's events as the AI SDK's UI message stream (protocol v1), sans-IO.

:class:`UIMessageStream` turns the :class:`~zett_agent.AgentEvent` values of
one run into chunks (JSON-compatible dicts) of the Vercel AI SDK's *UI message
stream protocol*, the one ``useChat`` reads (chunk schema ``uiMessageChunkSchema``
in the ``ai`` package, pinned in ``tests/node/package.json``). :func:`sse` frames a
chunk as the ``data:`` line of a server-sent event; :data:`DONE` ends a stream.

One run is one UI assistant message::

    start (messageMetadata: finishReason and stop cleared)
    [tool-approval-response* tool-output-available | tool-output-error
     | tool-output-denied*]                             (a run that goes on after approval)
    ( start-step
      reasoning-start reasoning-delta* reasoning-end      (as they stream)
      text-start text-delta* text-end                      (as they stream)
      tool-input-start tool-input-delta tool-input-available | tool-input-error
                                                           (at the end of the step)
      [data-stop]                                          (an abnormal step)
      [data-elicitation]*                                  (a tool asks the person)
      tool-output-available | tool-output-error            (as the tools finish)
      tool-approval-request*                               (calls that wait for a person)
      finish-step )*
    [data-stop]                                            (max_turns used up)
    [data-output]                                          (a typed result)
    finish (finishReason, messageMetadata)  |  error ... finish (error)  |  abort (cancelled)

``start`` is sent with the first chunk that adds to the message; a run that fails
before any output sends only ``error`` and ``finish`` (no empty message).

**A typed result** (``output_type``) is a ``data-output`` chunk, ``{"type":
"data-output", "id": "output", "data": {"value": <JSON>, "partial": bool}}``: one
per PARTIAL_OUTPUT while the answer streams (``partial: true``), then the final
value with the run's end. They share one ``id``, so a front end's message keeps one
``data-output`` part, replaced as it grows (the AI SDK reconciles data parts by
type and id); a restored session shows the final one (:mod:`._history`).

**A person is asked** (an MCP server's elicitation during a tool call,
TOOL_INPUT_REQUESTED) is a ``data-elicitation`` chunk whose ``data`` is the request
(``zett_agent.mcp.ElicitationRequest.to_dict``: mode, message, fields
with defaults, url) and whose ``id`` is its id: a front end shows a form and
answers with ``POST /api/elicitations/{id}`` (:mod:`._elicitations`).

**Why it stopped** is a custom data chunk, ``{"type": "data-stop", "data": {...}}``,
sent once per *abnormal step* (each ``MODEL_STOPPED``) with the fields of
:class:`~zett_agent.stop.StopInfo` (:func:`stop_data`). ``finish`` is per *run*: its
``finishReason`` is the SDK's own value for the run's final stop
(:data:`FINISH_REASONS`). A step cut at the output limit whose cut tool call was
answered and a normal answer after it sends ``data-stop`` (max_output) for the first
step and ``finish`` with ``"stop"``.

The same two facts are the message's **metadata** (``messageMetadata`` on
``start`` and ``finish``, :func:`message_metadata`): ``{"finishReason", "stop"}``
with ``stop`` the run's final :class:`StopInfo` as ``reason``, ``raw``,
``category``, ``message`` (None for a run that had none). ``start`` clears both
(null) while the run streams, since a run may stream into a message that had them.

**Withheld tool calls never appear as tool parts**: a call's ``tool-input-*``
chunks are held until its step has ended and the loop has kept it (a refused or
interrupted step has its calls withheld and they are sent only as names in
``data-stop``'s ``detail.withheld_tool_calls``). Argument streaming is therefore
delayed to the end of each step. The protocol's ``reset-step`` (``ai`` 7.x) could
take a streamed step back, but it removes *every* part of the step, the text the
model sent too, which a withheld step keeps; sending the step again after it would
make the client draw the text twice, so holding the calls stays the simpler rule.
A call cut off at the output limit gets ``tool-input-error`` (it is never run).

**Approvals** (``ai`` 7.0.173's chunk types): a call that waits for a person gets
``tool-approval-request`` (``approvalId`` from :func:`approval_id`, ``toolCallId``
its part). The answers come back in the next request (:mod:`._request`), and the
run that goes on streams into the *same* message (``start.messageId`` the stored
id): per decided call ``tool-approval-response`` (``approvalId``, ``approved``,
``reason``), then ``tool-output-available`` / ``tool-output-error`` for an approved
call and ``tool-output-denied`` (only ``toolCallId``) for a denied one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, assert_never, cast

from pydantic_core import to_jsonable_python

from zett_agent._events import AgentEvent, AgentEventType
from zett_agent._messages import AssistantMessage, ToolCall, ToolResultMessage
from zett_agent.stop import StopInfo, StopReason
from zett_agent.tools import CUT_OFF_ARGUMENTS, is_cut_off
from zett_agent.tools._approvals import ApprovalRequest, Decision

from ._chunks import (
    Chunk,
    DataOutputChunk,
    ErrorChunk,
    MessageMetadata,
    OutputData,
    ReasoningEndChunk,
    StartChunk,
    StopData,
    StopMetadata,
    TextEndChunk,
    ToolApprovalResponseChunk,
)

__all__ = [
    "DONE",
    "FINISH_REASONS",
    "UI_MESSAGE_STREAM_HEADERS",
    "ToolCallIds",
    "UIMessageStream",
    "approval_id",
    "finish_reason",
    "message_metadata",
    "output_data",
    "parse_input",
    "sse",
    "stop_data",
    "stop_metadata",
]


UI_MESSAGE_STREAM_HEADERS: Mapping[str, str] = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The response headers of a UI message stream (the SDK's ``UI_MESSAGE_STREAM_HEADERS``)."""

DONE = b"data: [DONE]\n\n"
"""The last event of every stream."""

FINISH_REASONS: Mapping[StopReason | None, str] = {
    None: "stop",
    StopReason.END_TURN: "stop",
    StopReason.TOOL_USE: "tool-calls",
    StopReason.MAX_OUTPUT: "length",
    StopReason.CONTEXT_FULL: "length",
    StopReason.REFUSAL: "content-filter",
    StopReason.INTERRUPTED: "interrupted",
    StopReason.PAUSED: "other",
    StopReason.OTHER: "other",
}
"""The ``finish`` chunk's ``finishReason`` (the AI SDK's ``FinishReason``, ``ai``
7.x: stop, length, content-filter, tool-calls, error, interrupted, other) for the
run's final stop. A run that ended normally has no stop: ``"stop"``. CONTEXT_FULL is
a length limit to the SDK (its providers map Anthropic's
``model_context_window_exceeded`` to ``length`` too); PAUSED and OTHER (including
``max_turns``) have no SDK value: ``"other"``. A run that ended with calls waiting
for approval sends ``"tool-calls"`` (its last step asked for tools; as the SDK's own
server does). A run that failed with an error sends ``"error"``; a cancelled one
sends ``abort``, no ``finish``."""

_WITHOUT_STEP = frozenset({AgentEventType.MAX_TURNS_REACHED, AgentEventType.BUDGET_REACHED})
_STEP_CHUNKS = frozenset({"start-step", "finish-step"})
"""Chunks that add nothing the SDK draws (they are held until a part comes)."""


def finish_reason(stop: StopInfo | None, *, waiting: bool = False) -> str:
    """The SDK ``finishReason`` for a run whose final message has ``stop``
    (``waiting``: the run ended with calls waiting for approval)."""
    if waiting:
        return FINISH_REASONS[StopReason.TOOL_USE]
    return FINISH_REASONS[stop.reason if stop is not None else None]


def stop_data(stop: StopInfo) -> StopData:
    """The ``data`` of a ``data-stop`` chunk: the :class:`StopInfo` fields (``reason``
    and ``raw`` as strings, ``detail`` a JSON object with ``withheld_tool_calls``
    when calls were withheld) and ``describe``, the one-line text of
    :meth:`StopInfo.describe`."""
    return cast(StopData, stop.to_dict(describe=True))


_METADATA_FIELDS = ("reason", "raw", "category", "message")


def stop_metadata(stop: StopInfo | None) -> StopMetadata | None:
    """The ``stop`` of a message's metadata: ``reason``, ``raw``, ``category`` and
    ``message`` of ``stop`` (None for none)."""
    if stop is None:
        return None
    return cast(StopMetadata, stop.to_dict(fields=_METADATA_FIELDS))


def message_metadata(finish: str | None, stop: StopInfo | None) -> MessageMetadata:
    """A message's metadata: ``{"finishReason": finish, "stop": stop_metadata(stop)}``."""
    return {"finishReason": finish, "stop": stop_metadata(stop)}


def approval_id(request: ApprovalRequest, call: ToolCall) -> str:
    """The ``approvalId`` of ``call`` waiting in ``request``: the call id and the id
    of the run that asked (``call_1@3f2a9c0e11b4``), so an answer to an earlier
    request for a call with the same id (providers that number their calls
    ``call_0`` each time) never decides a later one. Requests stored without a run
    id (schema 2) use the call id."""
    return f"{call.id}@{request.run_id}" if request.run_id else call.id


def output_data(value: Any, *, partial: bool) -> DataOutputChunk:
    """The ``data-output`` chunk (or stored part) of a typed result ``value``."""
    data: OutputData = {"value": to_jsonable_python(value), "partial": partial}
    return {"type": "data-output", "id": "output", "data": data}


def sse(chunk: Chunk) -> bytes:
    """One chunk as a server-sent event (``data: {json}`` and a blank line)."""
    return b"data: " + json.dumps(chunk, ensure_ascii=False, default=str).encode() + b"\n\n"


def parse_input(arguments: str) -> Any:
    """A tool call's arguments as the UI part's ``input``: the parsed JSON when the
    text is JSON, else the text itself."""
    try:
        return json.loads(arguments or "{}")
    except (ValueError, RecursionError):
        return arguments


class ToolCallIds:
    """The ``toolCallId`` of each call within one UI message.

    A provider's call id is used as it is; an empty one or one already used in the
    message (the SDK keys tool parts by id) gets a suffix. Results are matched to
    calls in order, first unanswered call with the result's id first.
    """

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._open: list[tuple[str, str]] = []  # (provider id, UI id), not yet answered

    def copy(self) -> ToolCallIds:
        """The same ids, for a stream that goes on in the same message."""
        other = ToolCallIds()
        other._used = set(self._used)
        other._open = list(self._open)
        return other

    def add(self, call: ToolCall) -> str:
        ui_id = call.id or "call"
        n = 1
        while ui_id in self._used:
            n += 1
            ui_id = f"{call.id or 'call'}-{n}"
        self._used.add(ui_id)
        self._open.append((call.id, ui_id))
        return ui_id

    def find(self, tool_call_id: str) -> str | None:
        """The UI id of the first unanswered call with ``tool_call_id`` (kept open)."""
        return next((ui for provider, ui in self._open if provider == tool_call_id), None)

    def answer(self, tool_call_id: str) -> str | None:
        """The UI id of the first unanswered call with ``tool_call_id``; None if none."""
        for index, (provider_id, ui_id) in enumerate(self._open):
            if provider_id == tool_call_id:
                del self._open[index]
                return ui_id
        return None


class UIMessageStream:
    """Chunks of one UI assistant message from a run's events.

    ``message_id`` is the UI message id sent in ``start`` (the id the sessions
    endpoint gives the same message later). ``tool_ids``: the tool call ids the
    message already has, when the run goes on in a message streamed before (a
    resume, an answer to an approval; :func:`~._history.continuation`), so new
    calls get ids of their own and results find the calls that waited. Call
    :meth:`start` once (then :meth:`approval_responses` for a run that goes on
    after approval), :meth:`feed` per event, then :meth:`finish` (ended),
    :meth:`fail` (an error) or :meth:`abort` (cancelled). Each returns the chunks
    to send, in order.

    The ``start`` chunk goes out with the first chunk that adds to the message
    (``start-step`` and ``finish-step`` alone are held with it): ``start`` with a
    ``messageId`` makes the SDK add the message to the chat, so a run that fails
    before any output would leave an empty assistant message, which the stored
    session does not have either. Such a run sends only ``error`` and ``finish``.
    """

    def __init__(self, message_id: str, tool_ids: ToolCallIds | None = None) -> None:
        self.message_id = message_id
        self.step_open = False
        self.step = 0
        self.final_stop: StopInfo | None = None
        self.waiting = False  # the run ended with calls waiting for approval
        self._text_id: str | None = None
        self._reasoning_id: str | None = None
        self._parts = 0
        self._streamed = False  # the current step's text arrived as deltas
        self._tool_ids = tool_ids.copy() if tool_ids is not None else ToolCallIds()
        self._input_errors: set[str] = set()  # UI ids sent as tool-input-error
        self._denied: set[str] = set()  # UI ids of calls a person denied
        self._started = False  # the start chunk was sent
        self._held: list[Chunk] = []  # step chunks waiting for the first part

    def start(self) -> list[Chunk]:
        """Begin the message. ``start`` (the message id; the metadata cleared while
        the run streams) is returned with the first chunk that adds to it."""
        return []

    def _send(self, chunks: list[Chunk]) -> list[Chunk]:
        """``chunks`` after ``start`` and the held step chunks, once one of them adds
        to the message; held until then."""
        if self._started:
            return chunks
        if all(chunk["type"] in _STEP_CHUNKS for chunk in chunks):
            self._held += chunks
            return []
        self._started = True
        begin: StartChunk = {
            "type": "start",
            "messageId": self.message_id,
            "messageMetadata": message_metadata(None, None),
        }
        held, self._held = self._held, []
        return [begin, *held, *chunks]

    def approval_responses(self, answered: Sequence[tuple[str, str, Decision]]) -> list[Chunk]:
        """``tool-approval-response`` for each ``(approval id, toolCallId, decision)``
        of the request this run answers; a denied call's result will be sent as
        ``tool-output-denied``."""
        out: list[Chunk] = []
        for approval, ui_id, decision in answered:
            chunk: ToolApprovalResponseChunk = {
                "type": "tool-approval-response",
                "approvalId": approval,
                "approved": decision.approved,
            }
            if decision.reason is not None:
                chunk["reason"] = decision.reason
            out.append(chunk)
            if not decision.approved:
                self._denied.add(ui_id)
        return self._send(out)

    def feed(self, event: AgentEvent) -> list[Chunk]:
        """The chunks for ``event`` (none for events the protocol has no use for)."""
        return self._send(self._chunks_for(event))

    def _chunks_for(self, event: AgentEvent) -> list[Chunk]:
        out: list[Chunk] = []
        kind = event.type
        if kind in _WITHOUT_STEP:
            out += self._close_step()
        match kind:
            case AgentEventType.MODEL_STARTED:
                out += self._close_step()
                self.step += 1
                self.step_open = True
                self._streamed = False
                out.append({"type": "start-step"})
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
            case (
                AgentEventType.MODEL_STOPPED
                | AgentEventType.MAX_TURNS_REACHED
                | AgentEventType.BUDGET_REACHED
            ):
                if event.stop is not None:
                    out.append({"type": "data-stop", "data": stop_data(event.stop)})
            case AgentEventType.TOOL_CALL_COMPLETED:
                if event.tool_result is not None:
                    out += self._tool_output(event.tool_result)
            case AgentEventType.TOOL_APPROVAL_REQUESTED:
                if event.tool_call is not None and event.approval is not None:
                    out += self._approval_request(event.approval, event.tool_call)
            case AgentEventType.TOOL_INPUT_REQUESTED:
                if event.data is not None:
                    # an MCP server asks the person (zett_agent.mcp._elicitation): the
                    # page shows a form and posts to /api/elicitations/{id}
                    data = dict(event.data)
                    out.append(
                        {"type": "data-elicitation", "id": str(data.get("id")), "data": data}
                    )
            case AgentEventType.PARTIAL_OUTPUT:
                if event.output is not None:
                    out.append(output_data(event.output, partial=True))
            case AgentEventType.RUN_COMPLETED:
                self.final_stop = event.stop
                self.waiting = event.approval is not None
                if event.output is not None:
                    out.append(output_data(event.output, partial=False))
            case (
                AgentEventType.RUN_STARTED
                | AgentEventType.TOOL_CALL_DELTA  # held: the call is sent whole
                | AgentEventType.TOOL_CALL_STARTED
                | AgentEventType.OUTPUT_INVALID
                | AgentEventType.TOOL_OUTCOME_UNKNOWN
                | AgentEventType.TOOL_PROGRESS
                | AgentEventType.TOOL_LOG
                | AgentEventType.RUN_FAILED
                | AgentEventType.SAMPLING_REQUESTED
                | AgentEventType.SAMPLING_COMPLETED
                | AgentEventType.GUARDRAIL_TRIPPED  # its stop went out as data-stop
            ):
                pass
            case _:
                assert_never(kind)
        return out

    def finish(self) -> list[Chunk]:
        """Close what is open and end the message with the run's ``finishReason``
        (also in the metadata, with the run's final stop)."""
        reason = finish_reason(self.final_stop, waiting=self.waiting)
        return self._send(
            [
                *self._close_step(),
                {
                    "type": "finish",
                    "finishReason": reason,
                    "messageMetadata": message_metadata(reason, self.final_stop),
                },
            ]
        )

    def fail(self, error_text: str) -> list[Chunk]:
        """Close what is open, send ``error`` with ``error_text`` (shown to the user:
        never raw exception text) and ``finish`` with ``"error"`` (and the metadata,
        when the message was started)."""
        closing = self._close_step()
        error: ErrorChunk = {"type": "error", "errorText": error_text}
        if not self._started:  # no part: no message (and no empty bubble)
            self._held = []
            return [error, {"type": "finish", "finishReason": "error"}]
        return [
            *closing,
            error,
            {
                "type": "finish",
                "finishReason": "error",
                "messageMetadata": message_metadata("error", None),
            },
        ]

    def abort(self, reason: str = "cancelled") -> list[Chunk]:
        """Close what is open and send ``abort`` (a cancelled run has no ``finish``)."""
        closing = self._close_step()
        if not self._started:
            self._held = []
            return [{"type": "abort", "reason": reason}]
        return [*closing, {"type": "abort", "reason": reason}]

    # ------------------------------------------------------------ parts

    def _part_id(self, kind: str) -> str:
        self._parts += 1
        return f"{self.message_id}-{kind}{self._parts}"

    def _text(self, delta: str) -> list[Chunk]:
        out = self._close_reasoning()
        if self._text_id is None:
            self._text_id = self._part_id("t")
            out.append({"type": "text-start", "id": self._text_id})
        out.append({"type": "text-delta", "id": self._text_id, "delta": delta})
        return out

    def _reasoning(self, delta: str) -> list[Chunk]:
        out = self._close_text()
        if self._reasoning_id is None:
            self._reasoning_id = self._part_id("r")
            out.append({"type": "reasoning-start", "id": self._reasoning_id})
        out.append({"type": "reasoning-delta", "id": self._reasoning_id, "delta": delta})
        return out

    def _close_text(self) -> list[Chunk]:
        if self._text_id is None:
            return []
        chunk: TextEndChunk = {"type": "text-end", "id": self._text_id}
        self._text_id = None
        return [chunk]

    def _close_reasoning(self) -> list[Chunk]:
        if self._reasoning_id is None:
            return []
        chunk: ReasoningEndChunk = {"type": "reasoning-end", "id": self._reasoning_id}
        self._reasoning_id = None
        return [chunk]

    def _close_parts(self) -> list[Chunk]:
        return [*self._close_reasoning(), *self._close_text()]

    def _close_step(self) -> list[Chunk]:
        if not self.step_open:
            return []
        self.step_open = False
        return [*self._close_parts(), {"type": "finish-step"}]

    def _completed(self, message: AssistantMessage) -> list[Chunk]:
        out: list[Chunk] = []
        if not self._streamed:  # an answer that arrived whole (not streamed)
            if message.reasoning:
                out += self._reasoning(message.reasoning)
            if message.text:
                out += self._text(message.text)
        out += self._close_parts()
        out += self._tool_inputs(message)
        return out

    def _approval_request(self, request: ApprovalRequest, call: ToolCall) -> list[Chunk]:
        """The AI SDK's ``tool-approval-request`` for a call that waits for a person:
        ``toolCallId`` is the UI id :class:`ToolCallIds` gave the call,
        ``approvalId`` :func:`approval_id`."""
        ui_id = self._tool_ids.find(call.id)
        if ui_id is None:
            return []
        return [
            {
                "type": "tool-approval-request",
                "approvalId": approval_id(request, call),
                "toolCallId": ui_id,
            }
        ]

    def _tool_inputs(self, message: AssistantMessage) -> list[Chunk]:
        """The step's kept calls, now that the step has ended (withheld calls are
        no longer in ``message.tool_calls``)."""
        out: list[Chunk] = []
        for call in message.tool_calls:
            ui_id = self._tool_ids.add(call)
            out.append({"type": "tool-input-start", "toolCallId": ui_id, "toolName": call.name})
            if call.arguments:
                out.append(
                    {
                        "type": "tool-input-delta",
                        "toolCallId": ui_id,
                        "inputTextDelta": call.arguments,
                    }
                )
            if is_cut_off(message, call):
                self._input_errors.add(ui_id)
                out.append(
                    {
                        "type": "tool-input-error",
                        "toolCallId": ui_id,
                        "toolName": call.name,
                        "input": call.arguments,
                        "errorText": CUT_OFF_ARGUMENTS,
                    }
                )
            else:
                out.append(
                    {
                        "type": "tool-input-available",
                        "toolCallId": ui_id,
                        "toolName": call.name,
                        "input": parse_input(call.arguments),
                    }
                )
        return out

    def _tool_output(self, result: ToolResultMessage) -> list[Chunk]:
        ui_id = self._tool_ids.answer(result.tool_call_id)
        if ui_id is None or ui_id in self._input_errors:
            return []  # a cut call already shows its error
        if ui_id in self._denied:
            return [{"type": "tool-output-denied", "toolCallId": ui_id}]
        if result.is_error:
            return [{"type": "tool-output-error", "toolCallId": ui_id, "errorText": result.content}]
        return [{"type": "tool-output-available", "toolCallId": ui_id, "output": result.content}]
