"""An offline model that answers from a script, for tests and examples.

::

    model = ScriptedModel(
        reply(text="Let me look.", tool_calls=[ToolCall("c1", "get_weather", '{"city": "Paris"}')]),
        reply(text="It is sunny."),
    )
    agent = await create_agent(model, tools=[get_weather])

Each model call takes the next turn: a :class:`ScriptedTurn` (stream events and
the final response), an exception to raise, or a function of the request that
returns one. ``requests`` records what the agent sent. No socket is used: for
tests of the HTTP stack use :class:`~zett_agent.testing.ReplayServer`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from zett_agent._exchange import ModelRequest, ModelResponse, StreamEvent, TextDelta, ToolCallDelta
from zett_agent._messages import ToolCall, Usage
from zett_agent.stop import StopInfo, StopReason

__all__ = ["ScriptedModel", "ScriptedTurn", "reply"]


@dataclass(frozen=True)
class ScriptedTurn:
    """One scripted model call: the events streamed, then the response."""

    events: Sequence[StreamEvent]
    response: ModelResponse


Turn: TypeAlias = ScriptedTurn | BaseException | Callable[[ModelRequest], ScriptedTurn]


def reply(
    text: str = "",
    tool_calls: Sequence[ToolCall] = (),
    stop: StopInfo | StopReason | None = None,
    *,
    usage: Usage | None = None,
    chunk: int = 8,
) -> ScriptedTurn:
    """A turn that streams ``text`` in pieces of ``chunk`` characters, then the
    tool calls, and stops with ``stop`` (default END_TURN, or TOOL_USE when
    there are tool calls)."""
    if stop is None:
        stop = StopReason.TOOL_USE if tool_calls else StopReason.END_TURN
    info = stop if isinstance(stop, StopInfo) else StopInfo(stop, raw=stop.value)
    events: list[StreamEvent] = [TextDelta(text[i : i + chunk]) for i in range(0, len(text), chunk)]
    for index, call in enumerate(tool_calls):
        events.append(ToolCallDelta(index, call.id, call.name, call.arguments))
    record = {"protocol": "scripted", "text": text, "tool_calls": [c.id for c in tool_calls]}
    response = ModelResponse(
        text, tuple(tool_calls), info, usage or Usage(), provider_record=record
    )
    return ScriptedTurn(events, response)


class ScriptedModel:
    """A model (the agent's ``ModelClient``) that plays ``turns`` in order.

    Raises ``AssertionError`` when called more often than scripted.
    """

    provider = "scripted"

    def __init__(self, *turns: Turn, name: str = "scripted-model") -> None:
        self.name = name
        self.turns: list[Turn] = list(turns)
        self.requests: list[ModelRequest] = []
        self.closed = False

    async def stream(
        self, request: ModelRequest
    ) -> AsyncGenerator[StreamEvent | ModelResponse, None]:
        self.requests.append(request)
        if not self.turns:
            raise AssertionError(f"ScriptedModel: call {len(self.requests)} was not scripted")
        turn = self.turns.pop(0)
        if isinstance(turn, BaseException):
            raise turn
        if callable(turn):
            turn = turn(request)
        for event in turn.events:
            yield event
        yield turn.response

    def without_tool_calls(self, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        if record is None:
            return None
        return {**record, "tool_calls": []}

    async def aclose(self) -> None:
        self.closed = True
