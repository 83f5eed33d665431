"""The messages of one run: stored as they complete, and what is sent of them.

A complete message is stored at once (``on_message``, in a shielded write, so
a cancelled run keeps it). A resumed run's first answer takes the place of the
cut-off answer instead (``on_replace``), joined to the prefill when one was
sent (see :func:`~zett_agent._resume.plan_resume`). What is sent leaves out the
attempts a retry superseded (they stay in history) and repairs orphaned tool
calls (:mod:`zett_agent._history`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio

from zett_agent._await import maybe_await as _maybe_await
from zett_agent._history import repair_orphaned_tool_calls
from zett_agent._messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from zett_agent._recovery import is_superseded
from zett_agent._resume import ResumePlan, join_answers
from zett_agent.model._model import ModelClient

__all__ = ["Conversation"]


class Conversation:
    """The conversation of one run; this run's messages start at ``first_index``."""

    def __init__(
        self,
        messages: list[Message],
        on_message: Callable[[Message], Any] | None,
        *,
        on_replace: Callable[[int, Message], Any] | None = None,
        plan: ResumePlan | None = None,
    ) -> None:
        self.messages = messages
        self.first_index = len(messages)
        self.on_message = on_message
        self.on_replace = on_replace
        # resume: the first answer takes the place of messages[replacing], joined
        # to ``prefill`` (sent as the last message of the first request) if set
        self.replacing = plan.replaces if plan else None
        self.prefill = plan.prefill if plan else None

    @property
    def resuming(self) -> bool:
        """Whether the next answer is a resumed run's first (it replaces the cut-off one)."""
        return self.replacing is not None

    async def add(self, message: Message) -> None:
        self.messages.append(message)
        if self.on_message is not None:
            with anyio.CancelScope(shield=True):  # a complete message is stored, cancelled or not
                await _maybe_await(self.on_message(message))

    def order_results(self, start: int, call_ids: list[str]) -> None:
        """Put the tool results from ``messages[start:]`` in the order of
        ``call_ids`` (they were stored as their calls ended)."""
        rank = {call_id: n for n, call_id in enumerate(call_ids)}
        tail = [m for m in self.messages[start:] if isinstance(m, ToolResultMessage)]
        if len(tail) == len(self.messages) - start and all(m.tool_call_id in rank for m in tail):
            tail.sort(key=lambda m: rank[m.tool_call_id])
            self.messages[start:] = tail

    async def add_answer(self, answer: AssistantMessage, model: ModelClient) -> AssistantMessage:
        """Store a model answer; on resume the first one replaces the cut-off answer
        (joined to the prefill by ``model``'s protocol)."""
        if self.replacing is None:
            await self.add(answer)
            return answer
        index, self.replacing = self.replacing, None
        cut = self.messages[index]
        if self.prefill is not None and isinstance(cut, AssistantMessage):
            answer = join_answers(self.prefill, cut, answer, model)
            self.prefill = None
        self.messages[index] = answer
        if self.on_replace is not None:
            with anyio.CancelScope(shield=True):
                await _maybe_await(self.on_replace(index, answer))
        return answer

    async def continue_without_prefill(self, prompt: str) -> None:
        """The provider refused the prefill (Claude 4.6 models do): ask with a
        continuation turn (``prompt``) instead; the cut-off answer stays as it is."""
        self.prefill = None
        self.replacing = None
        await self.add(UserMessage(prompt))

    def to_send(self) -> list[Message]:
        """The stored messages a request carries (resuming: the conversation before
        the cut-off answer, then the prefill if any)."""
        history: Sequence[Message] = self.messages
        if self.replacing is not None:  # the cut-off answer is resent as a prefill, or not
            prefill = [self.prefill] if self.prefill is not None else []
            history = [*self.messages[: self.replacing], *prefill]
        sent = [m for m in history if not (is_superseded(m) or _is_marker(m))]  # kept home
        return repair_orphaned_tool_calls(sent)

    def tools_ran(self) -> bool:
        """Whether a tool result was added in this run."""
        return any(isinstance(m, ToolResultMessage) for m in self.messages[self.first_index :])


def _is_marker(message: Message) -> bool:
    """A record the runtime stored for the host (the max-turns stop), not an answer."""
    return (
        isinstance(message, AssistantMessage)
        and message.stop is not None
        and message.stop.detail.get("marker") is True
    )
