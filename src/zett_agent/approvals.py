"""Tool calls that wait for a person's approval: :mod:`zett_agent.tools._approvals`.

This module keeps the import path of earlier releases (``from zett_agent.approvals
import approve, deny, requires_approval``); the code lives in the tool package.
"""

from __future__ import annotations

from zett_agent._records import SessionEntry, entry_from_dict, entry_to_dict
from zett_agent.tools._approvals import (
    APPROVAL_ROLES,
    DENIED,
    ApprovalConflictError,
    ApprovalDecision,
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
