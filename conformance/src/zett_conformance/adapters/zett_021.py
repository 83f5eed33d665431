"""The original ``zett-agent`` 0.2.1 from PyPI (the same import name as this
project, so it runs only in a venv of its own), through its public API: a provider
adapter per protocol (``AnthropicProvider``, ``OpenAIProvider`` and its vendor
subclasses, ``OpenAIProvider(response=True)`` for Responses, ``GoogleProvider``,
``OllamaProvider``) pointed at the replay, ``Agent(tools=[AgentTool...])`` and
``agent.stream``.

Its provider adapters stream every request, so only the streamed cases apply.
What a host observes: the first ``MODEL_COMPLETED`` event's ``response.stop``
(0.2.1's own ``StopInfo``, the same 8 values), its ``raw``/``category`` and the
provider's ``finish_reason``; ``ProviderRefusalError`` is its typed refusal, any
other ``AgentError`` -> interrupted. Retries are off (``RetryOptions(max_retries=0)``).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import inspect
from typing import Any

from zett_agent.agent import Agent
from zett_agent.events import AgentEventType
from zett_agent.exceptions import AgentError
from zett_agent.providers.base import ProviderRefusalError
from zett_agent.tools.base import AgentTool

from zett_agent.model import RetryOptions

from .._cases import Case
from .._run import Observation
from .._tools import TOOL_SCHEMA, ToolBox
from ._common import short

NAME = "zett-0.2.1"
JOBS = 1  # its providers import their SDKs lazily, inside the first call: not thread-safe
PROTOCOLS = frozenset({"anthropic", "openai-chat", "openai-responses", "gemini", "ollama"})

_CHAT = {"deepseek": "DeepSeekProvider", "glm": "GLMProvider", "kimi": "KimiProvider",
         "mistral": "MistralProvider", "openrouter": "OpenRouterProvider",
         "groq": "GroqProvider", "xai": "XAIProvider"}  # fmt: skip


def version() -> str:
    return importlib.metadata.version("zett-agent")


def applies(case: Case) -> bool:
    return case.stream


def _provider(case: Case, base_url: str) -> Any:
    import zett_agent.providers as providers

    options: dict[str, Any] = {"model": "test-model", "api_key": "test-key"}
    if case.protocol == "anthropic":
        cls = providers.AnthropicProvider
    elif case.protocol == "gemini":
        cls = providers.GoogleProvider
    elif case.protocol == "ollama":
        cls = providers.OllamaProvider
    elif case.protocol == "openai-responses":
        cls = providers.OpenAIProvider
        options["response"] = True
        base_url += "/v1"
    else:
        cls = getattr(providers, _CHAT.get(case.vendor, "OpenAIProvider"))
        base_url += "/v1"
    params = inspect.signature(cls.__init__).parameters
    if "retry" in params:
        options["retry"] = RetryOptions(max_retries=0)
    options = {k: v for k, v in options.items() if k in params}
    return cls(base_url=base_url, **options)


def _tools(box: ToolBox) -> list[AgentTool]:
    def make(name: str) -> AgentTool:
        async def handler(**kwargs: Any) -> str:
            return box.call(name, kwargs)

        return AgentTool(name=name, description=f"The case tool {name}.",
                         parameters=TOOL_SCHEMA, handler=handler, guidelines=())  # fmt: skip

    return [make(name) for name in box.names]


async def _run(case: Case, base_url: str, box: ToolBox) -> Observation:
    agent = await Agent.create(_provider(case, base_url), tools=_tools(box), max_iterations=4)
    first = None
    text = ""
    try:
        async for event in agent.stream("go"):
            if event.type is AgentEventType.TEXT_DELTA and first is None:
                text += event.delta or ""
            if event.type is AgentEventType.MODEL_COMPLETED and first is None:
                first = event.response
    except ProviderRefusalError as exc:
        return Observation("refusal", raw=_raw_of(exc), text=text, error=short(exc))
    except AgentError as exc:
        if first is None:
            return Observation("interrupted", raw=_raw_of(exc), text=text, error=short(exc))
    if first is None:
        return Observation(None, text=text, note="no answer")
    stop = first.stop
    raw = [v for v in (stop.raw, stop.category, first.finish_reason) if isinstance(v, str)]
    return Observation(
        stop.reason.value,
        raw=raw,
        text=first.message.content or text,
        tool_calls=[call.name for call in first.message.tool_calls],
    )


def _raw_of(exc: BaseException) -> list[str]:
    values = [getattr(exc, k, None) for k in ("code", "error_type", "type", "status_code")]
    stop = getattr(exc, "stop", None)
    if stop is not None:
        values += [getattr(stop, "raw", None), getattr(stop, "category", None)]
    return [str(v) for v in values if v is not None]


def run(case: Case, base_url: str, tools: ToolBox) -> Observation:
    return asyncio.run(_run(case, base_url, tools))
