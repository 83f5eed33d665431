"""What each route of the app accepts: one strict schema per request body.

Every body is parsed by one pydantic model (:func:`parse`): fields that decide
something are strict (a boolean is ``true``/``false``, never ``"false"``, ``0`` or
``"no"``; a string is a string), and a field of the wrong type or shape is a 4xx
whose message names it (``decisions.call_1@3f2a.approved: Input should be a valid
boolean``), before anything is stored or run. Unknown fields are refused where
they could change meaning (zett's own JSON bodies: the approve route, an
elicitation answer, ``resume``) and ignored where they cannot (the AI SDK's chat
body, its messages and parts: fields zett never reads, which newer SDK versions
keep adding):

==================================  ===========================================
``POST /api/chat``                  :class:`ChatRequest`; the last message's
                                    parts: :class:`TextPartIn`,
                                    :class:`FilePartIn`, :class:`ToolPartIn`
                                    (with :class:`ApprovalIn`)
``POST /api/sessions/{id}/approve`` :class:`ApproveBody` (:class:`DecisionIn`)
``POST /api/sessions/{id}/resume``  :class:`ResumeBody` (no fields; no body)
``POST /api/elicitations/{id}``     :class:`ElicitationAnswer`
==================================  ===========================================

**The chat body** is what the AI SDK's default transport sends: ``{"id",
"messages", "trigger", "messageId", ...body}``; front ends add fields of their own
(``body:`` options, metadata), and newer SDK versions add more, so unknown fields
of the body and of its messages are ignored rather than refused (a strict model
once broke the second turn of every chat elsewhere). How many parts a message and
a body may hold is bounded (:func:`check_part_counts`, 413 past it).

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
  the stored one, never the part's ``input``. Two answers for one call that
  disagree are refused (400), and nothing runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "DEFAULT_MAX_PARTS_PER_BODY",
    "DEFAULT_MAX_PARTS_PER_MESSAGE",
    "MAX_PROMPT_CHARS",
    "MAX_REASON_CHARS",
    "SESSION_ID",
    "ApprovalIn",
    "ApprovalResponse",
    "ApproveBody",
    "ChatRequest",
    "DecisionIn",
    "ElicitationAnswer",
    "FilePartIn",
    "RequestError",
    "ResumeBody",
    "TextPartIn",
    "ToolPartIn",
    "UIMessageIn",
    "approval_responses",
    "check_part_counts",
    "new_input",
    "parse",
    "user_parts_in",
    "valid_session_id",
]

SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")
"""Chat ids the server accepts as session ids: 1-128 characters, letters, digits
and ``_ . : -`` (the SDK's generated ids are 16 letters and digits)."""

MAX_PROMPT_CHARS = 200_000
"""The longest user message taken, in characters."""

MAX_REASON_CHARS = 2000
"""The longest denial reason kept, in characters (longer ones are cut)."""

DEFAULT_MAX_PARTS_PER_MESSAGE = 1_000
"""Parts one message of a chat body may hold (``ServeSettings.max_parts_per_message``)."""

DEFAULT_MAX_PARTS_PER_BODY = 10_000
"""Parts all the messages of a chat body may hold together
(``ServeSettings.max_parts_per_body``: the stock transport re-sends the history)."""


class RequestError(ValueError):
    """A request the server cannot act on; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], data: Any, what: str, status: int = 422, at: str = "") -> M:
    """``data`` as ``model``; else :class:`RequestError` (``status``) naming the
    fields that do not fit (``at`` goes before each field's path)."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{_path(at, e['loc'])}: {e['msg']}" for e in error.errors(include_url=False)[:5]
        )
        raise RequestError(f"{what}: {problems}", status) from None
    except RecursionError:
        raise RequestError(f"{what}: the body is nested too deeply", status) from None


def _path(at: str, loc: Sequence[int | str]) -> str:
    path = at
    for step in loc:
        path += f"[{step}]" if isinstance(step, int) else (f".{step}" if path else str(step))
    return path or "body"


_STRICT = ConfigDict(strict=True, extra="forbid")
_STRICT_OPEN = ConfigDict(strict=True, extra="ignore")


class UIMessageIn(BaseModel):
    """A UI message as the client sends it (only ``role`` and ``parts`` are read;
    the parts of the last message through the part models below)."""

    model_config = _STRICT_OPEN

    id: str | None = None
    role: str
    parts: list[Any] = Field(default_factory=list)


class ChatRequest(BaseModel):
    """The body of ``POST /api/chat``."""

    model_config = _STRICT_OPEN

    id: str
    messages: list[UIMessageIn] = Field(min_length=1)
    trigger: Literal["submit-message", "regenerate-message"] | str = "submit-message"
    messageId: str | None = None  # noqa: N815 - the SDK's field name


class TextPartIn(BaseModel):
    """A ``text`` part of the last user message."""

    model_config = _STRICT_OPEN

    type: Literal["text"]
    text: str


class FilePartIn(BaseModel):
    """A ``file`` part of the last user message (:mod:`._attachments` reads it)."""

    model_config = _STRICT_OPEN

    type: Literal["file"]
    mediaType: str  # noqa: N815 - the SDK's field name
    url: str
    filename: str | None = None


class ApprovalIn(BaseModel):
    """A tool part's ``approval`` once answered. Only these fields are read, each
    strictly; the others the SDK sends (``isAutomatic``, ``signature``,
    ``descriptor``, ``requestReason``, ``inputSchemaInput`` in ``ai`` 7) are
    ignored, because nothing but the ids and the answer decides: the call that
    runs is the stored one."""

    model_config = _STRICT_OPEN

    id: str
    approved: bool
    reason: str | None = None


class ToolPartIn(BaseModel):
    """A tool part (``tool-<name>`` or ``dynamic-tool``) in state
    ``approval-responded`` of the last assistant message."""

    model_config = _STRICT_OPEN

    type: str
    state: Literal["approval-responded"]
    toolCallId: str  # noqa: N815 - the SDK's field name
    approval: ApprovalIn


class DecisionIn(BaseModel):
    """One decision of ``POST /api/sessions/{id}/approve``."""

    model_config = _STRICT

    approved: bool
    reason: str | None = None


class ApproveBody(BaseModel):
    """The body of ``POST /api/sessions/{id}/approve``: decisions by approval id
    (``call_1@3f2a9c0e11b4``, the ``approvalId`` of the call's
    ``tool-approval-request``). A bare call id decides only beside ``request_seq``,
    the row of the request it answers (``approval_request_seq`` of ``GET
    /api/sessions/{id}``), so a request replayed later never decides another
    request that reuses the call id."""

    model_config = _STRICT

    decisions: dict[str, DecisionIn] = Field(min_length=1)
    request_seq: int | None = None


class ResumeBody(BaseModel):
    """``POST /api/sessions/{id}/resume`` takes no fields (an empty body or ``{}``)."""

    model_config = _STRICT


class ElicitationAnswer(BaseModel):
    """The body of ``POST /api/elicitations/{id}``."""

    model_config = _STRICT

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


def check_part_counts(data: Any, per_message: int, per_body: int) -> None:
    """RequestError (413) when a message of a chat body (as parsed JSON, before
    its schema) holds more than ``per_message`` parts, or all of them more than
    ``per_body``; counted before anything else reads them."""
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, list):
        return
    total = 0
    for n, message in enumerate(messages):
        parts = message.get("parts") if isinstance(message, dict) else None
        if not isinstance(parts, list):
            continue
        if len(parts) > per_message:
            raise RequestError(
                f"messages[{n}].parts: {len(parts)} parts, more than {per_message} in one "
                "message (max_parts_per_message)",
                413,
            )
        total += len(parts)
        if total > per_body:
            raise RequestError(
                f"messages: more than {per_body} parts in one body (max_parts_per_body)", 413
            )


def valid_session_id(value: str) -> str:
    """``value`` when it is a session id the server accepts; else RequestError (400)."""
    if not SESSION_ID.match(value):
        raise RequestError(
            "the chat id must be 1-128 characters: letters, digits and _ . : - "
            "(starting with a letter or digit)"
        )
    return value


def _last_parts(request: ChatRequest) -> tuple[int, list[Any]]:
    n = len(request.messages) - 1
    parts = request.messages[-1].parts
    for k, part in enumerate(parts):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise RequestError(f"messages[{n}].parts[{k}]: a part is an object with a type")
    return n, parts


def user_parts_in(request: ChatRequest) -> tuple[list[TextPartIn], list[FilePartIn]]:
    """The text and file parts of the last message, each parsed strictly
    (RequestError 400 naming the field of one that does not fit); other parts are
    ignored."""
    n, parts = _last_parts(request)
    texts: list[TextPartIn] = []
    files: list[FilePartIn] = []
    for k, part in enumerate(parts):
        at = f"messages[{n}].parts[{k}]"
        if part["type"] == "text":
            texts.append(parse(TextPartIn, part, "a text part", 400, at))
        elif part["type"] == "file":
            files.append(
                parse(FilePartIn, part, "a file part needs a url and a mediaType", 400, at)
            )
    return texts, files


def new_input(request: ChatRequest) -> tuple[str, list[FilePartIn]]:
    """The text of the last message of ``request``, which must be the user's (what
    this turn asks), and its file parts.

    Raises RequestError (400) when the last message is not a user message (a front
    end sending client-side tool results or approval answers: not taken today, see
    the module docstring), has neither text nor a file part, or has a part of the
    wrong shape; (413) when it is longer than :data:`MAX_PROMPT_CHARS`. The text
    may be empty beside files.
    """
    message = request.messages[-1]
    if message.role != "user":
        raise RequestError(
            f"the last message must be the user's or the assistant's answering tool "
            f"approvals (got role {message.role!r}); client-side tool results are not taken"
        )
    texts, files = user_parts_in(request)
    text = "\n\n".join(t.text for t in texts if t.text.strip())
    if not text and not files:
        raise RequestError("the last user message has no text part")
    if len(text) > MAX_PROMPT_CHARS:
        raise RequestError(f"the message is longer than {MAX_PROMPT_CHARS} characters", 413)
    return text, files


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

    Raises RequestError (400) when the message has no such part, when a part's
    ``toolCallId`` and ``approval`` are not ``{"id": str, "approved": bool,
    "reason"?: str}`` (the field named), or when two answers for one approval or
    one tool call disagree.
    """
    n, parts = _last_parts(request)
    found: list[ApprovalResponse] = []
    by_approval: dict[str, bool] = {}
    by_call: dict[str, bool] = {}
    for k, part in enumerate(parts):
        if part.get("state") != "approval-responded":
            continue
        kind = part["type"]
        if not (kind.startswith("tool-") or kind == "dynamic-tool"):
            continue
        at = f"messages[{n}].parts[{k}]"
        tool = parse(ToolPartIn, part, "an approval-responded tool part", 400, at)
        approval = tool.approval
        for seen, key, named in (
            (by_approval, approval.id, "approval"),
            (by_call, tool.toolCallId, "tool call"),
        ):
            if seen.setdefault(key, approval.approved) != approval.approved:
                raise RequestError(
                    f"messages[{n}].parts[{k}]: {named} {key!r} is both approved and denied "
                    "in this message; nothing was decided"
                )
        found.append(
            ApprovalResponse(
                approval.id,
                tool.toolCallId,
                approval.approved,
                approval.reason[:MAX_REASON_CHARS] if approval.reason is not None else None,
            )
        )
    if not found:
        raise RequestError(
            "the last message is the assistant's but answers no approval request "
            "(no tool part in state approval-responded); send a user message"
        )
    return request.messages[-1].id, found
