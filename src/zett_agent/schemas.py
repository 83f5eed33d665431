"""JSON schemas made acceptable to a wire protocol: tool names and argument schemas
(an MCP server's tools, :mod:`zett_agent.mcp`), and structured-output schemas.

An MCP server may name a tool anything and describe its arguments with any JSON
Schema (2020-12 since protocol 2026-07-28). Providers are stricter, and reject the
whole request (HTTP 400) for one tool they cannot read:

==================  ==========================================================
names               OpenAI (Chat, Responses) and Anthropic:
                    ``^[a-zA-Z0-9_-]{1,64}$``; Gemini: starts with a letter or
                    ``_``, at most 64 of ``a-zA-Z0-9_.:-``. One rule satisfies all
                    (:func:`sanitize_name`), so a name stays the same whichever
                    protocol a run falls back to.
root of a schema    OpenAI and Anthropic: ``type: "object"``, no ``anyOf`` /
                    ``oneOf`` / ``allOf`` at the top level.
keywords            Gemini's ``parameters`` is an OpenAPI 3.0 subset: anything
                    outside :data:`GEMINI_KEYWORDS` ("Unknown name ...") and
                    ``$ref`` are rejected, ``type`` is one string (``nullable``
                    says null), ``enum`` holds strings.
==================  ==========================================================

:func:`sanitize_schema` applies the rules of one protocol (by its name in
:mod:`zett_agent.protocols`), or of all of them when the protocol is not known.
It never raises: an unreadable part becomes ``{}`` (any value), and nesting is
cut at :data:`MAX_DEPTH` (subschemas deeper become ``{}``; a keyword whose value,
such as a ``default`` or an ``enum``, nests deeper is dropped), so a hostile schema
of any depth is sanitized and sent without reaching Python's recursion limit. The
original schema is kept on the tool to validate arguments before the server is called.

A structured-output schema (``output_type``, :mod:`zett_agent.output`) has rules of
its own per native mode:

==================  ==========================================================
OpenAI strict       (Chat ``response_format``, Responses ``text.format``,
                    ``strict: true``): every object ``additionalProperties:
                    false`` and every property required.
                    :func:`openai_strict` adds the first and says None when a
                    schema cannot be strict (an optional property, a free-form
                    map): it is then sent with ``strict: false``.
Anthropic           (``output_config.format``): every object
                    ``additionalProperties: false``; keywords outside
                    :data:`ANTHROPIC_OUTPUT_KEYWORDS` (number and length bounds,
                    string formats it does not list) go into the
                    ``description``, where the model still reads them
                    (:func:`anthropic_output_schema`).
Gemini              ``responseJsonSchema`` takes JSON Schema as it is;
                    ``responseSchema`` is the OpenAPI subset above
                    (:func:`sanitize_schema` with ``"gemini"``).
==================  ==========================================================

Validation always uses the host's own type, never the sanitized schema.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zett_agent.messages import json_too_deep

__all__ = [
    "ANTHROPIC_OUTPUT_KEYWORDS",
    "GEMINI_KEYWORDS",
    "MAX_DEPTH",
    "MAX_NAME",
    "anthropic_output_schema",
    "openai_strict",
    "sanitize_name",
    "sanitize_schema",
]

MAX_NAME = 64
"""The longest tool name every provider accepts (characters)."""

MAX_DEPTH = 32
"""Schema nesting kept (deeper parts become ``{}``)."""

GEMINI_KEYWORDS = frozenset(
    {
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    }
)
"""The Schema fields of Gemini's ``FunctionDeclaration.parameters`` (Gemini API
reference, "Schema")."""

_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "not",
    "contains",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)
_SCHEMA_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
_COMBINATORS = ("anyOf", "oneOf", "allOf")


@dataclass(frozen=True)
class _Rules:
    object_root: bool = True  # type "object" at the root, no combinators there
    subset: frozenset[str] | None = None  # keep only these keywords (None: all)
    inline_refs: bool = False  # resolve local $ref, drop $defs
    single_type: bool = False  # "type": ["string", "null"] -> "string" + nullable
    string_enums: bool = False  # drop an enum that holds non-strings


_GEMINI = _Rules(subset=GEMINI_KEYWORDS, inline_refs=True, single_type=True, string_enums=True)
_RULES: Mapping[str, _Rules] = {
    "anthropic": _Rules(),
    "openai-chat": _Rules(),
    "openai-responses": _Rules(),
    "ollama": _Rules(),
    "gemini": _GEMINI,
}
_ALL = _GEMINI  # unknown protocol: what every protocol accepts


def sanitize_name(name: str) -> str:
    """``name`` as a tool name every provider accepts: characters outside
    ``A-Za-z0-9_-`` become ``_``, a leading digit or ``-`` gets a ``_`` before it,
    and a name longer than :data:`MAX_NAME` is cut and ends with 8 hex characters
    of its SHA-1 (so two long names stay apart)."""
    clean = _NOT_NAME.sub("_", name) or "_"
    if not (clean[0].isascii() and (clean[0].isalpha() or clean[0] == "_")):
        clean = "_" + clean
    if len(clean) > MAX_NAME:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        clean = f"{clean[: MAX_NAME - 9]}_{digest}"
    return clean


def sanitize_schema(schema: Any, protocol: str | None = None) -> dict[str, Any]:
    """A copy of the JSON ``schema`` that ``protocol`` accepts (``"anthropic"``,
    ``"openai-chat"``, ``"openai-responses"``, ``"ollama"``, ``"gemini"``; None or
    another name: the rules of all of them). Never raises."""
    rules = _RULES.get(protocol or "", _ALL)
    root = schema if isinstance(schema, dict) else {}
    defs: dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        if isinstance(root.get(key), dict):
            defs.update(root[key])
    clean = _clean(root, rules, defs, 0, frozenset())
    if rules.object_root:
        for key in _COMBINATORS:
            clean.pop(key, None)
        clean["type"] = "object"
        if not isinstance(clean.get("properties"), dict):
            clean["properties"] = {}
    return clean


def _clean(
    node: Any, rules: _Rules, defs: dict[str, Any], depth: int, seen: frozenset[str]
) -> dict[str, Any]:
    if not isinstance(node, dict) or depth > MAX_DEPTH:
        return {}
    ref = node.get("$ref")
    if rules.inline_refs and isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        target = defs.get(name) if ref.startswith(("#/$defs/", "#/definitions/")) else None
        if target is None or name in seen:  # remote or recursive: any value
            return {k: node[k] for k in ("description",) if isinstance(node.get(k), str)}
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _clean(merged, rules, defs, depth + 1, seen | {name})
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS:
            if isinstance(value, dict):
                out[key] = {
                    str(k): _clean(v, rules, defs, depth + 1, seen) for k, v in value.items()
                }
        elif key in _SCHEMA_ONE:
            if isinstance(value, dict):
                out[key] = _clean(value, rules, defs, depth + 1, seen)
            elif isinstance(value, bool):
                out[key] = value
            elif key == "items" and isinstance(value, list) and value:  # draft-4 tuple form
                out[key] = _clean(value[0], rules, defs, depth + 1, seen)
        elif key in _SCHEMA_LIST:
            if isinstance(value, list):
                out[key] = [_clean(v, rules, defs, depth + 1, seen) for v in value]
        elif not json_too_deep(value, MAX_DEPTH):  # default, enum, const, example...
            out[key] = value
    if rules.inline_refs:
        out.pop("$defs", None)
        out.pop("definitions", None)
    if rules.subset is not None:
        _to_subset(out, rules)
    if isinstance(out.get("required"), list) and isinstance(out.get("properties"), dict):
        out["required"] = [r for r in out["required"] if r in out["properties"]]
    return out


def _to_subset(out: dict[str, Any], rules: _Rules) -> None:
    """Rewrite what the subset says differently, then drop what it lacks."""
    if "oneOf" in out and "anyOf" not in out:
        out["anyOf"] = out.pop("oneOf")
    all_of = out.pop("allOf", None)
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        for key, value in all_of[0].items():
            out.setdefault(key, value)
    if "const" in out and "enum" not in out:
        out["enum"] = [out["const"]]
    kind = out.get("type")
    if rules.single_type and isinstance(kind, list):
        kinds = [k for k in kind if isinstance(k, str) and k != "null"]
        if "null" in kind:
            out["nullable"] = True
        if kinds:
            out["type"] = kinds[0]
        else:
            out.pop("type")
    elif kind is not None and not isinstance(kind, str):
        out.pop("type")
    if rules.string_enums and "enum" in out:
        enum = out["enum"]
        if not (isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum)):
            out.pop("enum")
    assert rules.subset is not None
    for key in [k for k in out if k not in rules.subset]:
        del out[key]


# ---------------------------------------------------------------- structured output

ANTHROPIC_OUTPUT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "title",
        "default",
        "format",
        "minItems",
    }
)
"""The JSON Schema keywords Anthropic's structured outputs take (the "JSON Schema
limitations" of https://platform.claude.com/docs/en/build-with-claude/structured-outputs;
``format`` only for :data:`ANTHROPIC_STRING_FORMATS`, ``minItems`` only 0 or 1)."""

ANTHROPIC_STRING_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)


def openai_strict(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """A copy of ``schema`` for OpenAI's ``strict: true`` (every object closed with
    ``additionalProperties: false``), or None when it cannot be strict: an object
    with a property it does not require, or with ``additionalProperties`` other
    than false (a map). Sources: OpenAI "Structured Outputs", supported schemas
    (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas)."""
    ok = True

    def close(node: Any, depth: int) -> Any:
        nonlocal ok
        if depth > MAX_DEPTH:
            ok = False
            return node
        if isinstance(node, list):
            return [close(item, depth + 1) for item in node]
        if not isinstance(node, dict):
            return node
        out = {
            k: close(v, depth + 1) if k != "enum" and k != "const" else v for k, v in node.items()
        }
        if out.get("type") == "object" or isinstance(out.get("properties"), dict):
            extra = out.get("additionalProperties", False)
            if extra is not False:
                ok = False
            out["additionalProperties"] = False
            properties = out.get("properties") or {}
            if set(properties) != set(out.get("required") or ()):
                ok = False
        return out

    closed = close(dict(schema), 0)
    return closed if ok else None


def anthropic_output_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` Anthropic's ``output_config.format`` takes: every object
    closed (``additionalProperties: false``), and each keyword it does not take
    written into that node's ``description`` (``{minimum: 1}``) instead."""

    def fix(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [fix(item, depth + 1) for item in node]
        if not isinstance(node, dict) or depth > MAX_DEPTH:
            return node
        out: dict[str, Any] = {}
        dropped: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                out[key] = {str(k): fix(v, depth + 1) for k, v in value.items()}
            elif key in ("items", "anyOf", "allOf") or key == "additionalProperties":
                out[key] = fix(value, depth + 1)
            elif key == "oneOf":
                out["anyOf"] = fix(value, depth + 1)
            elif key in ANTHROPIC_OUTPUT_KEYWORDS and _anthropic_takes(key, value):
                out[key] = value
            else:
                dropped[key] = value
        if out.get("type") == "object" or isinstance(out.get("properties"), dict):
            out["additionalProperties"] = False
        if dropped:
            note = "{" + ", ".join(f"{k}: {json.dumps(v)}" for k, v in dropped.items()) + "}"
            text = out.get("description")
            out["description"] = f"{text}\n\n{note}" if isinstance(text, str) and text else note
        return out

    fixed: dict[str, Any] = fix(dict(schema), 0)
    return fixed


def _anthropic_takes(key: str, value: Any) -> bool:
    if key == "format":
        return value in ANTHROPIC_STRING_FORMATS
    if key == "minItems":
        return value in (0, 1)
    return True
