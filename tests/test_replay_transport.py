"""``zett_agent.testing.ReplayTransport``: ReplayServer's replies in the process,
paced by the event loop's clock (virtual here: ``looptime``, tests/conftest.py)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from zett_agent import Model, ModelRequest, UserMessage
from zett_agent.testing import ReplayTransport, Reply

pytestmark = pytest.mark.looptime


def loop_time() -> float:
    return asyncio.get_running_loop().time()


async def test_the_pauses_are_the_loops_and_cost_no_wall_time() -> None:
    """1,020 s of pauses: waited for in real time, the test would reach the suite's
    120 s timeout (pytest-timeout) long before."""
    reply = Reply([b"a", b"b", b"c"], delay=10, stall_after=1, stall_seconds=1000)
    async with ReplayTransport([reply]).client() as client:
        started = loop_time()
        arrived: list[tuple[bytes, float]] = []
        async with client.stream("POST", "http://replay.invalid/v1/x", json={"q": 1}) as response:
            assert response.status_code == 200
            async for chunk in response.aiter_raw():
                arrived.append((chunk, round(loop_time() - started, 3)))
    # the stall comes before chunk 1, then the delay between chunks
    assert arrived == [(b"a", 0.0), (b"b", 1010.0), (b"c", 1020.0)]


async def test_a_dropped_body_raises_as_httpx_reports_a_cut_connection() -> None:
    replay = ReplayTransport([Reply([b"one", b"two", b"three"], drop_after=2)])
    async with replay.client() as client, client.stream("GET", replay.url + "/") as response:
        pieces = response.aiter_raw()
        got = [await anext(pieces), await anext(pieces)]
        with pytest.raises(httpx.RemoteProtocolError):
            await anext(pieces)
    assert got == [b"one", b"two"]


async def test_requests_are_recorded_and_one_beyond_the_script_is_a_599() -> None:
    replay = ReplayTransport([Reply.json({"ok": True}, headers={"x-a": "1"})])
    async with replay.client() as client:
        first = await client.post(replay.url + "/v1/chat?x=1", json={"m": "hi"})
        second = await client.get(replay.url + "/again")
    assert first.json() == {"ok": True} and first.headers["x-a"] == "1"
    assert second.status_code == 599
    assert [r.path for r in replay.requests] == ["/v1/chat?x=1", "/again"]
    assert replay.requests[0].json == {"m": "hi"} and replay.requests[0].method == "POST"
    assert [r.path for r in replay.unexpected] == ["/again"] and replay.remaining == 0


async def test_a_model_call_through_it_starts_its_clocks_at_the_trace_hook() -> None:
    """The transport calls httpx's ``trace`` hook, as httpcore does: the watchdog's
    clocks start, so a first-output limit ends a silent stream at its time."""
    wire = [b'data: {"choices": [{"index": 0, "delta": {"content": "x"}}]}\n\n']
    reply = Reply(wire, content_type="text/event-stream", stall_after=0, stall_seconds=60)
    replay = ReplayTransport([reply])
    client = replay.client()
    model = Model(
        "openai",
        "m",
        base_url=replay.url,
        api_key="k",
        client=client,
        first_output_timeout=2.5,
        max_retries=0,
    )
    started = loop_time()
    with pytest.raises(Exception, match="first-output") as caught:
        await model.complete(ModelRequest("m", [UserMessage("hi")]))
    await client.aclose()
    assert getattr(caught.value, "limit", None) == "first_output_timeout"
    assert abs(loop_time() - started - 2.5) < 0.005
