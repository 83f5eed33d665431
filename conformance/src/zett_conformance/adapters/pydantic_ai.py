"""pydantic-ai's ``Agent`` with the case's tools (``Tool.from_schema``), its model
for the protocol (``AnthropicModel``, ``OpenAIChatModel``, ``OpenAIResponsesModel``,
``GoogleModel``; pydantic-ai reaches Ollama only through its OpenAI-compatible
endpoint, so the native Ollama cases do not apply) pointed at the replay.
``stream`` cases run with an ``event_stream_handler`` (streamed model requests).

What a host observes: the first ``ModelResponse``'s ``finish_reason``
(pydantic-ai's normalized values: ``stop`` -> end_turn, or tool_use when the
response holds tool calls; ``tool_call`` -> tool_use, ``length`` -> max_output,
``content_filter`` -> refusal, ``error`` -> interrupted) and
``provider_details["finish_reason"]`` (the raw value), read with
``capture_run_messages``. pydantic-ai's typed errors are the host's errors, in its
own vocabulary: ``ContentFilterError`` -> refusal, ``OutputTokenLimitExceeded``
(``IncompleteToolCall``) -> max_output, ``ModelContextWindowExceededError`` ->
context_full, any other ``AgentRunError`` -> interrupted. Client retries are off.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from typing import Any

from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic_ai import Agent, Tool, capture_run_messages
from pydantic_ai.exceptions import (
    AgentRunError,
    ContentFilterError,
    ModelContextWindowExceededError,
    OutputTokenLimitExceeded,
)
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.google import GoogleModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.google import GoogleProvider
from pydantic_ai.providers.openai import OpenAIProvider

from .._cases import Case
from .._run import Observation
from .._tools import TOOL_SCHEMA, ToolBox
from ._common import error_raw, short

NAME = "pydantic-ai"
PROTOCOLS = frozenset({"anthropic", "openai-chat", "openai-responses", "gemini"})

_FINISH = {"stop": "end_turn", "tool_call": "tool_use", "length": "max_output",
           "content_filter": "refusal", "error": "interrupted"}  # fmt: skip


def version() -> str:
    return importlib.metadata.version("pydantic-ai-slim")


def _model(case: Case, base_url: str) -> Any:
    if case.protocol == "anthropic":
        client = AsyncAnthropic(base_url=base_url, api_key="test-key", max_retries=0)
        return AnthropicModel("test-model", provider=AnthropicProvider(anthropic_client=client))
    if case.protocol == "gemini":
        return GoogleModel("test-model", provider=GoogleProvider(api_key="test-key",
                                                                 base_url=base_url))  # fmt: skip
    client = AsyncOpenAI(base_url=base_url, api_key="test-key", max_retries=0)
    provider = OpenAIProvider(openai_client=client)
    if case.protocol == "openai-responses":
        return OpenAIResponsesModel("test-model", provider=provider)
    return OpenAIChatModel("test-model", provider=provider)


def _tools(box: ToolBox) -> list[Tool[Any]]:
    def make(name: str) -> Tool[Any]:
        def function(**kwargs: Any) -> str:
            return box.call(name, kwargs)

        return Tool.from_schema(function, name=name, description=name, json_schema=TOOL_SCHEMA)

    return [make(name) for name in box.names]


def _read(response: ModelResponse) -> tuple[str | None, list[str], str, list[str]]:
    calls = [p.tool_name for p in response.parts if isinstance(p, ToolCallPart)]
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    finish = response.finish_reason
    stop = _FINISH.get(finish) if finish else None
    if stop == "end_turn" and calls:
        stop = "tool_use"
    raw = (response.provider_details or {}).get("finish_reason")
    return stop, [str(raw)] if raw else [], text, calls


async def _run(case: Case, base_url: str, box: ToolBox) -> Observation:
    settings: dict[str, Any] = {}
    if case.max_tokens:
        settings["max_tokens"] = case.max_tokens
    agent = Agent(_model(case, base_url), tools=_tools(box), model_settings=settings or None)

    async def handler(ctx: Any, events: Any) -> None:
        async for _event in events:
            pass

    with capture_run_messages() as messages:
        try:
            await agent.run("go", event_stream_handler=handler if case.stream else None)
            error = None
        except AgentRunError as exc:
            error = exc
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    if responses:
        stop, raw, text, calls = _read(responses[0])
    else:
        stop, raw, text, calls = None, [], "", []
    if error is not None and (len(responses) <= 1):
        if isinstance(error, ContentFilterError):
            stop = "refusal"
        elif isinstance(error, OutputTokenLimitExceeded):
            stop = "max_output"
        elif isinstance(error, ModelContextWindowExceededError):
            stop = "context_full"
        else:
            stop = "interrupted"
        raw = raw + error_raw(error) + [str(getattr(error, "status_code", "") or "")]
        return Observation(stop, raw=[r for r in raw if r], text=text, tool_calls=calls,
                           error=short(error))  # fmt: skip
    return Observation(stop, raw=raw, text=text, tool_calls=calls,
                       error=short(error) if error else None)  # fmt: skip


def run(case: Case, base_url: str, tools: ToolBox) -> Observation:
    return asyncio.run(_run(case, base_url, tools))
