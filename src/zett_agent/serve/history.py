"""A stored session as the AI SDK's UI messages (what ``useChat`` restores).

The rows of a session (:meth:`SessionStore.rows
<zett_agent.sessions.SessionStore.rows>`, a resumed answer in the place of the one
it replaced) become UI messages ``{"id", "role", "parts"}``:

* a user row is a user message ``u<seq>`` with one text part, then its stored
  parts (images, documents, audio as ``file`` parts served by this server:
  :func:`~zett_agent.serve.attachments.ui_parts`);
* the assistant and tool rows after it are **one** assistant message, as one run
  is streamed: per stored answer a ``step-start`` part, its reasoning and text,
  a tool part per call (``tool-<name>``, with the result of its tool row, or the
  cut-off error), and a ``data-stop`` part when it stopped abnormally. A
  continuation turn that :meth:`Agent.resume <zett_agent.agent.Agent.resume>`
  added after a cut-off answer (the agent's ``continue_prompt``) is part of the
  same message, as it is streamed into it.

Ids: the assistant message after row ``n`` is ``a<n>`` (the seq of the row just
before it, usually the user's), which the server also sends in the stream's
``start`` chunk, so a page that reloads a session gets the ids it was streamed.
A resumed answer that replaces the cut-off one keeps its message's id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zett_agent.messages import AssistantMessage, ToolResultMessage, UserMessage
from zett_agent.sessions import StoredRow, live_rows
from zett_agent.stop import StopReason
from zett_agent.tools import CUT_OFF_ARGUMENTS, is_cut_off

from .attachments import ui_parts
from .stream import ToolCallIds, output_data, parse_input, stop_data

__all__ = ["RESUMABLE", "assistant_message_id", "ui_messages", "user_message_id"]

RESUMABLE = frozenset({StopReason.INTERRUPTED, StopReason.MAX_OUTPUT})
"""Stops after which a session can be resumed (see :func:`~zett_agent.resume.plan_resume`)."""


def user_message_id(seq: int) -> str:
    """The UI id of the user message stored as row ``seq``."""
    return f"u{seq}"


def assistant_message_id(after_seq: int) -> str:
    """The UI id of the assistant message that follows row ``after_seq`` (0: none)."""
    return f"a{after_seq}"


class _Assistant:
    def __init__(self, message_id: str) -> None:
        self.message: dict[str, Any] = {"id": message_id, "role": "assistant", "parts": []}
        self.parts: list[dict[str, Any]] = self.message["parts"]
        self.ids = ToolCallIds()
        self.by_ui_id: dict[str, dict[str, Any]] = {}

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
            self.parts.append(output_data(message.output, partial=False))

    def result(self, result: ToolResultMessage) -> None:
        ui_id = self.ids.answer(result.tool_call_id)
        part = self.by_ui_id.get(ui_id) if ui_id is not None else None
        if part is None or part["state"] == "output-error":
            return
        if result.is_error:
            part.update(state="output-error", errorText=result.content)
        else:
            part.update(state="output-available", output=result.content)


def ui_messages(rows: Sequence[StoredRow], continue_prompt: str) -> list[dict[str, Any]]:
    """The session's UI messages from its ``rows`` (all rows, replaced ones too;
    ``continue_prompt``: the agent's, so resume turns join the answer they continue).
    Raises :class:`~zett_agent.errors.SessionStoreError` as :func:`live_rows` does."""
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
        elif isinstance(message, AssistantMessage | ToolResultMessage):
            if current is None:
                current = _Assistant(assistant_message_id(previous_seq))
                out.append(current.message)
            if isinstance(message, AssistantMessage):
                current.answer(message)
                last_answer = message
            else:
                current.result(message)
        previous_seq = row.seq
    return out
