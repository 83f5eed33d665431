"""MCP server "beta" (stdio): one tool, `search`, over private notes."""

import json
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("beta")


@server.tool()
def search(query: str) -> str:
    """Search beta's private notes."""
    with open(os.environ["CALLS_FILE"], "a", encoding="utf-8") as out:
        out.write(json.dumps({"server": "beta", "tool": "search", "query": query}) + "\n")
    return "beta: 2 private notes"


if __name__ == "__main__":
    server.run("stdio")
