"""``StopInfo.describe()`` is one line wherever it is shown (seed 002: "Return one line
for a log or a notice"), whatever line breaks the provider put in its words: the
``MODEL_STOPPED`` event of every protocol (a real socket, streamed and not), the
``zett run`` notice, and serve's ``data-stop`` chunk."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from handwritten_wire import (
    A_START,
    a_body,
    a_end,
    body,
    c_body,
    c_chunk,
    data,
    named,
    ndjson,
    o,
    r_response,
)
from zett_agent import AgentEventType, Model, StopInfo, StopReason, create_agent
from zett_agent.serve import UIMessageStream
from zett_agent.testing import ReplayServer

MULTILINE = "Line one.\nLine two.\r\n\tLine  three. "
ONE_LINE = "Line one. Line two. Line three."


def test_describe_collapses_every_run_of_whitespace() -> None:
    info = StopInfo(StopReason.REFUSAL, "refusal", "cy\nber", MULTILINE)
    assert info.describe() == f"refusal (cy ber): {ONE_LINE}"
    assert StopInfo(StopReason.REFUSAL, message=" \n\t ").describe() == "refusal"
    assert "\n" not in StopInfo(StopReason.OTHER, "x\ny").describe()


def _gemini(finish_message: str) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "Hi"}]},
                "finishReason": "SAFETY",
                "finishMessage": finish_message,
                "index": 0,
            }
        ],
        "modelVersion": "m",
    }


def _refusal_part(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": text}],
    }


STOPPED: dict[tuple[str, bool], Any] = {
    ("anthropic", True): lambda: named(
        A_START, *a_end("refusal", stop_details={"category": "cyber", "explanation": MULTILINE})
    ),
    ("anthropic", False): lambda: a_body(
        [], "refusal", stop_details={"category": "cyber", "explanation": MULTILINE}
    ),
    ("openai", True): lambda: data(
        c_chunk({"role": "assistant", "content": None, "refusal": MULTILINE}),
        c_chunk({}, "stop"),
        "[DONE]",
    ),
    ("openai", False): lambda: c_body({"content": None, "refusal": MULTILINE}, "stop"),
    ("openai-responses", True): lambda: named(
        {
            "type": "response.completed",
            "response": r_response("completed", [_refusal_part(MULTILINE)]),
        }
    ),
    ("openai-responses", False): lambda: body(r_response("completed", [_refusal_part(MULTILINE)])),
    ("google", True): lambda: data(_gemini(MULTILINE)),
    ("google", False): lambda: body(_gemini(MULTILINE)),
    ("ollama", True): lambda: ndjson(o({"content": "Hi"}), {"error": MULTILINE}),
    ("ollama", False): lambda: ndjson(o({"content": "Hi"}), {"error": MULTILINE}),
}


@pytest.mark.parametrize(("vendor", "stream"), list(STOPPED), ids=lambda v: str(v))
async def test_model_stopped_describes_the_stop_on_one_line(vendor: str, stream: bool) -> None:
    reply = STOPPED[vendor, stream]()
    with ReplayServer([reply]) as server:
        model = Model(vendor, "m", base_url=server.url, api_key="k", stream=stream)
        agent = await create_agent(model)
        heard = [
            event.stop.describe()
            async for event in agent.stream("hi")
            if event.type is AgentEventType.MODEL_STOPPED and event.stop is not None
        ]
        await agent.aclose()
    assert len(heard) == 1
    assert "\n" not in heard[0] and "\t" not in heard[0] and "  " not in heard[0]
    assert heard[0].endswith(ONE_LINE), heard[0]


async def test_serve_data_stop_carries_the_one_line() -> None:
    reply = STOPPED["anthropic", True]()
    with ReplayServer([reply]) as server:
        agent = await create_agent(Model("anthropic", "m", base_url=server.url, api_key="k"))
        ui = UIMessageStream("m1")
        chunks = [chunk async for event in agent.stream("hi") for chunk in ui.feed(event)]
        await agent.aclose()
    [stop] = [c["data"] for c in chunks if c["type"] == "data-stop"]
    assert stop["describe"] == f"refusal (cyber): {ONE_LINE}"
    assert stop["message"] == MULTILINE  # the provider's words stay as they were


def test_zett_run_notice_is_one_line() -> None:
    reply = STOPPED["anthropic", True]()
    with ReplayServer([reply]) as server:
        done = subprocess.run(
            [sys.executable, "-m", "zett_agent.cli", "run", "--model", "anthropic:m", "hi"],
            env={
                **os.environ,
                "COLUMNS": "200",
                "NO_COLOR": "1",
                "ZETT_ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "test",
            },
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 3, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "stopped:" in line]
    assert f"⚠ stopped: refusal (cyber): {ONE_LINE}" in line
