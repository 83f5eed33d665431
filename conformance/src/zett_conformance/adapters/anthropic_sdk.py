"""The ``anthropic`` Python SDK used directly, as its tool-use guide shows.

The host reads ``stop_reason`` (``end_turn``/``stop_sequence`` -> end_turn,
``tool_use``, ``max_tokens`` -> max_output, ``model_context_window_exceeded`` ->
context_full, ``refusal``, ``pause_turn`` -> paused, any other string -> other) and
runs the ``tool_use`` blocks when ``stop_reason == "tool_use"`` (the guide's loop).
A stream is read with ``client.messages.stream(...)`` and ``get_final_message()``.
An ``anthropic.APIError`` is the host's typed error: interrupted. Retries are off.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import anthropic

from .._cases import Case
from .._run import Observation
from .._tools import TOOL_SCHEMA, ToolBox
from ._common import error_raw, run_call, short

NAME = "anthropic-sdk"
PROTOCOLS = frozenset({"anthropic"})

_STOP = {"end_turn": "end_turn", "stop_sequence": "end_turn", "tool_use": "tool_use",
         "max_tokens": "max_output", "model_context_window_exceeded": "context_full",
         "refusal": "refusal", "pause_turn": "paused"}  # fmt: skip


def version() -> str:
    return importlib.metadata.version("anthropic")


def run(case: Case, base_url: str, tools: ToolBox) -> Observation:
    client = anthropic.Anthropic(base_url=base_url, api_key="test-key", max_retries=0, timeout=30)
    kwargs: dict[str, Any] = {
        "model": "test-model",
        "max_tokens": case.max_tokens or 1024,
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"name": n, "description": n, "input_schema": TOOL_SCHEMA} for n in case.tools],
    }
    shown = ""  # what a streaming host has shown when an error comes
    try:
        if case.stream:
            with client.messages.stream(**kwargs) as stream:
                for piece in stream.text_stream:
                    shown += piece
                message = stream.get_final_message()
        else:
            message = client.messages.create(**kwargs)
    except anthropic.APIError as exc:
        return Observation("interrupted", raw=error_raw(exc), text=shown, error=short(exc))
    finally:
        client.close()
    reason = message.stop_reason
    stop = _STOP.get(reason, "other") if reason else None
    text = "".join(getattr(b, "text", "") for b in message.content if b.type == "text")
    calls = [b for b in message.content if b.type == "tool_use"]
    if reason == "tool_use":
        for block in calls:
            run_call(tools, block.name, block.input)
    raw = [reason] if reason else []
    details = getattr(message, "stop_details", None)
    category = getattr(details, "category", None) if details is not None else None
    if category:
        raw.append(str(category))
    return Observation(stop, raw=raw, text=text, tool_calls=[b.name for b in calls])
