"""The HTTP layer: send an :class:`HTTPRequest` with httpx, feed a decoder.

This is the only module that does network I/O for model calls. It reads SSE with
httpx-sse, NDJSON with httpx's line iterator and whole bodies with ``aread``, and
turns what goes wrong on the wire into the rules of the stop vocabulary:

* a connection that fails, resets or goes idle (no bytes for ``idle_timeout``
  seconds, httpx's read timeout) **after** output arrived ends the response as
  INTERRUPTED with the text kept (``detail["transport_error"]``);
* the same **before** any output raises :class:`~zett_agent.errors.TransportError`
  (retryable: nothing was received).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import httpx
from httpx_sse import EventSource, SSEError

from zett_agent.errors import TransportError
from zett_agent.protocols.base import Decoder, HTTPRequest, ModelResponse, StreamEvent
from zett_agent.stop import StopReason

__all__ = ["send"]


async def send(
    client: httpx.AsyncClient,
    url: str,
    request: HTTPRequest,
    headers: Mapping[str, str],
    decoder: Decoder,
    *,
    timeout: httpx.Timeout | None = None,
) -> AsyncIterator[StreamEvent | ModelResponse]:
    """Send ``request`` to ``url`` and yield stream events, then one ModelResponse.

    Raises :class:`~zett_agent.errors.ProviderError` (from the decoder) for an
    error status that is not a refusal, and :class:`TransportError` when the
    connection fails before any output. ``timeout`` replaces the client's
    timeouts for this request (a non-streamed answer waits longer than a stream
    may stay idle).
    """
    try:
        async with client.stream(
            request.method,
            url,
            json=dict(request.body),
            headers={**headers, **request.headers},
            params=dict(request.params) or None,
            timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
        ) as response:
            if response.status_code >= 300:
                body = await response.aread()
                yield decoder.decode_error(response.status_code, response.headers, body)
                return
            if request.response_format == "json":
                yield decoder.decode_body(await response.aread())
                return
            try:
                if request.response_format == "sse":
                    async for sse in EventSource(response).aiter_sse():
                        for event in decoder.feed_sse(sse.event, sse.data):
                            yield event
                else:
                    async for line in response.aiter_lines():
                        if line.strip():
                            for event in decoder.feed_line(line):
                                yield event
            except (httpx.TransportError, SSEError) as error:
                if not decoder.builder.has_output:
                    raise TransportError(_describe(error)) from error
                final = decoder.finish()
                yield _interrupted(final, _describe(error))
                return
    except httpx.TransportError as error:
        raise TransportError(_describe(error)) from error
    final = decoder.finish()
    if final.stop_info.detail.get("incomplete_stream") and not decoder.builder.has_output:
        raise TransportError("the stream ended before any output and without a terminal event")
    yield final


def _interrupted(response: ModelResponse, why: str) -> ModelResponse:
    info = response.stop_info
    if info.reason is not StopReason.INTERRUPTED:
        return response
    from dataclasses import replace

    return replace(response, stop_info=info.with_detail(transport_error=why))


def _describe(error: Exception) -> str:
    if isinstance(error, httpx.TimeoutException):
        return f"idle timeout: no data from the provider ({type(error).__name__})"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
