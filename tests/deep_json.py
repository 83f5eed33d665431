"""Hostile bodies with JSON nested deeper than Python can parse, written here so the
tests do not depend on ``../shared/cases`` (the kinds are those of
``hostile/make.py``: ``openai_deep_json_event.sse`` and ``anthropic_deep_tool_input.sse``).
"""

from __future__ import annotations

import json
from typing import Any

DEPTH = 10_000  # far past Python's recursion limit (1,000)


def nested(depth: int) -> str:
    """``[[[...]]]``: ``depth`` arrays inside each other, as JSON text."""
    return "[" * depth + "]" * depth


def openai_deep_json_event(depth: int = DEPTH) -> bytes:
    """A Chat Completions stream whose one content chunk also carries an ``extra``
    field nested ``depth`` levels deep, then ``[DONE]``."""
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}],
    }
    line = json.dumps(chunk)[:-1] + ', "extra": ' + nested(depth) + "}"
    return f"data: {line}\n\ndata: [DONE]\n\n".encode()


def _sse(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {data if isinstance(data, str) else json.dumps(data)}\n\n"


def anthropic_deep_tool_input(depth: int = DEPTH, tool: str = "archive") -> bytes:
    """A Messages stream: one ``tool_use`` block of ``tool`` whose input JSON is
    ``{"items": <depth levels>}``, streamed as one ``input_json_delta``, then
    ``stop_reason: tool_use``."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_d",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 5, "output_tokens": 1},
        },
    }
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_d", "name": tool, "input": {}},
    }
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": '{"items": ' + nested(depth) + "}"},
    }
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 30},
    }
    return "".join(
        [
            _sse("message_start", start),
            _sse("content_block_start", block),
            _sse("content_block_delta", delta),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse("message_delta", end),
            _sse("message_stop", {"type": "message_stop"}),
        ]
    ).encode()
