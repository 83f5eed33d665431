"""Compact the request when the context window is full, then retry (bounded).

::

    agent = await create_agent(model, extensions=[ContextCompaction()])          # drop
    agent = await create_agent(model, extensions=[ContextCompaction(summarize="model")])

Acts on CONTEXT_FULL — a stop (``model_context_window_exceeded``...) or the same
fact arriving as an error: a provider's "prompt is too long" 400 (Anthropic
``code="prompt_too_long"``, OpenAI ``context_length_exceeded``; see
:class:`~zett_agent.errors.ContextOverflowError`). Never after REFUSAL or any
other stop.

The request that overflowed is compacted and sent again, at most
``max_compactions`` times per run (2):

* system messages stay;
* the conversation is cut into units — a user message, or an assistant answer
  with the tool results that follow it — so a tool call and its result are
  always kept or dropped together;
* the latest ``keep_last`` units stay (halved on each further compaction,
  at least one), and so does the latest user prompt when they hold none;
* the older ones are replaced by one user message: a summary (``summarize``: a
  callable from the dropped messages to text, sync or async, or ``"model"``
  for the model that overflowed) or, by default, a note that they were left out.
  A summary that fails falls back to the note.

Only the outgoing request changes: the stored session keeps the full history.
The overflowing attempt is stored as a recorded attempt (its stop CONTEXT_FULL;
for a 400, an empty answer with ``raw="prompt_too_long"``), with
``detail["superseded"] = True`` and ``detail["recovery"] == {"by":
"ContextCompaction", "action": "retry", "attempt": n, "dropped_messages": k,
"kept_messages": m, "summarized": bool}``; it is never sent again. With
``remember`` (default), later requests of the same conversation are compacted the
same way before they are sent, so the next turn does not overflow again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Literal, TypeAlias

from zett_agent._await import maybe_await as _maybe_await
from zett_agent._exchange import ModelRequest, ModelResponse
from zett_agent._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from zett_agent._recovery import RecoveryContext, RetryRequest
from zett_agent.extensions._extension import Extension
from zett_agent.model._budgets import charge
from zett_agent.model._model import ModelClient
from zett_agent.stop import StopReason

__all__ = ["DROPPED_NOTE", "SUMMARY_HEADER", "ContextCompaction", "Summarizer"]

log = logging.getLogger("zett_agent.recovery")

Summarizer: TypeAlias = Callable[[Sequence[Message]], "str | Awaitable[str]"]

DROPPED_NOTE = "[{count} earlier messages were left out to fit the context window.]"
SUMMARY_HEADER = "[Summary of the earlier conversation, compacted to fit the context window:]"
SUMMARY_PROMPT = (
    "Summarize the conversation below for the assistant that will continue it: the "
    "user's goals, decisions made, facts found (with file names, values, results of "
    "tool calls) and what remains to do. Be concise and complete."
)


class ContextCompaction(Extension):
    """Compact and retry a request that overflowed the context window.

    Args:
        keep_last: units (a user message, or an answer with its tool results)
            kept at the end on the first compaction; halved on each further one.
        max_compactions: compactions per run.
        summarize: None (drop, with a note), a summarizer callable, or ``"model"``.
        summary_max_tokens: output limit of the model's summary.
        max_transcript_chars: the most text of the dropped messages sent to be
            summarized (the oldest is cut first).
        remember: compact later requests of the same conversation the same way.
    """

    def __init__(
        self,
        *,
        keep_last: int = 6,
        max_compactions: int = 2,
        summarize: Summarizer | Literal["model"] | None = None,
        summary_max_tokens: int = 1024,
        max_transcript_chars: int = 60_000,
        remember: bool = True,
    ) -> None:
        self.keep_last = max(1, keep_last)
        self.max_compactions = max_compactions
        self.summarize = summarize
        self.summary_max_tokens = summary_max_tokens
        self.max_transcript_chars = max_transcript_chars
        self.remember = remember
        # the last compaction: the original messages it replaced, and its head message
        self._replaced: tuple[Message, ...] = ()
        self._head: UserMessage | None = None

    # ------------------------------------------------------------ hooks

    def before_model(self, request: ModelRequest) -> ModelRequest | None:
        if self._head is None:
            return None
        system, body = _split(request.messages)
        n = len(self._replaced)
        if len(body) <= n or tuple(body[:n]) != self._replaced:
            return None
        return replace(request, messages=[*system, self._head, *body[n:]])

    async def recover(self, context: RecoveryContext) -> RetryRequest | None:
        if context.stop.reason is not StopReason.CONTEXT_FULL:
            return None
        made = context.made_by(self)
        if made >= self.max_compactions:
            return None
        system, body = _split(context.request.messages)
        plan = _plan(body, max(1, self.keep_last >> made))
        if plan is None:
            return None
        replaced, dropped, pinned, merged = plan
        summary = await self._summary(dropped, context.model)
        notice = (
            f"{SUMMARY_HEADER}\n{summary}" if summary else DROPPED_NOTE.format(count=len(dropped))
        )
        joined = next((m.content for m in (pinned, merged) if m is not None), None)
        head = UserMessage(notice if joined is None else f"{notice}\n\n{joined}")
        kept = body[replaced:]
        if self.remember:
            self._remember(body[:replaced], head)
        return RetryRequest(
            replace(context.request, messages=[*system, head, *kept]),
            note={
                "attempt": made + 1,
                "dropped_messages": len(dropped),
                "kept_messages": len(kept) + (1 if joined is not None else 0),
                "summarized": bool(summary),
            },
        )

    # ------------------------------------------------------------ helpers

    def _remember(self, replaced: Sequence[Message], head: UserMessage) -> None:
        """Keep what this compaction replaced, in terms of the original history: a
        request that was already compacted starts with the previous head."""
        if self._head is not None and replaced and replaced[0] == self._head:
            self._replaced = (*self._replaced, *replaced[1:])
        else:
            self._replaced = tuple(replaced)
        self._head = head

    async def _summary(self, dropped: Sequence[Message], model: ModelClient) -> str:
        if self.summarize is None:
            return ""
        try:
            if self.summarize == "model":
                return await self._model_summary(dropped, model)
            text = await _maybe_await(self.summarize(dropped))
            return str(text).strip()
        except Exception as error:  # a summary is a nicety; dropping still works
            log.warning("ContextCompaction: summary failed (%s); dropping instead", error)
            return ""

    async def _model_summary(self, dropped: Sequence[Message], model: ModelClient) -> str:
        transcript = _transcript(dropped)[-self.max_transcript_chars :]
        request = ModelRequest(
            model=model.name,
            messages=[SystemMessage(SUMMARY_PROMPT), UserMessage(transcript)],
            max_tokens=self.summary_max_tokens,
        )
        text = ""
        async for item in model.stream(request):
            if isinstance(item, ModelResponse):
                text = item.text
                charge(item.provider or model.provider, item.model, item.usage, asked=model.name)
        return text.strip()


def _split(messages: Sequence[Message]) -> tuple[list[Message], list[Message]]:
    system: list[Message] = [m for m in messages if isinstance(m, SystemMessage)]
    body: list[Message] = [m for m in messages if not isinstance(m, SystemMessage)]
    return system, body


def _units(body: Sequence[Message]) -> list[list[Message]]:
    """A user message, or an answer with the tool results that follow it."""
    units: list[list[Message]] = []
    for message in body:
        if isinstance(message, ToolResultMessage) and units:
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _plan(
    body: Sequence[Message], keep: int
) -> tuple[int, list[Message], UserMessage | None, UserMessage | None] | None:
    """How to compact ``body`` keeping ``keep`` units (fewer if that drops nothing).

    Returns (how many leading messages the head replaces, the dropped messages,
    the pinned latest prompt or None, the first kept user message merged into the
    head or None); None when nothing can be dropped.
    """
    units = _units(body)
    for k in range(min(keep, len(units) - 1), 0, -1):
        head, tail = units[:-k], units[-k:]
        pinned: UserMessage | None = None
        if not any(isinstance(unit[0], UserMessage) for unit in tail):
            prompts = [u[0] for u in head if isinstance(u[0], UserMessage)]
            pinned = prompts[-1] if prompts else None
        dropped = [m for unit in head for m in unit if m is not pinned]
        if not dropped:
            continue
        replaced = sum(len(unit) for unit in head)
        merged: UserMessage | None = None
        first = tail[0][0]
        if pinned is None and isinstance(first, UserMessage) and len(tail[0]) == 1:
            merged, replaced = first, replaced + 1  # one user turn, not two in a row
        return replaced, dropped, pinned, merged
    return None


def _transcript(messages: Sequence[Message]) -> str:
    lines: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            lines.append(f"user: {message.content}")
        elif isinstance(message, AssistantMessage):
            calls = "".join(f" [tool call {c.name}({c.arguments})]" for c in message.tool_calls)
            lines.append(f"assistant: {message.text}{calls}")
        elif isinstance(message, ToolResultMessage):
            lines.append(f"tool {message.name}: {message.content}")
    return "\n".join(lines)
