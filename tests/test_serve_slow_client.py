"""A client that stops reading its UI stream: the run waits in a bounded queue, then
is cancelled after ``slow_client_timeout`` as a disconnect cancels it (INTERRUPTED,
the text so far kept, ``detail`` saying why); a client that reads slowly but keeps
reading gets the whole answer.

The limits are checked on virtual time (``looptime``, tests/conftest.py): the app
is called in the process (ASGI) with a model on :class:`ReplayTransport`, a client
that reads nothing is a ``send`` that never returns, and the run must end exactly
``slow_client_timeout`` after the queue filled, at no cost in wall time. One test
keeps the real thing (``realclock``): a real uvicorn server on 127.0.0.1 and a
replayed model that streams 8 MB of text (``flood`` in ``tests/serve_support.py``);
the stalled reader is a raw socket with a small receive buffer that reads the
response head and then nothing.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import FLOOD_DELTA, FLOOD_DELTAS, chat_body, make_agent, running_server
from zett_agent.serve import ServeSettings, create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer, ReplayTransport

pytestmark = pytest.mark.looptime  # but the realclock test: a real server

SETTINGS = ServeSettings(stream_buffer_bytes=16 * 1024, slow_client_timeout=1.0)


@pytest.fixture
def server() -> Iterator[str]:
    from serve_support import scenario_reply

    with ReplayServer(route=scenario_reply) as replay:
        app = create_app(make_agent(replay.url), InMemorySessionStore(), SETTINGS, owns=True)
        with running_server(app) as url:
            yield url


def stalled_reader(url: str, chat_id: str) -> socket.socket:
    """Send the chat request and read only the response head; the socket is left open."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    body = json.dumps(chat_body(chat_id, "flood")).encode()
    sock.sendall(
        f"POST /api/chat HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    assert sock.recv(1024).startswith(b"HTTP/1.1 200")
    return sock


def stored_answer(url: str, chat_id: str, wait: float) -> dict[str, Any]:
    deadline = time.monotonic() + wait
    stored: dict[str, Any] = {}
    while time.monotonic() < deadline:
        stored = httpx.get(f"{url}/api/sessions/{chat_id}").json()
        if not stored["running"]:
            break
        time.sleep(0.1)
    assert not stored["running"], "the run of a client that stopped reading still runs"
    answer: dict[str, Any] = stored["messages"][-1]
    return answer


@pytest.mark.realclock
def test_a_client_that_stops_reading_has_its_run_cancelled_with_the_reason(server: str) -> None:
    sock = stalled_reader(server, "stalled")
    started = time.monotonic()
    try:
        answer = stored_answer(server, "stalled", wait=30)
        elapsed = time.monotonic() - started
    finally:
        sock.close()
    [stop] = [p["data"] for p in answer["parts"] if p["type"] == "data-stop"]
    assert stop["reason"] == "interrupted"
    assert stop["detail"]["cancelled"] is True
    assert stop["detail"]["limit"] == "slow_client_timeout"
    assert "slow_client_timeout" in stop["message"] and "read nothing" in stop["message"]
    assert stop["detail"]["cancel_reason"] == stop["message"]
    text = "".join(p["text"] for p in answer["parts"] if p["type"] == "text")
    assert text.startswith("0000xx") and len(text) < FLOOD_DELTAS * FLOOD_DELTA  # cut, kept
    assert elapsed >= SETTINGS.slow_client_timeout
    # the session is free again and the cut answer can be resumed
    assert httpx.post(f"{server}/api/sessions/stalled/resume", timeout=30).status_code == 200


# ---------------------------------------------------------------- on virtual time


def in_process_app() -> Any:
    from serve_support import scenario_reply

    replay = ReplayTransport(route=scenario_reply)
    agent = make_agent(replay.url, client=replay.client())
    return create_app(agent, InMemorySessionStore(), SETTINGS, owns=True)


async def post_chat(app: Any, chat_id: str, *, pause: float | None) -> tuple[bytes, float, float]:
    """POST a flood chat to ``app`` in the process: ``send`` waits ``pause`` seconds
    (of the loop's clock) after each of the first body pieces, or never returns
    (``pause=None``: a client that reads nothing). Returns the body sent, when the
    first piece was offered and when the response ended (the loop's clock)."""
    loop = asyncio.get_running_loop()
    body = json.dumps(chat_body(chat_id, "flood")).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/chat",
        "raw_path": b"/api/chat",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    requested = False
    never = anyio.Event()
    sent = bytearray()
    first = -1.0
    pieces = 0

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": body, "more_body": False}
        await never.wait()  # the client neither sends more nor goes away
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        nonlocal first, pieces
        if message["type"] == "http.response.start":
            assert message["status"] == 200, message
            return
        sent.extend(message.get("body", b""))
        if first < 0:
            first = loop.time()
        pieces += 1
        if pause is None:
            await never.wait()  # the client stopped reading
        elif pieces <= 4:
            await anyio.sleep(pause)  # each pause fills the queue

    await app(scope, receive, send)
    return bytes(sent), first, loop.time()


async def stored_session(app: Any, chat_id: str) -> dict[str, Any]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
        stored: dict[str, Any] = (await client.get(f"/api/sessions/{chat_id}")).json()
    return stored


async def test_a_stalled_client_is_dropped_exactly_at_the_slow_client_timeout() -> None:
    app = in_process_app()
    with anyio.fail_after(60):
        _, first, ended = await post_chat(app, "stalled", pause=None)
        stored = await stored_session(app, "stalled")
    assert not stored["running"]
    [stop] = [p["data"] for p in stored["messages"][-1]["parts"] if p["type"] == "data-stop"]
    assert stop["detail"]["limit"] == "slow_client_timeout" and stop["detail"]["cancelled"]
    # the queue was full at once (8 MB against 16 KiB): the run waited the limit, no more
    assert abs((ended - first) - SETTINGS.slow_client_timeout) < 0.005, ended - first


async def test_a_client_that_reads_slowly_gets_the_whole_answer() -> None:
    """Pauses shorter than the limit between reads only hold the run back (the
    pauses are on the loop's clock: 4 x 0.9 s, each just under the limit)."""
    app = in_process_app()
    with anyio.fail_after(60):
        body, first, ended = await post_chat(app, "slowly", pause=0.9)
    assert abs((ended - first) - 4 * 0.9) < 0.005, ended - first  # held back, never dropped
    events = [e for e in body.decode().split("\n\n") if e.strip()]
    assert events[-1] == "data: [DONE]"
    chunks = [json.loads(e[6:]) for e in events[:-1]]
    assert [c["finishReason"] for c in chunks if c["type"] == "finish"] == ["stop"]
    assert not [c for c in chunks if c["type"] == "data-stop"]
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert len(text) == FLOOD_DELTAS * FLOOD_DELTA


def test_the_limits_are_settings_with_defaults() -> None:
    settings = ServeSettings()
    assert settings.stream_buffer_bytes == 256 * 1024
    assert settings.slow_client_timeout == 30.0
