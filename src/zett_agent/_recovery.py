"""Recovery: what an extension may do about a step that did not go well.

After every model call the loop asks each extension's ``recover(context)`` in
order (:meth:`Extension.recover <zett_agent.extensions.Extension.recover>`); the
first that returns a :data:`Recovery` is acted on, the rest are not asked. The
loop itself never works around a stop: without an extension that answers, a
run behaves exactly as it does without this module.

A :class:`RecoveryContext` says what happened: the request that was sent, the
response (or the exception, with ``response`` None), its :class:`StopInfo`
(for an exception, :func:`error_stop`: a "prompt is too long" 400 is
CONTEXT_FULL, the same fact arriving as an error; anything else INTERRUPTED), the
conversation, and the recoveries made so far in this run.

A :data:`Recovery` is one of a closed set of actions the loop knows:

==================  ==========================================================
RetryRequest        send ``request`` instead (on ``model`` for the rest of the
                    run, if given). The answer is stored as a *recorded
                    attempt*: ``stop.detail["superseded"] = True``, never sent
                    to a model again. A failed call is recorded the same way,
                    as an empty answer whose stop is :func:`error_stop`.
ContinueWith        store the answer, add ``messages`` (e.g. a "continue" user
                    turn), run another turn. ``join``: the run's final
                    message joins this answer's text with the next one's.
EndRun              end the run; the answer is stored with ``stop``.
==================  ==========================================================

An answer a recovery acted on never runs its tool calls: they are withheld as
under REFUSAL (names in ``stop.detail["withheld_tool_calls"]``). Its stop
records the recovery in ``stop.detail["recovery"]`` =
``{"by": <extension class>, "action": "retry" | "continue" | "end", **note}``,
so a stored session shows what happened; each recovery is also one record on
the ``zett_agent._recovery`` logger. RetryRequest and ContinueWith apply only to
an abnormal step or a failed call (a normal answer has no stop to carry the
record); on a normal step only EndRun is acted on. Recovery is not offered for
the first call of :meth:`Agent.resume <zett_agent.Agent.resume>`, whose
answer takes the place of the cut-off one.

The loop (:mod:`zett_agent._loop`) keeps one run's recovery bookkeeping in a
:class:`RunRecoveries`: it asks the extensions (:meth:`RunRecoveries.ask`),
performs and records an answer (:meth:`RunRecoveries.apply`), and holds what
that answer left for the next turn (the retry, ``ContinueWith`` messages and
output limit, the pieces of a joined final message).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, TypeAlias

from zett_agent._await import maybe_await as _maybe_await
from zett_agent._exchange import ModelRequest, ModelResponse
from zett_agent._messages import AssistantMessage, Message
from zett_agent._telemetry import log_recovery
from zett_agent.errors import ContextOverflowError, ProviderError, looks_like_context_overflow
from zett_agent.model._model import ModelClient
from zett_agent.stop import StopInfo, StopReason

__all__ = [
    "ContinueWith",
    "EndRun",
    "Recovery",
    "RecoveryContext",
    "RecoveryRecord",
    "RetryRequest",
    "RunRecoveries",
    "action_of",
    "error_stop",
    "failed_call",
    "is_context_overflow",
    "is_superseded",
    "join_pieces",
]

recovery_log = logging.getLogger("zett_agent.recovery")

Action = Literal["retry", "continue", "end"]


@dataclass(frozen=True)
class RetryRequest:
    """Send ``request`` instead; the answer (or failed call) becomes a recorded attempt.

    ``request`` is sent as given (``before_model`` hooks are not run on it again).
    ``model``: the model for this call and the rest of the run (None: unchanged).
    ``note``: JSON-compatible facts for ``stop.detail["recovery"]``.
    """

    request: ModelRequest
    model: ModelClient | None = None
    note: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ContinueWith:
    """Store the answer, add ``messages`` to the conversation, run another turn.

    ``join``: the run's final message (``run()``'s return, RUN_COMPLETED) has this
    answer's text and the next answer's joined; the stored messages stay as they
    were sent. ``max_tokens``: the output limit of the next request (None: as
    configured).
    """

    messages: Sequence[Message]
    join: bool = False
    max_tokens: int | None = None
    note: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EndRun:
    """End the run; the answer is stored with ``stop`` (its tool calls withheld)."""

    stop: StopInfo
    note: Mapping[str, Any] = field(default_factory=dict)


Recovery: TypeAlias = RetryRequest | ContinueWith | EndRun


@dataclass(frozen=True)
class RecoveryRecord:
    """One recovery made in a run: at which step, by which extension (class name),
    what it did, for which stop reason, and its note."""

    step: int
    by: str
    action: Action
    reason: StopReason
    note: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RecoveryContext:
    """What an extension's ``recover`` sees about one model call.

    Attributes:
        request: the request that was sent.
        response: the response as the loop decided it, or None when the call
            raised ``error``.
        error: the exception of a failed call (no output), else None.
        stop: ``response.stop_info``, or :func:`error_stop` of ``error``. Always set
            (END_TURN / TOOL_USE for a normal step).
        messages: the conversation so far (the stored history; this answer not
            yet in it).
        run_start: index in ``messages`` where this run began.
        recoveries: the recoveries made so far in this run, oldest first.
        model: the model that was called.
        run_id, step: as in the events.
    """

    request: ModelRequest
    response: ModelResponse | None
    error: Exception | None
    stop: StopInfo
    messages: Sequence[Message]
    run_start: int
    recoveries: tuple[RecoveryRecord, ...]
    model: ModelClient
    run_id: str
    step: int

    @property
    def run_messages(self) -> Sequence[Message]:
        """The messages added in this run (the prompt first)."""
        return self.messages[self.run_start :]

    def made_by(self, extension: object) -> int:
        """How many recoveries ``extension`` (its class) made in this run."""
        name = type(extension).__name__
        return sum(1 for record in self.recoveries if record.by == name)


# ---------------------------------------------------------------- helpers


def is_context_overflow(error: BaseException) -> bool:
    """Whether ``error`` is a provider saying the input does not fit the context
    window: a :class:`~zett_agent.errors.ContextOverflowError` (Anthropic's 400
    "prompt is too long", OpenAI's ``context_length_exceeded``...), or another
    :class:`ProviderError` whose fields say so
    (:func:`~zett_agent.errors.looks_like_context_overflow`): CONTEXT_FULL
    arriving as an error."""
    if isinstance(error, ContextOverflowError):
        return True
    if not isinstance(error, ProviderError):
        return False
    return looks_like_context_overflow(error.status, error.code, error.message)


def error_stop(error: BaseException) -> StopInfo:
    """The :class:`StopInfo` a failed call stands for: CONTEXT_FULL for a context
    overflow (raw = the provider's code), else INTERRUPTED; ``detail["error"]``
    holds the status, type and code."""
    facts: dict[str, Any] = {"exception": type(error).__name__}
    message = str(error)
    raw: str | None = type(error).__name__
    if isinstance(error, ProviderError):
        facts.update(status=error.status, type=error.error_type, code=error.code)
        message = error.message
        raw = str(error.code) if error.code is not None else error.error_type or raw
    reason = StopReason.CONTEXT_FULL if is_context_overflow(error) else StopReason.INTERRUPTED
    return StopInfo(reason, raw=raw, category=raw, message=message, detail={"error": facts})


def failed_call(error: BaseException, model: ModelClient) -> ModelResponse:
    """The empty response a failed call is recorded as when a recovery acts on it."""
    return ModelResponse("", (), error_stop(error), model=model.name)


def is_superseded(message: Message) -> bool:
    """Whether ``message`` is a recorded attempt that a retry took the place of;
    the loop keeps it in history and never sends it."""
    return (
        isinstance(message, AssistantMessage)
        and message.stop is not None
        and message.stop.detail.get("superseded") is True
    )


def record(
    response: ModelResponse, by: str, action: Action, note: Mapping[str, Any], superseded: bool
) -> ModelResponse:
    """``response`` with the recovery written into its stop's detail."""
    extra: dict[str, Any] = {"recovery": {"by": by, "action": action, **note}}
    if superseded:
        extra["superseded"] = True
    return replace(response, stop_info=response.stop_info.with_detail(**extra))


def join_pieces(pieces: Sequence[AssistantMessage]) -> AssistantMessage:
    """One answer from pieces continued with ``ContinueWith(join=True)``: texts
    joined, usage summed, the last piece's stop, tool calls and model.
    ``provider_record`` is None: it would stand for several provider messages."""
    last = pieces[-1]
    usage = pieces[0].usage
    for piece in pieces[1:]:
        usage = usage + piece.usage
    return last.replace(
        text="".join(piece.text for piece in pieces),
        reasoning="\n".join(piece.reasoning for piece in pieces if piece.reasoning),
        usage=usage,
        provider_record=None,
    )


def action_of(recovery: Recovery) -> Action:
    """The name a recovery is recorded under."""
    match recovery:
        case RetryRequest():
            return "retry"
        case ContinueWith():
            return "continue"
        case EndRun():
            return "end"


# ---------------------------------------------------------------- one run's bookkeeping


class Recoverer(Protocol):
    """What :meth:`RunRecoveries.ask` asks: an extension's ``recover`` hook
    (:class:`~zett_agent.extensions.Extension`; named here by shape, so this
    module does not import the extensions that import it)."""

    def recover(self, context: RecoveryContext) -> Any: ...


class RunRecoveries:
    """The recoveries of one run, and what the last one left for the loop to do."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.records: list[RecoveryRecord] = []
        self.retry: RetryRequest | None = None  # the request to send next
        self.follow: list[Message] = []  # ContinueWith messages, added after the answer
        self.next_max_tokens: int | None = None  # ContinueWith's limit for the next request
        self.pieces: list[AssistantMessage] = []  # answers joined into the final message

    async def ask(
        self, extensions: Sequence[Recoverer], context: RecoveryContext
    ) -> tuple[str, Recovery] | None:
        """The first extension's answer to ``recover(context)``, with its class
        name; None if none answers, or if it answered a step that ended normally
        with anything but EndRun (that answer is logged and ignored)."""
        for extension in extensions:
            recovery = await _maybe_await(extension.recover(context))
            if recovery is None:
                continue
            by = type(extension).__name__
            if not isinstance(recovery, RetryRequest | ContinueWith | EndRun):
                raise TypeError(
                    f"{by}.recover returned {recovery!r}: "
                    "expected RetryRequest, ContinueWith, EndRun or None"
                )
            if not isinstance(recovery, EndRun) and context.stop.ok:
                recovery_log.warning(
                    "%s: %s ignored on a step that ended normally", by, type(recovery).__name__
                )
                return None
            return by, recovery
        return None

    def apply(
        self, step: int, by: str, recovery: Recovery, kept: ModelResponse, *, failed: bool
    ) -> ModelResponse:
        """Perform ``recovery`` (a closed set) on ``kept``, the answer with its tool
        calls already withheld, and record it on the answer's stop."""
        stop = kept.stop_info
        action = action_of(recovery)
        superseded = failed  # a failed call is a record, never an answer to send
        match recovery:
            case RetryRequest():
                self.retry = recovery
                superseded = True
            case ContinueWith(messages=messages, max_tokens=limit):
                self.follow = list(messages)
                self.next_max_tokens = limit
            case EndRun(stop=end):
                extra: dict[str, Any] = {}
                if stop.detail.get("withheld_tool_calls"):
                    extra["withheld_tool_calls"] = stop.detail["withheld_tool_calls"]
                if not stop.ok:
                    extra["replaced_stop"] = stop.to_dict(fields=("reason", "raw"))
                kept = replace(kept, stop_info=end.with_detail(**extra))
        self.records.append(RecoveryRecord(step, by, action, stop.reason, recovery.note))
        log_recovery(
            run_id=self.run_id,
            step=step,
            by=by,
            action=action,
            reason=stop.reason.value,
            note=recovery.note,
        )
        return record(kept, by, action, recovery.note, superseded)

    def take_retry(self) -> RetryRequest | None:
        retry, self.retry = self.retry, None
        return retry

    def take_follow(self) -> list[Message]:
        follow, self.follow = self.follow, []
        return follow

    def take_max_tokens(self) -> int | None:
        limit, self.next_max_tokens = self.next_max_tokens, None
        return limit

    def final(
        self,
        answer: AssistantMessage,
        recovery: Recovery | None,
        final: AssistantMessage | None,
    ) -> AssistantMessage | None:
        """The run's final message so far, after ``answer``: a superseded attempt
        leaves it as it was; answers continued with ``ContinueWith(join=True)``
        are joined to the next."""
        if isinstance(recovery, RetryRequest):
            return final
        if isinstance(recovery, ContinueWith) and recovery.join:
            self.pieces.append(answer)
            return answer
        if not self.pieces:
            return answer
        pieces, self.pieces = [*self.pieces, answer], []
        return join_pieces(pieces)
