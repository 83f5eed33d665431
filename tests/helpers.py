"""Helpers the protocol tests share: one model call against a ReplayServer, and
SSE bytes decoded sans-IO the way model/_transport.py reads them."""

from __future__ import annotations

import signal
from collections.abc import Iterable
from typing import Any

import pytest

from zett_agent import ModelRequest, ModelResponse, UserMessage
from zett_agent.model import Model
from zett_agent.protocols._base import Decoder
from zett_agent.protocols._framing import SSEFramer
from zett_agent.testing import ReplayServer, Reply
from zett_agent.vendors import Vendor


def default_sigint() -> None:
    """``preexec_fn`` of a child the test sends SIGINT (Ctrl-C): the default SIGINT
    disposition, whatever this process has. A suite run as a background job ignores
    SIGINT, children inherit that, and a Python started with SIGINT ignored never
    raises KeyboardInterrupt: the Ctrl-C tests would wait for their timeouts."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def hello(model: str = "m") -> ModelRequest:
    """The smallest request: one user message."""
    return ModelRequest(model=model, messages=[UserMessage("hi")])


async def replay_call(
    vendor: Vendor | str,
    replies: Iterable[Reply],
    request: ModelRequest | None = None,
    *,
    model: str = "m",
    **options: Any,
) -> tuple[ModelResponse, ReplayServer]:
    """``Model(vendor, model, base_url=<server>, **options).complete(request)``
    against a ReplayServer playing ``replies``; the response and the server."""
    with ReplayServer(replies) as server:
        client = Model(vendor, model, base_url=server.url, **options)
        try:
            response = await client.complete(request or hello(model))
        finally:
            await client.aclose()
    return response, server


async def replay_raises(
    error: type[Exception],
    vendor: Vendor | str,
    replies: Iterable[Reply],
    request: ModelRequest | None = None,
    *,
    model: str = "m",
    **options: Any,
) -> tuple[Exception, ReplayServer]:
    """As :func:`replay_call`, expecting ``error``; the exception and the server."""
    with ReplayServer(replies) as server:
        client = Model(vendor, model, base_url=server.url, **options)
        try:
            with pytest.raises(error) as caught:
                await client.complete(request or hello(model))
        finally:
            await client.aclose()
    return caught.value, server


def decoded(response: ModelResponse) -> tuple[Any, ...]:
    """What a decoder made of a response, to compare two decodes of one body (at
    different chunk splits): text, reasoning, calls, stop, usage and record."""
    return (
        response.text,
        response.reasoning,
        response.tool_calls,
        response.stop_info,
        response.usage,
        response.provider_record,
    )


def decode_sse_chunks(decoder: Decoder, chunks: Iterable[bytes]) -> ModelResponse:
    """Sans-IO: SSE bytes, split as given, framed as the transport frames them."""
    framer = SSEFramer(1 << 30)
    for chunk in chunks:
        for event, data in framer.feed(chunk):
            decoder.feed_sse(event, data)
    return decoder.finish()
