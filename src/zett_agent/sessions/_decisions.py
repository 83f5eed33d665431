"""A decision about calls waiting for approval, taken once in a session store.

:func:`take_decision` is the one path every decider goes through
(:meth:`AgentClient.approve <zett_agent.AgentClient.approve>`, ``zett
serve``'s approve route, :class:`zett_agent.durable.DurableRuns`): it finds
the session's waiting request, checks the decisions against it, and stores them
with the compare-and-set :meth:`SessionStore.append_if_absent
<zett_agent.sessions.SessionStore.append_if_absent>` under the request's
:func:`~zett_agent.tools._approvals.decision_key`. Of any number of deciders of
one request exactly one stores its decision; every other one gets
:class:`~zett_agent.ApprovalConflictError`, also when it decided
the same way, and also when it came after the decision was stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from zett_agent.errors import ResumeError
from zett_agent.sessions._base import SessionStore, StoredRow
from zett_agent.tools._approvals import (
    ApprovalConflictError,
    ApprovalDecision,
    ApprovalRequest,
    Decision,
    decided_results,
    decision_key,
)

__all__ = [
    "Taken",
    "decided_already",
    "decision_row",
    "pending_row",
    "take_decision",
    "waiting_request",
]


@dataclass(frozen=True)
class Taken:
    """A decision this process stored: the request's row and the decision's row."""

    request_row: StoredRow
    decision_seq: int

    @property
    def request(self) -> ApprovalRequest:
        request = self.request_row.message
        assert isinstance(request, ApprovalRequest)
        return request


def pending_row(rows: Sequence[StoredRow]) -> StoredRow | None:
    """The row of the session's last approval request that has no decision after
    it (``rows`` as loaded, in ``seq`` order), or None."""
    for row in reversed(rows):
        if isinstance(row.message, ApprovalDecision):
            return None
        if isinstance(row.message, ApprovalRequest):
            return row
    return None


def decision_row(rows: Sequence[StoredRow], request_seq: int) -> StoredRow | None:
    """The decision stored for the request of row ``request_seq``: the row under
    its decision key, or (a session of schema 2, decisions stored without a key)
    the first decision after it."""
    key = decision_key(request_seq)
    for row in rows:
        if row.key == key and isinstance(row.message, ApprovalDecision):
            return row
    for row in rows:
        if row.seq > request_seq and isinstance(row.message, ApprovalDecision):
            return row
    return None


def decided_already(
    session_id: str, request: ApprovalRequest, decided: ApprovalDecision | None
) -> ApprovalConflictError:
    """The error of a decision that came second."""
    names = ", ".join(call.name for call in request.calls)
    return ApprovalConflictError(
        f"session {session_id!r}: these tool calls ({names}) were decided already "
        "(by another process or request); this decision was not stored and nothing ran",
        session_id=session_id,
        calls=request.calls,
        decided=decided,
    )


def _decided_request(
    session_id: str, rows: Sequence[StoredRow], decisions: Mapping[str, Decision]
) -> ApprovalConflictError | None:
    """The conflict of decisions for calls a stored decision answered already
    (a request of exactly those call ids, decided), else None."""
    wanted = set(decisions)
    for row in rows:
        entry = row.message
        if isinstance(entry, ApprovalRequest) and set(entry.ids) == wanted:
            decided = decision_row(rows, row.seq)
            if decided is not None:
                assert isinstance(decided.message, ApprovalDecision)
                return decided_already(session_id, entry, decided.message)
    return None


def waiting_request(
    session_id: str,
    rows: Sequence[StoredRow],
    decisions: Mapping[str, Decision],
    request_seq: int | None = None,
) -> StoredRow:
    """The row of the request ``decisions`` answer, checked (nothing is stored).
    ``request_seq``: the row of the request the decider was shown; when another
    one waits instead (that one was decided and the run asked again, perhaps with
    the same call ids), the decisions answer nothing that waits.

    Raises :class:`ApprovalConflictError` when those calls (or the request of
    ``request_seq``) were decided already, :class:`~zett_agent.errors.ResumeError`
    when nothing waits, ``ValueError`` when the decisions do not answer exactly
    the waiting calls."""
    row = pending_row(rows)
    if request_seq is not None and (row is None or row.seq != request_seq):
        seen = next((r for r in rows if r.seq == request_seq), None)
        decided = decision_row(rows, request_seq) if seen is not None else None
        if seen is not None and isinstance(seen.message, ApprovalRequest) and decided:
            assert isinstance(decided.message, ApprovalDecision)
            raise decided_already(session_id, seen.message, decided.message)
        raise ResumeError(
            f"session {session_id!r}: the approval request of row {request_seq} does not wait"
        )
    if row is None:
        found = _decided_request(session_id, rows, decisions)
        if found is not None:
            raise found
        raise ResumeError(f"session {session_id!r}: no tool calls are waiting for approval")
    request = row.message
    assert isinstance(request, ApprovalRequest)
    decided_results(request, decisions)
    return row


async def take_decision(
    store: SessionStore, session_id: str, row: StoredRow, decisions: Mapping[str, Decision]
) -> Taken:
    """Store ``decisions`` for the request of ``row`` (from :func:`waiting_request`)
    with the compare-and-set. Raises :class:`ApprovalConflictError` when another
    decider stored first (nothing is stored)."""
    request = row.message
    assert isinstance(request, ApprovalRequest)
    key = decision_key(row.seq)
    seq = await store.append_if_absent(session_id, ApprovalDecision(dict(decisions)), key=key)
    if seq is None:
        stored = decision_row(await store.rows(session_id), row.seq)
        decided = stored.message if stored is not None else None
        raise decided_already(
            session_id, request, decided if isinstance(decided, ApprovalDecision) else None
        )
    return Taken(row, seq)
