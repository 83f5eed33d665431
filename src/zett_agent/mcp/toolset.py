"""The tools of several MCP servers, offered to one agent: :class:`MCPTools`.

::

    servers = [MCPServer.stdio("npx", "@modelcontextprotocol/server-everything"),
               MCPServer.http("https://example.com/mcp", headers={"Authorization": "Bearer …"})]
    async with MCPTools(servers) as mcp:
        agent = await create_agent("anthropic:claude-sonnet-4-5", tools=[my_tool])
        mcp.attach(agent)
        await agent.run("…")

Names: each tool is offered under :func:`~zett_agent.mcp.schema.sanitize_name` of
``prefix_name`` (or its own name without a prefix). A name already taken (by the
agent's own tools or an earlier server) is namespaced with the server's name
(``servername_toolname``), then numbered (``_2``, ``_3``...): colliding tools are
never dropped. Servers are named in the order given, so names are stable from
run to run.

Refresh: a server that sends ``notifications/tools/list_changed`` has its tools
listed again before the agent's next model request (the
:meth:`MCPTools.before_model` hook), and the agent's tool table is updated.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AsyncExitStack
from dataclasses import replace
from typing import TYPE_CHECKING

import mcp_types

from zett_agent.errors import ConfigError
from zett_agent.extensions import Extension
from zett_agent.protocols.base import ModelRequest
from zett_agent.tools import Tool

from .convert import MCPTool, make_tool
from .schema import sanitize_name
from .server import Connection, MCPServer

if TYPE_CHECKING:
    from zett_agent.agent import Agent

__all__ = ["MCPTools"]


class MCPTools(Extension):
    """Connects to MCP servers and offers their tools to agents.

    Args:
        servers: the servers, in the order their tools are named.
        protocol: the wire protocol whose schema rules the tools follow
            (``"anthropic"``, ``"gemini"``...; None: the rules of all of them).
            :meth:`attach` sets it from the agent's model when it is None.

    Enter it with ``async with`` and leave it in the same task. Entering starts
    or reaches every server and lists its tools; a server that cannot be started
    raises :class:`~zett_agent.errors.ConfigError` naming its command or URL (the
    servers already started are closed).
    """

    def __init__(self, servers: Iterable[MCPServer], *, protocol: str | None = None) -> None:
        self.servers: list[MCPServer] = list(servers)
        self.protocol = protocol
        self.connections: list[Connection] = []
        self.tools: dict[str, MCPTool] = {}
        self._stack: AsyncExitStack | None = None
        self._agents: list[Agent] = []
        self._listed: dict[int, list[mcp_types.Tool]] = {}  # by id(connection)
        self._previous: set[str] = set()  # tool names before the last renaming

    async def __aenter__(self) -> MCPTools:
        connections: list[Connection] = []
        async with AsyncExitStack() as stack:
            for server in self.servers:
                connection = Connection(server)
                await connection.open(stack)
                try:
                    self._listed[id(connection)] = await connection.list_tools()
                except Exception as error:
                    raise ConfigError(
                        f"MCP server {server.label}: listing its tools failed: "
                        f"{type(error).__name__}: {error}"
                    ) from error
                connections.append(connection)
            self.connections = connections
            self._rename()
            self._install()
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Stop the servers; their tools leave the attached agents' tables."""
        stack, self._stack = self._stack, None
        self.connections = []
        self.tools = {}
        self._install()
        if stack is not None:
            await stack.aclose()

    def attach(self, agent: Agent) -> None:
        """Offer the tools to ``agent`` (in its ``tools`` table) and keep them
        current there (this object joins its extensions)."""
        if self.protocol is None:
            protocol = getattr(getattr(agent.model, "protocol", None), "name", None)
            self.protocol = protocol if isinstance(protocol, str) else None
        self._agents.append(agent)
        if self not in agent.extensions:
            agent.extensions.append(self)
        self._rename()  # the agent's own tool names are taken now
        self._install()

    async def refresh(self, *, force: bool = False) -> bool:
        """List the tools again of each server that said its list changed (of all
        servers with ``force``); True when any was listed. A server that fails to
        list keeps its previous tools (their calls then get error results)."""
        stale = [c for c in self.connections if force or c.changed]
        if not stale:
            return False
        for connection in stale:
            try:
                self._listed[id(connection)] = await connection.list_tools()
            except Exception:
                connection.changed = False
        self._rename()
        self._install()
        return True

    async def before_model(self, request: ModelRequest) -> ModelRequest | None:
        """Refresh changed tool lists; the request then offers the current tools."""
        if not await self.refresh():
            return None
        specs = [t for t in request.tools if t.name not in self._previous]
        specs += [t.spec for t in self.tools.values()]
        return replace(request, tools=specs)

    # ------------------------------------------------------------ naming

    def _rename(self) -> None:
        self._previous = set(self.tools)
        own = self._native_names()
        taken = set(own)
        tools: dict[str, MCPTool] = {}
        for index, connection in enumerate(self.connections):
            server = connection.server
            namespace = sanitize_name(server.prefix or connection.name or f"mcp{index + 1}")
            for tool in self._listed.get(id(connection), ()):
                if not server.offers(tool.name):
                    continue
                wanted = f"{server.prefix}_{tool.name}" if server.prefix else tool.name
                name = _free(sanitize_name(wanted), namespace, taken)
                taken.add(name)
                tools[name] = make_tool(
                    tool,
                    name,
                    server=server.label,
                    send=connection.call,
                    protocol=self.protocol,
                    timeout=server.timeout,
                    max_result_chars=server.max_result_chars,
                    requires_approval=server.needs_approval(tool.name),
                )
        self.tools = tools

    def _native_names(self) -> set[str]:
        names: set[str] = set()
        for agent in self._agents:
            names |= {n for n, t in agent.tools.items() if not isinstance(t, MCPTool)}
        return names

    def _install(self) -> None:
        for agent in self._agents:
            table: dict[str, Tool] = agent.tools
            for name in [n for n, t in table.items() if isinstance(t, MCPTool)]:
                del table[name]
            table.update(self.tools)


def _free(name: str, namespace: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    spaced = sanitize_name(f"{namespace}_{name}")
    candidate, number = spaced, 2
    while candidate in taken:
        candidate = sanitize_name(f"{spaced}_{number}")
        number += 1
    return candidate
