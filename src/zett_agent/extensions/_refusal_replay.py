"""Choose whether the model reads a refused answer again.

By default a refused answer stays in the history and is sent with every later
request, like any other assistant message. Anthropic advises treating output
produced before a refusal as incomplete and discarding it
(https://docs.anthropic.com/en/docs/test-and-evaluate/strengthen-guardrails/handle-streaming-refusals)::

    agent = await create_agent(
        model, extensions=[RefusalReplayExtension(replay=RefusalReplay.DROP)]
    )

Only the outgoing request changes: the message stays in stored history and on
screen. A guardrail's tripwire (``stop.category == "guardrail"``) is not the
model's refusal and holds no model output: this extension leaves it alone.
Dropping a message can leave two user messages in a row; providers differ in
whether they accept that.
"""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum

from zett_agent._exchange import ModelRequest
from zett_agent._guardrails import GUARDRAIL_CATEGORY
from zett_agent._messages import AssistantMessage
from zett_agent.extensions._extension import Extension
from zett_agent.stop import StopReason

__all__ = ["RefusalReplay", "RefusalReplayExtension"]


class RefusalReplay(StrEnum):
    """What later requests do with a refused assistant message."""

    KEEP = "keep"
    """Send it again, like any other message (the default without the extension)."""
    DROP = "drop"
    """Leave it out of later requests."""


class RefusalReplayExtension(Extension):
    """Keep or drop refused answers in later *requests* (never in history)."""

    def __init__(self, replay: RefusalReplay = RefusalReplay.KEEP) -> None:
        self.replay = RefusalReplay(replay)

    def before_model(self, request: ModelRequest) -> ModelRequest | None:
        if self.replay is RefusalReplay.KEEP:
            return None
        kept = [
            m
            for m in request.messages
            if not (
                isinstance(m, AssistantMessage)
                and m.stop is not None
                and m.stop.reason is StopReason.REFUSAL
                and m.stop.category != GUARDRAIL_CATEGORY
            )
        ]
        if len(kept) == len(request.messages):
            return None
        return replace(request, messages=kept)
