"""``zett serve`` with tool calls that wait for approval: the stream carries the AI
SDK's ``tool-approval-request``, a new chat message is refused while calls wait,
and ``POST /api/sessions/{id}/approve`` runs or denies them and goes on. A real
uvicorn server and a replayed model (tests/serve_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import (
    FINAL_WEATHER,
    chat_body,
    make_agent,
    read_chunks,
    running_server,
    scenario_reply,
)
from zett_agent.serve import create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer


@pytest.fixture
def server() -> Iterator[tuple[str, ReplayServer]]:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=lambda call: call.name == "get_weather")
        app = create_app(agent, InMemorySessionStore(), owns=True)
        with running_server(app) as url:
            yield url, replay


def chunks_of(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return read_chunks(response.text)


def test_a_waiting_call_is_announced_then_approved_over_http(
    server: tuple[str, ReplayServer],
) -> None:
    url, replay = server
    first = chunks_of(httpx.post(f"{url}/api/chat", json=chat_body("a1", "weather"), timeout=30))
    asked = [c for c in first if c["type"] == "tool-approval-request"]
    inputs = [c for c in first if c["type"] == "tool-input-available"]
    assert len(asked) == 1 and asked[0]["toolCallId"] == inputs[0]["toolCallId"]
    assert not any(c["type"].startswith("tool-output") for c in first)  # it did not run
    assert first[-1]["type"] == "finish"
    calls_before = len(replay.requests)

    refused = httpx.post(f"{url}/api/chat", json=chat_body("a1", "again"), timeout=30)
    assert refused.status_code == 409 and "approve" in refused.text

    decisions = {"decisions": {asked[0]["approvalId"]: {"approved": True}}}
    second = chunks_of(httpx.post(f"{url}/api/sessions/a1/approve", json=decisions, timeout=30))
    outputs = [c for c in second if c["type"] == "tool-output-available"]
    assert len(outputs) == 1 and "Paris" in outputs[0]["output"]
    text = "".join(c["delta"] for c in second if c["type"] == "text-delta")
    assert text == FINAL_WEATHER
    assert len(replay.requests) == calls_before + 1

    again = httpx.post(f"{url}/api/sessions/a1/approve", json=decisions, timeout=30)
    assert again.status_code == 409  # nothing waits any more


def test_a_denial_reaches_the_model_and_bad_decisions_are_refused(
    server: tuple[str, ReplayServer],
) -> None:
    url, _ = server
    first = chunks_of(httpx.post(f"{url}/api/chat", json=chat_body("d1", "weather"), timeout=30))
    [asked] = [c for c in first if c["type"] == "tool-approval-request"]
    wrong = {"decisions": {"nope": {"approved": True}}}
    assert httpx.post(f"{url}/api/sessions/d1/approve", json=wrong).status_code == 422
    assert httpx.post(f"{url}/api/sessions/d1/approve", json={"x": 1}).status_code == 422
    deny = {"decisions": {asked["approvalId"]: {"approved": False, "reason": "not today"}}}
    second = chunks_of(httpx.post(f"{url}/api/sessions/d1/approve", json=deny, timeout=30))
    errors = [c for c in second if c["type"] == "tool-output-error"]
    assert len(errors) == 1 and "not today" in errors[0]["errorText"]


class BeatenStore(InMemorySessionStore):
    """A store where another decider stores its decision just before each of ours
    (it won the compare-and-set between our look at the session and our write)."""

    async def append_if_absent(self, session_id: str, message: Any, *, key: str) -> int | None:
        await super().append_if_absent(session_id, message, key=key)  # the other one
        return await super().append_if_absent(session_id, message, key=key)


def test_a_decision_that_lost_the_compare_and_set_is_a_409_and_runs_nothing() -> None:
    from zett_agent import ToolResultMessage

    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=lambda call: call.name == "get_weather")
        store = BeatenStore()
        with running_server(create_app(agent, store, owns=True)) as url:
            first = chunks_of(
                httpx.post(f"{url}/api/chat", json=chat_body("c1", "weather"), timeout=30)
            )
            [asked] = [c for c in first if c["type"] == "tool-approval-request"]
            calls_before = len(replay.requests)
            decisions = {"decisions": {asked["approvalId"]: {"approved": True}}}
            lost = httpx.post(f"{url}/api/sessions/c1/approve", json=decisions, timeout=30)
            assert lost.status_code == 409, lost.text
            assert "decided already" in lost.json()["error"]["message"]
            assert len(replay.requests) == calls_before  # the model was not asked again
            again = httpx.post(f"{url}/api/chat", json=chat_body("c1", "next"), timeout=30)
            assert again.status_code == 200  # the session is free: nothing holds it

    import anyio

    async def results() -> list[Any]:
        return [m for m in await store.load("c1") if isinstance(m, ToolResultMessage)]

    assert anyio.run(results) == []  # the tool never ran here
