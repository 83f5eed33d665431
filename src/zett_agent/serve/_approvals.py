"""Approval answers from a client, matched to the calls the session waits on.

The session's waiting calls are :class:`~._history.Continuation.waiting` (its
pending request as the UI showed it). :func:`decisions_for` takes the answers the
AI SDK sends (:func:`~._request.approval_responses`), :func:`decisions_from_json` the
body of ``POST /api/sessions/{id}/approve``; both give the decisions by *call id*,
for :meth:`AgentClient.approve_stream
<zett_agent.AgentClient.approve_stream>`, or raise
:class:`~._request.RequestError`:

* 409 when nothing waits, when the answers are in another message than the one
  that waits, or when an answer names an approval id with a tool call id that do not
  both match a waiting call (decided already, asked in an earlier request, or never
  asked: a client cannot approve a call by inventing an id);
* 422 when a waiting call has no answer.

Only ids and answers are read: the call that runs is the stored one, never the
``input`` a client sends with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from zett_agent.tools._approvals import Decision

from ._history import Continuation
from ._request import MAX_REASON_CHARS, ApprovalResponse, RequestError

__all__ = ["answered", "decisions_for", "decisions_from_json", "need_waiting"]


def need_waiting(place: Continuation) -> None:
    """RequestError (409) when no call waits for approval in the session."""
    if not place.waiting:
        raise RequestError(
            "no tool calls wait for approval in this session (decided already?); "
            "reload the session to see what happened",
            409,
        )


def decisions_for(
    place: Continuation, message_id: str | None, responses: Sequence[ApprovalResponse]
) -> dict[str, Decision]:
    """The decisions, by call id, of the AI SDK's answers in message ``message_id``."""
    need_waiting(place)
    if message_id is not None and message_id != place.message_id:
        raise RequestError(
            f"the answers are in message {message_id!r}, but the calls that wait are in "
            f"message {place.message_id!r}; reload the session",
            409,
        )
    by_approval = {waiting.approval_id: waiting for waiting in place.waiting}
    decisions: dict[str, Decision] = {}
    for response in responses:
        waiting = by_approval.get(response.approval_id)
        if waiting is None or waiting.tool_call_id != response.tool_call_id:
            raise RequestError(
                f"approval {response.approval_id!r} of tool call {response.tool_call_id!r} "
                "answers no call that waits in this session (decided already, or never "
                "asked); reload the session",
                409,
            )
        decisions[waiting.call.id] = Decision(response.approved, response.reason)
    missing = [w.approval_id for w in place.waiting if w.call.id not in decisions]
    if missing:
        raise RequestError(f"no answer for the waiting approvals {', '.join(missing)}", 422)
    return decisions


def decisions_from_json(place: Continuation, data: Any) -> dict[str, Decision]:
    """The decisions, by call id, of ``{"decisions": {"<approval id or call id>":
    {"approved": bool, "reason": str}}}``. A key that is neither stays as it is
    (the decision then names no waiting call: ``approve_stream`` refuses it, 422)."""
    need_waiting(place)
    raw = data.get("decisions") if isinstance(data, dict) else None
    if not isinstance(raw, dict) or not all(isinstance(v, dict) for v in raw.values()):
        raise RequestError('send {"decisions": {"<approval id>": {"approved": true}}}', 422)
    call_ids = {w.approval_id: w.call.id for w in place.waiting}
    return {
        call_ids.get(str(key), str(key)): Decision(bool(d.get("approved")), _reason(d))
        for key, d in raw.items()
    }


def answered(
    place: Continuation, decisions: Mapping[str, Decision]
) -> list[tuple[str, str, Decision]]:
    """``(approval id, toolCallId, decision)`` of each waiting call, in order (what
    the stream's ``tool-approval-response`` chunks say)."""
    return [(w.approval_id, w.tool_call_id, decisions[w.call.id]) for w in place.waiting]


def _reason(decision: dict[str, Any]) -> str | None:
    reason = decision.get("reason")
    return reason[:MAX_REASON_CHARS] if isinstance(reason, str) else None
