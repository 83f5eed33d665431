"""``zett inspect``: what zett-agent makes of a captured response body, offline.

The body goes through the vendor's protocol decoder sans-IO, exactly as the HTTP
layer feeds it: SSE events (parsed with httpx-sse) to ``feed_sse``, NDJSON lines
to ``feed_line``, a whole JSON body to ``decode_body``, a non-2xx status to
``decode_error``; streams end with ``finish()``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

import httpx
from httpx_sse import EventSource, SSEError

from zett_agent.errors import DecodeError, ProviderError, ZettError
from zett_agent.protocols import get_protocol
from zett_agent.protocols.base import CUT_TOOL_CALLS, ModelResponse, apply_output_limit
from zett_agent.stop import StopReason
from zett_agent.vendors import Vendor

__all__ = [
    "PROTOCOL_CHOICES",
    "BodyFormat",
    "decode_captured",
    "detect_format",
    "error_record",
    "response_record",
]

BodyFormat = Literal["sse", "ndjson", "json"]

PROTOCOL_CHOICES: Mapping[str, str] = {
    "responses": "openai-responses",
    "chat": "openai-chat",
    "messages": "anthropic",
    "gemini": "gemini",
}
"""``--protocol`` value -> wire protocol name."""

_WITHHELD = frozenset({StopReason.REFUSAL, StopReason.INTERRUPTED})


def detect_format(data: bytes, stream: bool | None = None) -> BodyFormat:
    """How to read ``data``: SSE when lines start with ``data:``/``event:``, NDJSON
    when it is several JSON lines, else one JSON body.

    ``stream`` True rules out ``"json"``, False forces it.
    """
    if stream is False:
        return "json"
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    if any(line.startswith(("data:", "event:")) for line in lines):
        return "sse"
    if stream:
        return "ndjson" if any(_is_json_object(line) for line in lines) else "sse"
    if len(lines) > 1 and all(_is_json_object(line) for line in lines):
        return "ndjson"
    return "json"


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def decode_captured(
    vendor: Vendor,
    data: bytes,
    *,
    protocol: str | None = None,
    status: int = 200,
    body_format: BodyFormat = "json",
    max_tokens: int | None = None,
) -> ModelResponse:
    """Decode a captured body as the vendor's protocol (or ``protocol``) would.

    ``max_tokens``: the output limit the request asked for, judged as the agent
    loop does (:func:`~zett_agent.protocols.base.apply_output_limit`).

    Raises :class:`~zett_agent.errors.ProviderError` for an error body,
    :class:`~zett_agent.errors.DecodeError` for a body that cannot be read, and
    :class:`~zett_agent.errors.ConfigError` for an unknown protocol.
    """
    decoder = get_protocol(protocol or vendor.protocol).decoder(vendor)
    try:
        if not 200 <= status < 300:
            return decoder.decode_error(status, {}, data)
        if body_format == "json":
            return apply_output_limit(decoder.decode_body(data), max_tokens)
        if body_format == "sse":
            response = httpx.Response(
                200, content=data, headers={"content-type": "text/event-stream"}
            )
            try:
                for sse in EventSource(response).iter_sse():
                    decoder.feed_sse(sse.event, sse.data)
            except SSEError as error:
                raise DecodeError(f"not a server-sent event stream: {error}") from error
        else:
            for line in data.decode("utf-8", "replace").splitlines():
                if line.strip():
                    decoder.feed_line(line)
        return apply_output_limit(decoder.finish(), max_tokens)
    except NotImplementedError as error:
        raise DecodeError(f"{error}; try --stream/--no-stream or --protocol") from error


def response_record(response: ModelResponse) -> dict[str, Any]:
    """The ``zett inspect --json`` object for a decoded response.

    ``reason`` is the StopReason value also for a normal end. For a REFUSAL or
    INTERRUPTED response ``tool_calls`` is empty and ``withheld_tool_calls``
    names the calls that came with it. ``cut_tool_calls`` names the calls the wire
    did not finish (never run; each ``tool_calls`` entry says ``closed``).
    """
    info = response.stop_info
    calls = response.tool_calls
    withheld: list[str] = []
    if info.reason in _WITHHELD:
        withheld = [c.name for c in calls]
        if not withheld:
            already = info.detail.get("withheld_tool_calls")
            if isinstance(already, list):
                withheld = [str(name) for name in already]
        calls = ()
    return {
        "reason": info.reason.value,
        "raw": info.raw,
        "category": info.category,
        "message": info.message,
        "recommended_model": info.recommended_model,
        "detail": _jsonable(dict(info.detail)),
        "text": response.text,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "closed": c.closed}
            for c in calls
        ],
        "withheld_tool_calls": withheld,
        "cut_tool_calls": [str(n) for n in info.detail.get(CUT_TOOL_CALLS, ())],
    }


def error_record(error: ZettError) -> dict[str, Any]:
    """A JSON-compatible description of a typed error (``zett inspect --json``)."""
    record: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, ProviderError):
        record.update(
            provider=error.provider,
            status=error.status,
            error_type=error.error_type,
            code=error.code,
            provider_message=error.message,
            retryable=error.retryable,
            retry_after=error.retry_after,
        )
    return {"error": _jsonable(record)}


def _jsonable(value: Any) -> Any:
    result: Any = json.loads(json.dumps(value, default=str))
    return result
