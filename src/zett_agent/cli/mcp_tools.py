"""``zett run --mcp``: the tools of MCP servers for one run (extra ``mcp``).

Each ``--mcp`` value is an ``http(s)://`` URL (streamable HTTP) or a command line
(stdio, split as a POSIX shell would). The servers are started before the first
model call and stopped when the run ends, in the run's task; one that cannot be
started ends the run with exit status 1 and a message naming its command or URL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from zett_agent.errors import ConfigError

if TYPE_CHECKING:
    from zett_agent.agent import Agent

__all__ = ["mcp_tools"]


@asynccontextmanager
async def mcp_tools(specs: Sequence[str], agent: Agent) -> AsyncIterator[None]:
    """Offer the tools of the servers ``specs`` to ``agent`` while the block runs.

    Raises :class:`ConfigError` when the ``mcp`` extra is missing or a server
    cannot be started."""
    if not specs:
        yield
        return
    try:
        from zett_agent.mcp import MCPServer, MCPTools
    except ImportError as error:
        raise ConfigError(
            f"--mcp needs the 'mcp' extra: pip install 'zett-agent[mcp]' ({error})"
        ) from error
    servers = [MCPServer.parse(spec) for spec in specs]
    async with MCPTools(servers) as tools:
        tools.attach(agent)
        yield
