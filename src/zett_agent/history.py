"""History repair: make a stored conversation safe to send again.

A tool call that never got a result (a crash, a cancel, a run that ended on
CONTEXT_FULL or max turns) makes providers reject the whole request
(Anthropic: "tool_use ids were found without tool_result blocks"; OpenAI: "An
assistant message with 'tool_calls' must be followed by tool messages").
:func:`repair_orphaned_tool_calls` answers each such call with an error result
saying it was not run. Withheld calls (REFUSAL, INTERRUPTED) are already gone
from the message and from its provider record.
"""

from __future__ import annotations

from collections.abc import Sequence

from zett_agent.messages import AssistantMessage, Message, ToolResultMessage

__all__ = ["NOT_RUN", "repair_orphaned_tool_calls"]

NOT_RUN = "This tool call was not run: the step ended before its result was recorded."


def repair_orphaned_tool_calls(messages: Sequence[Message]) -> list[Message]:
    """A copy of ``messages`` where every tool call has a result.

    Missing results are inserted right after the results the call did get, as
    ``ToolResultMessage(is_error=True)`` with :data:`NOT_RUN`. Results whose call
    is unknown are left as they are.
    """
    repaired: list[Message] = []
    pending: list[tuple[str, str]] = []

    def flush() -> None:
        for call_id, name in pending:
            repaired.append(ToolResultMessage(call_id, name, NOT_RUN, is_error=True))
        pending.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            pending[:] = [p for p in pending if p[0] != message.tool_call_id]
            repaired.append(message)
            continue
        flush()
        repaired.append(message)
        if isinstance(message, AssistantMessage):
            pending.extend((call.id, call.name) for call in message.tool_calls)
    flush()
    return repaired
