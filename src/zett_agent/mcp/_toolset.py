"""The tools of several MCP servers, offered to one agent: :class:`MCPTools`.

::

    servers = [MCPServer.stdio("npx", "@modelcontextprotocol/server-everything"),
               MCPServer.http("https://example.com/mcp", headers={"Authorization": "Bearer …"})]
    async with MCPTools(servers) as mcp:
        agent = await create_agent("anthropic:claude-sonnet-4-5", tools=[my_tool])
        mcp.attach(agent)
        await agent.run("…")

Names: each tool is offered under :func:`~zett_agent.mcp.sanitize_name` of
``prefix_name`` (or its own name without a prefix). A name already taken (by the
agent's own tools or an earlier server) is namespaced with the server's name
(``servername_toolname``), then numbered (``_2``, ``_3``...): colliding tools are
never dropped. Servers are named in the order given, so names are stable from
run to run.

**A name once offered keeps its meaning.** From the first :meth:`MCPTools.attach`
on, for the life of the object (so for every conversation of its agents), a name
means one server's one tool: a tool that appears later and collides gets a new
name (the namespaced one), never an offered one; a tool that disappears from its
server's list stays in the agents' tool tables under its name, is no longer sent
to the model, and a call of it is answered with an error result saying it is
gone. Attaching an agent whose own tool has an offered name is a ``ConfigError``.

Refresh: a server that sends ``notifications/tools/list_changed`` (or that was
connected again after it was lost) has its tools listed again before the agent's
next model request (the :meth:`MCPTools.before_model` hook), and the agent's tool
table is updated. Server failures never escape ``async with MCPTools``
(:mod:`zett_agent.mcp._connection`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from contextlib import AsyncExitStack
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import mcp_types

from zett_agent._exchange import ModelRequest
from zett_agent._messages import ToolCall
from zett_agent.errors import ConfigError
from zett_agent.extensions._extension import Extension
from zett_agent.tools import Tool

from ._asks import Asks
from ._connection import Connection, RequestFailedError
from ._convert import MCPTool, make_tool
from ._elicitation import (
    DEFAULT_ELICITATION_TIMEOUT,
    Elicit,
    ElicitationRequest,
    ElicitationResponse,
)
from ._resources import ServerContent
from ._schema import sanitize_name
from ._server import MCPServer

if TYPE_CHECKING:
    from zett_agent._agent import Agent

__all__ = ["MCPTools"]

_Key = tuple[int, str]  # (the server's index, the tool's name on the server)


class MCPTools(ServerContent, Extension):
    """Connects to MCP servers and offers their tools to agents.

    Args:
        servers: the servers, in the order their tools are named.
        protocol: the wire protocol whose schema rules the tools follow
            (``"anthropic"``, ``"gemini"``...; None: the rules of all of them).
            :meth:`attach` sets it from the agent's model when it is None.
        elicitation: the host callback that asks a person when a server asks
            for input during a tool call (:mod:`zett_agent.mcp._elicitation`);
            None: such requests are declined at once.
        elicitation_timeout: the most seconds a person may take to answer (not
            counted against the call's timeout).
        sampling_model: the zett model (or ``"provider:model"``) answering the
            sampling requests of servers with ``sampling > 0``
            (:mod:`zett_agent.mcp._sampling`).

    Beside tools it reads the servers' resources and prompts
    (:mod:`zett_agent.mcp._resources`: ``list_resources``, ``read_resource``,
    ``resource_message``, ``subscribe``, ``list_prompts``, ``get_prompt``).

    Enter it with ``async with`` and leave it in the same task. Entering starts
    or reaches every server and lists its tools; a server that cannot be started
    or listed raises :class:`~zett_agent.errors.ConfigError` naming its command
    or URL (:class:`~zett_agent.errors.MCPAuthorizationError` when it needs
    authorization; the servers already started are closed). Afterwards nothing a
    server does raises out of the block: its calls get error results.
    """

    def __init__(
        self,
        servers: Iterable[MCPServer],
        *,
        protocol: str | None = None,
        elicitation: Elicit | None = None,
        elicitation_timeout: float = DEFAULT_ELICITATION_TIMEOUT,
        sampling_model: Any = None,
    ) -> None:
        self.servers: list[MCPServer] = list(servers)
        self.protocol = protocol
        self.elicitation = elicitation
        self.elicitation_timeout = elicitation_timeout
        self.sampling_model = sampling_model
        self.connections: list[Connection] = []
        self.tools: dict[str, MCPTool] = {}
        """The tools offered now, by the name the model sees."""
        self.gone: dict[str, MCPTool] = {}
        """Tools offered earlier that their server no longer lists (their calls
        get an error result saying so)."""
        self._stack: AsyncExitStack | None = None
        self._group: anyio.abc.TaskGroup | None = None
        self._agents: list[Agent] = []
        self._listed: dict[int, list[mcp_types.Tool]] = {}  # by server index
        self._names: dict[_Key, str] = {}
        self._owners: dict[str, _Key] = {}  # every name given, and what it means
        self._offered = False  # names are fixed from the first attach on
        self._resource_owner: dict[str, Connection] = {}
        self._resource_size: dict[str, int | None] = {}  # the size each one announced

    async def __aenter__(self) -> MCPTools:
        stack = AsyncExitStack()
        group: anyio.abc.TaskGroup = await stack.enter_async_context(anyio.create_task_group())
        connections: list[Connection] = []
        try:
            asks = self._asks()
            for index, server in enumerate(self.servers):
                connection = Connection(server, group, asks)
                await connection.open()
                connections.append(connection)
                try:
                    self._listed[index] = await connection.list_tools()
                except Exception as error:
                    raise connection.config_error("listing its tools failed", error) from error
        except BaseException:
            await _close(connections, group, stack)
            raise
        self.connections = connections
        self._rename()
        self._install()
        self._stack = stack
        self._group = group
        return self

    def _asks(self) -> Asks:
        model = self.sampling_model
        if isinstance(model, str):
            from zett_agent.model._model import resolve_model

            model = self.sampling_model = resolve_model(model)
        if model is None and any(s.sampling > 0 for s in self.servers):
            raise ConfigError("an MCPServer with sampling > 0 needs MCPTools(sampling_model=...)")

        async def elicit(request: ElicitationRequest) -> ElicitationResponse:
            handler = self.elicitation  # read at each request: a host may set it later
            if handler is None:
                return ElicitationResponse.decline()
            return await handler(request)

        return Asks(
            elicit=elicit,
            elicitation_timeout=self.elicitation_timeout,
            sampling_model=model,
        )

    async def __aexit__(self, *exc: object) -> None:
        """Stop the servers; their tools leave the attached agents' tables."""
        stack, self._stack = self._stack, None
        connections, self.connections = self.connections, []
        self.tools = {}
        self.gone = {}
        self._install()
        if stack is not None and self._group is not None:
            await _close(connections, self._group, stack)

    def attach(self, agent: Agent) -> None:
        """Offer the tools to ``agent`` (in its ``tools`` table) and keep them
        current there (this object joins its extensions). From the first attach
        on the names are fixed; raises :class:`ConfigError` when one of the
        agent's own tools has a name already offered for an MCP tool."""
        if self.protocol is None:
            protocol = getattr(getattr(agent.model, "protocol", None), "name", None)
            self.protocol = protocol if isinstance(protocol, str) else None
        if self._offered:
            clash = sorted(
                n
                for n, t in agent.tools.items()
                if not isinstance(t, MCPTool) and n in self._owners
            )
            if clash:
                raise ConfigError(
                    f"the agent's own tool {clash[0]!r} has a name already offered for a tool "
                    "of an MCP server; rename it (a name once offered keeps its meaning)"
                )
        self._agents.append(agent)
        if self not in agent.extensions:
            agent.extensions.append(self)
        self._rename()  # the agent's own tool names are taken now
        self._offered = True
        self._install()

    async def refresh(self, *, force: bool = False) -> bool:
        """List the tools again of each server that said its list changed (of all
        servers with ``force``); True when any was listed. A server that fails to
        list keeps its previous tools (their calls then get error results)."""
        stale = [(i, c) for i, c in enumerate(self.connections) if force or c.changed]
        if not stale:
            return False
        for index, connection in stale:
            try:
                self._listed[index] = await connection.list_tools()
            except Exception:  # RequestFailedError, a JSON-RPC error: keep what it listed before
                connection.changed = False
        self._rename()
        self._install()
        return True

    async def before_model(self, request: ModelRequest) -> ModelRequest | None:
        """Refresh changed tool lists; the request then offers the current tools
        (never one that is gone)."""
        refreshed = await self.refresh()
        if not refreshed and not any(spec.name in self.gone for spec in request.tools):
            return None
        specs = [t for t in request.tools if t.name not in self._owners]
        specs += [t.spec for t in self.tools.values()]
        return replace(request, tools=specs)

    # ------------------------------------------------------------ naming

    def _rename(self) -> None:
        if not self._offered:  # nothing was offered yet: names may still move
            self._names.clear()
            self._owners.clear()
        taken = self._native_names() | set(self._owners)
        tools: dict[str, MCPTool] = {}
        for index, connection in enumerate(self.connections):
            server = connection.server
            namespace = sanitize_name(server.prefix or connection.name or f"mcp{index + 1}")
            for tool in self._listed.get(index, ()):
                if not server.offers(tool.name):
                    continue
                key = (index, tool.name)
                name = self._names.get(key)
                if name is None:
                    wanted = f"{server.prefix}_{tool.name}" if server.prefix else tool.name
                    name = _free(sanitize_name(wanted), namespace, taken)
                    taken.add(name)
                    self._names[key] = name
                    self._owners[name] = key
                tools[name] = self._make(tool, name, connection)
        gone = {}
        for name in self._owners:
            if name not in tools:
                before = self.tools.get(name) or self.gone.get(name)
                if before is not None:
                    gone[name] = _gone(before)
        self.tools, self.gone = tools, gone

    def _make(self, tool: mcp_types.Tool, name: str, connection: Connection) -> MCPTool:
        server = connection.server

        async def send(
            server_name: str, arguments: dict[str, Any], call: ToolCall | None = None
        ) -> mcp_types.CallToolResult:
            return await connection.call_tool(server_name, arguments, call=call)

        return make_tool(
            tool,
            name,
            server=server.label,
            send=send,
            protocol=self.protocol,
            timeout=server.timeout,
            max_result_chars=server.max_result_chars,
            max_content_blocks=server.limits.max_content_blocks,
            requires_approval=server.needs_approval(tool.name),
            redact=connection.redact,
        )

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
            table.update(self.gone)


def _gone(tool: MCPTool) -> MCPTool:
    """``tool`` answering every call with an error saying its server dropped it."""
    text = (
        f"MCP server {tool.server} no longer offers its tool {tool.server_name!r} "
        f"(offered as {tool.name!r}): it left the server's tool list, so the call "
        "was not sent"
    )

    async def send(
        server_name: str, arguments: dict[str, Any], call: ToolCall | None = None
    ) -> mcp_types.CallToolResult:
        raise RequestFailedError(text)

    return replace(tool, send=send)


def _free(name: str, namespace: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    spaced = sanitize_name(f"{namespace}_{name}")
    candidate, number = spaced, 2
    while candidate in taken:
        candidate = sanitize_name(f"{spaced}_{number}")
        number += 1
    return candidate


async def _close(
    connections: list[Connection], group: anyio.abc.TaskGroup, stack: AsyncExitStack
) -> None:
    """Close every session, then the task group they ran in (entered in this
    task by ``stack``); never raises."""
    with anyio.CancelScope(shield=True):
        async with anyio.create_task_group() as closing:
            for connection in connections:
                closing.start_soon(connection.close)
    group.cancel_scope.cancel()
    with contextlib.suppress(Exception):  # the session tasks never raise
        await stack.aclose()
