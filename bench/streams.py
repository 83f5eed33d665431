"""Large provider streams, built in code from the chunk shapes of the recordings.

``build(protocol, n_text, n_tool)`` returns the SSE events ``(event name or None,
data)`` of one answer with ``n_text`` text deltas and a tool call whose JSON
arguments arrive in ``n_tool`` fragments. The shapes are those of
``tests/recordings``:

* ``anthropic``: ``anthropic__stream_tool_use_input_json_delta.sse``
  (``message_start``, text and ``tool_use`` content blocks, ``input_json_delta``);
* ``openai-chat``: ``openai_chat__stream_parallel_tool_calls_index.sse``
  (``chat.completion.chunk`` with ``delta.content`` / ``delta.tool_calls``, ``[DONE]``);
* ``gemini``: ``gemini__stream_text_usage_changes_between_chunks.sse`` for text and
  ``vertex__stream_functionCall_partialArgs_willContinue.sse`` for the streamed call
  (``partialArgs`` + ``willContinue``).

A request whose body already holds a tool result is answered by :func:`final`, a
short text answer, so full agent runs (tool call, tool, answer) end.
"""

from __future__ import annotations

import json
from typing import Any

TOOL_NAME = "write_note"


def words(n: int) -> list[str]:
    """``n`` distinct text deltas (LiteLLM rejects a stream that repeats one chunk)."""
    return [f"w{i} " for i in range(n)]


def _sse(events: list[tuple[str | None, Any]]) -> list[tuple[str | None, str]]:
    return [
        (name, data if isinstance(data, str) else json.dumps(data, separators=(",", ":")))
        for name, data in events
    ]


def _arg_pieces(n_tool: int) -> list[str]:
    """``n_tool`` fragments (at least 2) that join to ``{"text": "xxx..."}``."""
    n = max(2, n_tool)
    return ['{"text": "', *(["abcdefgh"] * (n - 2)), '"}']


def anthropic(n_text: int, n_tool: int, *, texts: list[str] | None = None) -> list[Any]:
    texts = texts if texts is not None else words(n_text)
    events: list[tuple[str | None, Any]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "model": "claude-haiku-4-5-20251001",
                    "id": "msg_01K2",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 849,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": 10,
                    },
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for text in texts:
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
            )
        )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    stop_reason = "end_turn"
    if n_tool:
        stop_reason = "tool_use"
        events.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {
                        "type": "tool_use",
                        "id": "toolu_01KF",
                        "name": TOOL_NAME,
                        "input": {},
                    },
                },
            )
        )
        for piece in _arg_pieces(n_tool):
            events.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 1,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
            )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 1}))
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": n_text + n_tool},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events)


def openai_chat(n_text: int, n_tool: int, *, texts: list[str] | None = None) -> list[Any]:
    texts = texts if texts is not None else words(n_text)
    head = {
        "id": "chatcmpl-ABfw",
        "object": "chat.completion.chunk",
        "created": 1727346178,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_5050236cbd",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**head, "choices": [choice]}

    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    events += [(None, chunk({"content": text})) for text in texts]
    finish = "stop"
    if n_tool:
        finish = "tool_calls"
        pieces = _arg_pieces(n_tool)
        first = {
            "index": 0,
            "id": "call_JMW1",
            "type": "function",
            "function": {"name": TOOL_NAME, "arguments": pieces[0]},
        }
        events.append((None, chunk({"tool_calls": [first]})))
        for piece in pieces[1:]:
            call = {"index": 0, "function": {"arguments": piece}}
            events.append((None, chunk({"tool_calls": [call]})))
    events.append((None, chunk({}, finish)))
    usage = {"prompt_tokens": 849, "completion_tokens": n_text + n_tool, "total_tokens": 900}
    events.append((None, {**head, "choices": [], "usage": usage}))
    events.append((None, "[DONE]"))
    return _sse(events)


def gemini(n_text: int, n_tool: int, *, texts: list[str] | None = None) -> list[Any]:
    texts = texts if texts is not None else words(n_text)
    meta = {"modelVersion": "gemini-2.0-flash", "responseId": "11peaI_ZJLq3nvgP0vasuQk"}

    def chunk(parts: list[Any], finish: str | None = None, count: int = 0) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        usage = {
            "promptTokenCount": 169,
            "candidatesTokenCount": count,
            "totalTokenCount": 169 + count,
        }
        return {"candidates": [candidate], "usageMetadata": usage, **meta}

    events: list[tuple[str | None, Any]] = [
        (None, chunk([{"text": text}], count=i)) for i, text in enumerate(texts)
    ]
    if n_tool:
        events.append((None, chunk([{"functionCall": {"name": TOOL_NAME, "willContinue": True}}])))
        for _ in range(max(1, n_tool - 2)):
            piece = {"jsonPath": "$.text", "stringValue": "abcdefgh", "willContinue": True}
            call = {"partialArgs": [piece], "willContinue": True}
            events.append((None, chunk([{"functionCall": call}])))
        events.append((None, chunk([{"functionCall": {}}], "STOP", n_text + n_tool)))
    else:
        events.append((None, chunk([{"text": ""}], "STOP", n_text)))
    return _sse(events)


BUILDERS = {"anthropic": anthropic, "openai-chat": openai_chat, "gemini": gemini}


def build(protocol: str, n_text: int, n_tool: int) -> list[tuple[str | None, str]]:
    return BUILDERS[protocol](n_text, n_tool)  # type: ignore[no-any-return]


def final(protocol: str) -> list[tuple[str | None, str]]:
    """The short answer after a tool result."""
    return BUILDERS[protocol](1, 0, texts=["Done."])  # type: ignore[no-any-return]


def sse_bytes(event: str | None, data: str) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n".encode()


def chunked_body(events: list[tuple[str | None, str]]) -> bytes:
    """The HTTP/1.1 chunked body: one chunk per SSE event, as providers send them."""
    out = bytearray()
    for event, data in events:
        piece = sse_bytes(event, data)
        out += b"%x\r\n%s\r\n" % (len(piece), piece)
    out += b"0\r\n\r\n"
    return bytes(out)


def coalesced_body(events: list[tuple[str | None, str]], size: int) -> bytes:
    """The same SSE bytes cut into ``size``-byte HTTP chunks (the last may be
    shorter): events straddle chunk boundaries, as from a server that buffers."""
    sse = b"".join(sse_bytes(event, data) for event, data in events)
    out = bytearray()
    for start in range(0, len(sse), size):
        piece = sse[start : start + size]
        out += b"%x\r\n%s\r\n" % (len(piece), piece)
    out += b"0\r\n\r\n"
    return bytes(out)
