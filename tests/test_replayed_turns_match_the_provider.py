"""What the provider sent is sent back as it was.

Per protocol: a recording is decoded over a real socket (``ReplayServer`` +
``Model.complete``), the next request is built (the answer, then a result for each
of its calls), and the replayed assistant turn is compared field by field with the
turn written by hand from the provider's documentation (``../shared/corpus/WIRE.md``;
the section is named on each case). Values (ids, signatures, argument text) are the
recording's own; which fields the turn must carry, and how, is the documentation's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from zett_agent import Model, ModelRequest, ToolResultMessage, UserMessage
from zett_agent.testing import ReplayServer, Reply

RECORDINGS = Path(__file__).parent / "recordings"
CASES = Path(__file__).parent / "cases"


def _sse_data(path: Path) -> list[dict[str, Any]]:
    """The JSON data lines of an SSE recording (to read the recording's own values)."""
    out = []
    for line in path.read_text().splitlines():
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            out.append(json.loads(line[5:]))
    return out


def _deepseek_reasoning(path: Path) -> str:
    return "".join(
        c["choices"][0]["delta"].get("reasoning_content") or ""
        for c in _sse_data(path)
        if c.get("choices")
    )


def _responses_output(path: Path) -> list[dict[str, Any]]:
    """The ``output`` of the final response object (the terminal event): the record of
    the response, as a non-streamed call returns it (its reasoning item's
    ``encrypted_content`` differs from the one in ``output_item.done``)."""
    (final,) = [e for e in _sse_data(path) if e.get("type") == "response.completed"]
    output: list[dict[str, Any]] = final["response"]["output"]
    return output


_GEMINI_3 = _sse_data(RECORDINGS / "gemini__stream_functionCall_then_STOP_empty_text.sse")
_VERTEX = _sse_data(RECORDINGS / "vertex__stream_functionCall_partialArgs_willContinue.sse")
_DEEPSEEK = RECORDINGS / "deepseek__stream_tool_call_index_fragments.sse"
_DEEPSEEK_CALL = next(
    c["choices"][0]["delta"]["tool_calls"][0]
    for c in _sse_data(_DEEPSEEK)
    if c.get("choices") and c["choices"][0]["delta"].get("tool_calls")
)


def expected_turns() -> list[Any]:
    return [
        # WIRE.md 1: tool_use blocks keyed by index; send the assistant content back
        # (pause_turn), each tool_use with its id, name and the joined input object.
        pytest.param(
            "anthropic", RECORDINGS / "anthropic__stream_tool_use_input_json_delta.sse",
            lambda body: next(m for m in body["messages"] if m["role"] == "assistant"),
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_01KFbKqPYSuAKujiL6mTfzYA", "name": "json",
                 "input": {"elements": [{"location": "San Francisco", "temperature": 58,
                                         "condition": "sunny"}]}}]},
            id="anthropic",
        ),
        # WIRE.md 5 + cases/replay: DeepSeek reasoning_content is sent back on a tool-call
        # turn (thinking mode requires it), content null beside tool_calls (WIRE.md 2).
        pytest.param(
            "deepseek", _DEEPSEEK,
            lambda body: next(m for m in body["messages"] if m["role"] == "assistant"),
            {"role": "assistant", "content": None,
             "reasoning_content": _deepseek_reasoning(_DEEPSEEK),
             "tool_calls": [{"id": _DEEPSEEK_CALL["id"], "type": "function",
                             "function": {"name": _DEEPSEEK_CALL["function"]["name"],
                                          "arguments": '{"location": "San Francisco"}'}}]},
            id="deepseek-reasoning",
        ),
        pytest.param(
            "deepseek", CASES / "replay" / "deepseek_empty_reasoning_then_tool.sse",
            lambda body: next(m for m in body["messages"] if m["role"] == "assistant"),
            {"role": "assistant", "content": None, "reasoning_content": "",
             "tool_calls": [{"id": "call_50", "type": "function",
                             "function": {"name": "lookup",
                                          "arguments": '{"query": "alpha"}'}}]},
            id="deepseek-empty-reasoning",
        ),
        # WIRE.md 3: the response's output items are input items; reasoning
        # (encrypted_content) and function_call (call_id, name, arguments) go back as
        # the provider sent them in the final response object.
        pytest.param(
            "openai-responses",
            RECORDINGS / "openai_responses__stream_function_call_args_delta.sse",
            lambda body: [i for i in body["input"] if i.get("type") != "function_call_output"
                          and i.get("role") != "user"],
            _responses_output(
                RECORDINGS / "openai_responses__stream_function_call_args_delta.sse"),
            id="openai-responses",
        ),
        # WIRE.md 4: the thoughtSignature sits on the part and goes back on it.
        pytest.param(
            "google", RECORDINGS / "gemini__stream_functionCall_then_STOP_empty_text.sse",
            lambda body: body["contents"][1],
            {"role": "model", "parts": [
                {"functionCall": {"name": "weather", "args": {"location": "San Francisco"}},
                 "thoughtSignature": _GEMINI_3[0]["candidates"][0]["content"]["parts"][0][
                     "thoughtSignature"]}]},
            id="gemini",
        ),
        # WIRE.md 4 (Vertex streamFunctionCallArguments): partialArgs joined into whole
        # calls; the signature stays on the first call's part.
        pytest.param(
            "vertex", RECORDINGS / "vertex__stream_functionCall_partialArgs_willContinue.sse",
            lambda body: body["contents"][1],
            {"role": "model", "parts": [
                {"functionCall": {"name": "getWeather", "args": {"location": "Boston"}},
                 "thoughtSignature": _VERTEX[0]["candidates"][0]["content"]["parts"][0][
                     "thoughtSignature"]},
                {"functionCall": {"name": "getWeather", "args": {"location": "San Francisco"}}},
            ]},
            id="vertex",
        ),
        # WIRE.md 13: tool_calls with the arguments as an OBJECT, no id.
        pytest.param(
            "ollama", RECORDINGS / "ollama__chat_tool_calls_done_reason_stop.json",
            lambda body: next(m for m in body["messages"] if m["role"] == "assistant"),
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "get_current_weather",
                              "arguments": {"format": "celsius", "location": "Paris, FR"}}}]},
            id="ollama",
        ),
    ]  # fmt: skip


@pytest.mark.parametrize(("vendor", "path", "pick", "expected"), expected_turns())
async def test_replayed_assistant_turn_is_what_the_provider_sent(
    vendor: str, path: Path, pick: Any, expected: Any
) -> None:
    stream = path.suffix != ".json"
    with ReplayServer([Reply.file(path)]) as server:
        model = Model(vendor, "m", base_url=server.url, api_key="k", stream=stream)
        response = await model.complete(ModelRequest("m", [UserMessage("go")]))
        await model.aclose()
    answer = response.to_message(vendor)
    assert answer.tool_calls, "each recording asks for a tool"
    results = [ToolResultMessage(c.id, c.name, "done") for c in answer.tool_calls]
    request = ModelRequest("m", [UserMessage("go"), answer, *results])
    sent = pick(model.protocol.encode_request(request, model.vendor).body)
    # field by field, so a missing or changed field is named
    if isinstance(expected, dict):
        assert sorted(sent) == sorted(expected)
        for key in expected:
            assert sent[key] == expected[key], key
    else:
        assert len(sent) == len(expected)
        for got, want in zip(sent, expected, strict=True):
            assert sorted(got) == sorted(want)
            for key in want:
                assert got[key] == want[key], key
