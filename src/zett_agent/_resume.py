"""Cancel and resume: what is kept of a cut-off answer and how it is continued.

A run cancelled mid-answer stores what streamed so far (:class:`PartialAnswer`) as
INTERRUPTED with ``detail["cancelled"]``; a host that cancels a run because a limit
of its own passed says so with :func:`cancelling` (the stop's message is then the
reason, and ``detail["limit"]`` names the limit). :func:`plan_resume` says how
:meth:`Agent.resume <zett_agent.Agent.resume>` continues a conversation whose
last answer stopped as INTERRUPTED or MAX_OUTPUT; REFUSAL and CONTEXT_FULL cannot
be resumed (:class:`~zett_agent.errors.ResumeError`). Whether a model continues a
trailing assistant message (a prefill) is its wire protocol's ``supports_prefill``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, assert_never

import anyio

from zett_agent._exchange import ReasoningDelta, TextDelta, ToolCallDelta
from zett_agent._messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from zett_agent.errors import ProviderHTTPError, ResumeError
from zett_agent.model._model import ModelClient
from zett_agent.stop import StopInfo, StopReason

__all__ = [
    "CANCELLED_MESSAGE",
    "CONTINUE_PROMPT",
    "PartialAnswer",
    "ResumePlan",
    "cancelling",
    "continues_by_prefill",
    "is_cancellation",
    "join_answers",
    "plan_resume",
    "prefill_rejected",
]

CANCELLED_MESSAGE = "The run was cancelled."

_CANCEL_REASON: ContextVar[tuple[str, str] | None] = ContextVar("zett_cancel_reason", default=None)


@contextmanager
def cancelling(limit: str, why: str) -> Iterator[None]:
    """Within the block, a run cancelled in this task (a generator closed, a cancel
    scope) stores its partial answer with ``message=why``, ``detail["limit"] = limit``
    and ``detail["cancel_reason"] = why`` beside ``detail["cancelled"]``. ``zett serve``
    uses it when a client stops reading its stream (``slow_client_timeout``)."""
    token = _CANCEL_REASON.set((limit, why))
    try:
        yield
    finally:
        _CANCEL_REASON.reset(token)


CONTINUE_PROMPT = "Continue exactly where you stopped."


class PartialAnswer:
    """What one model call streamed so far, to store if the run is cancelled."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, str] = {}

    def add(self, item: TextDelta | ReasoningDelta | ToolCallDelta) -> None:
        if isinstance(item, TextDelta):
            self.text.append(item.text)
        elif isinstance(item, ReasoningDelta):
            self.reasoning.append(item.text)
        else:
            self.calls[item.index] = item.name or self.calls.get(item.index, "")

    def __bool__(self) -> bool:
        return bool(self.text or self.reasoning or self.calls)

    def cancelled(self, model: ModelClient) -> AssistantMessage:
        """The partial answer: INTERRUPTED, cancelled, its tool calls withheld."""
        detail: dict[str, Any] = {"cancelled": True}
        message = CANCELLED_MESSAGE
        reason = _CANCEL_REASON.get()
        if reason is not None:
            detail["limit"], detail["cancel_reason"] = reason
            message = reason[1]
        if self.calls:
            detail["withheld_tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        stop = StopInfo(StopReason.INTERRUPTED, message=message, detail=detail)
        return AssistantMessage(
            text="".join(self.text),
            stop=stop,
            reasoning="".join(self.reasoning),
            model=model.name,
            provider=model.provider,
        )


def is_cancellation(error: BaseException) -> bool:
    if isinstance(error, GeneratorExit):  # the consumer closed the stream
        return True
    try:
        return isinstance(error, anyio.get_cancelled_exc_class())
    except Exception:  # pragma: no cover - no async backend running
        return False


def prefill_rejected(error: Exception) -> bool:
    """A 400 saying the model takes no trailing assistant message (a prefill)."""
    return (
        isinstance(error, ProviderHTTPError)
        and error.status == 400
        and "prefill" in str(error.message).lower()
    )


def continues_by_prefill(model: ModelClient) -> bool:
    """Whether ``model`` continues a trailing assistant message (a prefill).

    Read from ``model.supports_prefill`` when the model says, else from its wire
    protocol's ``supports_prefill`` (True for Anthropic Messages).
    """
    declared = getattr(model, "supports_prefill", None)
    if isinstance(declared, bool):
        return declared
    return bool(getattr(getattr(model, "protocol", None), "supports_prefill", False))


@dataclass(frozen=True)
class ResumePlan:
    """How :meth:`Agent.resume` continues a conversation.

    Attributes:
        prompt: a user turn to add first (the continuation turn), or None.
        replaces: index of the cut-off answer the first new answer takes the
            place of, or None (the new answer is added after the conversation).
        prefill: the cut-off answer's text, sent as the last message of the first
            request and joined to the new answer's text.
    """

    prompt: str | None = None
    replaces: int | None = None
    prefill: AssistantMessage | None = None


def plan_resume(
    messages: Sequence[Message], model: ModelClient, continue_prompt: str = CONTINUE_PROMPT
) -> ResumePlan:
    """How to resume ``messages`` with ``model``; raises ResumeError when it cannot.

    =========================================  ==================================
    last message                               resume
    =========================================  ==================================
    user turn or tool result (the run died     send the conversation as it is
    before the answer was stored)
    answer with tool calls and no results      send it; the calls get "not run"
                                               results (history repair)
    PAUSED                                     send it again, as the loop does
    INTERRUPTED / MAX_OUTPUT, prefill          resend the text (trailing
    protocol (Anthropic)                       whitespace trimmed, which the API
                                               rejects) as a prefill; the new
                                               answer is joined to it and
                                               replaces the cut-off one. A 400
                                               refusing the prefill (Claude 4.6
                                               models): as other protocols
    INTERRUPTED / MAX_OUTPUT, other protocols  add ``continue_prompt`` as a user
                                               turn; the answer follows it
    INTERRUPTED / MAX_OUTPUT with no text      ask again without it; the new
                                               answer replaces it
    REFUSAL, CONTEXT_FULL                      ResumeError
    ended normally (stop None), OTHER          ResumeError: nothing to resume
    =========================================  ==================================
    """
    if not messages:
        raise ResumeError("nothing to resume: the conversation is empty")
    last = messages[-1]
    if isinstance(last, UserMessage | ToolResultMessage):
        return ResumePlan()
    if not isinstance(last, AssistantMessage):
        raise ResumeError("nothing to resume: the conversation has no prompt to answer")
    if last.tool_calls:
        return ResumePlan()
    stop = last.stop
    if stop is None:
        raise ResumeError("nothing to resume: the last answer ended normally")
    match stop.reason:
        case StopReason.REFUSAL:
            raise ResumeError(
                f"cannot resume: the last answer was a refusal ({stop.describe()}); "
                "continuing it would meet the same refusal",
                stop=stop,
            )
        case StopReason.CONTEXT_FULL:
            raise ResumeError(
                f"cannot resume: the context window is full ({stop.describe()}); "
                "sending the conversation again would overflow it",
                stop=stop,
            )
        case StopReason.PAUSED:
            return ResumePlan()
        case StopReason.INTERRUPTED | StopReason.MAX_OUTPUT:
            index = len(messages) - 1
            text = last.text.rstrip()
            if not text:
                return ResumePlan(replaces=index)
            if continues_by_prefill(model):
                return ResumePlan(replaces=index, prefill=AssistantMessage(text=text))
            return ResumePlan(prompt=continue_prompt)
        case StopReason.END_TURN | StopReason.TOOL_USE | StopReason.OTHER:
            raise ResumeError(
                f"nothing to resume: the last answer ended with {stop.describe()}", stop=stop
            )
        case _:
            assert_never(stop.reason)


def join_answers(
    prefill: AssistantMessage, cut: AssistantMessage, answer: AssistantMessage, model: ModelClient
) -> AssistantMessage:
    """One answer from the cut-off one (sent as ``prefill``) and its continuation."""
    return answer.replace(
        text=prefill.text + answer.text,
        reasoning="\n".join(part for part in (cut.reasoning, answer.reasoning) if part),
        usage=cut.usage + answer.usage,
        provider_record=_join_record(model, prefill.text, answer.provider_record),
    )


def _join_record(
    model: ModelClient, prefix: str, record: Mapping[str, Any] | None
) -> Mapping[str, Any] | None:
    """The continuation's provider record with the prefilled text put in front, by
    the model's wire protocol (``WireProtocol.join_prefill``); None when it cannot."""
    protocol = getattr(model, "protocol", None)
    join = getattr(protocol, "join_prefill", None)
    return join(prefix, record) if join is not None and record is not None else None
