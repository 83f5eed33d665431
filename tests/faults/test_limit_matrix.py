"""Size limits after output, and compressed streams: every wire protocol, real socket.

Past a :class:`~zett_agent.model._limits.ReadLimits` limit a call that had output ends
INTERRUPTED with the text kept and ``detail["limit"]`` naming the limit; a whole
body over ``max_body_bytes`` raises :class:`ResponseLimitError`, not retried. A
gzip-compressed stream reads as the same answer.
"""

from __future__ import annotations

import gzip
from typing import Any

import anyio
import pytest

from zett_agent import Model, ModelRequest, ModelResponse, StopReason, UserMessage
from zett_agent.errors import ResponseLimitError
from zett_agent.model import ReadLimits
from zett_agent.testing import ReplayServer, Reply

from .test_fault_matrix import TEXTS, unused
from .wire import WIRES, Wire

KiB = 1024


@pytest.fixture(params=list(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


async def complete(server: ReplayServer, wire: Wire, **options: Any) -> ModelResponse:
    options.setdefault("max_retries", 2)
    model = Model(wire.vendor, "m", base_url=server.url, api_key="test-key", **options)
    try:
        with anyio.fail_after(15):
            return await model.complete(ModelRequest("m", [UserMessage("hi")]))
    finally:
        await model.aclose()


def assert_cut(response: ModelResponse, limit: str) -> None:
    info = response.stop_info
    assert info.reason is StopReason.INTERRUPTED, info
    assert info.detail["limit"] == limit and limit in (info.message or "")
    assert response.text == TEXTS[0] + TEXTS[1]
    assert response.tool_calls == ()


async def test_oversized_event_after_text_is_interrupted(wire: Wire) -> None:
    chunks = [*wire.head(), *wire.text(TEXTS[0]), *wire.text(TEXTS[1])]
    chunks += wire.text("x" * 200 * KiB)  # one event over the limit
    with ReplayServer([wire.reply([*chunks, *wire.tail("", None)]), unused()]) as server:
        response = await complete(server, wire, limits=ReadLimits(max_event_bytes=64 * KiB))
    assert_cut(response, "max_event_bytes")
    assert len(server.requests) == 1


async def test_stream_over_the_body_limit_is_interrupted(wire: Wire) -> None:
    chunks = [*wire.head(), *wire.text(TEXTS[0]), *wire.text(TEXTS[1])]
    chunks += [c for _ in range(40) for c in wire.text("", padding="p" * 4 * KiB)]
    with ReplayServer([wire.reply([*chunks, *wire.tail("", None)]), unused()]) as server:
        response = await complete(server, wire, limits=ReadLimits(max_body_bytes=64 * KiB))
    assert_cut(response, "max_body_bytes")


async def test_a_flood_without_events_after_text_is_interrupted(wire: Wire) -> None:
    chunks = [*wire.head(), *wire.text(TEXTS[0]), *wire.text(TEXTS[1])]
    chunks += [wire.keepalive("comment") * 512] * 200  # 100 KiB (NDJSON) to 1.4 MB
    with ReplayServer([wire.reply([*chunks, *wire.tail("", None)]), unused()]) as server:
        response = await complete(server, wire, limits=ReadLimits(max_skipped_bytes=32 * KiB))
    assert_cut(response, "max_skipped_bytes")


async def test_a_whole_body_over_the_limit_is_not_retried(wire: Wire) -> None:
    body = b'{"padding": "' + b"p" * 200 * KiB + b'"}'
    limits = ReadLimits(max_body_bytes=64 * KiB)
    with (
        ReplayServer([Reply.body(body), unused()]) as server,
        pytest.raises(ResponseLimitError) as caught,
    ):
        await complete(server, wire, stream=False, limits=limits)
    assert caught.value.limit == "max_body_bytes" and not caught.value.retryable
    assert len(server.requests) == 1


async def test_a_gzip_stream_gives_the_same_answer(wire: Wire) -> None:
    plain = wire.answer(TEXTS)
    packed = gzip.compress(b"".join(plain))
    pieces = [packed[i : i + 7] for i in range(0, len(packed), 7)]  # split mid-member
    reply = Reply(pieces, content_type=wire.content_type, headers={"content-encoding": "gzip"})
    with ReplayServer([reply, wire.reply(plain)]) as server:
        packed_answer = await complete(server, wire)
        plain_answer = await complete(server, wire)
    assert packed_answer.text == "".join(TEXTS)
    assert packed_answer.stop_info == plain_answer.stop_info
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"
