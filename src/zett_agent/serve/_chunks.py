"""The chunks of the AI SDK's UI message stream protocol v1 that zett sends, as types.

One TypedDict per chunk type (``ai`` 7.x's ``UIMessageChunk``, pinned in
``tests/node/package.json``), keys (camelCase: the SDK's) in the order they are
sent, and :data:`Chunk`, their union. For type checkers only: at run time a chunk
is a plain dict, sent as it is (:mod:`._stream` makes them).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

__all__ = [
    "AbortChunk",
    "Chunk",
    "DataElicitationChunk",
    "DataOutputChunk",
    "DataStopChunk",
    "ErrorChunk",
    "FinishChunk",
    "FinishStepChunk",
    "MessageMetadata",
    "OutputData",
    "ReasoningDeltaChunk",
    "ReasoningEndChunk",
    "ReasoningStartChunk",
    "StartChunk",
    "StartStepChunk",
    "StopData",
    "StopMetadata",
    "TextDeltaChunk",
    "TextEndChunk",
    "TextStartChunk",
    "ToolApprovalRequestChunk",
    "ToolApprovalResponseChunk",
    "ToolInputAvailableChunk",
    "ToolInputDeltaChunk",
    "ToolInputErrorChunk",
    "ToolInputStartChunk",
    "ToolOutputAvailableChunk",
    "ToolOutputDeniedChunk",
    "ToolOutputErrorChunk",
]


class StopMetadata(TypedDict):
    """The ``stop`` of a message's metadata (:func:`stop_metadata`)."""

    reason: str
    raw: str | None
    category: str | None
    message: str | None


class MessageMetadata(TypedDict):
    """A message's ``messageMetadata`` / ``metadata`` (:func:`message_metadata`)."""

    finishReason: str | None
    stop: StopMetadata | None


class StopData(TypedDict):
    """The ``data`` of ``data-stop`` (:func:`stop_data`): :meth:`StopInfo.to_dict`
    with ``describe``."""

    reason: str
    raw: str | None
    category: str | None
    message: str | None
    recommended_model: str | None
    detail: dict[str, Any]
    describe: str


class OutputData(TypedDict):
    """The ``data`` of ``data-output``: a typed result's JSON and whether it is partial."""

    value: Any
    partial: bool


class StartChunk(TypedDict):
    type: Literal["start"]
    messageId: str
    messageMetadata: MessageMetadata


class StartStepChunk(TypedDict):
    type: Literal["start-step"]


class FinishStepChunk(TypedDict):
    type: Literal["finish-step"]


class TextStartChunk(TypedDict):
    type: Literal["text-start"]
    id: str


class TextDeltaChunk(TypedDict):
    type: Literal["text-delta"]
    id: str
    delta: str


class TextEndChunk(TypedDict):
    type: Literal["text-end"]
    id: str


class ReasoningStartChunk(TypedDict):
    type: Literal["reasoning-start"]
    id: str


class ReasoningDeltaChunk(TypedDict):
    type: Literal["reasoning-delta"]
    id: str
    delta: str


class ReasoningEndChunk(TypedDict):
    type: Literal["reasoning-end"]
    id: str


class ToolInputStartChunk(TypedDict):
    type: Literal["tool-input-start"]
    toolCallId: str
    toolName: str


class ToolInputDeltaChunk(TypedDict):
    type: Literal["tool-input-delta"]
    toolCallId: str
    inputTextDelta: str


class ToolInputAvailableChunk(TypedDict):
    type: Literal["tool-input-available"]
    toolCallId: str
    toolName: str
    input: Any


class ToolInputErrorChunk(TypedDict):
    type: Literal["tool-input-error"]
    toolCallId: str
    toolName: str
    input: Any
    errorText: str


class ToolOutputAvailableChunk(TypedDict):
    type: Literal["tool-output-available"]
    toolCallId: str
    output: Any


class ToolOutputErrorChunk(TypedDict):
    type: Literal["tool-output-error"]
    toolCallId: str
    errorText: str


class ToolOutputDeniedChunk(TypedDict):
    type: Literal["tool-output-denied"]
    toolCallId: str


class ToolApprovalRequestChunk(TypedDict):
    type: Literal["tool-approval-request"]
    approvalId: str
    toolCallId: str


class ToolApprovalResponseChunk(TypedDict):
    type: Literal["tool-approval-response"]
    approvalId: str
    approved: bool
    reason: NotRequired[str]


class DataStopChunk(TypedDict):
    type: Literal["data-stop"]
    data: StopData


class DataOutputChunk(TypedDict):
    type: Literal["data-output"]
    id: Literal["output"]
    data: OutputData


class DataElicitationChunk(TypedDict):
    type: Literal["data-elicitation"]
    id: str
    data: dict[str, Any]


class ErrorChunk(TypedDict):
    type: Literal["error"]
    errorText: str


class FinishChunk(TypedDict):
    type: Literal["finish"]
    finishReason: str
    messageMetadata: NotRequired[MessageMetadata]


class AbortChunk(TypedDict):
    type: Literal["abort"]
    reason: str


Chunk: TypeAlias = (
    StartChunk
    | StartStepChunk
    | FinishStepChunk
    | TextStartChunk
    | TextDeltaChunk
    | TextEndChunk
    | ReasoningStartChunk
    | ReasoningDeltaChunk
    | ReasoningEndChunk
    | ToolInputStartChunk
    | ToolInputDeltaChunk
    | ToolInputAvailableChunk
    | ToolInputErrorChunk
    | ToolOutputAvailableChunk
    | ToolOutputErrorChunk
    | ToolOutputDeniedChunk
    | ToolApprovalRequestChunk
    | ToolApprovalResponseChunk
    | DataStopChunk
    | DataOutputChunk
    | DataElicitationChunk
    | ErrorChunk
    | FinishChunk
    | AbortChunk
)
"""Every chunk :class:`UIMessageStream` sends (tell them apart by ``type``)."""
