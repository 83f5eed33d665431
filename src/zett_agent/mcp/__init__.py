"""Tools from MCP servers (optional extra ``mcp``: ``pip install 'zett-agent[mcp]'``).

* :class:`MCPServer` — how to reach one server (a command for stdio, a URL for
  streamable HTTP) and which of its tools to offer (prefix, allow/deny lists,
  timeout, result size limit) and :class:`MCPLimits`, how much its messages may hold
  (:mod:`zett_agent.mcp._limits`, every transport; stdio read by
  :mod:`zett_agent.mcp._stdio`).
* :class:`MCPTools` — connects to servers (``async with``), names their tools
  (namespacing collisions), offers them to an agent (:meth:`MCPTools.attach`) and
  lists them again when a server says they changed.
* resources and prompts of the servers (:mod:`zett_agent.mcp._resources`),
  authorization (:mod:`zett_agent.mcp._auth`: OAuth, client credentials, token
  providers), elicitation (:mod:`zett_agent.mcp._elicitation`) and sampling
  through zett's model layer (:mod:`zett_agent.mcp._sampling`), answered as
  :mod:`zett_agent.mcp._asks` says.
* :class:`MCPTool` — the native :class:`~zett_agent.tools.Tool` an MCP tool becomes
  (:mod:`zett_agent.mcp._convert`: the one conversion point, with the result
  mapping), with a schema sanitized for the wire protocol
  (:mod:`zett_agent.mcp._schema`).

A server's failures never escape the ``async with`` block
(:mod:`zett_agent.mcp._connection`); a server that needs authorization raises
:class:`~zett_agent.errors.MCPAuthorizationError` when entering it.

The stop rules hold as for any tool: under REFUSAL and INTERRUPTED, and for a call
whose arguments were cut off, the server receives no call at all. Cancelling the
run cancels the calls in flight, and the ``mcp`` client sends the server
``notifications/cancelled`` for each. The core never imports this package.
"""

from __future__ import annotations

try:
    import mcp as _mcp  # noqa: F401
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "zett_agent.mcp needs the 'mcp' extra: pip install 'zett-agent[mcp]'"
    ) from error

from zett_agent.errors import MCPAuthorizationError

from ._auth import (
    FileTokenStorage,
    MemoryTokenStorage,
    ask_in_terminal,
    bearer,
    client_credentials,
    identity_assertion,
    oauth,
)
from ._convert import MCPTool, result_text
from ._elicitation import ElicitationField, ElicitationRequest, ElicitationResponse
from ._limits import MCPLimits
from ._resources import MCPPrompt, MCPResource
from ._schema import sanitize_name, sanitize_schema
from ._server import MCPServer
from ._toolset import MCPTools

__all__ = [
    "ElicitationField",
    "ElicitationRequest",
    "ElicitationResponse",
    "FileTokenStorage",
    "MCPAuthorizationError",
    "MCPLimits",
    "MCPPrompt",
    "MCPResource",
    "MCPServer",
    "MCPTool",
    "MCPTools",
    "MemoryTokenStorage",
    "ask_in_terminal",
    "bearer",
    "client_credentials",
    "identity_assertion",
    "oauth",
    "result_text",
    "sanitize_name",
    "sanitize_schema",
]
