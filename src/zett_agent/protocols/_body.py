"""Helpers every protocol module shares: JSON in and out, the parts a vendor takes,
the settings and options merged into a body, and tolerant readers of provider values
(``raw_value``, ``as_int``...) that never raise on an odd type."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from zett_agent._exchange import ModelRequest
from zett_agent._messages import (
    ToolResultMessage,
    UserMessage,
)
from zett_agent._parts import MediaPart, Part, TextPart
from zett_agent.errors import (
    ConfigError,
    DecodeError,
)
from zett_agent.stop import StopInfo, StopReason
from zett_agent.vendors import (
    Vendor,
    dig,
    media_problem,
    output_fields,
    reasoning_fields,
    server_tool_fields,
)

# ---------------------------------------------------------------- helpers


def load_json(body: bytes | str) -> Any:
    """Parse a JSON body; raises :class:`DecodeError` with a short excerpt."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        text = body[:200] if isinstance(body, str) else body[:200].decode("utf-8", "replace")
        raise DecodeError(f"body is not JSON: {text!r}") from error


def user_parts(message: UserMessage, vendor: Vendor, *, loaded: bool = True) -> tuple[Part, ...]:
    """The parts of a user message, each checked against ``vendor``'s row
    (:func:`~zett_agent.vendors.media_problem`). Raises
    :class:`~zett_agent.errors.ConfigError` naming the part and the provider (and
    the row's ``media_note``) for one it cannot take, or, with ``loaded`` (when
    encoding), whose bytes are not loaded: nothing is sent, never a silent drop."""
    for number, part in enumerate(message.parts, 1):
        if isinstance(part, TextPart):
            continue
        problem = media_problem(vendor, part)
        if problem is None and loaded and part.needs_loading:
            problem = "its bytes are not loaded (Model.stream loads stored parts first)"
        if problem is not None:
            note = f"; {vendor.media_note}" if vendor.media_note else ""
            raise ConfigError(
                f"{vendor.name} cannot take part {number} of the user message, "
                f"{part.describe()}: {problem}{note}"
            )
    return message.parts


def result_parts(message: ToolResultMessage, vendor: Vendor) -> tuple[str, list[Part]]:
    """What a tool result sends on ``vendor``: its text and the parts the row takes
    in tool results (``MediaInput.in_tool_results``; text parts always). A media
    part it cannot take there is left to the text, which gets the part's
    description (``MediaPart.describe()``) when it does not hold it already."""
    text = message.content
    sent: list[Part] = []
    for part in message.parts:
        if isinstance(part, MediaPart) and (
            part.needs_loading or media_problem(vendor, part, tool_result=True) is not None
        ):
            description = part.describe()
            if description not in text:
                text = f"{text}\n{description}" if text else description
        else:
            sent.append(part)
    return text, sent


def add_settings(body: dict[str, Any], request: ModelRequest, vendor: Vendor) -> dict[str, Any]:
    """Write the request's portable settings into ``body`` as ``vendor``'s row says:
    ``reasoning`` (:func:`~zett_agent.vendors.reasoning_fields`, dotted paths into
    nested objects), a native structured ``output``
    (:func:`~zett_agent.vendors.output_fields`, into the same nested objects:
    Anthropic's ``output_config`` holds both ``effort`` and ``format``),
    ``server_tools`` after the agent's own tools
    (:func:`~zett_agent.vendors.server_tool_fields`), and ``prompt_cache_key`` on
    rows that take it. Raises :class:`~zett_agent.errors.ConfigError` for a
    setting the row does not have. Every protocol calls it, then
    :func:`merge_options`."""
    fields: dict[str, Any] = {}
    if request.reasoning is not None:
        fields.update(reasoning_fields(vendor, request.reasoning))
    if request.output is not None:
        output = request.output
        fields.update(output_fields(vendor, output.name, output.schema, output.description))
    for path, value in fields.items():
        *parents, leaf = path.split(".")
        node = body
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    for tool in request.server_tools:
        shape = server_tool_fields(vendor, tool)
        if shape.append:
            body[shape.field] = [*body.get(shape.field, ()), shape.entry]
        elif shape.field in body:
            raise ConfigError(f"server tool {tool.kind!r} is declared twice")
        else:
            body[shape.field] = shape.entry
    if request.prompt_cache_key and vendor.prompt_cache_key:
        body["prompt_cache_key"] = request.prompt_cache_key
    return body


def merge_options(
    body: dict[str, Any], options: Mapping[str, Any], nested: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """``body`` (what an encoder wrote) with ``options`` (``model_options``,
    ``ModelRequest.extra_body``) merged in; every protocol calls it last.

    A key the encoder did not write is added as given. A key in ``nested`` (the
    protocol's documented nested objects: Gemini ``generationConfig``, Anthropic
    ``output_config``, Responses ``reasoning``...) holding an object on both sides
    is merged key by key, and so are objects inside it. Any other key the
    encoder wrote (messages, tools, the output limit, a structured-output format,
    what a reasoning or cache setting wrote) may only be given again with the
    same value: a different one raises :class:`~zett_agent.errors.ConfigError`
    naming it, before anything is sent, so ``model_options`` can never replace
    the agent's tools or a setting zett made. ``body`` is changed in place and
    returned.
    """
    _merge(body, options, nested, "")
    return body


def _merge(
    body: dict[str, Any], options: Mapping[str, Any], nested: frozenset[str], at: str
) -> None:
    for key, value in options.items():
        path = f"{at}.{key}" if at else key
        if key not in body:
            body[key] = value
        elif (at or key in nested) and isinstance(body[key], dict) and isinstance(value, Mapping):
            body[key] = dict(body[key])
            _merge(body[key], value, nested, path)
        elif body[key] != value:
            raise ConfigError(
                f"model_options[{path!r}] clashes with what zett writes there "
                f"({_short(body[key])}); use the agent's own setting for it "
                "(tools, max_tokens, reasoning, server_tools...) or leave it out"
            )


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


_raw_decode = json.JSONDecoder().raw_decode


def parse_json(text: str) -> Any:
    """``json.loads(text)`` for the hot path: one event's data. ``json.loads`` wraps
    the scanner in two whitespace regex matches and type checks (~0.8 µs a call);
    this goes to the scanner first and leaves any other text (whitespace around the
    value, not JSON) to ``json.loads``, so it returns and raises exactly as that does
    (ValueError, RecursionError)."""
    try:
        value, end = _raw_decode(text)
    except json.JSONDecodeError:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from a ``retry-after-ms`` header, or a ``retry-after`` header
    given as seconds or as an HTTP date (RFC 9110 section 10.2.3); None if absent
    or unreadable."""
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        import email.utils  # an HTTP date: rare, and email.utils is slow to import

        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.UTC)
        return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())
    return None


def stop(
    reason: StopReason,
    raw: str | None = None,
    *,
    category: str | None = None,
    message: str | None = None,
    recommended_model: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> StopInfo:
    """Shorthand for building a :class:`StopInfo` in decoders."""
    return StopInfo(reason, raw, category, message, recommended_model, dict(detail or {}))


def as_text(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def raw_value(value: Any) -> str | None:
    """A provider's stop value as ``StopInfo.raw`` keeps it: a non-empty string as it
    is; a number or a boolean as its JSON text (``42`` -> ``"42"``, seed 001: a value
    no table knows is OTHER "with the original kept"); None for anything else
    (absent, null, empty, an object or an array)."""
    if type(value) is str:
        return value or None
    if type(value) in (int, float, bool):
        return json.dumps(value)
    return None


# JSON-shape accessors: json.loads makes only dict, list, str, int, float, bool and
# None, so concrete-type checks suffice (an ABC check such as ``Mapping`` costs more).


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int | None:
    """``value`` if it is an int (not a bool), else None."""
    return value if type(value) is int else None


def as_code(value: Any) -> str | int | None:
    """``value`` if it is a string or an int (not a bool): an error code."""
    return value if type(value) is str or type(value) is int else None


def _pick(data: Any, paths: Sequence[str], read: Callable[[Any], Any]) -> Any:
    """The first non-None ``read(dig(data, path))`` over ``paths``."""
    for path in paths:
        value = read(dig(data, path))
        if value is not None:
            return value
    return None
