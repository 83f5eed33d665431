"""What ``POST /api/a2a`` accepts: JSON-RPC error codes and the methods' params,
parsed strictly (A2A 1.0's protobuf JSON names: camelCase, enums by name).

An unknown field of a request, its message or a part is ``-32602`` naming the field
(``params.message.parts.0.kind``: a v0.3 client's ``kind``); ``approved`` is a JSON
boolean, never a string.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from zett_agent.serve._request import MAX_REASON_CHARS

__all__ = [
    "INVALID_PARAMS",
    "Approvals",
    "MessageIn",
    "RPCError",
    "SendParams",
    "TaskParams",
    "parse_params",
]

# JSON-RPC and A2A error codes (A2A 1.0, "JSON-RPC error codes")
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL = (
    -32700, -32600, -32601, -32602, -32603,
)  # fmt: skip
TASK_NOT_FOUND, TASK_NOT_CANCELABLE, NO_PUSH, UNSUPPORTED = -32001, -32002, -32003, -32004


class RPCError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------- params


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PartIn(_Strict):
    text: StrictStr | None = None
    data: Any = None
    url: StrictStr | None = None
    raw: StrictStr | None = None
    metadata: dict[str, Any] | None = None
    filename: StrictStr | None = None
    mediaType: StrictStr | None = None  # noqa: N815 (the wire's name)


class MessageIn(_Strict):
    messageId: StrictStr  # noqa: N815
    contextId: StrictStr | None = None  # noqa: N815
    taskId: StrictStr | None = None  # noqa: N815
    role: Literal["ROLE_USER"]
    parts: list[PartIn] = Field(min_length=1)
    metadata: dict[str, Any] | None = None
    extensions: list[StrictStr] | None = None
    referenceTaskIds: list[StrictStr] | None = None  # noqa: N815


class ConfigurationIn(_Strict):
    acceptedOutputModes: list[StrictStr] | None = None  # noqa: N815
    historyLength: int | None = None  # noqa: N815
    returnImmediately: StrictBool | None = None  # noqa: N815 (the call still waits)
    taskPushNotificationConfig: dict[str, Any] | None = None  # noqa: N815 (refused)


class SendParams(_Strict):
    message: MessageIn
    configuration: ConfigurationIn | None = None
    metadata: dict[str, Any] | None = None
    tenant: StrictStr | None = None


class TaskParams(_Strict):
    id: StrictStr
    historyLength: int | None = None  # noqa: N815
    tenant: StrictStr | None = None
    metadata: dict[str, Any] | None = None


class Answer(_Strict):
    approved: StrictBool
    reason: StrictStr | None = Field(default=None, max_length=MAX_REASON_CHARS)


class Approvals(_Strict):
    approvals: dict[str, Answer]


def parse_params(model: type[BaseModel], data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"params.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()[:5]
        )
        raise RPCError(INVALID_PARAMS, problems) from None
