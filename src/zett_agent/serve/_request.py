"""What ``POST /api/chat`` accepts: the body ``useChat`` sends, read leniently.

The AI SDK's default transport sends ``{"id", "messages", "trigger", "messageId",
...body}``; front ends add fields of their own (``body:`` options, metadata), and
newer SDK versions add more, so unknown fields are ignored everywhere rather than
refused (a strict model once broke the second turn of every chat elsewhere).

The session store is the source of truth: of ``messages`` only the **last
message** is taken; the history the client sends, client system prompts and
other parts are ignored. It is either

* the **user's** (:func:`new_input`: its text parts, joined by blank lines, and
  its file parts: :mod:`._attachments`). ``trigger`` ``"regenerate-message"`` asks
  the same question again: the last user message is appended once more and
  answered, the earlier answer stays in the stored history (rows are never
  rewritten); or
* the **assistant's**, whose tool parts in state ``approval-responded`` answer the
  calls that wait for approval (:func:`approval_responses`): what the SDK sends
  after ``addToolApprovalResponse`` with ``sendAutomaticallyWhen:
  lastAssistantMessageIsCompleteWithApprovalResponses``. Only each part's
  ``toolCallId`` and ``approval`` (``id``, ``approved``, ``reason``) are read; the
  server matches them to its stored request (:mod:`._approvals`), and the call that runs is
  the stored one, never the part's ``input``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MAX_PROMPT_CHARS",
    "MAX_REASON_CHARS",
    "SESSION_ID",
    "ApprovalResponse",
    "ChatRequest",
    "RequestError",
    "UIMessageIn",
    "approval_responses",
    "new_input",
    "valid_session_id",
]

SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")
"""Chat ids the server accepts as session ids: 1-128 characters, letters, digits
and ``_ . : -`` (the SDK's generated ids are 16 letters and digits)."""

MAX_PROMPT_CHARS = 200_000
"""The longest user message taken, in characters."""

MAX_REASON_CHARS = 2000
"""The longest denial reason kept, in characters (longer ones are cut)."""


class RequestError(ValueError):
    """A request the server cannot act on; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class UIMessageIn(BaseModel):
    """A UI message as the client sends it (only ``role`` and ``parts`` are read)."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    role: str
    parts: list[Any] = Field(default_factory=list)


class ChatRequest(BaseModel):
    """The body of ``POST /api/chat``."""

    model_config = ConfigDict(extra="ignore")

    id: str
    messages: list[UIMessageIn] = Field(min_length=1)
    trigger: Literal["submit-message", "regenerate-message"] | str = "submit-message"
    messageId: str | None = None  # noqa: N815 - the SDK's field name


def valid_session_id(value: str) -> str:
    """``value`` when it is a session id the server accepts; else RequestError (400)."""
    if not SESSION_ID.match(value):
        raise RequestError(
            "the chat id must be 1-128 characters: letters, digits and _ . : - "
            "(starting with a letter or digit)"
        )
    return value


def new_input(request: ChatRequest) -> str:
    """The text of the last message of ``request``, which must be the user's (what
    this turn asks).

    Raises RequestError (400) when the last message is not a user message (a front
    end sending client-side tool results or approval answers: not taken today, see
    the module docstring) or has neither text nor a file part, and (413) when it
    is longer than :data:`MAX_PROMPT_CHARS`. The text may be empty beside files.
    """
    message = request.messages[-1]
    if message.role != "user":
        raise RequestError(
            f"the last message must be the user's or the assistant's answering tool "
            f"approvals (got role {message.role!r}); client-side tool results are not taken"
        )
    texts = [
        part["text"]
        for part in message.parts
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    ]
    text = "\n\n".join(t for t in texts if t.strip())
    has_file = any(isinstance(p, dict) and p.get("type") == "file" for p in message.parts)
    if not text and not has_file:
        raise RequestError("the last user message has no text part")
    if len(text) > MAX_PROMPT_CHARS:
        raise RequestError(f"the message is longer than {MAX_PROMPT_CHARS} characters", 413)
    return text


@dataclass(frozen=True)
class ApprovalResponse:
    """One tool part's answer to an approval request, as the client sent it."""

    approval_id: str
    tool_call_id: str
    approved: bool
    reason: str | None = None


def approval_responses(request: ChatRequest) -> tuple[str | None, list[ApprovalResponse]]:
    """The id of the last message of ``request`` (an assistant message) and the
    answers of its tool parts in state ``approval-responded``, in the parts' order.

    Raises RequestError (400) when the message has no such part, or when a part's
    ``approval`` is not ``{"id": str, "approved": bool}``.
    """
    message = request.messages[-1]
    found: list[ApprovalResponse] = []
    for part in message.parts:
        if not isinstance(part, dict) or part.get("state") != "approval-responded":
            continue
        kind = part.get("type")
        if not isinstance(kind, str) or not (kind.startswith("tool-") or kind == "dynamic-tool"):
            continue
        approval = part.get("approval")
        call_id = part.get("toolCallId")
        if (
            not isinstance(approval, dict)
            or not isinstance(approval.get("id"), str)
            or not isinstance(approval.get("approved"), bool)
            or not isinstance(call_id, str)
        ):
            raise RequestError(
                "an approval-responded tool part needs toolCallId and "
                'approval {"id": string, "approved": boolean}'
            )
        reason = approval.get("reason")
        found.append(
            ApprovalResponse(
                approval["id"],
                call_id,
                approval["approved"],
                reason[:MAX_REASON_CHARS] if isinstance(reason, str) else None,
            )
        )
    if not found:
        raise RequestError(
            "the last message is the assistant's but answers no approval request "
            "(no tool part in state approval-responded); send a user message"
        )
    return message.id, found
