"""The tool path: what a tool is, the one gate its calls pass, approvals, outcomes.

=================  ============================================================
``definition``     :class:`Tool` (a function, its argument schema, its timeout,
                   ``requires_approval``, ``idempotent``), :func:`as_tool`
``gate``           :class:`ToolGate`: every call of every tool source passes its
                   rules in one documented order (stop rules, limits, approval,
                   hooks, started marker, idempotency, timeout, result)
``approvals``      calls that wait for a person: policy, requests, decisions
``outcomes``       what is known of a call's outcome (started markers, the
                   journal) and the texts the model reads for it
=================  ============================================================

Everything a host imports is re-exported here (``from zett_agent.tools import
Tool, as_tool``), as before the package existed.
"""

from __future__ import annotations

from zett_agent.tools._definition import Tool, as_tool, error_result, idempotent, is_idempotent
from zett_agent.tools._gate import (
    DEFAULT_MAX_TOOL_ARGUMENT_CHARS,
    DEFAULT_MAX_TOOL_CALLS,
    DEFAULT_MAX_TOOL_RESULT_CHARS,
    DEFAULT_TOOL_TIMEOUT,
    NOT_OFFERED_TOOL_CALLS,
    Screening,
    ToolGate,
    allowed_tools,
    distinct_call_ids,
    is_cut_off,
)
from zett_agent.tools._outcomes import (
    CUT_OFF_ARGUMENTS,
    NOT_RUN,
    OUTCOME_UNKNOWN,
    TOOL_CANCELLED,
    ToolJournal,
    ToolStarted,
)

__all__ = [
    "CUT_OFF_ARGUMENTS",
    "DEFAULT_MAX_TOOL_ARGUMENT_CHARS",
    "DEFAULT_MAX_TOOL_CALLS",
    "DEFAULT_MAX_TOOL_RESULT_CHARS",
    "DEFAULT_TOOL_TIMEOUT",
    "NOT_OFFERED_TOOL_CALLS",
    "NOT_RUN",
    "OUTCOME_UNKNOWN",
    "TOOL_CANCELLED",
    "Screening",
    "Tool",
    "ToolGate",
    "ToolJournal",
    "ToolStarted",
    "allowed_tools",
    "as_tool",
    "distinct_call_ids",
    "error_result",
    "idempotent",
    "is_cut_off",
    "is_idempotent",
]
