"""zett-agent through its public API: ``Model`` pointed at the replay,
``create_agent`` with the case's tools, ``agent.stream``.

What a host observes: the first ``MODEL_COMPLETED`` answer's ``stop``
(``StopInfo``; None is a normal end: ``tool_use`` when the answer holds calls, else
``end_turn``), its ``raw`` and ``category``, ``text`` and ``tool_calls``. A run that
raises one of ``zett_agent.errors`` is the host's typed error: ``ContextOverflowError``
says the context is full; every other provider or transport error means the
response was ended by the provider (``interrupted``). Retries are off
(``max_retries=0``): one case is one exchange.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from typing import Any

from pydantic import BaseModel, ConfigDict

from zett_agent import AgentEventType, AgentRunConfig, Model, create_agent
from zett_agent.errors import ContextOverflowError, ZettError
from zett_agent.tools import Tool

from .._cases import Case
from .._run import Observation
from .._tools import ToolBox

NAME = "zett"
PROTOCOLS = frozenset({"anthropic", "openai-chat", "openai-responses", "gemini", "ollama"})


class _AnyArguments(BaseModel):
    model_config = ConfigDict(extra="allow")


def version() -> str:
    return importlib.metadata.version("zett-agent")


def _tools(box: ToolBox) -> list[Tool]:
    def make(name: str) -> Tool:
        async def function(**kwargs: Any) -> str:
            return box.call(name, kwargs)

        return Tool(name, f"The case tool {name}.", function, _AnyArguments)

    return [make(name) for name in box.names]


async def _run(case: Case, base_url: str, box: ToolBox) -> Observation:
    protocol = case.protocol
    model = Model(case.vendor, "test-model", base_url=base_url, api_key="test-key",
                  protocol=protocol, stream=case.stream, max_retries=0)  # fmt: skip
    config = AgentRunConfig("conformance", max_tokens=case.max_tokens, max_turns=4,
                            tool_choice=case.tool_choice)  # fmt: skip
    agent = await create_agent(model, config, tools=_tools(box))
    answers = []
    try:
        async for event in agent.stream("go"):
            if event.type is AgentEventType.MODEL_COMPLETED and event.message is not None:
                answers.append(event.message)
    except ContextOverflowError as exc:
        return _error("context_full", exc, answers)
    except ZettError as exc:
        return _error("interrupted", exc, answers)
    finally:
        await agent.aclose()
    if not answers:
        return Observation(None, note="no answer")
    first = answers[0]
    stop = first.stop
    if stop is None:
        reason = "tool_use" if first.tool_calls else "end_turn"
        raw: list[str] = []
    else:
        reason = stop.reason.value
        raw = [v for v in (stop.raw, stop.category) if isinstance(v, str)]
    return Observation(
        reason,
        raw=raw,
        text=first.text,
        tool_calls=[call.name for call in first.tool_calls],
    )


def _error(reason: str, exc: ZettError, answers: list[Any]) -> Observation:
    raw = [
        str(v)
        for v in (getattr(exc, "error_type", None), getattr(exc, "code", None))
        if v is not None
    ]
    text = answers[0].text if answers else ""
    return Observation(reason, raw=raw, text=text, error=f"{type(exc).__name__}: {exc}")


def run(case: Case, base_url: str, tools: ToolBox) -> Observation:
    return asyncio.run(_run(case, base_url, tools))
