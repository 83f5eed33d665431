"""The OpenAI Agents SDK (``openai-agents``): an ``Agent`` with the case's tools
(``FunctionTool``), ``OpenAIChatCompletionsModel`` or ``OpenAIResponsesModel`` on an
``AsyncOpenAI`` client pointed at the replay, ``Runner.run`` (body cases) or
``Runner.run_streamed`` (stream cases). Tracing is off.

The SDK hands a host the model's output items, not a stop reason: the first
``raw_responses`` entry's items are read (a refusal part -> refusal, a
``function_call`` item -> tool_use, else end_turn); its typed errors are the host's
errors (``ModelRefusalError`` -> refusal, any other ``AgentsException`` or
``openai.APIError`` -> interrupted). No raw provider value reaches the host.
Retries are off.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
from typing import Any

import openai
from agents import (
    Agent,
    FunctionTool,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    set_tracing_disabled,
)
from agents.exceptions import AgentsException, ModelRefusalError

from .._cases import Case
from .._run import Observation
from .._tools import TOOL_SCHEMA, ToolBox
from ._common import error_raw, run_call, short

NAME = "openai-agents"
PROTOCOLS = frozenset({"openai-chat", "openai-responses"})

set_tracing_disabled(True)


def version() -> str:
    return importlib.metadata.version("openai-agents")


def _tools(box: ToolBox) -> list[FunctionTool]:
    def make(name: str) -> FunctionTool:
        async def invoke(ctx: Any, arguments: str) -> str:
            run_call(box, name, arguments)
            return f"{name} done"

        return FunctionTool(name=name, description=name, params_json_schema=TOOL_SCHEMA,
                            on_invoke_tool=invoke, strict_json_schema=False)  # fmt: skip

    return [make(name) for name in box.names]


def _read(items: list[Any]) -> tuple[str, str, list[str]]:
    text, refusal, calls = "", "", []
    for item in items:
        kind = getattr(item, "type", None)
        if kind == "message":
            for part in getattr(item, "content", None) or []:
                if getattr(part, "type", None) == "output_text":
                    text += part.text
                elif getattr(part, "type", None) == "refusal":
                    refusal += part.refusal
        elif kind == "function_call":
            calls.append(item.name)
    return text, refusal, calls


async def _run(case: Case, base_url: str, box: ToolBox) -> Observation:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="test-key", max_retries=0)
    cls = (
        OpenAIResponsesModel if case.protocol == "openai-responses" else OpenAIChatCompletionsModel
    )
    agent = Agent(name="conformance", instructions="", tools=_tools(box),
                  model=cls(model="test-model", openai_client=client))  # fmt: skip
    config = RunConfig(tracing_disabled=True)
    result: Any = None
    try:
        if case.stream:
            result = Runner.run_streamed(agent, "go", max_turns=4, run_config=config)
            async for _event in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, "go", max_turns=4, run_config=config)
    except (AgentsException, openai.APIError) as exc:
        stop = "refusal" if isinstance(exc, ModelRefusalError) else "interrupted"
        text = ""
        if result is not None and result.raw_responses:
            text = _read(result.raw_responses[0].output)[0]
        return Observation(stop, raw=error_raw(exc), text=text, error=short(exc))
    finally:
        await client.close()
    if not result.raw_responses:
        return Observation(None, note="no response")
    text, refusal, calls = _read(result.raw_responses[0].output)
    stop = "refusal" if refusal else ("tool_use" if calls else "end_turn")
    return Observation(stop, text=text + refusal, tool_calls=calls)


def run(case: Case, base_url: str, tools: ToolBox) -> Observation:
    return asyncio.run(_run(case, base_url, tools))
