"""A guardrail's tripwire in ``zett serve``: a ``data-stop`` chunk (REFUSAL,
``raw == "guardrail:<name>"``) and a content-filter finish, over a real uvicorn
server and a replayed model; the held-back text never reaches the page."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import chat_body, make_agent, read_chunks, running_server, scenario_reply
from zett_agent import Tripwire
from zett_agent.serve import create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer


def no_weather(message: Any) -> Tripwire | None:
    return Tripwire("weather is not for this page") if "weather" in message.content else None


def test_a_tripwire_is_a_data_stop_and_runs_no_tool() -> None:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, input_guardrails=[no_weather])
        app = create_app(agent, InMemorySessionStore(), owns=True)
        with running_server(app) as url:
            response = httpx.post(f"{url}/api/chat", json=chat_body("g1", "weather"), timeout=30)
            assert response.status_code == 200, response.text
            chunks = read_chunks(response.text)
            stored = httpx.get(f"{url}/api/sessions/g1").json()
        assert len(replay.requests) == 1  # the answer with get_weather was never followed up
    kinds = [c["type"] for c in chunks]
    [stop] = [c["data"] for c in chunks if c["type"] == "data-stop"]
    assert (stop["reason"], stop["raw"], stop["category"]) == (
        "refusal",
        "guardrail:no_weather",
        "guardrail",
    )
    assert stop["message"] == "weather is not for this page"
    assert stop["detail"]["withheld_tool_calls"] == ["get_weather"]
    assert not any(k.startswith("tool-") or k == "text-delta" for k in kinds)
    assert chunks[-1]["finishReason"] == "content-filter"
    assert [p["type"] for p in stored["messages"][-1]["parts"]].count("data-stop") == 1
