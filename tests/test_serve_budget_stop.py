"""A budget in ``zett serve``: the answer that crosses it is shown, its tool call
never runs (the page gets its "not run" result), and the run's marker is a
``data-stop`` (``raw == "max_total_tokens"``), over a real uvicorn server."""

from __future__ import annotations

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import chat_body, make_agent, read_chunks, running_server, scenario_reply
from zett_agent.serve import create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer


def test_a_crossed_budget_runs_no_tool_and_ends_with_a_data_stop() -> None:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, max_total_tokens=1)
        app = create_app(agent, InMemorySessionStore(), owns=True)
        with running_server(app) as url:
            response = httpx.post(f"{url}/api/chat", json=chat_body("b1", "weather"), timeout=30)
            assert response.status_code == 200, response.text
            chunks = read_chunks(response.text)
        assert len(replay.requests) == 1
    [stop] = [c["data"] for c in chunks if c["type"] == "data-stop"]
    assert stop["raw"] == "max_total_tokens"
    assert stop["detail"]["not_run_tool_calls"] == ["get_weather"]
    [output] = [c for c in chunks if c["type"] in ("tool-output-available", "tool-output-error")]
    assert "not run: the run's budget was reached" in str(output)
