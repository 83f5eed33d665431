"""Tool names and argument schemas from an MCP server, made acceptable to a wire protocol.

The rules live in the core, :mod:`zett_agent._schemas` (structured output uses them
too; Gemini's, rule by rule, are in its docstring); this module gives the MCP
package the names it uses (``sanitize_name``, ``sanitize_schema``).
"""

from __future__ import annotations

from zett_agent._schemas import (
    GEMINI_KEYWORDS,
    MAX_DEPTH,
    MAX_NAME,
    MAX_NODES,
    TYPED_KEYWORDS,
    sanitize_name,
    sanitize_schema,
)

__all__ = [
    "GEMINI_KEYWORDS",
    "MAX_DEPTH",
    "MAX_NAME",
    "MAX_NODES",
    "TYPED_KEYWORDS",
    "sanitize_name",
    "sanitize_schema",
]
