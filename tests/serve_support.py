"""Shared by the ``zett serve`` tests and bench/serve_load.py: replayed model
answers routed by what each request asks, and a real uvicorn server in a thread.

Scenarios (the user's prompt names one; the provider is OpenAI Chat Completions):

==============  ============================================================  ==========
prompt          replayed answer                                               stop
==============  ============================================================  ==========
``refuse``      recording: a streamed ``refusal`` delta                      REFUSAL
``cut``         recording: ``finish_reason: length`` after two characters    MAX_OUTPUT
``interrupt``   recording: a get_weather call cut by an error chunk          INTERRUPTED,
                                                                              withheld
``weather``     a get_weather(Paris) call; after its result, a text answer   normal
                (:data:`FINAL_DENIED` when the result says a person denied it)
``both``        get_weather(Paris) and get_weather(Oslo) in one answer       normal
``cut-call``    text, then a get_weather call whose arguments end mid-string, MAX_OUTPUT,
                ``length``; after the cut-off result, a text answer           then normal
``slow``        40 words, 0.1 s apart                                         normal
``flood``       4,000 text deltas of 2,000 characters, no pause (8 MB)     normal
``think``       recording: DeepSeek reasoner, reasoning then text            normal
``fail``        HTTP 401 whose message holds a secret                         (an error)
``rate limit``  HTTP 429 with ``retry-after: 7``                              (an error)
(anything)      ``You said: <prompt>``, plus ``(N images)`` for image parts   normal
==============  ============================================================  ==========
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from zett_agent import Agent, AgentRunConfig
from zett_agent.demo_tools import get_time, get_weather
from zett_agent.model import Model
from zett_agent.testing import RecordedRequest, Reply

RECORDINGS = Path(__file__).parent / "recordings"
FINAL_WEATHER = "It is light rain in Paris, 14 °C."
FINAL_AFTER_CUT = "The call was cut off; ask again with a shorter question."
FLOOD_DELTAS, FLOOD_DELTA = 4000, 2000
FINAL_DENIED = "Understood, I did not check the weather."


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-zett",
        "object": "chat.completion.chunk",
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _call(call_id: str, name: str, arguments: list[str]) -> list[dict[str, Any]]:
    head = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    pieces = [_chunk({"role": "assistant", "tool_calls": [head]})]
    for piece in arguments:
        pieces.append(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    return pieces


def _sse(chunks: list[dict[str, Any]], **options: Any) -> Reply:
    return Reply.sse([(None, c) for c in chunks] + [(None, "[DONE]")], **options)


def _text(text: str, finish: str = "stop") -> list[dict[str, Any]]:
    words = [w + " " for w in text.split(" ")]
    words[-1] = words[-1].rstrip()
    return (
        [_chunk({"role": "assistant", "content": ""})]
        + [_chunk({"content": w}) for w in words]
        + [_chunk({}, finish)]
    )


def scenario_reply(request: RecordedRequest, delay: float = 0.0) -> Reply:
    """The replayed answer for ``request`` (see the module docstring)."""
    body = request.json
    messages = body["messages"]
    last = messages[-1]
    asked = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    prompt = _prompt_text(asked)
    options: dict[str, Any] = {"delay": delay}
    if last["role"] == "tool":
        final = FINAL_AFTER_CUT if "cut-call" in prompt else FINAL_WEATHER
        if "denied" in str(last.get("content", "")):
            final = FINAL_DENIED
        return _sse(_text(final), **options)
    if "fail" in prompt:  # an error before any output: the run fails
        error = {"message": "invalid key sk-secret-123", "type": "invalid_request_error"}
        return Reply.json({"error": error}, status=401)
    if "flood" in prompt:  # more than a client that stops reading can buffer
        pieces = [f"{n:04d}" + "x" * (FLOOD_DELTA - 4) for n in range(FLOOD_DELTAS)]
        chunks = [_chunk({"role": "assistant", "content": ""})]
        chunks += [_chunk({"content": piece}) for piece in pieces] + [_chunk({}, "stop")]
        return _sse(chunks, **options)
    if "rate limit" in prompt:  # a 429 before any output
        error = {"message": "Rate limit reached for requests", "type": "requests"}
        return Reply.json({"error": error}, status=429, headers={"retry-after": "7"})
    if "slow" in prompt:  # 40 words, 0.1 s apart: time to disconnect mid-answer
        return _sse(_text(" ".join(f"word{n}" for n in range(40))), delay=max(delay, 0.1))
    if "think" in prompt:
        return Reply.file(RECORDINGS / "deepseek__stream_reasoner_stop_usage.sse", **options)
    if "refuse" in prompt:
        return Reply.file(RECORDINGS / "openai_chat__stream_refusal_delta.sse", **options)
    if "interrupt" in prompt:
        return Reply.file(
            RECORDINGS / "openai_compat_gateway__stream_truncated_tool_args_then_error.sse",
            **options,
        )
    if "cut-call" in prompt:
        chunks = [_chunk({"role": "assistant", "content": "Checking. "})]
        chunks += _call("call_cut", "get_weather", ['{"city": "Pa'])
        chunks.append(_chunk({}, "length"))
        return _sse(chunks, **options)
    if "cut" in prompt:
        return Reply.file(RECORDINGS / "openai_chat__stream_length_truncated_json.sse", **options)
    if "both" in prompt:
        chunks = _call("call_p", "get_weather", ['{"city": "Paris"}'])
        second = _call("call_o", "get_weather", ['{"city": "Oslo"}'])
        for chunk in second:  # the second call at index 1
            for call in chunk["choices"][0]["delta"].get("tool_calls", []):
                call["index"] = 1
        chunks += second
        chunks.append(_chunk({}, "tool_calls"))
        return _sse(chunks, **options)
    if "weather" in prompt:
        chunks = _call("call_w1", "get_weather", ['{"city"', ': "Paris"}'])
        chunks.append(_chunk({}, "tool_calls"))
        return _sse(chunks, **options)
    return _sse(_text(f"You said: {prompt}"), **options)


def _prompt_text(content: Any) -> str:
    """A user message's text (its text parts, and how many images came with it)."""
    if isinstance(content, str):
        return content
    texts = [p.get("text", "") for p in content if p.get("type") == "text"]
    images = sum(1 for p in content if p.get("type") == "image_url")
    return " ".join(texts) + (f" ({images} image{'s' if images > 1 else ''})" if images else "")


def make_agent(base_url: str, *, client: Any = None, **config: Any) -> Agent:
    """An agent on the replay server with the demo tools (``client``: an
    ``httpx.AsyncClient`` for the model, e.g. with a larger pool)."""
    model = Model(
        "openai", "gpt-test", base_url=base_url, api_key="test-key", max_retries=0, client=client
    )
    return Agent(model, AgentRunConfig("serve-test", **config), [get_weather, get_time])


@contextlib.contextmanager
def running_server(app: Any) -> Iterator[str]:
    """Run ``app`` with uvicorn on 127.0.0.1 in a thread; yields its base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", backlog=1024)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def chat_body(chat_id: str, text: str, **extra: Any) -> dict[str, Any]:
    """The body useChat sends for a new user message (with a field it may add)."""
    return {
        "id": chat_id,
        "messages": [
            {"id": f"m-{chat_id}", "role": "user", "parts": [{"type": "text", "text": text}]}
        ],
        "trigger": "submit-message",
        **extra,
    }


def read_chunks(body: str) -> list[dict[str, Any]]:
    """The JSON chunks of an SSE body (``[DONE]`` must be the last event)."""
    events = [e for e in body.split("\n\n") if e.strip()]
    assert events[-1] == "data: [DONE]", events[-3:]
    chunks = []
    for event in events[:-1]:
        assert event.startswith("data: "), event
        chunks.append(json.loads(event[len("data: ") :]))
    return chunks
