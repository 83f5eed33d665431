"""A stop value that is a number (``finish_reason: 42``, ``stop_reason: 42``...) is a
value no table knows: OTHER with the original kept as a string in ``raw`` (seed 001:
"it becomes OTHER with the original kept"), on every protocol, streamed and as a
body, through a real socket. It used to give ``raw`` None and a "missing" note on
Chat and Anthropic."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from handwritten_wire import (
    A_START,
    a_text,
    body,
    c_chunk,
    data,
    g,
    named,
    ndjson,
    o,
    r_message,
    r_response,
    r_text,
)
from zett_agent import Model, ModelRequest, StopReason, UserMessage
from zett_agent.testing import ReplayServer, Reply


def _anthropic(value: Any, stream: bool) -> Reply:
    if stream:
        return named(
            A_START,
            *a_text("Hi"),
            {"type": "message_delta", "delta": {"stop_reason": value},
             "usage": {"output_tokens": 1}},
            {"type": "message_stop"},
        )  # fmt: skip
    return body({"type": "message", "role": "assistant", "model": "m", "stop_reason": value,
                 "content": [{"type": "text", "text": "Hi"}]})  # fmt: skip


def _chat(value: Any, stream: bool) -> Reply:
    if stream:
        return data(c_chunk({"content": "Hi"}), c_chunk({}, value), "[DONE]")
    choice = {"index": 0, "message": {"role": "assistant", "content": "Hi"}}
    return body({"object": "chat.completion", "model": "m",
                 "choices": [{**choice, "finish_reason": value}]})  # fmt: skip


def _responses(value: Any, stream: bool) -> Reply:
    response = r_response("incomplete", [r_message("Hi")], incomplete_details={"reason": value})
    if stream:
        return named(*r_text("Hi"), {"type": "response.incomplete", "response": response})
    return body(response)


def _gemini(value: Any, stream: bool) -> Reply:
    chunk = g([{"text": "Hi"}], None)
    chunk["candidates"][0]["finishReason"] = value
    return data(chunk) if stream else body(chunk)


def _ollama(value: Any, stream: bool) -> Reply:
    final = {**o({"content": "Hi"}, done=True), "done_reason": value}
    return ndjson(final) if stream else body(final)


WIRES: dict[str, Callable[[Any, bool], Reply]] = {
    "anthropic": _anthropic,
    "openai": _chat,
    "openai-responses": _responses,
    "google": _gemini,
    "ollama": _ollama,
}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize(("value", "raw"), [(42, "42"), (4.5, "4.5"), (True, "true")])
@pytest.mark.parametrize("vendor", list(WIRES))
async def test_a_scalar_stop_value_is_other_with_the_original_as_a_string(
    vendor: str, value: Any, raw: str, stream: bool
) -> None:
    with ReplayServer([WIRES[vendor](value, stream)]) as server:
        model = Model(vendor, "m", base_url=server.url, api_key="k", stream=stream)
        response = await model.complete(ModelRequest("m", [UserMessage("hi")]))
        await model.aclose()
    info = response.stop_info
    assert (info.reason, info.raw, info.category) == (StopReason.OTHER, raw, raw)
    assert response.text == "Hi"
    assert not any("missing" in key for key in info.detail), info.detail
