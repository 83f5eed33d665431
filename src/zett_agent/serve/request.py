"""What ``POST /api/chat`` accepts: the body ``useChat`` sends, read leniently.

The AI SDK's default transport sends ``{"id", "messages", "trigger", "messageId",
...body}``; front ends add fields of their own (``body:`` options, metadata), and
newer SDK versions add more, so unknown fields are ignored everywhere rather than
refused (a strict model once broke the second turn of every chat elsewhere).

The session store is the source of truth: of ``messages`` only the **last
message** is taken, which must be the user's (its text parts, joined by blank
lines, and its file parts: :mod:`.attachments`); the history the client sends,
client system prompts and other parts are ignored. ``trigger``
``"regenerate-message"`` asks the same question again: the last user message is
appended once more and answered, the earlier answer stays in the stored history
(rows are never rewritten).

Tool approvals (helper ``mcp``): an approval answer arrives as the last
*assistant* message with tool parts in state ``approval-responded``; read it in
:func:`new_input` beside the user text.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MAX_PROMPT_CHARS",
    "SESSION_ID",
    "ChatRequest",
    "RequestError",
    "UIMessageIn",
    "new_input",
    "valid_session_id",
]

SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")
"""Chat ids the server accepts as session ids: 1-128 characters, letters, digits
and ``_ . : -`` (the SDK's generated ids are 16 letters and digits)."""

MAX_PROMPT_CHARS = 200_000
"""The longest user message taken, in characters."""


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
            f"the last message must be the user's (got role {message.role!r}); "
            "client-side tool results and approvals are not taken"
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
