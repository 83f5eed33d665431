"""The ``openai`` Python SDK used directly, as its function-calling guide shows:
Chat Completions (OpenAI and every OpenAI-compatible vendor, whose docs point at
this SDK with a ``base_url``) and Responses.

The host reads the SDK's fields: Chat ``choices[0].finish_reason`` (``stop`` ->
end_turn, ``length`` -> max_output, ``tool_calls``/``function_call`` -> tool_use,
``content_filter`` -> refusal, any other string -> other) and ``message.refusal``
(-> refusal); Responses ``status`` (``completed`` -> end_turn, or tool_use with a
function_call item; ``incomplete`` with ``incomplete_details.reason``
``max_output_tokens`` -> max_output, ``content_filter`` -> refusal; ``failed`` ->
interrupted) and refusal content parts (-> refusal). It runs the calls the answer
holds, as the guide's loop does (``for tool_call in message.tool_calls``). A
streamed answer is accumulated from its chunks as the guide shows. An
``openai.APIError`` raised by the SDK is the host's typed error: interrupted.
Retries are off (``max_retries=0``).
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import openai

from .._cases import Case
from .._run import Observation
from .._tools import TOOL_SCHEMA, ToolBox
from ._common import error_raw, responses_stop, run_call, short

NAME = "openai-sdk"
PROTOCOLS = frozenset({"openai-chat", "openai-responses"})

_CHAT = {"stop": "end_turn", "length": "max_output", "tool_calls": "tool_use",
         "function_call": "tool_use", "content_filter": "refusal"}  # fmt: skip


def version() -> str:
    return importlib.metadata.version("openai")


def run(case: Case, base_url: str, tools: ToolBox) -> Observation:
    client = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0, timeout=30)
    seen: dict[str, str] = {"text": ""}  # what a streaming host has shown when an error comes
    try:
        if case.protocol == "openai-chat":
            return _chat(client, case, tools, seen)
        return _responses(client, case, tools, seen)
    except openai.APIError as exc:
        return Observation("interrupted", raw=error_raw(exc), text=seen["text"], error=short(exc))
    finally:
        client.close()


def _text(content: Any) -> str:
    """A delta's content: a string, or (Mistral's thinking chunks) a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _chat(client: openai.OpenAI, case: Case, tools: ToolBox, seen: dict[str, str]) -> Observation:
    kwargs: dict[str, Any] = {
        "model": "test-model",
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"type": "function", "function": {"name": n, "description": n,
                                                    "parameters": TOOL_SCHEMA}}
                  for n in case.tools],
    }  # fmt: skip
    if case.max_tokens:
        kwargs["max_tokens"] = case.max_tokens
    if case.tool_choice:
        kwargs["tool_choice"] = case.tool_choice
    text, refusal, finish = "", "", None
    calls: list[dict[str, Any]] = []
    if case.stream:
        by_index: dict[int, dict[str, Any]] = {}
        for chunk in client.chat.completions.create(stream=True, **kwargs):
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta is not None:
                    text += _text(delta.content)
                    seen["text"] = text
                    refusal += getattr(delta, "refusal", None) or ""
                    for tc in delta.tool_calls or []:
                        slot = by_index.setdefault(tc.index or 0, {"name": "", "arguments": ""})
                        if tc.function is not None:
                            slot["name"] += tc.function.name or ""
                            slot["arguments"] += tc.function.arguments or ""
                if choice.finish_reason:
                    finish = choice.finish_reason
        calls = [by_index[i] for i in sorted(by_index)]
    else:
        completion = client.chat.completions.create(**kwargs)
        choice = completion.choices[0]
        finish = choice.finish_reason
        message = choice.message
        text = _text(message.content)
        refusal = message.refusal or ""
        calls = [{"name": tc.function.name, "arguments": tc.function.arguments}
                 for tc in message.tool_calls or [] if getattr(tc, "function", None)]  # fmt: skip
    stop = "refusal" if refusal else (_CHAT.get(finish, "other") if finish else None)
    for call in calls:
        run_call(tools, call["name"], call["arguments"])
    return Observation(stop, raw=[finish] if finish else [], text=text + refusal,
                       tool_calls=[c["name"] for c in calls])  # fmt: skip


def _responses(
    client: openai.OpenAI, case: Case, tools: ToolBox, seen: dict[str, str]
) -> Observation:
    kwargs: dict[str, Any] = {
        "model": "test-model",
        "input": "go",
        "tools": [{"type": "function", "name": n, "description": n, "parameters": TOOL_SCHEMA,
                   "strict": False} for n in case.tools],
    }  # fmt: skip
    if case.max_tokens:
        kwargs["max_output_tokens"] = case.max_tokens
    response = None
    error_codes: list[str] = []
    if case.stream:
        for event in client.responses.create(stream=True, **kwargs):
            kind = getattr(event, "type", "")
            if kind in ("response.completed", "response.incomplete", "response.failed"):
                response = event.response
            elif kind == "response.output_text.delta":
                seen["text"] += event.delta
            elif kind == "error":
                error_codes += [str(v) for v in (getattr(event, "code", None),) if v]
        if response is None:
            return Observation("interrupted" if error_codes else None, raw=error_codes,
                               note="stream ended without a terminal event")  # fmt: skip
    else:
        response = client.responses.create(**kwargs)
    text, refusal = "", ""
    calls: list[dict[str, Any]] = []
    for item in response.output or []:
        if item.type == "message":
            for part in item.content or []:
                if part.type == "output_text":
                    text += part.text
                elif part.type == "refusal":
                    refusal += part.refusal
        elif item.type == "function_call":
            calls.append({"name": item.name, "arguments": item.arguments})
    status = response.status
    reason = getattr(response.incomplete_details, "reason", None)
    raw = [v for v in (status, reason) if v]
    if response.error is not None:
        raw.append(str(response.error.code))
    stop = responses_stop(status, reason, calls=bool(calls), unknown="other")
    if refusal:
        stop = "refusal"
    for call in calls:
        run_call(tools, call["name"], call["arguments"])
    return Observation(stop, raw=raw + error_codes, text=text + refusal,
                       tool_calls=[c["name"] for c in calls])  # fmt: skip
