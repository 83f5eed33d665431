"""A2A 1.0 shapes zett writes and reads, sans-IO: task states per stop, and back.

A2A 1.0 (``a2a-sdk`` 1.3.0, ``a2a.types.a2a_pb2``; its JSON-RPC binding writes the
protobuf JSON mapping: camelCase keys, enum values by name) gives a task one of
``TASK_STATE_SUBMITTED, WORKING, COMPLETED, FAILED, CANCELED, INPUT_REQUIRED,
REJECTED, AUTH_REQUIRED``. zett's stop is carried beside the state, always, in the
status message's ``metadata.zett.stop`` (``StopInfo.to_dict(describe=True)``,
``null`` after a normal end) and the task's ``metadata.zett.stop``.

**The server's table** (:func:`task_state`, :data:`SERVER_STATES`): a refusal is
``rejected``; an answer cut at a limit (MAX_OUTPUT, CONTEXT_FULL), an interrupted
one, a pause left over and a run limit (max_turns, a budget) are ``failed``: the
task did not produce the whole answer, and a client that reads ``completed`` as a
result would present a part as the answer; the text so far is still the task's
artifact (``metadata.zett.partial: true``). An OTHER stop that is not a run limit
(a provider value zett does not know; zett carries on after those) is
``completed`` with the stop. A cancelled run is ``canceled``; calls waiting for
approval are ``input-required``; an error with no answer is ``failed`` with the
failure's one sentence and no stop.

**The client's table** (:func:`stop_for_state`): ``completed`` is a normal end
(unless the server sent a zett stop); ``rejected`` is REFUSAL; ``failed`` is
INTERRUPTED with the remote's message; ``canceled`` is INTERRUPTED with
``detail["canceled"]``; ``input-required`` and ``auth-required`` wait for the
host. A zett server's own stop, when it sent one, is kept in ``detail["remote_stop"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zett_agent.stop import StopInfo, StopReason

__all__ = [
    "CLIENT_STOPS",
    "PROTOCOL_VERSION",
    "SERVER_STATES",
    "TERMINAL",
    "agent_message",
    "message_text",
    "stop_for_state",
    "task_state",
]

PROTOCOL_VERSION = "1.0"

COMPLETED = "TASK_STATE_COMPLETED"
FAILED = "TASK_STATE_FAILED"
CANCELED = "TASK_STATE_CANCELED"
REJECTED = "TASK_STATE_REJECTED"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
WORKING = "TASK_STATE_WORKING"
SUBMITTED = "TASK_STATE_SUBMITTED"
AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"

TERMINAL = frozenset({COMPLETED, FAILED, CANCELED, REJECTED})
"""States a task never leaves."""

SERVER_STATES: Mapping[str, str] = {
    "normal": COMPLETED,
    StopReason.REFUSAL.value: REJECTED,
    StopReason.MAX_OUTPUT.value: FAILED,
    StopReason.CONTEXT_FULL.value: FAILED,
    StopReason.INTERRUPTED.value: FAILED,
    StopReason.PAUSED.value: FAILED,
    "run limit (max_turns, budget)": FAILED,
    StopReason.OTHER.value: COMPLETED,
    "cancelled": CANCELED,
    "waiting": INPUT_REQUIRED,
    "error": FAILED,
}
"""The task state zett's server gives each way a run ends (the module docstring)."""

CLIENT_STOPS: Mapping[str, str] = {
    COMPLETED: "normal (or the zett stop the server sent)",
    REJECTED: StopReason.REFUSAL.value,
    FAILED: StopReason.INTERRUPTED.value + " (the remote's message)",
    CANCELED: StopReason.INTERRUPTED.value + ' (detail["canceled"])',
    INPUT_REQUIRED: "a waiting call the host decides",
    AUTH_REQUIRED: "a waiting call the host decides",
}


def _run_limit(stop: StopInfo) -> bool:
    """A stop zett wrote itself for a run limit (max_turns, a budget: a marker)."""
    return bool(stop.detail.get("marker")) or stop.raw == "max_turns"


def task_state(stop: StopInfo | None, *, waiting: bool = False) -> str:
    """The state of a task whose run ended with final stop ``stop``."""
    if waiting:
        return INPUT_REQUIRED
    if stop is None or stop.ok:
        return COMPLETED
    reason = stop.reason
    if reason is StopReason.REFUSAL:
        return REJECTED
    if reason is StopReason.INTERRUPTED and stop.detail.get("cancelled"):
        return CANCELED
    if reason is StopReason.OTHER and not _run_limit(stop):
        return COMPLETED
    return FAILED


def agent_message(
    text: str,
    *,
    context_id: str,
    task_id: str,
    message_id: str,
    stop: StopInfo | None = None,
    data: Any = None,
) -> dict[str, Any]:
    """An agent ``Message`` (protobuf JSON) with zett's stop in its metadata."""
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    if data is not None:
        parts.append({"data": data, "mediaType": "application/json"})
    return {
        "messageId": message_id,
        "contextId": context_id,
        "taskId": task_id,
        "role": "ROLE_AGENT",
        "parts": parts,
        "metadata": {"zett": {"stop": stop.to_dict(describe=True) if stop else None}},
    }


def message_text(message: Mapping[str, Any] | None) -> str:
    """The text parts of a ``Message`` or ``Artifact`` (protobuf JSON), joined."""
    if not message:
        return ""
    parts = message.get("parts") or []
    return "".join(p["text"] for p in parts if isinstance(p, dict) and "text" in p)


def stop_for_state(state: str, message: str, remote_stop: Any = None) -> StopInfo | None:
    """The subagent stop for a remote task that ended in ``state`` (the client's
    table); None for a normal end. ``remote_stop``: the ``metadata.zett.stop`` a
    zett server sent (kept in ``detail``)."""
    detail: dict[str, Any] = {"a2a_state": state}
    if isinstance(remote_stop, dict):
        detail["remote_stop"] = remote_stop
    said = message or None
    if state == COMPLETED:
        if isinstance(remote_stop, dict):
            return StopInfo.from_dict(remote_stop).with_detail(**detail)
        return None
    if state == REJECTED:
        category = remote_stop.get("category") if isinstance(remote_stop, dict) else None
        return StopInfo(StopReason.REFUSAL, raw="rejected", category=category, message=said,
                        detail=detail)  # fmt: skip
    if state == CANCELED:
        detail["canceled"] = "the remote agent canceled the task"
        return StopInfo(StopReason.INTERRUPTED, raw="canceled", message=said, detail=detail)
    if state in (INPUT_REQUIRED, AUTH_REQUIRED):
        detail["waiting"] = True
        return StopInfo(StopReason.PAUSED, raw=state, message=said, detail=detail)
    return StopInfo(StopReason.INTERRUPTED, raw="failed", message=said, detail=detail)
