"""What is known of a tool call's outcome, and the texts the model reads for it.

A call that the gate lets through is recorded as **started** just before the tool
is entered (after the stop rules, the limits, approval and ``before_tool``), by
the run's :class:`ToolJournal`: a session store keeps a :class:`ToolStarted` row
(``role`` ``"tool_started"``, schema version 3), a durable run a marker step.
The row is written on its own, never batched with the answer, so a call that
never started never looks started. Each result is stored as soon as its call
ends. After a crash, what the rows say decides the answer the model gets:

=====================================  =======================================
stored for the call                    the call's result
=====================================  =======================================
a result                               that result
started, no result, idempotent tool    run again when the session is resumed
                                       (:meth:`Agent.resume`); a new prompt
                                       answers it as below
started, no result                     :data:`OUTCOME_UNKNOWN` ("may or may not
                                       have taken effect"), and a
                                       ``TOOL_OUTCOME_UNKNOWN`` event names it
not started                            :data:`NOT_RUN`
=====================================  =======================================
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from zett_agent._messages import ToolCall, ToolResultMessage

__all__ = [
    "CUT_OFF_ARGUMENTS",
    "NOT_RUN",
    "NO_JOURNAL",
    "OUTCOME_UNKNOWN",
    "TOOL_CANCELLED",
    "ToolJournal",
    "ToolStarted",
]

CUT_OFF_ARGUMENTS = (
    "The arguments of this tool call were cut off at the output limit; it was not run."
)
"""The result of a call the wire did not finish (it never runs)."""

NOT_RUN = "This tool call was not run: the step ended before its result was recorded."
"""The result of a call that has no result and never started (a crash or a cancel
before the gate let it through)."""

OUTCOME_UNKNOWN = (
    "This tool call was running when its run stopped (the process died or the run "
    "was cancelled); it may or may not have taken effect."
)
"""The result of a call that started and whose result was lost (a crash while it
ran): it may have had its effect. Durable runs and sessions say the same."""

TOOL_CANCELLED = (
    "The run was cancelled while this tool call was running; it may or may not have taken effect."
)
"""The result of a call that was running when its run was cancelled."""


@dataclass(frozen=True)
class ToolStarted:
    """A stored fact: the gate entered the tool for call ``call_id`` (of tool
    ``name``) in run ``run_id``. Its result, if it ended, is a later row."""

    call_id: str
    name: str
    run_id: str = ""


class ToolJournal(Protocol):
    """Where a run records that calls start, and how a call's execution is kept.

    The gate calls :meth:`started` just before entering the tool, then
    :meth:`run` with the execution (the idempotency rule, the timeout and the
    call). A plain run's journal runs it as it is; a durable run's journal runs
    it as a step whose checkpoint is the result."""

    async def started(self, call: ToolCall, run_id: str) -> bool:
        """Record that ``call`` (of run ``run_id``) is about to be entered. Returns
        False when the journal already held that record (a replay after a crash:
        the earlier attempt's outcome is unknown), True for a first start."""
        ...

    async def run(
        self, call: ToolCall, execute: Callable[[], Awaitable[ToolResultMessage]]
    ) -> ToolResultMessage:
        """Run ``execute`` (the call) and return its result."""
        ...

    def was_started(self, call_id: str) -> bool:
        """Whether the history this run continues recorded call ``call_id`` as
        started (what settles a call a crash left without a result)."""
        ...


class _NoJournal:
    """Records nothing (an in-memory run with no store): every start is a first."""

    async def started(self, call: ToolCall, run_id: str) -> bool:
        return True

    async def run(
        self, call: ToolCall, execute: Callable[[], Awaitable[ToolResultMessage]]
    ) -> ToolResultMessage:
        return await execute()

    def was_started(self, call_id: str) -> bool:
        return False


NO_JOURNAL: ToolJournal = _NoJournal()
"""The journal of a run that stores nothing."""


def outcome_unknown(call: ToolCall) -> ToolResultMessage:
    """The :data:`OUTCOME_UNKNOWN` error result for ``call``."""
    return ToolResultMessage(call.id, call.name, OUTCOME_UNKNOWN, is_error=True)


def not_run(call: ToolCall) -> ToolResultMessage:
    """The :data:`NOT_RUN` error result for ``call``."""
    return ToolResultMessage(call.id, call.name, NOT_RUN, is_error=True)
