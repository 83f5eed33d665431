"""History repair: make a stored conversation safe to send again.

A tool call that never got a result (a crash, a cancel, a run that ended on
CONTEXT_FULL or max turns) makes providers reject the whole request
(Anthropic: "tool_use ids were found without tool_result blocks"; OpenAI: "An
assistant message with 'tool_calls' must be followed by tool messages").
:func:`repair_orphaned_tool_calls` answers each such call with an error result
saying it was not run. Withheld calls (REFUSAL, INTERRUPTED) are already gone
from the message and from its provider record.

Results are stored as their calls end, so the results of one answer's calls
that ran at once may be stored in another order than the calls; what is sent
puts each answer's results in the order of its calls (some providers match
results to calls by position).
"""

from __future__ import annotations

from collections.abc import Sequence

from zett_agent._messages import AssistantMessage, Message, ToolResultMessage
from zett_agent.tools._outcomes import NOT_RUN

__all__ = ["NOT_RUN", "repair_orphaned_tool_calls", "results_in_call_order"]


def repair_orphaned_tool_calls(messages: Sequence[Message]) -> list[Message]:
    """A copy of ``messages`` where every tool call has a result, and the results
    that follow an answer are in the order of its calls
    (:func:`results_in_call_order`).

    Missing results are added as ``ToolResultMessage(is_error=True)`` with
    :data:`NOT_RUN`. Results whose call is unknown are kept.
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
    return results_in_call_order(repaired)


def results_in_call_order(messages: Sequence[Message]) -> list[Message]:
    """A copy of ``messages`` in which the results that follow an answer are in the
    order of its calls (results of unknown calls, and repeats, after them as they
    came). Nothing is added or dropped."""
    ordered: list[Message] = []
    calls: list[str] = []
    block: list[ToolResultMessage] = []

    def flush() -> None:
        rest = list(block)
        for call_id in calls:
            found = next((r for r in rest if r.tool_call_id == call_id), None)
            if found is not None:
                rest.remove(found)
                ordered.append(found)
        ordered.extend(rest)
        calls.clear()
        block.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            block.append(message)
            continue
        flush()
        ordered.append(message)
        if isinstance(message, AssistantMessage):
            calls.extend(call.id for call in message.tool_calls)
    flush()
    return ordered
