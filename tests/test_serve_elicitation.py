"""``zett serve`` answers an MCP server's elicitation from the page: the run's
stream carries a ``data-elicitation`` chunk while the tool call waits, and
``POST /api/elicitations/{id}`` answers it; in a real browser (Debian's chromium
through playwright, as ``tests/test_serve_browser.py``) the page shows a form
started from the schema's defaults. The MCP server is
``tests/mcp_servers/asking_server.py`` over stdio, entered in the app's lifespan."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from mcp_helpers import SERVERS, need_mcp
from serve_support import chat_body, running_server
from zett_agent import Agent, AgentRunConfig, ToolCall
from zett_agent.testing import ScriptedModel, reply

pytestmark = [pytest.mark.mcp, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

CHROMIUM = os.environ.get("ZETT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture
def app_url() -> Iterator[str]:
    """The app with an agent whose model calls ``ask_name`` once per chat."""
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools
    from zett_agent.serve import create_app

    def chat_turns() -> list[Any]:
        turns: list[Any] = []
        for n in range(3):
            turns += [reply(tool_calls=[ToolCall(f"c{n}", "ask_name", "{}")]), reply("thanks")]
        return turns

    server = MCPServer.stdio(sys.executable, "-W", "ignore", str(SERVERS / "asking_server.py"))
    agent = Agent(ScriptedModel(*chat_turns()), AgentRunConfig("serve-ask"), [])
    app = create_app(agent, mcp=MCPTools([server]), owns=True)
    with running_server(app) as url:
        yield url


def chunks_until(lines: Iterator[str], kind: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    for line in lines:
        if line.startswith("data: ") and line != "data: [DONE]":
            seen.append(json.loads(line[len("data: ") :]))
            if seen[-1]["type"] == kind:
                return seen
    raise AssertionError(f"no {kind} chunk in {[c['type'] for c in seen]}")


def test_the_stream_carries_the_request_and_the_endpoint_answers_it(app_url: str) -> None:
    with httpx.stream("POST", f"{app_url}/api/chat", json=chat_body("e1", "hi"), timeout=60) as r:
        lines = r.iter_lines()
        before = chunks_until(lines, "data-elicitation")
        asked = before[-1]
        assert asked["id"] == asked["data"]["id"]
        assert asked["data"]["defaults"] == {"name": "Ada", "age": 36}
        assert [f["name"] for f in asked["data"]["fields"]] == ["name", "age"]

        def answer() -> None:
            bad = httpx.post(f"{app_url}/api/elicitations/{asked['id']}", json={"action": "maybe"})
            assert bad.status_code == 422
            done = httpx.post(
                f"{app_url}/api/elicitations/{asked['id']}",
                json={"action": "accept", "content": {"name": "Grace", "age": 37}},
            )
            assert done.status_code == 204
            again = httpx.post(
                f"{app_url}/api/elicitations/{asked['id']}", json={"action": "decline"}
            )
            assert again.status_code == 404  # answered already

        thread = threading.Thread(target=answer)
        thread.start()
        after = chunks_until(lines, "tool-output-available")
        thread.join(10)
    assert after[-1]["output"] == "hello Grace (37)"


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no chromium at {CHROMIUM}")
def test_the_page_shows_a_form_with_the_defaults_and_sends_the_answer(
    app_url: str, tmp_path: Path
) -> None:
    pytest.importorskip("playwright", reason="playwright is not installed")
    from playwright import sync_api as playwright_api

    from test_serve_browser import CHROMIUM_ARGS

    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 800})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(app_url)
            page.fill("#prompt", "who am I?")
            page.click("#send")
            form = page.wait_for_selector("form.elicitation")
            assert form is not None and "What is your name?" in (form.text_content() or "")
            assert page.input_value("form.elicitation input[name=name]") == "Ada"
            assert page.input_value("form.elicitation input[name=age]") == "36"
            page.fill("form.elicitation input[name=name]", "Grace")
            page.screenshot(path=str(tmp_path / "elicitation-form.png"), full_page=True)
            page.click("form.elicitation button.approve")
            page.wait_for_selector(".tool .result:has-text('hello Grace (36)')")
            page.wait_for_selector("#messages :text('thanks')")
            assert "Answered" in (page.text_content("form.elicitation") or "")
            assert errors == []
        finally:
            browser.close()
