"""Tool calls that wait for a person's approval.

A tool requires approval when it says so (``Tool.requires_approval``, or
:func:`requires_approval` around a function) or when the agent's
``AgentRunConfig.approval`` policy, given the call, returns True. A call whose
arguments are not a JSON object needs approval whenever a policy is set (fail
closed: a policy cannot judge what it cannot read), and so does a call for which
the policy raises.

When an answer holds such calls, the loop runs the other calls of the answer at
once (in the answer's order, as any tool calls run), stores their results, and
ends the run with the waiting calls **pending**: each is announced by a
``TOOL_APPROVAL_REQUESTED`` event, and ``RUN_COMPLETED`` carries them as an
:class:`ApprovalRequest` (``event.approval``). ``MODEL_STOPPED``/``StopInfo`` keep
meaning only why the model stopped: the model did finish normally here.

The host answers with one :class:`Decision` per call id (:func:`approve`,
:func:`deny`): approved calls run, denied ones are answered with an error result
carrying the reason, and the loop goes on. In a session store the request and
the decisions are rows of their own (``role`` ``"approval_request"`` and
``"approval_decision"``, schema version 2): the decisions are stored before any
tool runs, so a restart never asks again. Calls cut off at the output limit and
calls withheld under REFUSAL or INTERRUPTED never become pending.

A decision is taken once: it is stored with a compare-and-set keyed by its
request (:func:`decision_key`, :meth:`SessionStore.append_if_absent
<zett_agent.sessions.SessionStore.append_if_absent>`), so of two processes
deciding the same calls exactly one stores its decision and runs them; the
other gets :class:`ApprovalConflictError` and runs nothing, even when both
decided the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from zett_agent._messages import ToolCall
from zett_agent.errors import ZettError
from zett_agent.tools._definition import Tool, as_tool

if TYPE_CHECKING:
    from zett_agent._messages import AssistantMessage

__all__ = [
    "APPROVAL_ROLES",
    "ApprovalConflictError",
    "ApprovalDecision",
    "ApprovalHandoff",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Decision",
    "PendingApprovalError",
    "approve",
    "decision_key",
    "deny",
    "needs_approval",
    "pending_request",
    "refuse_while_pending",
    "requires_approval",
]

ApprovalPolicy: TypeAlias = Callable[[ToolCall], bool]
"""Given a call (its arguments are a JSON object), whether it waits for approval."""

DENIED = "A person denied this tool call; it was not run."


class PendingApprovalError(ZettError):
    """The session (or agent) has tool calls waiting for a decision: answer them
    (``approve``) before a new prompt or a plain resume. ``calls`` are the pending
    calls."""

    def __init__(self, message: str, calls: Sequence[ToolCall] = ()) -> None:
        super().__init__(message)
        self.calls = tuple(calls)


class ApprovalConflictError(ZettError):
    """The calls were decided already, by another process or request: this
    decision lost the compare-and-set, was not stored, and runs nothing (two
    identical decisions conflict too). ``session_id`` names the session,
    ``calls`` the calls it tried to decide, ``decided`` the decision that was
    stored first (None when it could not be read)."""

    def __init__(
        self,
        message: str,
        *,
        session_id: str | None = None,
        calls: Sequence[ToolCall] = (),
        decided: ApprovalDecision | None = None,
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.calls = tuple(calls)
        self.decided = decided


@dataclass(frozen=True)
class Decision:
    """A person's answer to one pending call: approved, or denied with a reason."""

    approved: bool
    reason: str | None = None


def approve() -> Decision:
    """Run the call."""
    return Decision(True)


def deny(reason: str | None = None) -> Decision:
    """Do not run the call; the model is told so, with ``reason``."""
    return Decision(False, reason)


@dataclass(frozen=True)
class ApprovalRequest:
    """Tool calls of one answer waiting for a decision, in the answer's order.

    ``run_id`` is the run that asked; ``durable_agent`` the name of the durable
    agent whose workers continue it once decided (a durable run's request; ""
    for a plain run's, which the deciding process continues itself)."""

    calls: tuple[ToolCall, ...]
    run_id: str = ""
    durable_agent: str = ""

    @property
    def ids(self) -> list[str]:
        return [call.id for call in self.calls]


@dataclass(frozen=True)
class ApprovalDecision:
    """The decisions for one :class:`ApprovalRequest`, by call id."""

    decisions: Mapping[str, Decision] = field(default_factory=dict)


class ApprovalHandoff(Protocol):
    """Continues decided requests of durable runs on a worker
    (:class:`zett_agent.durable.DurableRuns` is one): given to
    :class:`~zett_agent.AgentClient` (``handoff=``) so that its
    :meth:`~zett_agent.AgentClient.approve` stores the decision and hands
    it on instead of running the tools in its own process."""

    async def continue_decided(
        self, session_id: str, request_seq: int, request: ApprovalRequest
    ) -> str:
        """Start (once: again is a no-op) the run that carries on ``request``
        (stored as row ``request_seq``) with its stored decision; its run id."""
        ...

    async def result(self, run_id: str) -> AssistantMessage:
        """Wait for run ``run_id`` to end; its final message."""
        ...


APPROVAL_ROLES = frozenset({"approval_request", "approval_decision"})
"""The ``role`` of stored approval rows (:mod:`zett_agent._records`)."""


def decision_key(request_seq: int) -> str:
    """The idempotency key of the decision for the request stored as row
    ``request_seq``: every process deciding that request stores under the same
    key, so only the first one's decision is stored."""
    return f"decision:{request_seq}"


def requires_approval(function: Callable[..., Any] | Tool) -> Tool:
    """The tool of ``function`` (or the tool itself), made to wait for approval on
    every call: ``create_agent(model, tools=[requires_approval(delete_file)])``."""
    return replace(as_tool(function), requires_approval=True)


def needs_approval(call: ToolCall, tool: Any, policy: ApprovalPolicy | None) -> bool:
    """Whether ``call`` (for ``tool``, None when unknown) waits for approval."""
    if getattr(tool, "requires_approval", False):
        return True
    if policy is None:
        return False
    try:
        call.parsed_arguments()
    except (ValueError, RecursionError):
        return True  # fail closed: malformed arguments
    try:
        return bool(policy(call))
    except Exception:
        return True  # fail closed: the policy could not decide


def decided_results(
    request: ApprovalRequest, decisions: Mapping[str, Decision]
) -> tuple[list[ToolCall], dict[str, str]]:
    """The approved calls (in order) and the denial text of each denied call id.

    Raises ``ValueError`` when a pending call has no decision or a decision names
    no pending call."""
    ids = set(request.ids)
    unknown = sorted(set(decisions) - ids)
    missing = [i for i in request.ids if i not in decisions]
    if unknown or missing:
        parts = []
        if missing:
            parts.append(f"no decision for {', '.join(missing)}")
        if unknown:
            parts.append(f"no pending call {', '.join(unknown)}")
        raise ValueError("; ".join(parts))
    approved = [c for c in request.calls if decisions[c.id].approved]
    denied = {}
    for call in request.calls:
        decision = decisions[call.id]
        if not decision.approved:
            denied[call.id] = f"{DENIED} Reason: {decision.reason}" if decision.reason else DENIED
    return approved, denied


def pending_request(entries: Sequence[object]) -> ApprovalRequest | None:
    """The last approval request of ``entries`` that has no decision after it."""
    for entry in reversed(entries):
        if isinstance(entry, ApprovalDecision):
            return None
        if isinstance(entry, ApprovalRequest):
            return entry
    return None


def refuse_while_pending(session_id: str, entries: Sequence[object]) -> None:
    """The one rule for a new prompt (or a run on the history as it is) while calls
    of the session wait for a decision: :class:`PendingApprovalError`, nothing
    stored, the waiting calls never answered "not run" (they wait, nothing was
    lost). :class:`~zett_agent.AgentClient` and a durable run raise it; ``zett
    serve`` answers it 409."""
    request = pending_request(entries)
    if request is not None:
        names = ", ".join(call.name for call in request.calls)
        raise PendingApprovalError(
            f"session {session_id!r}: tool calls wait for approval ({names}); "
            "answer them with approve() before a new prompt or a resume",
            request.calls,
        )


def describe_call(call: ToolCall) -> str:
    """``name({"arguments": ...})`` on one line, for prompts."""
    try:
        arguments = json.dumps(call.parsed_arguments(), ensure_ascii=False)
    except (ValueError, RecursionError):
        arguments = call.arguments
    return f"{call.name}({arguments})"
