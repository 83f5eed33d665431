"""Elicitation is not taken on trust: a URL is opened only when it is https: (or
http: to this machine), any other is declined with the reason before the host sees
it; an accepted answer is checked against the requested schema before it is sent
(never sent when it does not fit), and ``zett serve``'s answer route refuses it to
the page. A real server process: tests/mcp_servers/hostile_server.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_helpers import SERVERS, need_mcp
from zett_agent import AgentEventType, ToolCall, create_agent
from zett_agent.testing import ScriptedModel, reply

pytestmark = [pytest.mark.mcp, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

HOSTILE = SERVERS / "hostile_server.py"


def hostile() -> Any:
    from zett_agent.mcp import MCPServer

    return MCPServer.stdio(sys.executable, "-W", "ignore", str(HOSTILE))


async def results_of(tools: Any, calls: list[ToolCall]) -> dict[str, str]:
    agent = await create_agent(ScriptedModel(reply(tool_calls=calls), reply("ok")))
    tools.attach(agent)
    events = [event async for event in agent.stream("go")]
    await agent.aclose()
    return {
        e.tool_call.id: e.tool_result.content
        for e in events
        if e.type is AgentEventType.TOOL_CALL_COMPLETED
    }


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://example.com/sign-in", True),
        ("http://127.0.0.1:8765/cb", True),
        ("http://localhost/cb", True),
        ("http://[::1]:9/cb", True),
        ("http://example.com/sign-in", False),
        ("javascript:alert(document.cookie)", False),
        ("JavaScript:alert(1)", False),
        ("file:///etc/passwd", False),
        ("data:text/html,<script>alert(1)</script>", False),
        ("https://exa mple.com/", False),
        ("https://example.com/\x1b]52;c;x\x07", False),
        ("https:///no-host", False),
        ("", False),
    ],
)
def test_which_urls_a_person_is_sent_to(url: str, allowed: bool) -> None:
    need_mcp()
    from zett_agent.mcp._elicitation import url_problem

    assert (url_problem(url) is None) is allowed


async def test_a_javascript_or_file_url_is_declined_with_a_reason_and_never_reaches_the_host() -> (
    None
):
    need_mcp()
    from zett_agent.mcp import ElicitationResponse, MCPTools

    asked: list[str] = []

    async def elicit(request: Any) -> Any:
        asked.append(request.url)
        return ElicitationResponse.accept()

    calls = [
        ToolCall("c1", "ask_link", json.dumps({"url": "javascript:alert(1)"})),
        ToolCall("c2", "ask_link", json.dumps({"url": "file:///etc/passwd"})),
        ToolCall("c3", "ask_link", json.dumps({"url": "https://example.com/ok"})),
    ]
    async with MCPTools([hostile()], elicitation=elicit) as tools:
        done = await results_of(tools, calls)
    assert asked == ["https://example.com/ok"]
    assert done["c1"].startswith("decline") and "zett opens only https:" in done["c1"]
    assert "not javascript: ones" in done["c1"]
    assert done["c2"].startswith("decline") and "not file: ones" in done["c2"]
    assert done["c3"] == "accept"


@pytest.mark.parametrize(
    ("content", "sent"),
    [
        ({"word": "fine"}, True),
        ({"word": 5}, False),  # the wrong type
        ({"word": "fine", "admin": True}, False),  # a field the form has not
        ({"word": ["a"]}, False),
    ],
)
async def test_an_answer_that_does_not_fit_the_schema_is_never_sent(
    content: dict[str, Any], sent: bool
) -> None:
    need_mcp()
    from zett_agent.mcp import ElicitationResponse, MCPTools

    async def elicit(request: Any) -> Any:
        return ElicitationResponse.accept(content)

    async with MCPTools([hostile()], elicitation=elicit) as tools:
        done = await results_of(tools, [ToolCall("c1", "ask_paint", "{}")])
    assert done["c1"] == ("answered" if sent else "cancel")


def test_the_answer_check_names_the_field() -> None:
    need_mcp()
    from zett_agent.mcp._elicitation import answer_problem

    schema = {
        "type": "object",
        "properties": {
            "age": {"type": "integer", "minimum": 0},
            "ok": {"type": "boolean"},
            "color": {"type": "string", "enum": ["red", "blue"]},
        },
        "required": ["age"],
    }
    assert answer_problem(schema, {"age": 3, "ok": True, "color": "red"}) is None
    assert answer_problem(schema, {"ok": True}) == "age: required"
    assert answer_problem(schema, {"age": 2.5}) == "age: must be a integer"
    assert answer_problem(schema, {"age": True}) == "age: must be a integer"
    assert answer_problem(schema, {"age": 1, "ok": "yes"}) == "ok: must be a boolean"
    assert answer_problem(schema, {"age": 1, "color": "green"}).startswith("color: 'green'")
    assert "age" in (answer_problem(schema, {"age": -1}) or "")  # the schema's minimum
    assert answer_problem(schema, ["age"]) is not None


async def test_serve_refuses_an_answer_that_does_not_fit_and_keeps_waiting() -> None:
    need_mcp()
    import anyio

    from zett_agent.mcp import ElicitationRequest
    from zett_agent.serve._elicitations import Elicitations

    waiting = Elicitations()
    request = ElicitationRequest(
        mode="form",
        message="?",
        server="s",
        schema={"type": "object", "properties": {"n": {"type": "integer"}}},
    )
    answers: list[Any] = []

    async def ask() -> None:
        answers.append(await waiting.ask(request))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await anyio.sleep(0)
        with pytest.raises(ValueError, match="n: must be a integer"):
            waiting.answer(request.id, "accept", {"n": "seven"})
        with pytest.raises(ValueError, match="x: not a field of this form"):
            waiting.answer(request.id, "accept", {"x": 1})
        assert waiting.answer(request.id, "accept", {"n": 7})  # still waiting: a valid one
    assert answers[0].content == {"n": 7}


@pytest.fixture
def serve_url() -> Any:
    """``zett serve``'s app with the hostile server; the model calls ``ask_paint``."""
    need_mcp()
    pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")
    from serve_support import running_server
    from zett_agent import Agent, AgentRunConfig
    from zett_agent.mcp import MCPTools
    from zett_agent.serve import create_app

    turns = [reply(tool_calls=[ToolCall("c1", "ask_paint", "{}")]), reply("thanks")]
    agent = Agent(ScriptedModel(*turns), AgentRunConfig("serve-checked"), [])
    app = create_app(agent, mcp=MCPTools([hostile()]), owns=True)
    with running_server(app) as url:
        yield url


def test_serve_answers_422_to_an_answer_that_does_not_fit_over_http(serve_url: str) -> None:
    import threading

    import httpx

    from serve_support import chat_body

    with httpx.stream(
        "POST", f"{serve_url}/api/chat", json=chat_body("e1", "hi"), timeout=60
    ) as response:
        lines = response.iter_lines()
        seen: list[dict[str, Any]] = []

        def until(kind: str) -> dict[str, Any]:
            for line in lines:
                if line.startswith("data: ") and line != "data: [DONE]":
                    seen.append(json.loads(line[len("data: ") :]))
                    if seen[-1]["type"] == kind:
                        return seen[-1]
            raise AssertionError(f"no {kind} in {[c['type'] for c in seen]}")

        asked = until("data-elicitation")
        statuses: list[tuple[int, str]] = []

        def answer() -> None:
            url = f"{serve_url}/api/elicitations/{asked['id']}"
            for content in ({"word": 5}, {"word": "ok", "admin": True}, {"word": "fine"}):
                done = httpx.post(url, json={"action": "accept", "content": content})
                statuses.append((done.status_code, done.text))

        thread = threading.Thread(target=answer)
        thread.start()
        output = until("tool-output-available")
        thread.join(10)
    assert [status for status, _ in statuses] == [422, 422, 204]
    assert "word: must be a string" in statuses[0][1]
    assert "admin: not a field of this form" in statuses[1][1]
    assert output["output"] == "answered"


@pytest.mark.browser
def test_the_page_makes_no_link_of_a_javascript_url(serve_url: str) -> None:
    from browser_support import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM}")
    pytest.importorskip("playwright", reason="playwright is not installed")
    from playwright import sync_api as playwright_api

    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page()
            page.goto(serve_url)
            checks = page.evaluate(
                """() => ['https://example.com/a', 'http://127.0.0.1:9/cb', 'http://localhost/',
                          'javascript:alert(1)', 'JAVASCRIPT:alert(1)', 'file:///etc/passwd',
                          'data:text/html,x', 'http://example.com/'].map(safeUrl)"""
            )
            assert checks == [True, True, True, False, False, False, False, False]
            links = page.evaluate(
                """() => ['javascript:alert(1)', 'https://example.com/ok'].map(url => {
                    const box = renderElicitation({data: {mode: 'url', url, server: 's',
                                                          message: 'm', fields: []}});
                    const link = box.querySelector('a');
                    return link ? link.href : null;
                })"""
            )
            assert links == [None, "https://example.com/ok"]
        finally:
            browser.close()
