"""A running answer outlives its reader and can be rejoined (``ServeSettings.resumable``).

A real uvicorn server on 127.0.0.1 and a replayed model that streams slowly
(``tests/resume_support.py``): a client that reads part of ``POST /api/chat`` and
leaves does not cancel the run; the AI SDK's resume request (``GET
/api/chat/{id}/stream``) gets the running message from its ``start`` and then live,
the same chunks an uninterrupted reader got; several readers follow one run;
``POST /api/chat/{id}/stop`` cancels it; 204 when nothing runs; past the replay
buffer's bound the dropped steps come back from the store as whole parts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from resume_support import resume_reply, waits
from serve_support import chat_body, make_agent, read_chunks, running_server
from zett_agent.serve import ServeSettings, create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer

PACE = 0.01


def serve(settings: ServeSettings) -> Iterator[str]:
    with ReplayServer(route=lambda request: resume_reply(request, PACE)) as replay:
        agent = make_agent(replay.url, approval=waits)
        app = create_app(agent, InMemorySessionStore(), settings, owns=True)
        with running_server(app) as url:
            yield url


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    yield from serve(ServeSettings(resumable=True))


@pytest.fixture(scope="module")
def small_buffer() -> Iterator[str]:
    yield from serve(ServeSettings(resumable=True, resume_buffer_bytes=2000))


def full_run(url: str, chat_id: str, text: str) -> list[dict[str, Any]]:
    response = httpx.post(f"{url}/api/chat", json=chat_body(chat_id, text), timeout=30)
    assert response.status_code == 200
    return read_chunks(response.text)


def leave_after(url: str, chat_id: str, text: str, events: int) -> None:
    """Send the question, read ``events`` events of the answer, hang up."""
    with httpx.stream(
        "POST", f"{url}/api/chat", json=chat_body(chat_id, text), timeout=30
    ) as response:
        assert response.status_code == 200
        seen = 0
        for line in response.iter_lines():
            seen += line.startswith("data: ")
            if seen >= events:
                break


def rejoin(url: str, chat_id: str) -> httpx.Response:
    return httpx.get(f"{url}/api/chat/{chat_id}/stream", timeout=30)


def message(chunks: list[dict[str, Any]]) -> list[Any]:
    """What a client draws from ``chunks``: the parts, in order, whole."""
    parts: list[Any] = []
    open_text: dict[str, list[Any]] = {}
    tools: dict[str, list[Any]] = {}
    for chunk in chunks:
        kind = chunk["type"]
        if kind == "start-step":
            parts.append(["step"])
        elif kind in ("text-start", "reasoning-start"):
            open_text[chunk["id"]] = [kind[: -len("-start")], ""]
            parts.append(open_text[chunk["id"]])
        elif kind in ("text-delta", "reasoning-delta"):
            open_text[chunk["id"]][1] += chunk["delta"]
        elif kind == "tool-input-available":
            tools[chunk["toolCallId"]] = ["tool", chunk["toolName"], chunk["input"]]
            parts.append(tools[chunk["toolCallId"]])
        elif kind.startswith("tool-output") or kind == "tool-approval-request":
            tools[chunk["toolCallId"]].append([kind, chunk.get("output")])
        elif kind in ("data-stop", "finish", "abort", "error"):
            parts.append({k: v for k, v in chunk.items() if k != "id"})
    return parts


def test_a_reader_that_leaves_does_not_stop_the_run_and_a_rejoin_gets_it_all(
    server: str,
) -> None:
    whole = full_run(server, "whole", "long answer")
    leave_after(server, "left", "long answer", 20)
    again = rejoin(server, "left")
    assert again.status_code == 200
    assert again.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert read_chunks(again.text) == whole  # from start, the same chunks
    stored = httpx.get(f"{server}/api/sessions/left").json()
    assert stored["messages"][-1]["metadata"]["finishReason"] == "stop"


def test_nothing_running_is_204(server: str) -> None:
    assert rejoin(server, "nobody").status_code == 204
    assert httpx.post(f"{server}/api/chat/nobody/stop").status_code == 404


def test_two_readers_follow_one_run(server: str) -> None:
    whole = full_run(server, "whole2", "tool call please")
    leave_after(server, "two", "tool call please", 5)
    with (
        httpx.Client(timeout=30) as two,
        httpx.stream("GET", f"{server}/api/chat/two/stream", timeout=30) as first,
    ):
        second = two.get(f"{server}/api/chat/two/stream")
        body = first.read().decode()
    assert read_chunks(body) == whole
    assert read_chunks(second.text) == whole


def test_the_stop_endpoint_stops_the_run(server: str) -> None:
    leave_after(server, "stopme", "long answer", 10)
    with httpx.stream("GET", f"{server}/api/chat/stopme/stream", timeout=30) as reader:
        lines = reader.iter_lines()
        for line in lines:
            if '"text-delta"' in line:
                break
        assert httpx.post(f"{server}/api/chat/stopme/stop").status_code == 204
        rest = "\n".join(lines)
    assert '"finishReason": "interrupted"' in rest
    stored = httpx.get(f"{server}/api/sessions/stopme").json()["messages"][-1]
    stop = next(p for p in stored["parts"] if p["type"] == "data-stop")["data"]
    assert stop["reason"] == "interrupted"
    assert stop["detail"]["limit"] == "stop_endpoint"
    assert not stored["parts"][-2]["text"].endswith("word159")  # cut short


def test_past_the_bound_a_rejoin_rebuilds_the_dropped_steps_from_the_store(
    small_buffer: str,
) -> None:
    whole = full_run(small_buffer, "bwhole", "tool call please")
    leave_after(small_buffer, "bound", "tool call please", 5)
    with httpx.stream("GET", f"{small_buffer}/api/chat/bound/stream", timeout=30) as r:
        first = next(r.iter_lines())
    # wait for the second step to stream, then rejoin
    with httpx.stream("GET", f"{small_buffer}/api/chat/bound/stream", timeout=30) as r:
        for line in r.iter_lines():
            if "after10" in line:
                break
    again = rejoin(small_buffer, "bound")
    assert first.startswith("data: ")
    assert message(read_chunks(again.text)) == message(whole)
    assert '"a1-s0-1"' in again.text  # the first step came back from the store
