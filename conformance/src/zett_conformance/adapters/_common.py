"""What the peer adapters share: reading a call's arguments as a host would, and
the raw values an error carries."""

from __future__ import annotations

import json
from typing import Any

from .._tools import ToolBox


def run_call(tools: ToolBox, name: str | None, arguments: Any) -> bool:
    """Run one call the way a host's loop does: arguments parsed as JSON (a text
    that does not parse is not run, as a host's ``json.loads`` would fail); a name
    the case does not offer is not run. Returns whether it ran."""
    if not name or name not in tools.names:
        return False
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)  # "" does not parse either
        except ValueError:
            return False
    if not isinstance(arguments, dict):
        return False
    tools.call(name, arguments)
    return True


_INCOMPLETE = {"max_output_tokens": "max_output", "content_filter": "refusal"}


def responses_stop(
    status: str | None, reason: str | None, *, calls: bool, unknown: str | None
) -> str | None:
    """The stop an OpenAI Responses ``status`` (and ``incomplete_details.reason``)
    says, read as a host reads it: ``completed`` is tool_use with calls, else
    end_turn; ``incomplete`` by its reason (other when it is none of the table's);
    ``failed`` interrupted; any other status ``unknown``."""
    if status == "completed":
        return "tool_use" if calls else "end_turn"
    if status == "incomplete":
        return _INCOMPLETE.get(reason or "", "other")
    if status == "failed":
        return "interrupted"
    return unknown


def error_raw(exc: BaseException) -> list[str]:
    """The provider's codes a host can read on an SDK error: ``code``, ``type``,
    and the ``error.type`` / ``error.code`` / ``error.status`` of its body."""
    values: list[Any] = [getattr(exc, "code", None), getattr(exc, "type", None)]
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            values += [inner.get("type"), inner.get("code"), inner.get("status")]
            meta = inner.get("metadata")
            if isinstance(meta, dict):
                values.append(meta.get("error_type"))
    return [str(v) for v in values if v is not None and not isinstance(v, (dict, list))]


def short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"
