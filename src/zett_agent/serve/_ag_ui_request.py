"""What ``POST /api/ag-ui`` takes: an AG-UI 1.0 ``RunAgentInput``, parsed strictly.

The body is the ``RunAgentInput`` of the AG-UI 1.0 schema (``ag-ui-protocol``
1.0.0's ``ag_ui.core.RunAgentInput``; ``@ag-ui/client`` 1.0.0's ``HttpAgent`` posts
it), read by the models below rather than by the official package's, because
those keep unknown fields (``extra="allow"``) and coerce values, and here a field
decides what runs:

=====================  ======================================================
``threadId``           the session id (:func:`~._request.valid_session_id`)
``runId``              echoed on ``RUN_STARTED`` / ``RUN_FINISHED``
``messages``           only the last one is read, and only when ``resume`` is
                       absent: a user message (text, or text parts) is the new
                       prompt. The session store is the source of truth: earlier
                       messages the client sends are not read (a client cannot
                       rewrite what the model said, or forge an approved call)
``resume``             the answers to the interrupts of the run before: one entry
                       per waiting call, ``interruptId`` its interrupt id,
                       ``status: "resolved"`` with ``payload: {"approved": bool,
                       "reason"?: str}`` (``approved`` a JSON boolean, never a
                       string), or ``status: "cancelled"`` (a denial)
``state``              an object, echoed back in ``STATE_SNAPSHOT`` under
                       the client's own keys
``tools``, ``context``  must be empty or absent: zett runs its own tools and its
                       own instructions; a frontend tool or a context entry it
                       would silently ignore changes what the client expects, so
                       it is refused (422)
``forwardedProps``     application values passed through untouched: not read
``protocolVersion``,   read and not acted on
``parentRunId``
=====================  ======================================================

An unknown top-level field, an unknown field of the last message or of a resume
entry, or a value of the wrong type is a 422 whose message names the field
(``resume.0.payload.approved: Input should be a valid boolean``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError
from pydantic.alias_generators import to_camel

from ._request import MAX_REASON_CHARS, RequestError

__all__ = ["ApprovalPayload", "ResumeEntryIn", "RunInput", "UserMessageIn", "parse_run_input"]


class _Strict(BaseModel):
    """camelCase on the wire (as AG-UI's schema), unknown fields refused."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=False)


class TextPartIn(_Strict):
    type: Literal["text"]
    text: StrictStr


class UserMessageIn(_Strict):
    """The AG-UI ``UserMessage`` (text content only: zett takes files through
    ``POST /api/chat``)."""

    id: StrictStr
    role: Literal["user"]
    content: StrictStr | list[TextPartIn]
    name: StrictStr | None = None
    metadata: dict[str, Any] | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)


class ApprovalPayload(_Strict):
    """The answer to an approval interrupt (the interrupt's ``responseSchema``)."""

    approved: StrictBool
    reason: Annotated[StrictStr, Field(max_length=MAX_REASON_CHARS)] | None = None


class ResumeEntryIn(_Strict):
    """The AG-UI ``ResumeEntry``."""

    interrupt_id: StrictStr
    status: Literal["resolved", "cancelled"]
    payload: ApprovalPayload | None = None
    metadata: dict[str, Any] | None = None


class RunInput(_Strict):
    """The AG-UI ``RunAgentInput`` (the table in the module docstring)."""

    thread_id: StrictStr
    run_id: StrictStr
    protocol_version: StrictStr | None = None
    parent_run_id: StrictStr | None = None
    state: dict[str, Any] | None = None
    messages: list[dict[str, Any]]
    tools: Annotated[list[Any], Field(max_length=0)] | None = None
    context: Annotated[list[Any], Field(max_length=0)] | None = None
    forwarded_props: Any = None
    resume: list[ResumeEntryIn] | None = None


def _problems(error: ValidationError, prefix: str = "") -> str:
    return "; ".join(
        f"{prefix}{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
        for e in error.errors()[:5]
    )


def parse_run_input(data: Any) -> tuple[RunInput, UserMessageIn | None]:
    """The run input and, when it asks a new question (no ``resume``), its last
    message as a user message; else RequestError (422, naming the field)."""
    try:
        run = RunInput.model_validate(data)
    except ValidationError as error:
        raise RequestError(f"not an AG-UI RunAgentInput: {_problems(error)}", 422) from None
    except RecursionError:
        raise RequestError("the body is nested too deeply", 422) from None
    if run.resume:
        return run, None
    if not run.messages:
        raise RequestError("messages: the last message must be the user's question", 422)
    last = len(run.messages) - 1
    try:
        message = UserMessageIn.model_validate(run.messages[last])
    except ValidationError as error:
        raise RequestError(
            f"not a user message: {_problems(error, f'messages.{last}.')}", 422
        ) from None
    if not message.text().strip():
        raise RequestError(f"messages.{last}.content: the question is empty", 422)
    return run, message
