"""LangChain chat models (``langchain-openai``'s ``ChatOpenAI``, with
``use_responses_api`` for Responses, and ``langchain-anthropic``'s
``ChatAnthropic``) with the case's tools bound (``bind_tools``), pointed at the
replay. Gemini and native Ollama need other packages (``langchain-google-genai``,
``langchain-ollama``) and are not run here.

The host reads ``AIMessage.response_metadata`` as LangChain fills it: OpenAI
``finish_reason`` (``stop`` -> end_turn, ``length`` -> max_output, ``tool_calls`` ->
tool_use, ``content_filter`` -> refusal, other -> other), Responses ``status`` and
``incomplete_details``, Anthropic ``stop_reason`` (the Anthropic SDK's table), and
a refusal in ``additional_kwargs["refusal"]`` or a ``refusal`` content block ->
refusal. It runs
``AIMessage.tool_calls`` as LangChain's tool-calling guide does (calls whose
arguments did not parse are in ``invalid_tool_calls`` and are not run). A stream is
the sum of its chunks. The providers' SDK errors are the host's typed errors:
interrupted, or LangChain's own typed errors (``ContextOverflowError`` ->
context_full, ``ModelRefusalError`` -> refusal). Retries are off.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

import anthropic
import openai
from langchain_anthropic import ChatAnthropic
from langchain_core.exceptions import ContextOverflowError, ModelError, ModelRefusalError
from langchain_openai import ChatOpenAI

from .._cases import Case
from .._run import Observation
from .._tools import TOOL_SCHEMA, ToolBox
from ._common import error_raw, responses_stop, run_call, short

NAME = "langchain"
PROTOCOLS = frozenset({"anthropic", "openai-chat", "openai-responses"})

_OPENAI = {"stop": "end_turn", "length": "max_output", "tool_calls": "tool_use",
           "function_call": "tool_use", "content_filter": "refusal"}  # fmt: skip
_ANTHROPIC = {"end_turn": "end_turn", "stop_sequence": "end_turn", "tool_use": "tool_use",
              "max_tokens": "max_output", "model_context_window_exceeded": "context_full",
              "refusal": "refusal", "pause_turn": "paused"}  # fmt: skip


def version() -> str:
    return (
        f"openai {importlib.metadata.version('langchain-openai')}, "
        f"anthropic {importlib.metadata.version('langchain-anthropic')}"
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def run(case: Case, base_url: str, tools: ToolBox) -> Observation:
    specs = [{"type": "function", "function": {"name": n, "description": n,
                                               "parameters": TOOL_SCHEMA}}
             for n in case.tools]  # fmt: skip
    common: dict[str, Any] = {"model": "test-model", "api_key": "test-key", "max_retries": 0,
                              "timeout": 30}  # fmt: skip
    if case.max_tokens:
        common["max_tokens"] = case.max_tokens
    if case.protocol == "anthropic":
        llm: Any = ChatAnthropic(base_url=base_url, **common)
    else:
        llm = ChatOpenAI(base_url=base_url, use_responses_api=case.protocol == "openai-responses",
                         **common)  # fmt: skip
    bound = llm.bind_tools(specs)
    shown = ""
    try:
        if case.stream:
            message: Any = None
            for chunk in bound.stream("go"):
                shown += _text(chunk.content)
                message = chunk if message is None else message + chunk
        else:
            message = bound.invoke("go")
    except (openai.APIError, anthropic.APIError, ModelError) as exc:
        if isinstance(exc, ContextOverflowError):
            stop = "context_full"
        elif isinstance(exc, ModelRefusalError):
            stop = "refusal"
        else:
            stop = "interrupted"
        return Observation(stop, raw=error_raw(exc), text=shown, error=short(exc))
    if message is None:
        return Observation(None, note="no message")
    meta = dict(message.response_metadata or {})
    refusal = (message.additional_kwargs or {}).get("refusal") or ""
    if isinstance(message.content, list):  # Responses content blocks
        refusal += "".join(
            str(p.get("refusal") or "")
            for p in message.content
            if isinstance(p, dict) and p.get("type") == "refusal"
        )
    calls = list(message.tool_calls or [])
    raw: list[str] = []
    if case.protocol == "anthropic":
        value = meta.get("stop_reason")
        stop = _ANTHROPIC.get(value, "other") if value else None
        raw = [value] if value else []
    elif case.protocol == "openai-chat":
        value = meta.get("finish_reason")
        stop = _OPENAI.get(value, "other") if value else None
        raw = [value] if value else []
    else:
        status = meta.get("status")
        details = meta.get("incomplete_details") or {}
        reason = details.get("reason") if isinstance(details, dict) else None
        raw = [v for v in (status, reason) if v]
        stop = responses_stop(status, reason, calls=bool(calls), unknown=None)
    if refusal:
        stop = "refusal"
    for call in calls:
        run_call(tools, call.get("name"), call.get("args"))
    names = [c.get("name") for c in calls] + [
        c.get("name") for c in (getattr(message, "invalid_tool_calls", None) or [])
    ]
    return Observation(stop, raw=raw, text=_text(message.content) or shown,
                       tool_calls=[n for n in names if n])  # fmt: skip
