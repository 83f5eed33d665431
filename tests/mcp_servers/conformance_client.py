"""zett-agent's MCP client under ``@modelcontextprotocol/conformance client``.

The framework starts a test server and runs ``python conformance_client.py URL``
(scenario in MCP_CONFORMANCE_SCENARIO). This connects with
:class:`zett_agent.mcp.MCPTools`, lists the tools and calls each one through the
tool a model would call (numbers for number arguments, "x" for strings). Not part of
the test suite (the framework needs Node 22); the report says how it was run.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio

from zett_agent.mcp import MCPServer, MCPTools
from zett_agent.messages import ToolCall


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        values[name] = {"number": 1, "integer": 1, "boolean": True}.get(str(kind), "x")
    return values


async def main(url: str) -> None:
    async with MCPTools([MCPServer.http(url, timeout=20)]) as tools:
        for name, tool in tools.tools.items():
            call = ToolCall("c1", name, json.dumps(arguments_for(tool.input_schema)))
            result = await tool.call(call)
            print(name, "->", result.content[:200], "(error)" if result.is_error else "")


if __name__ == "__main__":
    anyio.run(main, sys.argv[-1])
