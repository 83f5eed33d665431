"""The vendor table: one row per provider, no code per vendor.

A :class:`Vendor` names its wire protocol, base URL, key variable, the stop values
it adds to its protocol's table, and how its refusals arrive as HTTP errors. The
decoders read these rows; a vendor quirk is a row entry, never an ``if vendor ==``.

Sources for each row are the provider documents listed in ``docs`` and
``../shared/corpus/WIRE.md``.

The package: :mod:`._rows` (what a row holds), :mod:`._capabilities` (what each
protocol can take), :mod:`._table` (the rows, :func:`get_vendor`), :mod:`._fields`
(what a setting becomes in a body), :mod:`._http_errors` (refusals and rate limits
sent as HTTP errors). Every name is importable from here.
"""

from __future__ import annotations

from ._capabilities import (
    NATIVE_OUTPUTS,
    PROTOCOL_MEDIA,
    PROTOCOL_NO_FORCED_TOOL_WITH_THINKING,
    PROTOCOL_REASONING,
    PROTOCOL_SERVER_TOOLS,
    PROTOCOL_STRUCTURED_OUTPUT,
)
from ._fields import (
    forced_tool_allowed,
    media_problem,
    output_fields,
    output_kind,
    reasoning_fields,
    server_tool_fields,
)
from ._http_errors import dig, match_http_refusal, rate_limit_fields, reset_time
from ._rows import (
    BUDGET,
    LEVEL_BUDGETS,
    REASONING_LEVELS,
    Auth,
    HTTPRefusal,
    MediaInput,
    Protocol,
    QuotaRule,
    ReasoningMap,
    ServerTool,
    ServerToolShape,
    StructuredOutput,
    Vendor,
)
from ._table import VENDORS, get_vendor

__all__ = [
    "BUDGET",
    "LEVEL_BUDGETS",
    "NATIVE_OUTPUTS",
    "PROTOCOL_MEDIA",
    "PROTOCOL_NO_FORCED_TOOL_WITH_THINKING",
    "PROTOCOL_REASONING",
    "PROTOCOL_SERVER_TOOLS",
    "PROTOCOL_STRUCTURED_OUTPUT",
    "REASONING_LEVELS",
    "VENDORS",
    "Auth",
    "HTTPRefusal",
    "MediaInput",
    "Protocol",
    "QuotaRule",
    "ReasoningMap",
    "ServerTool",
    "ServerToolShape",
    "StructuredOutput",
    "Vendor",
    "dig",
    "forced_tool_allowed",
    "get_vendor",
    "match_http_refusal",
    "media_problem",
    "output_fields",
    "output_kind",
    "rate_limit_fields",
    "reasoning_fields",
    "reset_time",
    "server_tool_fields",
]
