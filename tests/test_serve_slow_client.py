"""A client that stops reading its UI stream: the run waits in a bounded queue, then
is cancelled after ``slow_client_timeout`` as a disconnect cancels it (INTERRUPTED,
the text so far kept, ``detail`` saying why); a client that reads slowly but keeps
reading gets the whole answer.

Through a real uvicorn server on 127.0.0.1 and a replayed model that streams 8 MB
of text (``flood`` in ``tests/serve_support.py``); the stalled reader is a raw socket
with a small receive buffer that reads the response head and then nothing.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import FLOOD_DELTA, FLOOD_DELTAS, chat_body, make_agent, running_server
from zett_agent.serve import ServeSettings, create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer

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


def test_a_client_that_reads_slowly_gets_the_whole_answer(server: str) -> None:
    """Pauses shorter than the limit between reads only hold the run back."""
    received = 0
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", f"{server}/api/chat", json=chat_body("slowly", "flood")) as response,
    ):
        body = b""
        for n, piece in enumerate(response.iter_raw(64 * 1024)):
            body += piece
            received += len(piece)
            if n < 4:
                time.sleep(0.1)  # each pause fills the queue; none reaches the limit
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
