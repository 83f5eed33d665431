"""The one conversion point from an MCP tool to a native :class:`~zett_agent.tools.Tool`,
and from an MCP ``CallToolResult`` to a :class:`~zett_agent.ToolResultMessage`.

How a result becomes the text the model reads (MCP specification, "Tools" →
"Tool Result"), one line or block per content item, in the server's order:

======================  =====================================================
``text``                the text
``image``, ``audio``    ``[image image/png, 1234 bytes]``, and the bytes as a
                        part (:func:`result_parts`), sent where the provider
                        takes them in tool results (docs/images.md);
                        elsewhere the description is all it reads
``resource`` (text)     ``[resource file:///a.txt text/plain]`` then its text
``resource`` (blob)     ``[resource file:///a.bin application/gzip, 99 bytes]``
``resource_link``       ``[resource link file:///a.txt: name — description]``
``structuredContent``   compact JSON, only when no item above gave text (the
                        specification asks servers to repeat it as text)
======================  =====================================================

The whole text is cut at the tool's ``max_result_chars`` with a note saying so. A
result of more than ``max_content_blocks`` items (``MCPLimits``) is an error result
naming the limit (a stdio transport refuses it before it is parsed).
``isError: true`` makes an error result (``is_error=True``) with the same text.
A call that fails in any other way (the server crashed, hung past the timeout,
exited, was unreachable, needs authorization, or answered with a JSON-RPC error)
is answered with an error result saying what happened; the run goes on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import mcp_types
from pydantic import BaseModel, ConfigDict

from zett_agent._exchange import ToolSpec
from zett_agent._messages import ToolCall, ToolResultMessage, storable_json
from zett_agent._parts import DEFAULT_MAX_PART_BYTES, AudioPart, ImagePart, MediaPart
from zett_agent.tools import Tool

from ._connection import RequestFailedError
from ._schema import sanitize_schema

__all__ = ["MCPTool", "result_parts", "result_text"]

CallFunction = Callable[[str, dict[str, Any], ToolCall], Awaitable[mcp_types.CallToolResult]]
"""Calls the server's tool by its own name with the arguments, for zett's call; raises
:class:`~zett_agent.mcp._connection.RequestFailedError` (its message is the result text)
or the SDK's ``MCPError`` when the call fails."""


class _AnyArguments(BaseModel):
    """Arguments of a tool defined by a raw schema: checked against that schema instead."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class MCPTool(Tool):
    """A tool of an MCP server, offered to the model under ``name``.

    ``server_name`` is the tool's name on the server, ``server`` the server's
    label (for messages), ``input_schema`` the server's own schema (arguments are
    checked against it before the server is called), ``protocol`` the wire
    protocol whose rules the sent schema follows (None: all of them),
    ``call_timeout`` the most seconds one call may take, not counting the time a
    person is asked something for it (an elicitation); the connection applies it
    (then the call gets an error result and the server is told it is cancelled),
    so :attr:`Tool.timeout`, the gate's clock (rule 7), is ``math.inf`` for an MCP
    tool. ``max_result_chars`` is the longest result text. ``requires_approval``
    (from the server's ``approval``): each call waits for a person's decision
    (:mod:`zett_agent.approvals`).
    """

    reports_events: ClassVar[bool] = True  # progress, logs, elicitation: TOOL_* events

    server_name: str = ""
    server: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    protocol: str | None = None
    timeout: float | None = math.inf
    call_timeout: float = 60.0
    max_result_chars: int = 100_000
    max_content_blocks: int = 1_000
    send: CallFunction | None = None
    redact: Callable[[str], str] = str
    """Takes the server's credentials out of a result text (tokens it may echo)."""

    @cached_property
    def spec(self) -> ToolSpec:
        """The name, description and sanitized schema sent to the provider."""
        return ToolSpec(
            self.name, self.description, sanitize_schema(self.input_schema, self.protocol)
        )

    async def call(self, call: ToolCall) -> ToolResultMessage:
        """Check the arguments, call the server (bounded by ``timeout``), map the result.

        Never raises for a failed call: invalid arguments, a timeout, a crashed,
        exited or unreachable server, one that needs authorization, a JSON-RPC
        error and ``isError`` are error results. Cancellation propagates (the MCP
        client tells the server the call is cancelled)."""
        try:
            arguments = call.parsed_arguments()
        except (ValueError, RecursionError):
            return _error(call, f"arguments are not a JSON object: {call.arguments[:200]!r}")
        problem = _schema_problem(self.input_schema, arguments)
        if problem is not None:
            return _error(call, f"invalid arguments: {problem}")
        assert self.send is not None, "an MCPTool is made with a send function"
        try:  # bounded by call_timeout (the connection's clock)
            result = await self.send(self.server_name, arguments, call)
        except RequestFailedError as error:  # crashed, exited, unreachable, timed out, unauthorized
            return _error(call, str(error))
        except Exception as error:  # a JSON-RPC error, an unreadable result: the model is told
            return _error(
                call,
                self.redact(
                    f"MCP server {self.server}: tool {self.server_name!r} failed: "
                    f"{type(error).__name__}: {error}"
                ),
            )
        if len(result.content) > self.max_content_blocks:
            from ._limits import limit_text

            count, limit = len(result.content), self.max_content_blocks
            why = limit_text("the result", count, limit, "max_content_blocks", "content blocks")
            return _error(call, f"MCP server {self.server}: tool {self.server_name!r}: {why}")
        text = self.redact(result_text(result, self.max_result_chars))
        parts = result_parts(result)
        return ToolResultMessage(
            call.id, call.name, text, is_error=bool(result.is_error), parts=parts
        )


def make_tool(
    tool: mcp_types.Tool,
    name: str,
    *,
    server: str,
    send: CallFunction,
    protocol: str | None,
    timeout: float,
    max_result_chars: int,
    max_content_blocks: int = 1_000,
    requires_approval: bool = False,
    redact: Callable[[str], str] = str,
) -> MCPTool:
    """The native tool for the server's ``tool``, offered as ``name``."""
    description = tool.description or tool.title or tool.name
    return MCPTool(
        name=name,
        description=description,
        function=_not_called,
        arguments=_AnyArguments,
        requires_approval=requires_approval,
        server_name=tool.name,
        server=server,
        input_schema=dict(tool.input_schema),
        protocol=protocol,
        call_timeout=timeout,
        max_result_chars=max_result_chars,
        max_content_blocks=max_content_blocks,
        send=send,
        redact=redact,
    )


def result_text(result: mcp_types.CallToolResult, max_chars: int) -> str:
    """The text the model reads for ``result`` (see the module docstring), at most
    ``max_chars`` characters plus a note when cut."""
    parts: list[str] = []
    has_text = False
    for item in result.content:
        line, is_text = _item_text(item)
        has_text = has_text or is_text
        parts.append(line)
    if result.structured_content is not None and not has_text:
        structured = storable_json(result.structured_content)  # bounded: any depth
        parts.append(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    text = "\n".join(parts)
    if not text:
        text = "(the tool reported an error with no details)" if result.is_error else "(no output)"
    if len(text) > max_chars:
        text = f"{text[:max_chars]}\n[result cut: {len(text)} characters, the limit is {max_chars}]"
    return text


def result_parts(
    result: mcp_types.CallToolResult, max_bytes: int = DEFAULT_MAX_PART_BYTES
) -> tuple[MediaPart, ...]:
    """The image and audio items of ``result`` as parts (the text describes them
    too). An item over ``max_bytes`` (judged from its base64 length, before
    decoding), with invalid base64 or a media type of another kind is left to its
    description."""
    parts: list[MediaPart] = []
    for item in result.content:
        match item:
            case mcp_types.ImageContent(mime_type=mime, data=data):
                cls: type[MediaPart] = ImagePart
            case mcp_types.AudioContent(mime_type=mime, data=data):
                cls = AudioPart
            case _:
                continue
        try:
            parts.append(cls.from_data_url(f"data:{mime};base64,{data}", max_bytes=max_bytes))
        except ValueError:  # too large (PartTooLargeError), not base64, another kind
            continue
    return tuple(parts)


def _item_text(item: Any) -> tuple[str, bool]:
    match item:
        case mcp_types.TextContent(text=text):
            return text, True
        case mcp_types.ImageContent(mime_type=mime, data=data):
            return f"[image {mime}, {_size(data)} bytes]", False
        case mcp_types.AudioContent(mime_type=mime, data=data):
            return f"[audio {mime}, {_size(data)} bytes]", False
        case mcp_types.EmbeddedResource(resource=mcp_types.TextResourceContents() as res):
            return f"[resource {res.uri} {res.mime_type or 'text'}]\n{res.text}", True
        case mcp_types.EmbeddedResource(resource=mcp_types.BlobResourceContents() as res):
            mime = res.mime_type or "application/octet-stream"
            return f"[resource {res.uri} {mime}, {_size(res.blob)} bytes]", False
        case mcp_types.ResourceLink():
            about = " — ".join(x for x in (item.name, item.description) if x)
            return f"[resource link {item.uri}: {about}]", False
    kind = getattr(item, "type", type(item).__name__)
    return f"[{kind} content]", False


def _size(base64_text: str) -> int:
    """Bytes encoded by a base64 text (without decoding it)."""
    stripped = base64_text.rstrip("=")
    return len(stripped) * 3 // 4


def _schema_problem(schema: Mapping[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` do not match ``schema`` (None: they do, or the schema
    itself cannot be read, in which case the server decides)."""
    import jsonschema  # type: ignore[import-untyped]  # a requirement of the mcp package

    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
        error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(arguments))
    except (jsonschema.exceptions.SchemaError, RecursionError, TypeError, ValueError):
        return None
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path) or "arguments"
    return f"{where}: {error.message[:300]}"


async def _not_called(**_: Any) -> None:
    """The ``function`` of an MCPTool (async: the call is not run in a thread)."""
    raise AssertionError("an MCP tool is run through MCPTool.call")


def _error(call: ToolCall, text: str) -> ToolResultMessage:
    return ToolResultMessage(call.id, call.name, text, is_error=True)
