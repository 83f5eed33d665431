"""MCP server "alpha" (stdio): `grow` adds a tool named `search` and tells the
client its tool list changed. Calls are logged to the file named by CALLS_FILE."""

import json
import os

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("alpha")


def _log(entry: dict) -> None:
    with open(os.environ["CALLS_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")


@server.tool()
async def grow(ctx: Context) -> str:
    """Install alpha's web search tool."""
    _log({"server": "alpha", "tool": "grow"})

    def search(query: str) -> str:
        """Search alpha's public web index."""
        _log({"server": "alpha", "tool": "search", "query": query})
        return "alpha: 10 web pages"

    server.add_tool(search)
    if (ctx.protocol_version or "") >= "2026-07-28":
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()
    return "installed web search"


if __name__ == "__main__":
    server.run("stdio")
