"""A chat body's parts are counted before anything reads them: past
``max_parts_per_message`` in one message, or ``max_parts_per_body`` in all, it is
a 413 naming the limit, and nothing is decoded, stored or sent to the model.

Over real HTTP (tests/serve_support.py). How long another chat waits while such a
body is handled is measured by ``bench/serve_hostile_clients.py --big-body`` (no
clock here); the worker thread that parses a large body lets go of the GIL every
256 objects (tested below), so the event loop never waits the 5 ms switch
interval for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import chat_body, make_agent, read_chunks, running_server, scenario_reply
from zett_agent.serve import ServeSettings, create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer

PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def tiny_file() -> dict[str, Any]:
    return {"type": "file", "mediaType": "image/png", "url": PNG}


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, ReplayServer]]:
    with ReplayServer(route=scenario_reply) as replay:
        app = create_app(make_agent(replay.url), InMemorySessionStore(), owns=True)
        with running_server(app) as url:
            yield url, replay


def test_a_hundred_thousand_tiny_file_parts_are_refused_by_count(
    server: tuple[str, ReplayServer],
) -> None:
    url, replay = server
    body = chat_body("many", "look")
    body["messages"][0]["parts"] += [tiny_file()] * 100_000  # 16.5 MiB, inside both byte limits
    calls = len(replay.requests)
    response = httpx.post(f"{url}/api/chat", json=body, timeout=60)
    assert response.status_code == 413, response.text[:300]
    message = response.json()["error"]["message"]
    assert "messages[0].parts" in message and "max_parts_per_message" in message
    assert len(replay.requests) == calls  # nothing was sent on
    assert httpx.get(f"{url}/api/sessions/many").status_code == 404  # nothing stored


def test_the_parts_of_all_messages_count_together(server: tuple[str, ReplayServer]) -> None:
    url, replay = server
    history = [
        {"id": f"h{n}", "role": "user", "parts": [{"type": "text", "text": "x"}] * 1_000}
        for n in range(11)  # each message within its limit, 11,000 parts in all
    ]
    body = chat_body("history", "hi")
    body["messages"] = history + body["messages"]
    calls = len(replay.requests)
    response = httpx.post(f"{url}/api/chat", json=body, timeout=60)
    assert response.status_code == 413, response.text[:300]
    assert "max_parts_per_body" in response.json()["error"]["message"]
    assert len(replay.requests) == calls


def test_the_part_limits_are_settings_and_a_body_within_them_is_answered() -> None:
    with ReplayServer(route=scenario_reply) as replay:
        settings = ServeSettings(max_parts_per_message=3, max_parts_per_body=5)
        app = create_app(make_agent(replay.url), InMemorySessionStore(), settings, owns=True)
        with running_server(app) as url:
            body = chat_body("small", "hi")
            body["messages"][0]["parts"] += [{"type": "text", "text": "more"}] * 2
            answered = httpx.post(f"{url}/api/chat", json=body, timeout=30)
            assert answered.status_code == 200, answered.text
            assert read_chunks(answered.text)[-1]["type"] == "finish"
            body["messages"][0]["parts"].append({"type": "text", "text": "one more"})
            refused = httpx.post(f"{url}/api/chat", json=body, timeout=30)
            assert refused.status_code == 413 and "more than 3" in refused.text
            two = chat_body("two", "hi")  # 3 messages of 2 parts: each within 3, 6 in all
            two["messages"] = [{"role": "user", "parts": [{"type": "text", "text": "x"}] * 2}] * 3
            refused = httpx.post(f"{url}/api/chat", json=two, timeout=30)
            assert refused.status_code == 413 and "more than 5 parts" in refused.text


def test_a_large_body_is_parsed_letting_go_of_the_gil_every_256_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from zett_agent.serve import _context
    from zett_agent.serve._request import RequestError

    slept: list[float] = []
    monkeypatch.setattr(_context.time, "sleep", slept.append)
    data = chat_body("big", "look")
    data["messages"][0]["parts"] += [tiny_file()] * 1000
    body = json.dumps(data).encode()
    assert len(body) > _context.PARSE_INLINE_BYTES  # parsed by the worker thread
    objects = 1 + 1 + 1 + 1000  # the body, its message, its text part and 1000 files
    assert _context._loads(body, _context._yielding_no_duplicates()) == data
    assert slept == [0] * (objects // _context.YIELD_EVERY_OBJECTS)
    with pytest.raises(RequestError, match="names the key 'a' twice"):
        _context._loads(b'{"a": 1, "a": 2}', _context._yielding_no_duplicates())
