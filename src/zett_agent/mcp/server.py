"""One MCP server: how to reach it (:class:`MCPServer`) and a live connection to it.

A connection is the official ``mcp`` package's ``Client`` over stdio (a command
zett starts) or streamable HTTP (a URL, with headers for auth). It is entered and
exited in the same task (the client's task group requires it): the
:class:`~zett_agent.mcp.MCPTools` that owns it is an ``async with`` block.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio
import mcp_types

from zett_agent.errors import ConfigError

__all__ = ["MCPServer"]


@dataclass(frozen=True)
class MCPServer:
    """How to reach one MCP server, and which of its tools to offer.

    Make one with :meth:`stdio`, :meth:`http` or :meth:`parse`.

    Attributes:
        command: the command line that starts a stdio server (None for HTTP).
        url: the streamable HTTP endpoint (None for stdio).
        headers: HTTP headers sent with every request (e.g. ``Authorization``).
        env: extra environment variables for a stdio server.
        cwd: the working directory of a stdio server.
        prefix: put before each tool name (``prefix_toolname``); None: names as
            the server gives them, namespaced only when they collide.
        allow: offer only these tool names (the server's names); None: all.
        deny: never offer these tool names (the server's names).
        timeout: most seconds one tool call may take; then the call gets an
            error result and the server is told it is cancelled.
        connect_timeout: most seconds to start and greet the server.
        max_result_chars: longest result text given to the model.
        approval: tool names (the server's) that wait for a person's approval,
            or True for all of them.
        mode: the ``mcp`` client's protocol negotiation (``"legacy"``: the
            ``initialize`` handshake every server speaks; ``"auto"``: probe for
            the 2026-07-28 protocol first, where list changes come over a
            ``subscriptions/listen`` stream that zett keeps open).
        log: where a stdio server's stderr goes (None: this process's stderr).
    """

    command: tuple[str, ...] | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    prefix: str | None = None
    allow: frozenset[str] | None = None
    deny: frozenset[str] = frozenset()
    timeout: float = 60.0
    connect_timeout: float = 30.0
    max_result_chars: int = 100_000
    approval: frozenset[str] | bool = False
    mode: str = "legacy"
    log: TextIO | None = None

    @classmethod
    def stdio(cls, command: str, *args: str, **options: Any) -> MCPServer:
        """A server started as ``command args...``, speaking MCP on stdin/stdout."""
        return cls(command=(command, *args), **_options(options))

    @classmethod
    def http(
        cls, url: str, *, headers: Mapping[str, str] | None = None, **options: Any
    ) -> MCPServer:
        """A streamable HTTP server at ``url``."""
        return cls(url=url, headers=dict(headers or {}), **_options(options))

    @classmethod
    def parse(cls, text: str, **options: Any) -> MCPServer:
        """``zett run --mcp``'s form: an ``http(s)://`` URL, else a command line
        (split as a POSIX shell would). Raises :class:`ConfigError` for an empty
        or unreadable one."""
        text = text.strip()
        if text.startswith(("http://", "https://")):
            return cls.http(text, **options)
        try:
            words = shlex.split(text)
        except ValueError as error:
            raise ConfigError(f"--mcp {text!r}: {error}") from error
        if not words:
            raise ConfigError("--mcp needs a command or an http(s):// URL")
        return cls.stdio(*words, **options)

    @property
    def label(self) -> str:
        """The command line or URL, as messages name the server."""
        if self.url is not None:
            return self.url
        return shlex.join(self.command or ())

    def needs_approval(self, server_name: str) -> bool:
        """Whether calls of the server's tool ``server_name`` wait for approval."""
        if isinstance(self.approval, bool):
            return self.approval
        return server_name in self.approval

    def offers(self, server_name: str) -> bool:
        """Whether the allow and deny lists let the tool through."""
        if server_name in self.deny:
            return False
        return self.allow is None or server_name in self.allow


def _options(options: dict[str, Any]) -> dict[str, Any]:
    for key in ("allow", "deny"):
        if options.get(key) is not None:
            options[key] = frozenset(options[key])
    approval = options.get("approval")
    if approval is not None and not isinstance(approval, bool):
        options["approval"] = frozenset(approval)
    return options


class Connection:
    """A live session with one server; made and closed by :class:`MCPTools`.

    ``changed`` is set when the server says its tool list changed
    (``notifications/tools/list_changed``).
    """

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.changed = False
        self.name = ""  # the server's own name (serverInfo), when it gives one
        self._client: Any = None

    async def open(self, stack: AsyncExitStack) -> None:
        """Start or reach the server and greet it; the connection closes with ``stack``.

        Raises :class:`ConfigError` naming the command or URL when it cannot be
        started, reached or greeted within ``connect_timeout``."""
        from mcp import Client

        server = self.server
        # The client's task groups outlive this call, so no cancel scope may wrap
        # entering it: the handshake is bounded by the client's read timeout.
        try:
            client = Client(
                await self._transport(stack),
                mode=server.mode,
                message_handler=self._on_message,
                read_timeout_seconds=server.connect_timeout,
                cache=None,
            )
            await stack.enter_async_context(client)
        except Exception as error:
            raise ConfigError(
                f"MCP server {server.label} could not be started: {_why(error)}"
            ) from error
        self._client = client
        info = client.server_info
        self.name = info.name if info is not None else ""
        await self._listen_for_changes(client, stack)

    async def _listen_for_changes(self, client: Any, stack: AsyncExitStack) -> None:
        """On a 2026-07-28 connection list changes arrive only on a
        ``subscriptions/listen`` stream: keep one open in a task that closes with
        ``stack`` (never raising into the run; a lost stream just stops refreshes)."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return  # earlier versions send notifications/tools/list_changed
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)  # runs first: the task group then exits

        async def listen() -> None:
            try:
                async with client.listen(tools_list_changed=True) as subscription:
                    async for _ in subscription:
                        self.changed = True
            except Exception:  # the server went away or does not honour it
                return

        group.start_soon(listen)

    async def _transport(self, stack: AsyncExitStack) -> Any:
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client

        server = self.server
        if server.url is not None:
            import httpx2

            http = httpx2.AsyncClient(
                headers=dict(server.headers), timeout=httpx2.Timeout(30.0, read=300.0)
            )
            await stack.enter_async_context(http)
            return streamable_http_client(server.url, http_client=http)
        assert server.command, "a stdio MCPServer has a command"
        command, *args = server.command
        params = StdioServerParameters(
            command=command, args=list(args), env=dict(server.env) or None, cwd=server.cwd
        )
        return stdio_client(params, errlog=server.log or sys.stderr)

    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server lists (all pages)."""
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(1000):  # a server whose cursor never ends cannot hang us
            page = await self._client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self.changed = False
        return tools

    async def call(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """``tools/call``; raises when the server fails to answer."""
        result: mcp_types.CallToolResult = await self._client.call_tool(
            name, arguments, read_timeout_seconds=self.server.timeout
        )
        return result

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.changed = True


def _why(error: BaseException) -> str:
    """The innermost useful message of an error (task groups wrap them)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, FileNotFoundError | PermissionError):
        return f"{type(error).__name__}: {error.strerror or error}"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
