"""LiteLLM's ``completion`` (every protocol, through its provider prefix) and
``responses`` (OpenAI Responses), pointed at the replay with ``api_base``.

The host reads LiteLLM's normalized ``choices[0].finish_reason`` (OpenAI's values:
``stop`` -> end_turn, ``length`` -> max_output, ``tool_calls``/``function_call`` ->
tool_use, ``content_filter`` -> refusal, any other string -> other; the message's
``refusal`` -> refusal) and runs the calls of the message, as an OpenAI-style
host loop does. LiteLLM's typed exceptions are the host's errors:
``ContentPolicyViolationError`` -> refusal, ``ContextWindowExceededError`` ->
context_full, every other LiteLLM/OpenAI error -> interrupted. Retries are off.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import litellm

from .._cases import Case
from .._run import Observation
from .._tools import TOOL_SCHEMA, ToolBox
from ._common import error_raw, responses_stop, run_call, short

NAME = "litellm"
PROTOCOLS = frozenset({"anthropic", "openai-chat", "gemini", "ollama"})
# Not "openai-responses": litellm.responses(stream=True) with an api_base sent neither
# "stream" nor the tools here (the first request's body), so its cases are left out
# rather than scored on an exchange the runtime did not ask for; _responses is kept.

_FINISH = {"stop": "end_turn", "length": "max_output", "tool_calls": "tool_use",
           "function_call": "tool_use", "content_filter": "refusal"}  # fmt: skip
_PREFIX = {"anthropic": "anthropic", "openai": "openai", "openai-responses": "openai",
           "deepseek": "deepseek", "mistral": "mistral", "groq": "groq", "xai": "xai",
           "openrouter": "openrouter", "google": "gemini", "ollama": "ollama_chat"}  # fmt: skip


def version() -> str:
    return importlib.metadata.version("litellm")


def _model(case: Case) -> str:
    if case.protocol == "anthropic":
        return "anthropic/test-model"
    if case.protocol == "gemini":
        return "gemini/test-model"
    if case.protocol == "ollama":
        return "ollama_chat/test-model"
    return f"{_PREFIX.get(case.vendor, 'openai')}/test-model"


def _error(exc: BaseException, text: str) -> Observation:
    if isinstance(exc, litellm.ContentPolicyViolationError):
        stop = "refusal"
    elif isinstance(exc, litellm.ContextWindowExceededError):
        stop = "context_full"
    else:
        stop = "interrupted"
    return Observation(stop, raw=error_raw(exc), text=text, error=short(exc))


def _is_runtime_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith(("litellm", "openai"))


def run(case: Case, base_url: str, tools: ToolBox) -> Observation:
    if case.protocol == "openai-responses":
        return _responses(case, base_url, tools)
    api_base = base_url + ("/v1" if case.protocol in ("openai-chat",) else "")
    kwargs: dict[str, Any] = {
        "model": _model(case),
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"type": "function", "function": {"name": n, "description": n,
                                                    "parameters": TOOL_SCHEMA}}
                  for n in case.tools],
        "api_base": api_base,
        "api_key": "test-key",
        "num_retries": 0,
        "max_retries": 0,
        "timeout": 30,
    }  # fmt: skip
    if case.max_tokens:
        kwargs["max_tokens"] = case.max_tokens
    if case.tool_choice:
        kwargs["tool_choice"] = case.tool_choice
    text, refusal, finish = "", "", None
    calls: list[dict[str, Any]] = []
    try:
        if case.stream:
            chunks = []
            for chunk in litellm.completion(stream=True, **kwargs):
                chunks.append(chunk)
                for choice in chunk.choices or []:
                    text += getattr(choice.delta, "content", None) or ""
                    if choice.finish_reason:
                        finish = choice.finish_reason
            whole = litellm.stream_chunk_builder(chunks) if chunks else None
            message = whole.choices[0].message if whole and whole.choices else None
            if whole and whole.choices and whole.choices[0].finish_reason:
                finish = finish or whole.choices[0].finish_reason
        else:
            response = litellm.completion(**kwargs)
            if not response.choices:
                return Observation(None, note="no choices")
            choice = response.choices[0]
            finish = choice.finish_reason
            message = choice.message
            text = message.content or ""
        if message is not None:
            refusal = getattr(message, "refusal", None) or ""
            for tc in getattr(message, "tool_calls", None) or []:
                calls.append({"name": tc.function.name, "arguments": tc.function.arguments})
    except Exception as exc:
        if not _is_runtime_error(exc):
            raise
        return _error(exc, text)
    stop = "refusal" if refusal else (_FINISH.get(finish, "other") if finish else None)
    for call in calls:
        run_call(tools, call["name"], call["arguments"])
    return Observation(stop, raw=[finish] if finish else [], text=text + refusal,
                       tool_calls=[c["name"] for c in calls])  # fmt: skip


def _field(value: Any, key: str) -> Any:
    """A field of a LiteLLM Responses object or of its dict form."""
    return value.get(key) if isinstance(value, dict) else getattr(value, key, None)


def _responses(case: Case, base_url: str, tools: ToolBox) -> Observation:
    kwargs: dict[str, Any] = {
        "model": "openai/test-model",
        "input": "go",
        "tools": [{"type": "function", "name": n, "description": n, "parameters": TOOL_SCHEMA}
                  for n in case.tools],
        "api_base": base_url + "/v1",
        "api_key": "test-key",
        "num_retries": 0,
        "timeout": 30,
    }  # fmt: skip
    response = None
    try:
        if case.stream:
            for event in litellm.responses(stream=True, **kwargs):
                if getattr(event, "type", "") in (
                    "response.completed", "response.incomplete", "response.failed"
                ):  # fmt: skip
                    response = event.response
        else:
            response = litellm.responses(**kwargs)
    except Exception as exc:
        if not _is_runtime_error(exc):
            raise
        return _error(exc, "")
    if response is None:
        return Observation(None, note="no terminal event")
    text, refusal = "", ""
    calls = []
    for item in getattr(response, "output", None) or []:
        kind = _field(item, "type")
        if kind == "message":
            for part in _field(item, "content") or []:
                if _field(part, "type") == "output_text":
                    text += _field(part, "text") or ""
                elif _field(part, "type") == "refusal":
                    refusal += _field(part, "refusal") or ""
        elif kind == "function_call":
            calls.append({"name": _field(item, "name"), "arguments": _field(item, "arguments")})
    status = getattr(response, "status", None)
    details = getattr(response, "incomplete_details", None)
    reason = _field(details, "reason")
    stop = responses_stop(status, reason, calls=bool(calls), unknown=None)
    if refusal:
        stop = "refusal"
    for call in calls:
        run_call(tools, call["name"], call["arguments"])
    return Observation(stop, raw=[v for v in (status, reason) if v], text=text + refusal,
                       tool_calls=[c["name"] for c in calls])  # fmt: skip
