"""What a request setting becomes in a vendor's body (reasoning effort, server
tools, a structured answer), and whether a media part can be sent at all. Raises
:class:`~zett_agent.errors.ConfigError` for a setting a row cannot take."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._capabilities import (
    PROTOCOL_MEDIA,
    PROTOCOL_NO_FORCED_TOOL_WITH_THINKING,
    PROTOCOL_REASONING,
    PROTOCOL_SERVER_TOOLS,
    PROTOCOL_STRUCTURED_OUTPUT,
)
from ._rows import (
    BUDGET,
    REASONING_LEVELS,
    ServerTool,
    ServerToolShape,
    StructuredOutput,
    Vendor,
)

if TYPE_CHECKING:
    from zett_agent._parts import MediaPart

_PLURAL = {"image": "images", "document": "documents", "audio": "audio"}


def media_problem(vendor: Vendor, part: MediaPart, *, tool_result: bool = False) -> str | None:
    """Why ``vendor`` cannot take ``part`` (a user message's, or a tool result's
    with ``tool_result``), or None when it can. Read from the row's ``media``
    (else ``PROTOCOL_MEDIA``): the kind, the media type, URL or inline bytes, the
    size. A URL part is never sent in a tool result (only inline bytes are)."""
    table = vendor.media if vendor.media is not None else PROTOCOL_MEDIA.get(vendor.protocol, {})
    kind = part.kind
    rule = table.get(kind)
    if rule is None:
        return f"it takes no {_PLURAL[kind]}"
    if tool_result and not rule.in_tool_results:
        return f"its tool results take no {_PLURAL[kind]}"
    if part.media_type not in rule.media_types:
        known = ", ".join(sorted(rule.media_types))
        return f"it takes {_PLURAL[kind]} of {known}, not {part.media_type}"
    if part.url is not None:
        if tool_result:
            return "a tool result's parts are sent as bytes, not URLs"
        if part.media_type not in rule.url_media_types:
            return (
                "it takes the bytes, not a URL (zett never fetches a URL itself: "
                "read the file and attach its bytes)"
            )
    elif rule.max_bytes is not None and (part.size or 0) > rule.max_bytes:
        return f"it is {part.size} bytes, more than the {rule.max_bytes} it takes"
    return None


def reasoning_fields(vendor: Vendor, setting: str | int) -> dict[str, Any]:
    """The body fields (dotted paths) that write ``setting`` (a level of
    :data:`REASONING_LEVELS`, or a budget in tokens) for ``vendor``.

    Raises :class:`~zett_agent.errors.ConfigError` when the row takes no reasoning
    setting, not this level, or no budget (per-model support is the provider's
    own 400)."""
    from zett_agent.errors import ConfigError

    table = vendor.reasoning or PROTOCOL_REASONING.get(vendor.protocol)
    if table is None:
        raise ConfigError(f"{vendor.name} ({vendor.protocol}) takes no reasoning setting")
    if isinstance(setting, bool) or not isinstance(setting, str | int):
        raise ConfigError(f"reasoning must be a level or a budget in tokens, got {setting!r}")
    if isinstance(setting, int):
        if table.budget is None:
            levels = ", ".join(table.levels)
            raise ConfigError(
                f"{vendor.name} takes no thinking budget, only an effort level: {levels}"
            )
        if setting < 0:
            raise ConfigError(f"a thinking budget is a number of tokens >= 0, got {setting}")
        return {k: setting if v == BUDGET else v for k, v in table.budget.items()}
    fields = table.levels.get(setting)
    if fields is None:
        known = "" if setting in REASONING_LEVELS else f" (levels: {', '.join(REASONING_LEVELS)})"
        raise ConfigError(
            f"{vendor.name} takes reasoning {', '.join(table.levels)}"
            + (" or a budget in tokens" if table.budget is not None else "")
            + f", not {setting!r}{known}"
        )
    return dict(fields)


def server_tool_fields(vendor: Vendor, tool: ServerTool) -> ServerToolShape:
    """How ``tool`` is declared for ``vendor``, its options merged in. Raises
    :class:`~zett_agent.errors.ConfigError` when the row does not have it."""
    from zett_agent.errors import ConfigError

    shapes = vendor.server_tools
    if shapes is None:
        shapes = PROTOCOL_SERVER_TOOLS.get(vendor.protocol, {})
    shape = shapes.get(tool.kind)
    if shape is None:
        known = ", ".join(shapes) or "none"
        raise ConfigError(
            f"{vendor.name} ({vendor.protocol}) has no server tool {tool.kind!r} (it has: {known})"
        )
    entry = _deep_copy(shape.entry)
    target = entry
    for part in filter(None, shape.options_at.split(".")):
        target = target[part]
    target.update(tool.options)
    return ServerToolShape(shape.field, entry, shape.options_at, shape.append)


def output_kind(vendor: Vendor) -> StructuredOutput:
    """The row's structured-output mode: its own ``structured_output``, else its
    protocol's (:data:`PROTOCOL_STRUCTURED_OUTPUT`), else ``"tool"``."""
    return vendor.structured_output or PROTOCOL_STRUCTURED_OUTPUT.get(vendor.protocol, "tool")


def forced_tool_allowed(vendor: Vendor, reasoning: str | int | None) -> bool:
    """Whether a request to ``vendor`` may force a tool with this reasoning setting:
    not with extended thinking on a protocol of
    :data:`PROTOCOL_NO_FORCED_TOOL_WITH_THINKING`."""
    thinking = reasoning is not None and reasoning != "none" and reasoning != 0
    return not (thinking and vendor.protocol in PROTOCOL_NO_FORCED_TOOL_WITH_THINKING)


def output_fields(
    vendor: Vendor, name: str, schema: Mapping[str, Any], description: str = ""
) -> dict[str, Any]:
    """The body fields (dotted paths, merged into nested objects by
    ``protocols._body.add_settings``) that ask ``vendor`` for an answer matching the
    JSON ``schema`` (an object root) in its native mode, the schema made
    acceptable to it (:mod:`zett_agent._schemas`). Raises
    :class:`~zett_agent.errors.ConfigError` for a row without a native mode."""
    from zett_agent._schemas import anthropic_output_schema, openai_strict, sanitize_schema
    from zett_agent.errors import ConfigError

    kind = output_kind(vendor)
    plain = dict(schema)
    match kind:
        case "output_config":
            return {
                "output_config.format": {
                    "type": "json_schema",
                    "schema": anthropic_output_schema(plain),
                }
            }
        case "json_schema" | "text_format":
            strict = openai_strict(plain)
            entry: dict[str, Any] = {"name": name[:64] or "result"}
            if description:
                entry["description"] = description
            entry["schema"] = strict if strict is not None else plain
            entry["strict"] = strict is not None
            if kind == "json_schema":
                return {"response_format": {"type": "json_schema", "json_schema": entry}}
            return {"text.format": {"type": "json_schema", **entry}}
        case "json_object_schema":
            return {"response_format": {"type": "json_object", "schema": plain}}
        case "response_json_schema":
            return {
                "generationConfig.responseMimeType": "application/json",
                "generationConfig.responseJsonSchema": plain,
            }
        case "response_schema":
            return {
                "generationConfig.responseMimeType": "application/json",
                "generationConfig.responseSchema": sanitize_schema(plain, "gemini"),
            }
        case "format":
            return {"format": plain}
        case "tool":
            raise ConfigError(
                f"{vendor.name} has no native structured output zett uses; "
                "use output_mode='tool' (or 'auto')"
            )


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value
