"""Tool calls that wait for a person's approval: the public path of the approval API.

``from zett_agent.approvals import approve, deny, requires_approval``: policies,
requests, decisions, the conflict a losing decider gets, and the hand-off of a
durable run's decided calls. A re-export with no code of its own: the code lives in
the tool package (``tools/_approvals.py``), beside the gate that applies it.
"""

from __future__ import annotations

from zett_agent._records import SessionEntry, entry_from_dict, entry_to_dict
from zett_agent.tools._approvals import (
    APPROVAL_ROLES,
    DENIED,
    ApprovalConflictError,
    ApprovalDecision,
    ApprovalHandoff,
    ApprovalPolicy,
    ApprovalRequest,
    Decision,
    PendingApprovalError,
    approve,
    decided_results,
    decision_key,
    deny,
    describe_call,
    needs_approval,
    pending_request,
    requires_approval,
)

__all__ = [
    "APPROVAL_ROLES",
    "DENIED",
    "ApprovalConflictError",
    "ApprovalDecision",
    "ApprovalHandoff",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Decision",
    "PendingApprovalError",
    "SessionEntry",
    "approve",
    "decided_results",
    "decision_key",
    "deny",
    "describe_call",
    "entry_from_dict",
    "entry_to_dict",
    "needs_approval",
    "pending_request",
    "requires_approval",
]
