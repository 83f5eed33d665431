"""A server asks zett's model for a completion during a tool call: MCP sampling
(``sampling/createMessage``), answered through zett's own model layer.

Opt-in per server: ``MCPServer(sampling=N)`` lets the server make at most ``N``
sampling requests during one tool call (0, the default: sampling is not declared
and every request is refused), answered by ``MCPTools(sampling_model=...)`` with
at most ``sampling_max_tokens`` output tokens. A request outside a gated tool call
of that server is refused (the tool gate, :mod:`zett_agent.tools._gate`, is never
bypassed). Text, and images described as text, are what is sent; a tool request
(``tools`` in the params) is answered without tools.

The result's ``stopReason`` says why zett's model stopped, in MCP's words where
MCP has them and in zett's vocabulary where it does not (the field is an open
string), so the server hears what the host hears (:func:`stop_reason`):

===================  ===============================================================
zett ``StopReason``  MCP ``stopReason``
===================  ===============================================================
END_TURN             ``endTurn``; ``stopSequence`` when the raw value says a stop
                     sequence ended it (Anthropic ``stop_sequence``, or a
                     ``stop_sequence`` in ``detail``)
MAX_OUTPUT           ``maxTokens``
TOOL_USE             ``toolUse`` (protocol 2025-11-25 and later; before: ``tool_use``)
any other            zett's own value: ``refusal``, ``context_full``,
                     ``interrupted``, ``paused``, ``other``...
===================  ===============================================================

``_meta["zett-agent/stop"]`` carries ``reason`` (zett's value), ``raw`` (the
provider's value) and ``category`` (e.g. a refusal's policy category).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, assert_never

import mcp_types

from zett_agent._exchange import ModelRequest, ModelResponse
from zett_agent._messages import AssistantMessage, Message, SystemMessage, UserMessage
from zett_agent.stop import StopInfo, StopReason

__all__ = ["STOP_META", "sample", "stop_reason"]

STOP_META = "zett-agent/stop"
"""The ``_meta`` key of a sampling result that says why zett's model stopped."""

_TOOL_USE_SINCE = "2025-11-25"


def stop_reason(stop: StopInfo, protocol_version: str | None = None) -> str:
    """MCP's ``stopReason`` for zett's ``stop`` (the table in the module docstring)."""
    match stop.reason:
        case StopReason.END_TURN:
            sequence = stop.raw == "stop_sequence" or bool(stop.detail.get("stop_sequence"))
            return "stopSequence" if sequence else "endTurn"
        case StopReason.MAX_OUTPUT:
            return "maxTokens"
        case StopReason.TOOL_USE:
            modern = protocol_version is None or protocol_version >= _TOOL_USE_SINCE
            return "toolUse" if modern else "tool_use"
        case (
            StopReason.CONTEXT_FULL
            | StopReason.REFUSAL
            | StopReason.INTERRUPTED
            | StopReason.PAUSED
            | StopReason.OTHER
        ):
            return stop.reason.value
        case _:
            assert_never(stop.reason)


def _text_of(content: Any) -> str:
    items = content if isinstance(content, list) else [content]
    parts: list[str] = []
    for item in items:
        match item:
            case mcp_types.TextContent(text=text):
                parts.append(text)
            case mcp_types.ImageContent(mime_type=mime) | mcp_types.AudioContent(mime_type=mime):
                parts.append(f"[{getattr(item, 'type', 'media')} {mime}]")
            case _:
                parts.append(f"[{getattr(item, 'type', 'content')} content]")
    return "\n".join(parts)


def to_request(
    params: mcp_types.CreateMessageRequestParams, model_name: str, max_tokens: int
) -> ModelRequest:
    """The zett request for a server's sampling params."""
    messages: list[Message] = []
    if params.system_prompt:
        messages.append(SystemMessage(params.system_prompt))
    for message in params.messages:
        text = _text_of(message.content)
        if message.role == "assistant":
            messages.append(AssistantMessage(text))
        else:
            messages.append(UserMessage(text))
    return ModelRequest(
        model=model_name,
        messages=messages,
        max_tokens=min(params.max_tokens, max_tokens),
        temperature=params.temperature,
        stop_sequences=list(params.stop_sequences or []),
    )


async def sample(
    model: Any,
    params: mcp_types.CreateMessageRequestParams,
    *,
    max_tokens: int,
    protocol_version: str | None,
    redact: Any = str,
    on_response: Callable[[ModelResponse], None] | None = None,
) -> mcp_types.CreateMessageResult:
    """Ask ``model`` (a zett ``ModelClient``) and answer as MCP says;
    ``on_response`` is given the model's response (its usage: the run's ledger)."""
    request = to_request(params, model.name, max_tokens)
    response: ModelResponse | None = None
    async for item in model.stream(request):
        if isinstance(item, ModelResponse):
            response = item
    assert response is not None, "a model's stream ends with its response"
    if on_response is not None:
        on_response(response)
    stop = response.stop_info  # normal ends too: their raw value says "stop sequence"
    meta = {STOP_META: stop.to_dict(fields=("reason", "raw", "category"))}
    return mcp_types.CreateMessageResult(
        role="assistant",
        content=mcp_types.TextContent(type="text", text=redact(response.text)),
        model=model.name,
        stop_reason=stop_reason(stop, protocol_version),
        _meta=meta,
    )
