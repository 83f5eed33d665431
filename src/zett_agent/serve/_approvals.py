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

from zett_agent.tools._approvals import Decision

from ._history import Continuation
from ._request import MAX_REASON_CHARS, ApprovalResponse, ApproveBody, RequestError

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


def decisions_from_json(place: Continuation, body: ApproveBody) -> dict[str, Decision]:
    """The decisions, by call id, of ``POST /api/sessions/{id}/approve``'s body
    (:class:`~._request.ApproveBody`, parsed strictly: ``approved`` is a JSON
    boolean).

    A key is the approval id of a waiting call (``call_1@3f2a9c0e11b4``: it names
    the run that asked, so it never answers a later request). A bare call id
    decides only beside ``request_seq`` (the row of the request it answers) or for
    a request stored without a run id, whose approval ids are the call ids: a
    replayed body of bare call ids could otherwise decide a later request that
    reuses them (providers that number their calls ``call_0`` each time). Raises
    RequestError: 409 when ``request_seq`` names another request than the one that
    waits; 422 for a bare call id without it; 400 when two keys name one call with
    answers that disagree. A key that names no waiting call stays as it is
    (``approve_stream`` then refuses the set, 422)."""
    need_waiting(place)
    if body.request_seq is not None and body.request_seq != place.request_seq:
        raise RequestError(
            f"request_seq: the decisions answer the request of row {body.request_seq}, "
            f"but the calls that wait were asked in row {place.request_seq}; reload the "
            "session",
            409,
        )
    by_approval = {w.approval_id: w.call.id for w in place.waiting}
    by_call = {w.call.id: w for w in place.waiting}
    decisions: dict[str, Decision] = {}
    for key, given in body.decisions.items():
        call_id = by_approval.get(key)
        if call_id is None and key in by_call and body.request_seq is None:
            raise RequestError(
                f"decisions.{key}: a bare call id decides only beside request_seq (the "
                f"row of the request it answers: approval_request_seq of GET "
                f"/api/sessions/{{id}}); or name the approval id "
                f"{by_call[key].approval_id!r}",
                422,
            )
        call_id = call_id or key
        decision = Decision(given.approved, _reason(given.reason))
        earlier = decisions.setdefault(call_id, decision)
        if earlier.approved != decision.approved:
            raise RequestError(
                f"decisions.{key}: call {call_id!r} is both approved and denied in this "
                "body; nothing was decided"
            )
    return decisions


def answered(
    place: Continuation, decisions: Mapping[str, Decision]
) -> list[tuple[str, str, Decision]]:
    """``(approval id, toolCallId, decision)`` of each waiting call, in order (what
    the stream's ``tool-approval-response`` chunks say)."""
    return [(w.approval_id, w.tool_call_id, decisions[w.call.id]) for w in place.waiting]


def _reason(reason: str | None) -> str | None:
    return reason[:MAX_REASON_CHARS] if reason is not None else None
