"""A complete, offline program: a model streams a partial answer and a tool call,
then refuses. The run completes, the host hears why, and the tool never runs.

Run it with ``python examples/stop_reasons.py`` (no key, no network).
"""

from __future__ import annotations

import anyio

from zett_agent import (
    AgentEventType,
    AgentRunConfig,
    AssistantMessage,
    StopInfo,
    StopReason,
    ToolCall,
    create_agent,
)
from zett_agent.testing import ScriptedModel, reply

RAN: list[str] = []


def delete_file(path: str) -> str:
    """Delete a file from the project.

    Args:
        path: the file to delete.
    """
    RAN.append(path)
    return f"deleted {path}"


class RefusingModel(ScriptedModel):
    """Streams "I'll start by deleting", a complete delete_file call, then refuses
    the way Anthropic does (stop_reason "refusal", stop_details category "cyber")."""

    def __init__(self) -> None:
        super().__init__(
            reply(
                text="I'll start by deleting the build folder.",
                tool_calls=[ToolCall("toolu_01", "delete_file", '{"path": "build/"}')],
                stop=StopInfo(
                    StopReason.REFUSAL,
                    raw="refusal",
                    category="cyber",
                    message="This request was declined.",
                ),
            )
        )


async def main() -> None:
    agent = await create_agent(
        RefusingModel(), config=AgentRunConfig("stop-reasons"), tools=[delete_file]
    )
    heard = []
    async for event in agent.stream("Clean up the project"):
        if event.type is AgentEventType.MODEL_STOPPED:
            assert event.stop is not None
            heard.append(event.stop.describe())
        if event.type is AgentEventType.RUN_COMPLETED:
            assert isinstance(event.message, AssistantMessage)
            message = event.message

    # The run completed, and the message says it was not an answer.
    assert message.stop is not None and message.stop.reason is StopReason.REFUSAL
    assert message.stop.category == "cyber" and not message.stop.ok
    assert heard == ["refusal (cyber): This request was declined."]

    # The tool call that came with the refusal was withheld: the tool never started.
    assert RAN == [] and message.tool_calls == ()
    assert message.stop.detail["withheld_tool_calls"] == ["delete_file"]

    # A script that prefers an exception to checking can ask for one.
    try:
        message.raise_for_stop()
    except Exception as error:
        assert type(error).__name__ == "AgentStopError"
    print("Refusal reported; the tool call was not run")


if __name__ == "__main__":
    anyio.run(main)
