"""A stored session as the AI SDK's UI messages (what ``useChat`` restores).

The rows of a session (:meth:`SessionStore.rows
<zett_agent.sessions.SessionStore.rows>`, a resumed answer in the place of the one
it replaced) become UI messages ``{"id", "role", "parts"}`` (and ``metadata`` for
an assistant message):

* a user row is a user message ``u<seq>`` with one text part, then its stored
  parts (images, documents, audio as ``file`` parts served by this server:
  :func:`~zett_agent.serve._attachments.ui_parts`);
* the assistant and tool rows after it are **one** assistant message, as one run
  is streamed: per stored answer a ``step-start`` part, its reasoning and text,
  a tool part per call (``tool-<name>``, with the result of its tool row, or the
  cut-off error), and a ``data-stop`` part when it stopped abnormally. A
  continuation turn that :meth:`Agent.resume <zett_agent.Agent.resume>`
  added after a cut-off answer (the agent's ``continue_prompt``) is part of the
  same message, as it is streamed into it; so is the run that went on after an
  approval.
* approval records: a call of a stored approval request is ``approval-requested``
  with ``approval: {"id"}`` (:func:`~._stream.approval_id`), the same id the
  stream sent, so a page reloaded while calls wait can answer them; once decided it
  is ``approval-responded``, then ``output-available`` / ``output-error`` (approved,
  the ``approval`` kept) or ``output-denied`` with ``approval: {"id", "approved":
  false, "reason"}``, as the SDK builds them from the stream.
* ``metadata`` is :func:`~._stream.message_metadata` of the message's last answer:
  ``finishReason`` and ``stop``, as the stream's ``finish`` sent them.

Ids: the assistant message after row ``n`` is ``a<n>`` (the seq of the user row
before it), which the server also sends in the stream's ``start`` chunk, so a page
that reloads a session gets the ids it was streamed. A resumed answer that replaces
the cut-off one keeps its message's id. :func:`continuation` says which message a
run that goes on streams into, and which of its calls wait for approval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from zett_agent._messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from zett_agent.sessions import StoredRow, live_rows
from zett_agent.sessions._decisions import pending_row
from zett_agent.stop import StopReason
from zett_agent.tools import CUT_OFF_ARGUMENTS, is_cut_off
from zett_agent.tools._approvals import ApprovalDecision, ApprovalRequest

from ._attachments import ui_parts
from ._stream import (
    ToolCallIds,
    approval_id,
    finish_reason,
    message_metadata,
    output_data,
    parse_input,
    stop_data,
)

__all__ = [
    "RESUMABLE",
    "Continuation",
    "WaitingCall",
    "assistant_message_id",
    "continuation",
    "ui_messages",
    "user_message_id",
]

RESUMABLE = frozenset({StopReason.INTERRUPTED, StopReason.MAX_OUTPUT})
"""Stops after which a session can be resumed (see :func:`~zett_agent._resume.plan_resume`)."""


def user_message_id(seq: int) -> str:
    """The UI id of the user message stored as row ``seq``."""
    return f"u{seq}"


def assistant_message_id(after_seq: int) -> str:
    """The UI id of the assistant message that follows row ``after_seq`` (0: none)."""
    return f"a{after_seq}"


@dataclass(frozen=True)
class WaitingCall:
    """A call that waits for approval, as the UI shows it: its part's
    ``approval.id`` and ``toolCallId``, and the stored call (what runs)."""

    approval_id: str
    tool_call_id: str
    call: ToolCall


@dataclass(frozen=True)
class Continuation:
    """Where a run that goes on in a session streams: ``message_id`` (the last
    assistant message, or the id the next one gets), the tool call ids that
    message already uses, and its calls that wait for approval (the session's
    pending request, in its order; empty when none waits)."""

    message_id: str
    tool_ids: ToolCallIds
    waiting: tuple[WaitingCall, ...] = ()
    request: ApprovalRequest | None = None
    request_seq: int | None = None
    """The stored row of ``request`` (decisions for it name it, so they can never
    answer a later request that reuses its call ids)."""


@dataclass
class _Assistant:
    message_id: str
    message: dict[str, Any] = field(init=False)
    ids: ToolCallIds = field(default_factory=ToolCallIds)
    by_ui_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    waiting: list[WaitingCall] = field(default_factory=list)
    request: ApprovalRequest | None = None
    denied: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.message = {"id": self.message_id, "role": "assistant", "parts": []}

    @property
    def parts(self) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = self.message["parts"]
        return parts

    def answer(self, message: AssistantMessage) -> None:
        marker = message.stop is not None and message.stop.detail.get("marker") is True
        if not marker:
            self.parts.append({"type": "step-start"})
        if message.reasoning:
            self.parts.append({"type": "reasoning", "text": message.reasoning, "state": "done"})
        if message.text:
            self.parts.append({"type": "text", "text": message.text, "state": "done"})
        for call in message.tool_calls:
            ui_id = self.ids.add(call)
            part: dict[str, Any] = {
                "type": f"tool-{call.name}",
                "toolCallId": ui_id,
                "state": "input-available",
                "input": parse_input(call.arguments),
            }
            if is_cut_off(message, call):
                part.update(state="output-error", input=call.arguments, errorText=CUT_OFF_ARGUMENTS)
            self.parts.append(part)
            self.by_ui_id[ui_id] = part
        if message.stop is not None and not message.stop.ok:
            self.parts.append({"type": "data-stop", "data": stop_data(message.stop)})
        if message.output is not None:  # a typed result, as the stream's last data-output
            self.parts.append(dict(output_data(message.output, partial=False)))
        self.message["metadata"] = message_metadata(finish_reason(message.stop), message.stop)

    def result(self, result: ToolResultMessage) -> None:
        ui_id = self.ids.answer(result.tool_call_id)
        part = self.by_ui_id.get(ui_id) if ui_id is not None else None
        if part is None or part["state"] == "output-error":
            return
        if ui_id in self.denied:
            part["state"] = "output-denied"
        elif result.is_error:
            part.update(state="output-error", errorText=result.content)
        else:
            part.update(state="output-available", output=result.content)

    def approval_request(self, request: ApprovalRequest) -> None:
        self.request = request
        self.waiting = []
        for call in request.calls:
            ui_id = self.ids.find(call.id)
            part = self.by_ui_id.get(ui_id) if ui_id is not None else None
            if ui_id is None or part is None or part["state"] != "input-available":
                continue
            waiting = WaitingCall(approval_id(request, call), ui_id, call)
            part.update(state="approval-requested", approval={"id": waiting.approval_id})
            self.waiting.append(waiting)
        metadata = self.message.get("metadata") or {}
        self.message["metadata"] = {**metadata, "finishReason": finish_reason(None, waiting=True)}

    def approval_decision(self, decision: ApprovalDecision) -> None:
        for waiting in self.waiting:
            made = decision.decisions.get(waiting.call.id)
            if made is None:
                continue
            approval: dict[str, Any] = {"id": waiting.approval_id, "approved": made.approved}
            if made.reason is not None:
                approval["reason"] = made.reason
            self.by_ui_id[waiting.tool_call_id].update(
                state="approval-responded", approval=approval
            )
            if not made.approved:
                self.denied.add(waiting.tool_call_id)
        self.waiting = []
        self.request = None


def _build(
    rows: Sequence[StoredRow], continue_prompt: str
) -> tuple[list[dict[str, Any]], _Assistant | None, int]:
    out: list[dict[str, Any]] = []
    current: _Assistant | None = None
    last_answer: AssistantMessage | None = None
    previous_seq = 0
    for row in live_rows(rows):
        message = row.message
        if isinstance(message, UserMessage):
            resumed = (
                current is not None
                and message.content == continue_prompt
                and last_answer is not None
                and last_answer.stop is not None
                and last_answer.stop.reason in RESUMABLE
            )
            if not resumed:
                current = None
                last_answer = None
                parts = [{"type": "text", "text": message.content}] if message.content else []
                out.append(
                    {
                        "id": user_message_id(row.seq),
                        "role": "user",
                        "parts": parts + ui_parts(row.session_id, message.parts),
                    }
                )
            previous_seq = row.seq
        elif isinstance(message, AssistantMessage | ToolResultMessage):
            if current is None:
                current = _Assistant(assistant_message_id(previous_seq))
                out.append(current.message)
            if isinstance(message, AssistantMessage):
                current.answer(message)
                last_answer = message
            else:
                current.result(message)
        elif current is not None and isinstance(message, ApprovalRequest):
            current.approval_request(message)
        elif current is not None and isinstance(message, ApprovalDecision):
            current.approval_decision(message)
    return out, current, previous_seq


def ui_messages(rows: Sequence[StoredRow], continue_prompt: str) -> list[dict[str, Any]]:
    """The session's UI messages from its ``rows`` (all rows, replaced ones too;
    ``continue_prompt``: the agent's, so resume turns join the answer they continue).
    Raises :class:`~zett_agent.errors.SessionStoreError` as :func:`live_rows` does."""
    return _build(rows, continue_prompt)[0]


def continuation(rows: Sequence[StoredRow], continue_prompt: str) -> Continuation:
    """Where a run that goes on in the session streams (see :class:`Continuation`):
    the last assistant message when the session ends with one, else the id the
    next assistant message gets. ``waiting`` holds the calls of the session's
    pending approval request (the one :meth:`AgentClient.pending_approval
    <zett_agent.AgentClient.pending_approval>` returns)."""
    messages, current, previous_seq = _build(rows, continue_prompt)
    if current is None or messages[-1] is not current.message:
        return Continuation(assistant_message_id(previous_seq), ToolCallIds())
    row = pending_row(live_rows(rows))
    pending = None if row is None else row.message
    if row is None or pending is not current.request:
        return Continuation(current.message_id, current.ids.copy())
    assert isinstance(pending, ApprovalRequest)
    return Continuation(
        current.message_id, current.ids.copy(), tuple(current.waiting), pending, row.seq
    )
