"""The weather agent the Temporal determinism and history tests run: every kind of
step a durable run takes (the session read, an input guardrail's verdict, model
calls, a tool's marker and call, a hook, an approval and its continuation)."""

from __future__ import annotations

from typing import Any

from zett_agent import Agent, AgentRunConfig, Extension, ToolCall, Tripwire
from zett_agent.approvals import requires_approval
from zett_agent.testing import ScriptedModel, reply


def lookup(city: str) -> str:
    """Look up the weather.

    Args:
        city: the city.
    """
    return f"sunny in {city}"


def book(city: str) -> str:
    """Book a trip (waits for approval).

    Args:
        city: where to.
    """
    return f"booked {city}"


class Hooked(Extension):
    """An extension with a hook (a step of its own in a durable run)."""

    def after_tool(self, call: ToolCall, result: Any) -> None:
        return None


def polite(text: object) -> Tripwire | None:
    """An input guardrail that never trips (its verdict is a step)."""
    return None


def weather_agent() -> Agent:
    """Looks up (a tool), asks to book (waits for approval), then answers."""
    model = ScriptedModel(
        reply("Looking.", [ToolCall("c1", "lookup", '{"city": "Paris"}')]),
        reply("Booking.", [ToolCall("c2", "book", '{"city": "Paris"}')]),
        reply("Booked Paris."),
    )
    config = AgentRunConfig("weather", input_guardrails=[polite])
    return Agent(model, config, [lookup, requires_approval(book)], extensions=[Hooked()])
