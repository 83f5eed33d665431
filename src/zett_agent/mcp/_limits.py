"""How much one MCP server can make zett hold: :class:`MCPLimits`, and the sans-IO
checks every transport applies before a message is trusted.

Like the model client's :class:`~zett_agent.model.ReadLimits`, each size is
checked before the text is parsed into the SDK's models (100,000 content blocks
in one 3 MB result cost 94 times the message once parsed):

=====================  ==============================================================
``max_message_bytes``  one JSON-RPC message (a stdio line; an HTTP JSON body or SSE
                       event); stdio reads it in one linear pass, never more than the
                       limit held
``max_content_blocks`` the items of a result's ``content`` / ``contents`` /
                       ``messages``, and of a sampling request's ``messages``
                       (counted before the SDK's models are made)
``max_resource_bytes`` a resource read: its announced ``size`` first (nothing is
                       read when it is over), then the bytes it holds
``max_sampling_chars`` the text of one sampling request (system prompt and messages)
=====================  ==============================================================

What an over-limit message gets: an answer to zett's own request (a tool call, a
read) becomes a JSON-RPC error of that request naming the limit, so the call gets
an error result (the model reads why) and the session goes on; a request of the
server (sampling) is answered with that error; a notification is dropped (logged on
``zett_agent.mcp``). The server stays usable: the next message is read as usual.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_MCP_LIMITS", "MCPLimits", "block_problem", "limit_text", "message_ids"]

MiB = 1024 * 1024

_LISTS = ("content", "contents", "messages")


@dataclass(frozen=True)
class MCPLimits:
    """The most one server's messages may hold (see the module docstring).

    Attributes:
        max_message_bytes: one JSON-RPC message, in bytes (default 4 MiB).
        max_content_blocks: items in one result's content list (default 1,000).
        max_resource_bytes: one resource read, in bytes of its content (decoded
            base64 for a blob; default 2 MiB).
        max_sampling_chars: characters in one sampling request's text (default
            200,000).
    """

    max_message_bytes: int = 4 * MiB
    max_content_blocks: int = 1_000
    max_resource_bytes: int = 2 * MiB
    max_sampling_chars: int = 200_000

    def __post_init__(self) -> None:
        for name in (
            "max_message_bytes",
            "max_content_blocks",
            "max_resource_bytes",
            "max_sampling_chars",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"MCPLimits.{name} must be at least 1")


DEFAULT_MCP_LIMITS = MCPLimits()


def limit_text(what: str, size: int, limit: int, name: str, unit: str = "bytes") -> str:
    """``"<what> has 9437246 bytes, over the limit of 4194304 (MCPLimits.max_message_bytes)"``."""
    return f"{what} has {size} {unit}, over the limit of {limit} (MCPLimits.{name})"


def block_problem(message: Any, limits: MCPLimits) -> str | None:
    """Why a parsed JSON-RPC message (plain JSON values) holds too many content
    blocks, or None. Looks only where MCP puts lists of blocks: a result's
    ``content``/``contents``/``messages``, a request's ``params.messages`` and each
    message's ``content`` list."""
    if not isinstance(message, dict):
        return None
    limit = limits.max_content_blocks
    for key in ("result", "params"):
        body = message.get(key)
        if not isinstance(body, dict):
            continue
        for name in _LISTS:
            items = body.get(name)
            if not isinstance(items, list):
                continue
            count = len(items)
            if name == "messages":
                count += sum(
                    len(item["content"])
                    for item in items
                    if isinstance(item, dict) and isinstance(item.get("content"), list)
                )
            if count > limit:
                return limit_text(
                    f"the {key} ({name})", count, limit, "max_content_blocks", "content blocks"
                )
    return None


def needs_block_check(size: int, limits: MCPLimits) -> bool:
    """Whether a message of ``size`` bytes could hold more blocks than the limit
    (each block takes at least 3 bytes: ``{}`` and a comma)."""
    return size > 3 * limits.max_content_blocks


_ID = rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")'
_HEAD_ID = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?' + _ID)
_TAIL_ID = re.compile(_ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')
_HEAD_METHOD = re.compile(rb'^\s*\{\s*(?:"(?:jsonrpc|id)"\s*:\s*[^,]{1,210},\s*){0,2}"method"')


def message_ids(head: bytes, tail: bytes) -> tuple[list[str | int], bool]:
    """The JSON-RPC ids a message that was not read may have (from its first and
    last bytes: SDKs put ``id`` first or last), and whether it looks like a request
    or notification (``method`` near its start) rather than an answer."""
    ids: list[str | int] = []
    for pattern, part in ((_HEAD_ID, head), (_TAIL_ID, tail)):
        match = pattern.search(part)
        if match is None:
            continue
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(value, str | int) and value not in ids:
            ids.append(value)
    return ids, _HEAD_METHOD.search(head) is not None
