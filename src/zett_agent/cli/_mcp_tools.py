"""``zett run --mcp``: the tools of MCP servers for one run (extra ``mcp``).

Each ``--mcp`` value is an ``http(s)://`` URL (streamable HTTP) or a command line
(stdio, split as a POSIX shell would). The servers are started before the first
model call and stopped when the run ends, in the run's task; one that cannot be
started ends the run with exit status 1 and a message naming its command or URL
(one that needs authorization says so).

``--mcp-auth`` authorizes the HTTP servers: ``oauth`` (authorization code with
PKCE; the CLI prints the authorization URL and waits on the terminal for the URL
the browser was sent back to, or the code: it opens nothing; tokens are kept in
a file only the user can read, so later runs ask no more), or ``command:CMD``
(a token provider: CMD prints an access token; it runs again after a 401).

A server that asks the person something during a tool call (elicitation) is
answered on the terminal; without one, it is declined.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from zett_agent.errors import ConfigError

if TYPE_CHECKING:
    from zett_agent._agent import Agent

__all__ = ["mcp_tools", "mcp_toolset"]


@asynccontextmanager
async def mcp_tools(
    specs: Sequence[str], agent: Agent, *, auth: str | None = None
) -> AsyncIterator[None]:
    """Offer the tools of the servers ``specs`` to ``agent`` while the block runs.

    Raises :class:`ConfigError` when the ``mcp`` extra is missing, ``auth`` is not
    ``oauth`` or ``command:CMD``, or a server cannot be started
    (``MCPAuthorizationError`` when it needs authorization)."""
    if not specs:
        yield
        return
    from zett_agent.mcp._elicitation import ask_in_terminal

    tools = mcp_toolset(specs, auth=auth)
    tools.elicitation = ask_in_terminal
    async with tools:
        tools.attach(agent)
        yield


def mcp_toolset(specs: Sequence[str], *, auth: str | None = None) -> Any:
    """The ``MCPTools`` (not entered) of ``--mcp`` values and ``--mcp-auth``, with
    no elicitation callback (``zett serve``'s page answers; ``zett run`` sets the
    terminal's). Raises :class:`ConfigError` as :func:`mcp_tools`."""
    try:
        from zett_agent.mcp import MCPServer, MCPTools
    except ImportError as error:
        raise ConfigError(
            f"--mcp needs the 'mcp' extra: pip install 'zett-agent[mcp]' ({error})"
        ) from error
    servers = [_authorized(MCPServer.parse(spec), auth) for spec in specs]
    return MCPTools(servers)


def _authorized(server: Any, auth: str | None) -> Any:
    from dataclasses import replace

    if auth is None or server.url is None:
        return server
    from zett_agent.mcp import _auth as mcp_auth

    if auth == "oauth":
        return replace(server, auth=mcp_auth.oauth(server.url, mcp_auth.ask_in_terminal))
    if auth.startswith("command:") and auth[len("command:") :].strip():
        command = shlex.split(auth[len("command:") :])

        def token() -> str:
            done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
            if done.returncode != 0 or not done.stdout.strip():
                raise ConfigError(
                    f"--mcp-auth command {shlex.join(command)} printed no token "
                    f"(exit {done.returncode})"
                )
            return done.stdout.strip()

        return replace(server, auth=mcp_auth.bearer(token))
    raise ConfigError(f"--mcp-auth must be 'oauth' or 'command:CMD', got {auth!r}")
