"""A small MCP server (stdio) that records every tool call it receives.

Each ``tools/call`` that reaches a tool appends one JSON line ``{"tool": name,
"arguments": {...}}`` to the file named by ``ZETT_MCP_CALLS``; a call cancelled by
the client appends ``{"cancelled": name}``. Tests count those lines to prove
which calls reached the server. Run: ``python counting_server.py``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import mcp_types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("counting")


def record(entry: dict[str, Any]) -> None:
    path = os.environ.get("ZETT_MCP_CALLS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two whole numbers."""
    record({"tool": "add", "arguments": {"a": a, "b": b}})
    return str(a + b)


@server.tool()
def fail(message: str) -> str:
    """Always fails with the message."""
    record({"tool": "fail", "arguments": {"message": message}})
    raise ValueError(message)


@server.tool()
def crash() -> str:
    """The server process exits in the middle of the call."""
    record({"tool": "crash", "arguments": {}})
    os._exit(3)


@server.tool()
async def hang(seconds: float = 3600.0) -> str:
    """Sleeps (records a cancellation when the client cancels it)."""
    record({"tool": "hang", "arguments": {"seconds": seconds}})
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        record({"cancelled": "hang"})
        raise
    return "woke up"


@server.tool()
def picture() -> list[mcp_types.ContentBlock]:
    """An image, a text resource, a resource link and a line of text."""
    record({"tool": "picture", "arguments": {}})
    return [
        mcp_types.TextContent(text="a red dot"),
        mcp_types.ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
        mcp_types.EmbeddedResource(
            resource=mcp_types.TextResourceContents(
                uri="file:///notes.txt", mime_type="text/plain", text="note text"
            )
        ),
        mcp_types.ResourceLink(uri="file:///big.bin", name="big", description="a big file"),
    ]


@server.tool()
def weather(city: str) -> dict[str, Any]:
    """Structured weather for a city."""
    record({"tool": "weather", "arguments": {"city": city}})
    return {"city": city, "temperature": 21}


@server.tool()
def shout(text: str) -> str:
    """The text in capitals, repeated to be long."""
    record({"tool": "shout", "arguments": {"text": text}})
    return text.upper() * 1000


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool ``late`` and tells the client the tool list changed."""
    record({"tool": "grow", "arguments": {}})

    def late() -> str:
        """A tool added while the server runs."""
        record({"tool": "late", "arguments": {}})
        return "late tool ran"

    server.add_tool(late)
    if (ctx.protocol_version or "") >= "2026-07-28":
        await ctx.notify_tools_changed()  # to subscriptions/listen streams
    else:
        await ctx.session.send_tool_list_changed()
    return "added the tool late"


@server.tool()
async def drop(name: str, ctx: Context) -> str:
    """Removes the tool ``name`` and tells the client the tool list changed."""
    record({"tool": "drop", "arguments": {"name": name}})
    server.remove_tool(name)
    if (ctx.protocol_version or "") >= "2026-07-28":
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()
    return f"removed the tool {name}"


if __name__ == "__main__":
    server.run("stdio")
