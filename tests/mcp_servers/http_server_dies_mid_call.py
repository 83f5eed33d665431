"""A streamable-HTTP MCP server on 127.0.0.1:<port>: `greet` makes the server
process exit in the middle of the call; `ping` answers normally."""

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("crashy")


@server.tool()
def greet(name: str = "World") -> str:
    """Greet someone (the server dies before answering)."""
    os._exit(0)


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
