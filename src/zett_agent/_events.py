"""What a run tells a host while it happens: :class:`AgentEvent` values.

Order for one run::

    RUN_STARTED
    ( MODEL_STARTED (TEXT_DELTA | REASONING_DELTA | TOOL_CALL_DELTA | PARTIAL_OUTPUT)*
      MODEL_COMPLETED [MODEL_STOPPED [GUARDRAIL_TRIPPED]] [OUTPUT_INVALID]
      TOOL_CALL_STARTED* TOOL_CALL_COMPLETED* TOOL_APPROVAL_REQUESTED* )*
    [MAX_TURNS_REACHED | BUDGET_REACHED]
    RUN_COMPLETED | RUN_FAILED

(The answer that crossed a budget: its calls' TOOL_CALL_COMPLETED, "not run", with
no TOOL_CALL_STARTED, then BUDGET_REACHED.)

While a tool call runs, the tool may report (:func:`tool_events`):
TOOL_PROGRESS (how far it is), TOOL_LOG (a log message of its source, such as an
MCP server's ``notifications/message``) and TOOL_INPUT_REQUESTED (it asks a
person for input: an MCP elicitation), SAMPLING_REQUESTED and SAMPLING_COMPLETED
(an MCP server asked zett's model for a completion: ``data`` holds ``server``,
``model``, and on completion ``usage``, ``cost_usd`` (None: unknown or not
priced) and ``stop``; the spend counts in the run's ledger), each between the
call's TOOL_CALL_STARTED and its TOOL_CALL_COMPLETED, with ``data`` saying what.

GUARDRAIL_TRIPPED follows the MODEL_STOPPED of an answer a guardrail stopped
(``event.stop``: REFUSAL, ``raw`` ``"guardrail:<name>"``; ``data``: ``guardrail``,
``kind`` ``"input"`` or ``"output"``, ``reason``), then the run completes.

MODEL_STOPPED comes right after MODEL_COMPLETED and only for an abnormal stop
(``event.stop`` is set); a PAUSED step that is continued is not reported.
RUN_COMPLETED still follows a refusal: the request ran to its end. The tool calls
of one answer are all STARTED, then run (concurrently by default), then
COMPLETED one by one in the model's order. Calls that wait for a person's
approval are not started: each gets TOOL_APPROVAL_REQUESTED after the others
completed, and the run ends with RUN_COMPLETED whose ``approval`` holds them
(:mod:`zett_agent.approvals`).

A structured run (``output_type``, :mod:`zett_agent._structured`) adds
PARTIAL_OUTPUT while the final answer streams (``event.output``: the value so
far, validated leniently; sent only when it changed), OUTPUT_INVALID after an
answer that failed validation (``event.text``: the errors sent back; a retry
follows, or RUN_FAILED with an :class:`~zett_agent.errors.OutputValidationError`),
and the typed value on RUN_COMPLETED (``event.output``, also ``message.output``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python

from zett_agent._await import maybe_await as _maybe_await
from zett_agent._exchange import ReasoningDelta, StreamEvent, TextDelta, ToolCallDelta
from zett_agent._messages import (
    AssistantMessage,
    Cost,
    ToolCall,
    ToolResultMessage,
    Usage,
    message_to_dict,
)
from zett_agent._parts import part_summary
from zett_agent.stop import StopInfo

if TYPE_CHECKING:
    from zett_agent.tools._approvals import ApprovalRequest

__all__ = [
    "AgentEvent",
    "AgentEventDispatcher",
    "AgentEventType",
    "DeltaEvents",
    "ToolEventSink",
    "final_message",
    "tool_events",
]


class AgentEventType(StrEnum):
    """The kinds of :class:`AgentEvent`; values are lowercase names."""

    RUN_STARTED = "run_started"
    MODEL_STARTED = "model_started"
    TEXT_DELTA = "text_delta"
    REASONING_DELTA = "reasoning_delta"
    TOOL_CALL_DELTA = "tool_call_delta"
    PARTIAL_OUTPUT = "partial_output"
    MODEL_COMPLETED = "model_completed"
    MODEL_STOPPED = "model_stopped"
    OUTPUT_INVALID = "output_invalid"
    TOOL_CALL_STARTED = "tool_call_started"
    TOOL_CALL_COMPLETED = "tool_call_completed"
    TOOL_APPROVAL_REQUESTED = "tool_approval_requested"
    TOOL_OUTCOME_UNKNOWN = "tool_outcome_unknown"
    TOOL_PROGRESS = "tool_progress"
    TOOL_LOG = "tool_log"
    TOOL_INPUT_REQUESTED = "tool_input_requested"
    SAMPLING_REQUESTED = "sampling_requested"
    SAMPLING_COMPLETED = "sampling_completed"
    GUARDRAIL_TRIPPED = "guardrail_tripped"
    MAX_TURNS_REACHED = "max_turns_reached"
    BUDGET_REACHED = "budget_reached"
    RUN_COMPLETED = "run_completed"
    RUN_FAILED = "run_failed"


@dataclass(frozen=True)
class AgentEvent:
    """One thing that happened in a run.

    Attributes:
        type: the :class:`AgentEventType`.
        run_id: the run this belongs to.
        step: the model call number in the run (1-based; 0 before the first).
        text: the piece of text (TEXT_DELTA, REASONING_DELTA) or of tool-call
            arguments (TOOL_CALL_DELTA).
        tool_call: the call (TOOL_CALL_DELTA carries a partial one, STARTED/COMPLETED
            the whole one).
        tool_result: the result (TOOL_CALL_COMPLETED; TOOL_OUTCOME_UNKNOWN: the
            "may or may not have taken effect" result given to a call that a
            crash left started and without a result).
        stop: why the step did not end normally (MODEL_STOPPED, MAX_TURNS_REACHED,
            BUDGET_REACHED, and RUN_COMPLETED when the final message has one).
        message: the assistant message (MODEL_COMPLETED, MODEL_STOPPED, RUN_COMPLETED).
        error: the exception that ended the run (RUN_FAILED).
        approval: the calls waiting for a person's approval (RUN_COMPLETED of a
            run that ended for that, and each TOOL_APPROVAL_REQUESTED; None
            otherwise): the run-level outcome "awaiting approval", apart from why
            the model stopped.
        usage, cost: the run's token counts and cost (RUN_COMPLETED): its ledger, every
            model call the run caused (its answers, fallback attempts, summaries, MCP
            sampling, subagents and background runs it started; cost None: not priced).
        output: a structured run's typed value (RUN_COMPLETED), or the value so
            far (PARTIAL_OUTPUT); None otherwise.
        data: what a running tool reported (TOOL_PROGRESS: ``progress``,
            ``total``, ``message``; TOOL_LOG: ``level``, ``logger``, ``data``,
            ``server``; TOOL_INPUT_REQUESTED: the request, see
            :class:`zett_agent.mcp.ElicitationRequest`; SAMPLING_*: ``server``,
            ``model``, ``usage``, ``cost_usd``, ``stop``; GUARDRAIL_TRIPPED:
            ``guardrail``, ``kind``, ``reason``), JSON values.
    """

    type: AgentEventType
    run_id: str
    step: int = 0
    text: str | None = None
    tool_call: ToolCall | None = None
    tool_result: ToolResultMessage | None = None
    stop: StopInfo | None = None
    message: AssistantMessage | None = None
    error: BaseException | None = None
    approval: ApprovalRequest | None = None
    usage: Usage | None = None
    cost: Cost | None = None
    output: Any = None
    data: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible record of this event (fields that are None left out)."""
        record: dict[str, Any] = {"type": self.type.value, "run_id": self.run_id, "step": self.step}
        if self.text is not None:
            record["text"] = self.text
        if self.tool_call is not None:
            record["tool_call"] = {
                "id": self.tool_call.id,
                "name": self.tool_call.name,
                "arguments": self.tool_call.arguments,
            }
        if self.tool_result is not None:
            result = self.tool_result
            record["tool_result"] = message_to_dict(replace(result, parts=()))
            if result.parts:  # described, never the bytes
                record["tool_result"]["parts"] = [part_summary(p) for p in result.parts]
        if self.stop is not None:
            record["stop"] = self.stop.to_dict(describe=True)
        if self.message is not None:
            record["message"] = message_to_dict(self.message)
        if self.error is not None:
            record["error"] = f"{type(self.error).__name__}: {self.error}"
        if self.approval is not None:
            record["approval"] = [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.approval.calls
            ]
        if self.usage is not None:
            record["usage"] = {**asdict(self.usage), "total_tokens": self.usage.total_tokens}
        if self.cost is not None:
            record["cost"] = {"usd": self.cost.usd, "unknown": self.cost.unknown}
        if self.output is not None:
            record["output"] = to_jsonable_python(self.output)
        if self.data is not None:
            record["data"] = dict(self.data)
        return record


_new = object.__new__
_TEXT, _REASONING, _TOOL = (
    AgentEventType.TEXT_DELTA,
    AgentEventType.REASONING_DELTA,
    AgentEventType.TOOL_CALL_DELTA,
)


class DeltaEvents:
    """The delta events of one model call, built cheaply.

    A delta event is built for every streamed chunk, and the frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` per field, nine fields) was the
    largest part of the agent's cost per chunk. These are :class:`AgentEvent`
    instances with the same field values, equality, hash, repr, ``to_dict()``,
    pickling and frozenness; only the fields a delta sets (``type``, ``run_id``,
    ``step``, ``text``, and ``tool_call`` for a tool-call delta) are stored on the
    instance, the others (None) are read from the class's defaults, so
    ``vars(event)`` of a delta lists those fields only.
    """

    __slots__ = ("_run_id", "_step")

    def __init__(self, run_id: str, step: int) -> None:
        self._run_id = run_id
        self._step = step

    def text(self, text: str) -> AgentEvent:
        """A TEXT_DELTA carrying ``text``."""
        event: AgentEvent = _new(AgentEvent)
        values = event.__dict__
        values["type"] = _TEXT
        values["run_id"] = self._run_id
        values["step"] = self._step
        values["text"] = text
        return event

    def of(self, item: StreamEvent) -> AgentEvent:
        """The event for one stream item: TEXT_DELTA, REASONING_DELTA, or
        TOOL_CALL_DELTA (``text`` the arguments piece, ``tool_call`` the partial
        call: id and name as far as the fragment carried them, else ``""``)."""
        call: ToolCall | None = None
        match item:
            case TextDelta(text=text):
                kind = _TEXT
            case ReasoningDelta(text=text):
                kind = _REASONING
            case ToolCallDelta(arguments=text):
                kind = _TOOL
                call = ToolCall(item.id or "", item.name or "", text)
        event: AgentEvent = _new(AgentEvent)
        values = event.__dict__
        values["type"] = kind
        values["run_id"] = self._run_id
        values["step"] = self._step
        values["text"] = text
        if call is not None:
            values["tool_call"] = call
        return event


ToolEventSink = Callable[[AgentEventType, ToolCall, Mapping[str, Any]], None]
"""Adds an event of ``type`` about ``tool_call`` with ``data`` to the run's stream."""

_TOOL_EVENTS: ContextVar[ToolEventSink | None] = ContextVar("zett_tool_events", default=None)


def tool_events() -> ToolEventSink | None:
    """Where the tool of a gated call reports TOOL_PROGRESS, TOOL_LOG and
    TOOL_INPUT_REQUESTED while it runs (the events reach the run's stream at once);
    None outside a run's tool calls. A tool opts in with the class attribute
    ``Tool.reports_events`` (the loop then runs the calls beside the stream)."""
    return _TOOL_EVENTS.get()


class AgentEventDispatcher:
    """Routes events to ``on_<type>_event`` methods; subclass and override.

    ``on_model_stopped_event(event)``, ``on_text_delta_event(event)``... may be
    plain or ``async`` methods; ``on_event`` sees every event first.
    Use ``await dispatcher.dispatch(event)`` in an ``agent.stream()`` loop, or
    pass ``dispatcher=`` to ``agent.run()``.
    """

    async def on_event(self, event: AgentEvent) -> None:
        """Called for every event before its specific handler."""

    async def dispatch(self, event: AgentEvent) -> None:
        """Call ``on_event`` then ``on_<event.type>_event`` if this class defines it."""
        await _maybe_await(self.on_event(event))
        handler = getattr(self, f"on_{event.type.value}_event", None)
        if handler is not None:
            await _maybe_await(handler(event))


async def final_message(
    events: AsyncGenerator[AgentEvent, None], dispatcher: AgentEventDispatcher | None = None
) -> AssistantMessage:
    """Drain a run's ``events`` (dispatching each, when a dispatcher is given) and
    return the RUN_COMPLETED message. Closes ``events`` whatever happens."""
    final: AssistantMessage | None = None
    async with aclosing(events):
        async for event in events:
            if dispatcher is not None:
                await dispatcher.dispatch(event)
            if event.type is AgentEventType.RUN_COMPLETED:
                final = event.message
    assert final is not None, "a run's events end with RUN_COMPLETED"
    return final
