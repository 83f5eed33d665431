"""What one stored session row holds, and its JSON form.

A row holds a :class:`~zett_agent.Message` (sent to models), or a
record about the run that is never sent:

=====================  ==================================  ==============
``role``               record                              since schema
=====================  ==================================  ==============
``approval_request``   :class:`~zett_agent.tools._approvals.ApprovalRequest`    2
``approval_decision``  :class:`~zett_agent.tools._approvals.ApprovalDecision`   2
``tool_started``       :class:`~zett_agent.tools.ToolStarted`         3
``run_settings``       :class:`RunSettings`                                    3
=====================  ==================================  ==============

An ``approval_request`` row of schema 3 may also hold ``durable_agent`` (the
durable agent whose workers continue it once decided).

:func:`entry_to_dict` / :func:`entry_from_dict` are the codec every store uses
(:mod:`zett_agent.sessions._base` adds the schema version check).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from zett_agent._messages import Message, ToolCall, message_from_dict, message_to_dict
from zett_agent._parts import BlobReader
from zett_agent._urls import redact_url
from zett_agent.tools._approvals import ApprovalDecision, ApprovalRequest, Decision
from zett_agent.tools._outcomes import ToolStarted

__all__ = [
    "RECORD_ROLES",
    "RECORD_TYPES",
    "RunSettings",
    "SessionEntry",
    "entry_from_dict",
    "entry_to_dict",
    "is_record",
    "record_schema",
]


@dataclass(frozen=True)
class RunSettings:
    """How the runs of a session were asked for, so a later run (``zett sessions
    resume``, the exit-9 notice's command) continues it as it was without the
    options being repeated: the ``model`` string (``provider:name``, or a
    fallback chain joined by commas), the offered ``tools`` by name, the ``mcp``
    servers (command lines or URLs as given, a URL without its ``user:password``),
    and ``require_approval`` (tool names, or ``all``). Never an MCP server's
    environment or headers, never a key. Written when a run's settings differ
    from the session's last ones."""

    model: str
    tools: tuple[str, ...] = ()
    mcp: tuple[str, ...] = ()
    require_approval: tuple[str, ...] = ()


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise TypeError(f"expected a list of strings, got {type(value).__name__}")
    return tuple(str(item) for item in value)


SessionEntry: TypeAlias = Message | ApprovalRequest | ApprovalDecision | ToolStarted | RunSettings
"""What one stored row holds: a message, or a record about the run."""

RECORD_TYPES = (ApprovalRequest, ApprovalDecision, ToolStarted, RunSettings)
"""The classes of records (rows that are not messages)."""

_SINCE = {
    "approval_request": 2,
    "approval_decision": 2,
    "tool_started": 3,
    "run_settings": 3,
}
RECORD_ROLES = frozenset(_SINCE)
"""The ``role`` values of records."""


def is_record(entry: object) -> bool:
    """Whether ``entry`` is a record (not a message sent to models)."""
    return isinstance(entry, RECORD_TYPES)


def record_schema(role: object) -> int | None:
    """The schema version that introduced the record ``role``; None for a message."""
    return _SINCE.get(role) if isinstance(role, str) else None


def entry_to_dict(
    entry: SessionEntry, blobs: dict[str, bytes | None] | None = None
) -> dict[str, Any]:
    """The JSON-compatible stored form of a message or a record (``blobs``: where a
    store keeps the bytes of large parts, see :func:`~zett_agent._messages.message_to_dict`)."""
    if isinstance(entry, ApprovalRequest):
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in entry.calls]
        row: dict[str, Any] = {"role": "approval_request", "calls": calls, "run_id": entry.run_id}
        if entry.durable_agent:
            row["durable_agent"] = entry.durable_agent  # schema 3
        return row
    if isinstance(entry, ApprovalDecision):
        decided = {
            call_id: {"approved": d.approved, "reason": d.reason}
            for call_id, d in entry.decisions.items()
        }
        return {"role": "approval_decision", "decisions": decided}
    if isinstance(entry, ToolStarted):
        return {
            "role": "tool_started",
            "call_id": entry.call_id,
            "name": entry.name,
            "run_id": entry.run_id,
        }
    if isinstance(entry, RunSettings):
        return {
            "role": "run_settings",
            "model": entry.model,
            "tools": list(entry.tools),
            "mcp": [redact_url(spec) for spec in entry.mcp],  # never a credential
            "require_approval": list(entry.require_approval),
        }
    return message_to_dict(entry, blobs)


def entry_from_dict(data: Mapping[str, Any], reader: BlobReader | None = None) -> SessionEntry:
    """Inverse of :func:`entry_to_dict`; raises ``ValueError`` for anything else.
    ``reader`` reads the bytes of parts kept outside the row."""
    role = data.get("role")
    try:
        if role == "approval_request":
            calls = tuple(
                ToolCall(str(c["id"]), str(c["name"]), str(c.get("arguments", "{}")))
                for c in data["calls"]
            )
            return ApprovalRequest(
                calls, str(data.get("run_id", "")), str(data.get("durable_agent", ""))
            )
        if role == "approval_decision":
            decisions = {
                str(k): Decision(bool(v["approved"]), _text(v.get("reason")))
                for k, v in data["decisions"].items()
            }
            return ApprovalDecision(decisions)
        if role == "tool_started":
            return ToolStarted(str(data["call_id"]), str(data["name"]), str(data.get("run_id", "")))
        if role == "run_settings":
            return RunSettings(
                str(data["model"]),
                _strings(data.get("tools", ())),
                _strings(data.get("mcp", ())),
                _strings(data.get("require_approval", ())),
            )
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"stored {role} row is invalid: {error!r}") from error
    return message_from_dict(data, reader)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
