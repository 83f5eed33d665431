"""How to reach one MCP server and what to offer of it: :class:`MCPServer`.

The live session is :class:`~zett_agent.mcp._connection.Connection`: the official
``mcp`` package's ``Client`` over stdio (a command zett starts) or streamable HTTP
(a URL, with headers, or ``auth=`` for OAuth), owned by the
:class:`~zett_agent.mcp.MCPTools` ``async with`` block.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from zett_agent.errors import ConfigError

from ._limits import DEFAULT_MCP_LIMITS, MCPLimits

__all__ = ["MCPServer"]


@dataclass(frozen=True)
class MCPServer:
    """How to reach one MCP server, and which of its tools to offer.

    Make one with :meth:`stdio`, :meth:`http` or :meth:`parse`.

    Attributes:
        command: the command line that starts a stdio server (None for HTTP).
        url: the streamable HTTP endpoint (None for stdio).
        headers: HTTP headers sent with every request (e.g. ``Authorization``).
        auth: how HTTP requests are authorized: an ``httpx2.Auth``, such as one of
            the ``mcp`` SDK's OAuth providers or what :mod:`zett_agent.mcp._auth`
            makes (authorization code with PKCE, client credentials, a token
            provider). None: only ``headers``.
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
        reconnect: whether a lost session is connected again on the server's
            next request (None: yes for streamable HTTP, no for stdio, whose
            process is gone).
        roots: the roots the server may work in (``roots/list``): ``file://``
            URIs or paths (made ``file://`` URIs); empty: the capability is not
            declared.
        log_level: the least severe ``notifications/message`` level wanted
            (``"debug"`` ... ``"emergency"``); they become TOOL_LOG events. None:
            the server's default (2025 era), none asked for (2026-07-28).
        sampling: how many ``sampling/createMessage`` requests the server may make
            during one tool call (answered by ``MCPTools(sampling_model=...)``);
            0: sampling is not declared, every request refused.
        sampling_max_tokens: the most output tokens one sampling request gets
            (a larger ``maxTokens`` is lowered to it).
        limits: the most the server's messages may hold
            (:class:`~zett_agent.mcp.MCPLimits`: message bytes, content blocks,
            resource bytes, sampling text), on every transport.
    """

    command: tuple[str, ...] | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: Any = None
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
    reconnect: bool | None = None
    roots: tuple[str, ...] = ()
    log_level: str | None = None
    sampling: int = 0
    sampling_max_tokens: int = 4096
    limits: MCPLimits = DEFAULT_MCP_LIMITS

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
        """The command line or URL (without a ``user:password@`` part, its
        query-string credentials ``[redacted]``: :func:`~zett_agent._urls.redact_url`),
        as messages name the server."""
        if self.url is not None:
            from zett_agent._urls import redact_url

            return redact_url(self.url)
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
    if options.get("roots") is not None:
        options["roots"] = tuple(options["roots"])
    for key in ("allow", "deny"):
        if options.get(key) is not None:
            options[key] = frozenset(options[key])
    approval = options.get("approval")
    if approval is not None and not isinstance(approval, bool):
        options["approval"] = frozenset(approval)
    return options
