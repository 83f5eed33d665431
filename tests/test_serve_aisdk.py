"""The Vercel AI SDK itself reads ``zett serve``'s stream (``tests/node/``, ``ai`` pinned).

``tests/node/read_stream.mjs`` sends each prompt with the SDK's DefaultChatTransport
(what ``useChat`` uses), checks every chunk against the SDK's ``uiMessageChunkSchema``
and builds the UI message with ``readUIMessageStream``; for calls that wait for
approval it answers them as ``addToolApprovalResponse`` does and reads the
continuation into the same message. Needs node and ``npm ci`` in tests/node
(``.ci/run`` does both).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import (
    FINAL_AFTER_CUT,
    FINAL_DENIED,
    FINAL_WEATHER,
    make_agent,
    running_server,
    scenario_reply,
)
from zett_agent.serve import create_app
from zett_agent.testing import ReplayServer
from zett_agent.tools import CUT_OFF_ARGUMENTS

NODE_DIR = Path(__file__).parent / "node"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not (NODE_DIR / "node_modules" / "ai" / "package.json").exists(),
        reason="the AI SDK is not installed: run `npm ci` in tests/node",
    ),
]

CASES = {
    "refusal": "please refuse",
    "cutoff": "cut",
    "interrupted": "interrupt",
    "toolrun": "weather in Paris?",
    "cutcall": "cut-call",
    "reasoning": "think, then greet",
}


APPROVAL_CASES = {
    "approve1": "weather",
    "deny1": "weather",
    "approvereload": "weather",
    "denyreload": "weather",
    "approveboth": "both",
}
"""Read with get_weather waiting for approval (read_stream.mjs answers by chat id)."""


def read_with_the_sdk(url: str, cases: dict[str, str]) -> dict[str, Any]:
    args = [f"{chat_id}:{prompt}" for chat_id, prompt in cases.items()]
    done = subprocess.run(
        [str(NODE), "read_stream.mjs", url, *args],
        cwd=NODE_DIR,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results: dict[str, Any] = json.loads(done.stdout)
    return results


@pytest.fixture(scope="module")
def sdk_run() -> Iterator[tuple[dict[str, Any], str]]:
    with ReplayServer(route=scenario_reply) as replay:
        app = create_app(make_agent(replay.url), owns=True)
        with running_server(app) as url:
            yield read_with_the_sdk(url, CASES), url


@pytest.fixture(scope="module")
def sdk_approvals() -> Iterator[tuple[dict[str, Any], str]]:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=lambda call: call.name == "get_weather")
        with running_server(create_app(agent, owns=True)) as url:
            yield read_with_the_sdk(url, APPROVAL_CASES), url


def parts(result: dict[str, Any]) -> list[dict[str, Any]]:
    message = result["message"]
    assert message is not None, result["errors"]
    parts: list[dict[str, Any]] = message["parts"]
    return parts


def kinds(result: dict[str, Any]) -> list[str]:
    return [p["type"] for p in parts(result)]


def stop_of(result: dict[str, Any]) -> dict[str, Any]:
    [data] = [p["data"] for p in parts(result) if p["type"] == "data-stop"]
    return data  # type: ignore[no-any-return]


def finish_reason(result: dict[str, Any]) -> str:
    [finish] = [c for c in result["chunks"] if c["type"] == "finish"]
    return finish["finishReason"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("chat_id", list(CASES))
def test_every_chunk_validates_against_the_sdk_schema(
    sdk_run: tuple[dict[str, Any], str], chat_id: str
) -> None:
    result = sdk_run[0][chat_id]
    assert result["header"] == "v1"
    assert result["errors"] == []
    assert result["invalid"] == []
    assert len(result["chunks"]) >= 4
    assert result["chunks"][0]["type"] == "start"


def test_refusal_is_a_text_part_and_a_data_stop(sdk_run: tuple[dict[str, Any], str]) -> None:
    result = sdk_run[0]["refusal"]
    assert kinds(result) == ["step-start", "text", "data-stop"]
    assert parts(result)[1]["text"] == "I'm sorry, I can't assist with that request."
    assert stop_of(result)["reason"] == "refusal"
    assert finish_reason(result) == "content-filter"


@pytest.mark.parametrize(
    ("chat_id", "finish", "reason"),
    [
        ("refusal", "content-filter", "refusal"),
        ("cutoff", "length", "max_output"),
        ("interrupted", "interrupted", "interrupted"),
        ("toolrun", "stop", None),
    ],
)
def test_the_sdk_built_message_carries_finish_reason_and_stop_as_metadata(
    sdk_run: tuple[dict[str, Any], str], chat_id: str, finish: str, reason: str | None
) -> None:
    result = sdk_run[0][chat_id]
    metadata = result["message"]["metadata"]
    assert metadata["finishReason"] == finish
    if reason is None:
        assert metadata["stop"] is None
    else:
        stop = stop_of(result)
        assert metadata["stop"] == {k: stop[k] for k in ("reason", "raw", "category", "message")}
        assert metadata["stop"]["reason"] == reason


def test_cutoff_is_max_output_and_length(sdk_run: tuple[dict[str, Any], str]) -> None:
    result = sdk_run[0]["cutoff"]
    assert kinds(result) == ["step-start", "text", "data-stop"]
    assert (stop_of(result)["reason"], stop_of(result)["raw"]) == ("max_output", "length")
    assert finish_reason(result) == "length"


def test_interrupted_with_withheld_call_has_no_tool_part(
    sdk_run: tuple[dict[str, Any], str],
) -> None:
    result = sdk_run[0]["interrupted"]
    assert not [k for k in kinds(result) if k.startswith("tool-")]
    stop = stop_of(result)
    assert stop["reason"] == "interrupted"
    assert stop["detail"]["withheld_tool_calls"] == ["get_weather"]
    assert finish_reason(result) == "interrupted"


def test_normal_tool_run_has_the_tool_part_with_its_output(
    sdk_run: tuple[dict[str, Any], str],
) -> None:
    result = sdk_run[0]["toolrun"]
    assert kinds(result) == ["step-start", "tool-get_weather", "step-start", "text"]
    tool = parts(result)[1]
    assert tool["state"] == "output-available"
    assert tool["input"] == {"city": "Paris"}
    assert "light rain" in tool["output"]
    assert parts(result)[3]["text"] == FINAL_WEATHER
    assert finish_reason(result) == "stop"


def test_cut_call_is_an_errored_tool_part(sdk_run: tuple[dict[str, Any], str]) -> None:
    result = sdk_run[0]["cutcall"]
    assert kinds(result) == [
        "step-start",
        "text",
        "tool-get_weather",
        "data-stop",
        "step-start",
        "text",
    ]
    tool = parts(result)[2]
    assert (tool["state"], tool["errorText"]) == ("output-error", CUT_OFF_ARGUMENTS)
    assert parts(result)[-1]["text"] == FINAL_AFTER_CUT
    assert finish_reason(result) == "stop"


def test_reasoning_is_its_own_part_before_the_text(sdk_run: tuple[dict[str, Any], str]) -> None:
    result = sdk_run[0]["reasoning"]
    assert kinds(result) == ["step-start", "reasoning", "text"]
    assert parts(result)[1]["text"].startswith("Hmm, the user just said")
    assert parts(result)[2]["text"].startswith("Hello there!")
    assert finish_reason(result) == "stop"


@pytest.mark.parametrize("chat_id", list(CASES))
def test_second_turn_sending_the_sdk_built_history_back_is_accepted(
    sdk_run: tuple[dict[str, Any], str], chat_id: str
) -> None:
    result = sdk_run[0][chat_id]
    assert result["errors"] == []
    second = result["second"]
    assert second["id"] != result["message"]["id"]
    assert [p.get("text") for p in second["parts"] if p["type"] == "text"] == ["You said: thanks"]


@pytest.mark.parametrize("chat_id", list(CASES))
def test_stored_session_matches_what_the_sdk_built(
    sdk_run: tuple[dict[str, Any], str], chat_id: str
) -> None:
    results, url = sdk_run
    same_parts(results[chat_id]["message"], stored_answer(url, chat_id))


PART_KEYS = ("type", "state", "text", "data", "toolCallId", "input", "output", "errorText")


def stored_answer(url: str, chat_id: str) -> dict[str, Any]:
    stored: dict[str, Any] = httpx.get(f"{url}/api/sessions/{chat_id}").json()["messages"][1]
    return stored


def same_parts(streamed: dict[str, Any], stored: dict[str, Any]) -> None:
    """The stored message is what the SDK built from the stream: id, parts (with
    each tool part's approval), metadata."""
    assert stored["id"] == streamed["id"]
    keys = (*PART_KEYS, "approval")
    assert [{k: p.get(k) for k in keys} for p in stored["parts"]] == [
        {k: p.get(k) for k in keys} for p in streamed["parts"]
    ]
    assert stored["metadata"] == streamed["metadata"]


# ---------------------------------------------------------------- approvals


@pytest.mark.parametrize("chat_id", list(APPROVAL_CASES))
def test_approval_chunks_validate_and_the_continuation_builds_the_same_message(
    sdk_approvals: tuple[dict[str, Any], str], chat_id: str
) -> None:
    result = sdk_approvals[0][chat_id]
    approved = result["approved"]
    for read in (result, approved):
        assert read["errors"] == [] and read["invalid"] == []
    kinds = [c["type"] for c in result["chunks"]]
    assert "tool-approval-request" in kinds
    assert approved["chunks"][0]["messageId"] == result["message"]["id"]
    assert approved["message"]["id"] == result["message"]["id"]  # not renamed
    responses = [c for c in approved["chunks"] if c["type"] == "tool-approval-response"]
    asked = [c for c in result["chunks"] if c["type"] == "tool-approval-request"]
    assert [c["approvalId"] for c in responses] == [c["approvalId"] for c in asked]


@pytest.mark.parametrize("chat_id", ["approve1", "approvereload", "approveboth"])
def test_an_approved_call_runs_and_its_part_keeps_the_approval(
    sdk_approvals: tuple[dict[str, Any], str], chat_id: str
) -> None:
    result = sdk_approvals[0][chat_id]
    waiting = [p for p in result["message"]["parts"] if p["type"] == "tool-get_weather"]
    assert {p["state"] for p in waiting} == {"approval-requested"}
    assert result["message"]["metadata"] == {"finishReason": "tool-calls", "stop": None}
    message = result["approved"]["message"]
    tools = [p for p in message["parts"] if p["type"] == "tool-get_weather"]
    assert [p["state"] for p in tools] == ["output-available"] * len(waiting)
    assert [p["approval"] for p in tools] == [
        {"id": p["approval"]["id"], "approved": True} for p in waiting
    ]
    assert message["parts"][-1]["text"] == FINAL_WEATHER
    assert message["metadata"] == {"finishReason": "stop", "stop": None}


@pytest.mark.parametrize("chat_id", ["deny1", "denyreload"])
def test_a_denied_call_is_output_denied_with_its_reason(
    sdk_approvals: tuple[dict[str, Any], str], chat_id: str
) -> None:
    result = sdk_approvals[0][chat_id]
    [asked] = [c for c in result["chunks"] if c["type"] == "tool-approval-request"]
    message = result["approved"]["message"]
    [tool] = [p for p in message["parts"] if p["type"] == "tool-get_weather"]
    assert tool["state"] == "output-denied"
    assert tool["approval"] == {"id": asked["approvalId"], "approved": False, "reason": "not now"}
    assert "errorText" not in tool
    assert message["parts"][-1]["text"] == FINAL_DENIED


@pytest.mark.parametrize("chat_id", ["approvereload", "denyreload"])
def test_a_page_reloaded_while_calls_wait_restores_them_as_the_sdk_built_them(
    sdk_approvals: tuple[dict[str, Any], str], chat_id: str
) -> None:
    result = sdk_approvals[0][chat_id]
    same_parts(result["message"], result["restored"])


@pytest.mark.parametrize("chat_id", list(APPROVAL_CASES))
def test_after_an_approval_the_stored_session_is_what_the_sdk_built_and_a_turn_follows(
    sdk_approvals: tuple[dict[str, Any], str], chat_id: str
) -> None:
    results, url = sdk_approvals
    result = results[chat_id]
    assert result["errors"] == []
    second = result["second"]
    assert [p.get("text") for p in second["parts"] if p["type"] == "text"] == ["You said: thanks"]
    messages = httpx.get(f"{url}/api/sessions/{chat_id}").json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    same_parts(result["approved"]["message"], messages[1])
