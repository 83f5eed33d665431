"""What a durable run checkpoints, as JSON text: model answers, errors, tool results.

A checkpoint is written by DBOS as the output of a step and read back, instead of
running the step again, when the run is replayed after a crash. Every checkpoint
here is JSON text, never a pickle naming a Python class (a module that moves must not
strand a checkpointed run), and messages in it are the JSON of the session codec
(:func:`~zett_agent._messages.message_to_dict`), so it holds exactly what a stored
session holds and never a key, a header or a client. The live run uses the decoded
checkpoint too, so a replay stores byte-identical messages (keyed appends would
refuse anything else).

=================  =========================================================
model call         ``{"response": <assistant message whose stop is the call's
                   whole StopInfo, END_TURN and TOOL_USE included>}`` or
                   ``{"error": {"class", "message", "provider", "status",
                   "error_type", "code", "retry_after", "body"}}``
run output         the final assistant message
tool call          ``{"result": <tool result message>}``; its parts' bytes over
                   the threshold are put in the session store's blobs first
                   (:meth:`SessionStore.put_blob`) and referred to by hash
                   (``{"blob": <sha256>, "size"}``), so a checkpoint never
                   holds a large image twice; smaller ones are inline
hooks              ``pending_messages``: ``{"messages": [...]}``; ``before_tool``,
                   ``after_tool``: ``{"result": <tool result> | None}``;
                   ``on_complete``: the reason or None; ``before_model``:
                   ``{"request": <request> | None}`` (its messages in the session
                   codec, every other field as JSON); ``recover``:
                   ``{"recovery": {"action": "retry" | "continue" | "end", ...} |
                   None}`` (a recovery naming a model is refused)
=================  =========================================================
"""

from __future__ import annotations

import json
from typing import Any

from zett_agent import errors
from zett_agent._exchange import ModelRequest, ModelResponse, OutputFormat, ToolSpec
from zett_agent._messages import (
    AssistantMessage,
    Message,
    ToolResultMessage,
    message_from_dict,
    message_to_dict,
    storable_json,
)
from zett_agent._parts import BlobReader
from zett_agent._recovery import ContinueWith, EndRun, Recovery, RetryRequest
from zett_agent.stop import StopInfo
from zett_agent.vendors._rows import ServerTool

__all__ = [
    "decode_final",
    "decode_messages",
    "decode_model_call",
    "decode_recovery",
    "decode_request",
    "decode_tool_result",
    "encode_final",
    "encode_messages",
    "encode_model_error",
    "encode_model_response",
    "encode_recovery",
    "encode_request",
    "encode_tool_result",
]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_model_response(response: ModelResponse) -> str:
    """The checkpoint of a model call that answered (whatever its stop)."""
    message = AssistantMessage(
        text=response.text,
        tool_calls=response.tool_calls,
        stop=response.stop_info,
        usage=response.usage,
        reasoning=response.reasoning,
        model=response.model,
        provider_record=response.provider_record,
    )
    return _dumps({"response": message_to_dict(message)})


def encode_model_error(error: Exception) -> str:
    """The checkpoint of a model call that failed with no output (after its retries)."""
    facts: dict[str, Any] = {"class": type(error).__name__, "message": str(error)}
    if isinstance(error, errors.ProviderError):
        body = storable_json(error.body)  # an error body of any depth: bounded
        facts.update(
            message=error.message,
            provider=error.provider,
            status=error.status,
            error_type=error.error_type,
            code=error.code,
            retry_after=error.retry_after,
            body=body if _is_json(body) else str(body),
        )
    return _dumps({"error": facts})


def decode_model_call(text: str) -> ModelResponse | Exception:
    """The response a checkpoint holds, or the exception to raise in its place:
    the same ``zett_agent.errors`` class with the same fields; an exception from
    outside that tree comes back as :class:`~zett_agent.errors.TransportError`
    naming its class."""
    data = json.loads(text)
    if "response" in data:
        message = message_from_dict(data["response"])
        assert isinstance(message, AssistantMessage) and message.stop is not None
        return ModelResponse(
            text=message.text,
            tool_calls=message.tool_calls,
            stop_info=message.stop,
            usage=message.usage,
            reasoning=message.reasoning,
            model=message.model,
            provider_record=message.provider_record,
        )
    facts = data["error"]
    cls = getattr(errors, facts["class"], None)
    if isinstance(cls, type) and issubclass(cls, errors.ProviderError):
        return cls(
            facts["message"],
            provider=facts.get("provider"),
            status=facts.get("status"),
            error_type=facts.get("error_type"),
            code=facts.get("code"),
            retry_after=facts.get("retry_after"),
            body=facts.get("body"),
        )
    if isinstance(cls, type) and issubclass(cls, errors.ZettError):
        try:
            return cls(facts["message"])
        except TypeError:
            pass
    return errors.TransportError(f"{facts['class']}: {facts['message']}")


def encode_final(message: AssistantMessage) -> str:
    """A run's output: its final message, as stored."""
    return _dumps(message_to_dict(message))


def decode_final(text: str) -> AssistantMessage:
    message = message_from_dict(json.loads(text))
    assert isinstance(message, AssistantMessage)
    return message


def encode_tool_result(
    result: ToolResultMessage | None, blobs: dict[str, bytes | None] | None = None
) -> str:
    """A tool call's checkpoint; with ``blobs``, its large parts' bytes are put there
    (by SHA-256) and referred to (the caller stores them before the checkpoint)."""
    return _dumps({"result": None if result is None else message_to_dict(result, blobs)})


def decode_tool_result(text: str, reader: BlobReader | None = None) -> ToolResultMessage | None:
    """The result a checkpoint holds; ``reader`` reads its parts kept by hash."""
    data = json.loads(text)["result"]
    if data is None:
        return None
    message = message_from_dict(data, reader)
    assert isinstance(message, ToolResultMessage)
    return message


def encode_messages(messages: list[Message]) -> str:
    return _dumps({"messages": [message_to_dict(m) for m in messages]})


def decode_messages(text: str) -> list[Message]:
    return [message_from_dict(m) for m in json.loads(text)["messages"]]


def _request_to_dict(request: ModelRequest) -> dict[str, Any]:
    return {
        "model": request.model,
        "messages": [message_to_dict(m) for m in request.messages],
        "tools": [
            {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
            for t in request.tools
        ],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "stop_sequences": list(request.stop_sequences),
        "tool_choice": request.tool_choice,
        "stream": request.stream,
        "extra_body": dict(request.extra_body),
        "reasoning": request.reasoning,
        "server_tools": [
            {"kind": s.kind, "options": dict(s.options)} for s in request.server_tools
        ],
        "prompt_cache": request.prompt_cache,
        "prompt_cache_key": request.prompt_cache_key,
        "output": None
        if request.output is None
        else {
            "name": request.output.name,
            "schema": dict(request.output.schema),
            "description": request.output.description,
        },
    }


def _request_from_dict(data: dict[str, Any]) -> ModelRequest:
    output = data.get("output")
    return ModelRequest(
        model=data["model"],
        messages=[message_from_dict(m) for m in data["messages"]],
        tools=[ToolSpec(t["name"], t["description"], t["parameters"]) for t in data["tools"]],
        max_tokens=data.get("max_tokens"),
        temperature=data.get("temperature"),
        stop_sequences=list(data.get("stop_sequences") or ()),
        tool_choice=data.get("tool_choice"),
        stream=data.get("stream", True),
        extra_body=dict(data.get("extra_body") or {}),
        reasoning=data.get("reasoning"),
        server_tools=tuple(
            ServerTool(s["kind"], s.get("options") or {}) for s in data.get("server_tools") or ()
        ),
        prompt_cache=data.get("prompt_cache", False),
        prompt_cache_key=data.get("prompt_cache_key"),
        output=None
        if output is None
        else OutputFormat(output["name"], output["schema"], output.get("description", "")),
    )


def encode_request(request: ModelRequest | None) -> str:
    """A ``before_model`` hook's checkpoint: the changed request, or None (unchanged).

    Raises ``ValueError`` / ``TypeError`` when a field holds what JSON cannot
    (``extra_body`` and schemas are JSON by contract)."""
    return _dumps({"request": None if request is None else _request_to_dict(request)})


def decode_request(text: str) -> ModelRequest | None:
    data = json.loads(text)["request"]
    return None if data is None else _request_from_dict(data)


def encode_recovery(recovery: Recovery | None) -> str:
    """A ``recover`` hook's checkpoint: ``{"recovery": None}`` or the recovery, by
    ``action`` (``retry``: the request; ``continue``: the messages, ``join``,
    ``max_tokens``; ``end``: the stop), each with its ``note``. A retry that names a
    model cannot be checkpointed (the model would carry its key): the caller
    refuses it first."""
    if recovery is None:
        return _dumps({"recovery": None})
    data: dict[str, Any]
    if isinstance(recovery, RetryRequest):
        data = {"action": "retry", "request": _request_to_dict(recovery.request)}
    elif isinstance(recovery, ContinueWith):
        data = {
            "action": "continue",
            "messages": [message_to_dict(m) for m in recovery.messages],
            "join": recovery.join,
            "max_tokens": recovery.max_tokens,
        }
    else:
        data = {"action": "end", "stop": recovery.stop.to_dict()}
    data["note"] = dict(recovery.note)
    return _dumps({"recovery": data})


def decode_recovery(text: str) -> Recovery | None:
    data = json.loads(text)["recovery"]
    if data is None:
        return None
    note = dict(data.get("note") or {})
    action = data["action"]
    if action == "retry":
        return RetryRequest(_request_from_dict(data["request"]), note=note)
    if action == "continue":
        return ContinueWith(
            [message_from_dict(m) for m in data["messages"]],
            join=data.get("join", False),
            max_tokens=data.get("max_tokens"),
            note=note,
        )
    if action == "end":
        return EndRun(StopInfo.from_dict(data["stop"]), note=note)
    raise ValueError(f"not a checkpointed recovery (action={action!r})")


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True
