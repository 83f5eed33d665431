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
keywords            Gemini's ``parameters`` is an OpenAPI 3.0 subset (Gemini API
                    reference, "Schema"): the rules below.
==================  ==========================================================

Gemini's rules, applied to every node (each has a test in
``tests/test_mcp_schema.py``):

1. Only the keywords of :data:`GEMINI_KEYWORDS`; any other ("Unknown name ...")
   is dropped, after rewriting what the subset says differently: ``oneOf`` is
   ``anyOf``, ``const`` is a one-value ``enum``, a single ``allOf`` is merged.
2. ``$ref`` is not accepted: **every local reference is inlined**, any JSON
   pointer into the document (``#``, ``#/$defs/A``, ``#/definitions/A``,
   ``#/properties/headers``, ``~0``/``~1`` and percent escapes) and a
   ``$anchor`` (``#name``); a reference to another document, one that points
   nowhere, or one that recurses becomes ``{}`` (any value) keeping its
   ``description``. ``$defs``/``definitions`` are then dropped.
3. ``type`` is one string: ``["string", "null"]`` is ``"string"`` with
   ``nullable: true``; an ``anyOf`` branch ``{"type": "null"}`` likewise makes
   its node ``nullable`` (and a single branch left is merged into the node).
4. Keywords belong to their type (:data:`TYPED_KEYWORDS`, as the ``google-genai``
   ``Schema`` fields document them): ``properties``, ``required``,
   ``minProperties``, ``maxProperties`` and ``propertyOrdering`` only on an object
   node; ``items``, ``minItems``, ``maxItems`` only on an array; ``minLength``,
   ``maxLength``, ``pattern`` only on a string; ``minimum``, ``maximum`` only on a
   number or integer; ``format`` and ``enum`` on those three. A node without
   ``type`` that has ``properties`` is an object, one with ``items`` an array.
5. ``enum`` holds strings (an enum of other values is dropped).
6. ``required`` names only listed ``properties``.

:func:`sanitize_schema` applies the rules of one protocol (by its name in
:mod:`zett_agent.protocols`), or of all of them when the protocol is not known.
It never raises: an unreadable part becomes ``{}`` (any value). It walks the
schema with an explicit stack (no recursion), cuts nesting at :data:`MAX_DEPTH`
(subschemas deeper become ``{}``; a keyword whose value, such as a ``default`` or
an ``enum``, nests deeper is dropped) and stops inlining after :data:`MAX_NODES`
subschemas, so a hostile schema of any depth or any number of references is
sanitized in bounded time without reaching Python's recursion limit. The
original schema is kept on the tool to validate arguments before the server is
called.

A structured-output schema (``output_type``, :mod:`zett_agent._output`) has rules of
its own per native mode:

==================  ==========================================================
OpenAI strict       (Chat ``response_format``, Responses ``text.format``,
                    ``strict: true``): every object ``additionalProperties:
                    false`` and every property required; a ``$ref``
                    beside other keywords is inlined (as the openai SDK's
                    strict helper does).
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
from urllib.parse import unquote

from zett_agent._messages import json_too_deep

__all__ = [
    "ANTHROPIC_OUTPUT_KEYWORDS",
    "GEMINI_KEYWORDS",
    "MAX_DEPTH",
    "MAX_NAME",
    "MAX_NODES",
    "TYPED_KEYWORDS",
    "anthropic_output_schema",
    "openai_strict",
    "sanitize_name",
    "sanitize_schema",
]

MAX_NAME = 64
"""The longest tool name every provider accepts (characters)."""

MAX_DEPTH = 32
"""Schema nesting kept (deeper parts become ``{}``)."""

MAX_NODES = 5_000
"""Subschemas written for one schema (inlined references count each time); the
rest become ``{}``."""

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


_OBJECT_ONLY = ("properties", "required", "minProperties", "maxProperties", "propertyOrdering")
_ARRAY_ONLY = ("items", "minItems", "maxItems")
_STRING_ONLY = ("minLength", "maxLength", "pattern")
_NUMBER_ONLY = ("minimum", "maximum")
_SCALAR_TYPES = frozenset({"string", "number", "integer"})  # may have format and enum
TYPED_KEYWORDS: Mapping[str, frozenset[str]] = {
    **{key: frozenset({"object"}) for key in _OBJECT_ONLY},
    **{key: frozenset({"array"}) for key in _ARRAY_ONLY},
    **{key: frozenset({"string"}) for key in _STRING_ONLY},
    **{key: frozenset({"number", "integer"}) for key in _NUMBER_ONLY},
    "format": _SCALAR_TYPES,
    "enum": _SCALAR_TYPES,
}
"""Gemini keywords that belong to nodes of some types only (rule 4), from the
``google-genai`` ``Schema`` field docs ("If type is ``OBJECT``, ...")."""
_MAX_REF_HOPS = 32  # a $ref to a $ref to ...: followed this many times


@dataclass(frozen=True)
class _Rules:
    object_root: bool = True  # type "object" at the root, no combinators there
    subset: frozenset[str] | None = None  # keep only these keywords (None: all)
    inline_refs: bool = False  # resolve local $ref, drop $defs
    single_type: bool = False  # "type": ["string", "null"] -> "string" + nullable
    string_enums: bool = False  # drop an enum that holds non-strings
    typed_keywords: bool = False  # keywords only on nodes of their type (rule 4)


_GEMINI = _Rules(
    subset=GEMINI_KEYWORDS,
    inline_refs=True,
    single_type=True,
    string_enums=True,
    typed_keywords=True,
)
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
    clean = _Walk(root, rules).run()
    if rules.object_root:
        for key in _COMBINATORS:
            clean.pop(key, None)
        clean["type"] = "object"
        if not isinstance(clean.get("properties"), dict):
            clean["properties"] = {}
        if rules.typed_keywords:
            for key in [k for k, kinds in TYPED_KEYWORDS.items() if "object" not in kinds]:
                clean.pop(key, None)
            clean.pop("nullable", None)
    return clean


class _Walk:
    """One sanitizing pass: an explicit stack of (input node, output dict, depth,
    references followed on the way), then each output finished children first."""

    def __init__(self, root: dict[str, Any], rules: _Rules) -> None:
        self.root = root
        self.rules = rules
        self.budget = MAX_NODES
        self.anchors: dict[str, Any] | None = None
        self.stack: list[tuple[Any, dict[str, Any], int, frozenset[str]]] = []
        self.written: list[dict[str, Any]] = []

    def run(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.stack.append((self.root, out, 0, frozenset()))
        while self.stack:
            self._visit(*self.stack.pop())
        for node in reversed(self.written):  # children were written after their parents
            _finish(node, self.rules)
        return out

    def _child(self, value: Any, depth: int, refs: frozenset[str]) -> dict[str, Any]:
        child: dict[str, Any] = {}
        if isinstance(value, dict) and depth <= MAX_DEPTH and self.budget > 0:
            self.budget -= 1
            self.stack.append((value, child, depth, refs))
        return child

    def _visit(
        self, node: dict[str, Any], out: dict[str, Any], depth: int, refs: frozenset[str]
    ) -> None:
        self.written.append(out)
        if self.rules.inline_refs:
            resolved = self._resolve(node, refs)
            if resolved is None:  # remote, missing or recursive: any value
                if isinstance(node.get("description"), str):
                    out["description"] = node["description"]
                return
            node, refs = resolved
        for key, value in node.items():
            if key in _SCHEMA_MAPS:
                if isinstance(value, dict):
                    out[key] = {str(k): self._child(v, depth + 1, refs) for k, v in value.items()}
            elif key in _SCHEMA_ONE:
                if isinstance(value, dict):
                    out[key] = self._child(value, depth + 1, refs)
                elif isinstance(value, bool):
                    out[key] = value
                elif key == "items" and isinstance(value, list) and value:  # draft-4 tuple form
                    out[key] = self._child(value[0], depth + 1, refs)
            elif key in _SCHEMA_LIST:
                if isinstance(value, list):
                    out[key] = [self._child(v, depth + 1, refs) for v in value]
            elif not json_too_deep(value, MAX_DEPTH):  # default, enum, const, example...
                out[key] = value

    def _resolve(
        self, node: dict[str, Any], refs: frozenset[str]
    ) -> tuple[dict[str, Any], frozenset[str]] | None:
        """``node`` with its ``$ref`` chain inlined (the node's own keywords win)."""
        for _ in range(_MAX_REF_HOPS):
            ref = node.get("$ref")
            if not isinstance(ref, str):
                return node, refs
            target = self._target(ref) if ref not in refs else None
            if not isinstance(target, dict):
                return None
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            refs = refs | {ref}
        return None

    def _target(self, ref: str) -> Any:
        """What a local reference points at (None: not local, or nothing)."""
        if not ref.startswith("#"):
            return None  # another document: never fetched
        fragment = unquote(ref[1:])
        if fragment and not fragment.startswith("/"):
            return self._anchor(fragment)
        node: Any = self.root
        for token in fragment.split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
        return node

    def _anchor(self, name: str) -> Any:
        if self.anchors is None:  # found once, iteratively, on first use
            self.anchors = {}
            todo: list[tuple[Any, int]] = [(self.root, 0)]
            while todo:
                node, depth = todo.pop()
                if depth > MAX_DEPTH:
                    continue
                if isinstance(node, dict):
                    anchor = node.get("$anchor")
                    if isinstance(anchor, str):
                        self.anchors.setdefault(anchor, node)
                    todo.extend((v, depth + 1) for v in node.values())
                elif isinstance(node, list):
                    todo.extend((v, depth + 1) for v in node)
        return self.anchors.get(name)


def _finish(out: dict[str, Any], rules: _Rules) -> None:
    """The rules that read a node's own keywords (its children are finished)."""
    if rules.inline_refs:
        out.pop("$defs", None)
        out.pop("definitions", None)
    if rules.subset is not None:
        _to_subset(out, rules)
    if rules.typed_keywords:
        _typed_keywords(out)
    if isinstance(out.get("required"), list):
        properties = out.get("properties")
        names = properties if isinstance(properties, dict) else {}
        out["required"] = [r for r in out["required"] if isinstance(r, str) and r in names]


def _to_subset(out: dict[str, Any], rules: _Rules) -> None:
    """Rewrite what the subset says differently (rules 1, 3, 5), then drop what
    it lacks."""
    if "oneOf" in out and "anyOf" not in out:
        out["anyOf"] = out.pop("oneOf")
    all_of = out.pop("allOf", None)
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        for key, value in all_of[0].items():
            out.setdefault(key, value)
    if "const" in out and "enum" not in out:
        out["enum"] = [out["const"]]
    if rules.single_type:
        _one_type(out)
    if rules.string_enums and "enum" in out:
        enum = out["enum"]
        if not (isinstance(enum, list) and enum and all(isinstance(v, str) for v in enum)):
            out.pop("enum")
    assert rules.subset is not None
    for key in [k for k in out if k not in rules.subset]:
        del out[key]


def _one_type(out: dict[str, Any]) -> None:
    kind = out.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if isinstance(k, str) and k != "null"]
        if "null" in kind:
            out["nullable"] = True
        if kinds:
            out["type"] = kinds[0]
        else:
            out.pop("type")
    elif kind == "null":
        out.pop("type")
        out["nullable"] = True
    elif kind is not None and not isinstance(kind, str):
        out.pop("type")
    branches = out.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in branches if not (isinstance(b, dict) and _only_null(b))]
        if len(kept) < len(branches):
            out["nullable"] = True
        if len(kept) == 1 and isinstance(kept[0], dict):
            del out["anyOf"]
            for key, value in kept[0].items():
                out.setdefault(key, value)
        elif kept:
            out["anyOf"] = kept
        else:
            del out["anyOf"]


def _only_null(branch: dict[str, Any]) -> bool:
    """A branch that allows only null (``{"type": "null"}``, or ``nullable`` alone
    once its null type was read)."""
    return set(branch) <= {"nullable", "description", "title"} and branch.get("nullable") is True


def _typed_keywords(out: dict[str, Any]) -> None:
    """Rule 4: each keyword only on a node of its type."""
    kind = out.get("type")
    if kind is None and "anyOf" not in out:
        if "properties" in out:
            kind = out["type"] = "object"
        elif "items" in out:
            kind = out["type"] = "array"
    if not isinstance(kind, str):
        return
    for key in [k for k, kinds in TYPED_KEYWORDS.items() if k in out and kind not in kinds]:
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
    """A copy of ``schema`` for OpenAI's ``strict: true``, or None when it cannot be
    strict: an object with a property it does not require, or with
    ``additionalProperties`` other than false (a map), or a ``$ref`` that does not
    resolve inside the schema.

    What the copy changes, each a rule of OpenAI "Structured Outputs", supported
    schemas (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas)
    and done the same way by the pinned ``openai`` SDK's ``to_strict_json_schema``
    (``openai/lib/_pydantic.py``; ``tests/test_strict_schemas_match_the_sdk.py``
    compares the two):

    * every object gets ``additionalProperties: false``;
    * a ``$ref`` beside other keywords (pydantic writes ``{"$ref": ..., "description":
      ...}`` for a described nested model field) is inlined: the target's keywords,
      the node's own winning, then closed like any node; a bare ``$ref`` stays;
    * an ``allOf`` of one schema is merged into its node;
    * a ``default`` of None is dropped (the field is nullable already).
    """
    ok = True
    root = dict(schema)

    def resolve(ref: Any) -> dict[str, Any] | None:
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return None
        target: Any = root
        for key in ref[2:].split("/"):
            key = key.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or key not in target:
                return None
            target = target[key]
        return target if isinstance(target, dict) else None

    def close(node: Any, depth: int) -> Any:
        nonlocal ok
        if depth > MAX_DEPTH:
            ok = False
            return node
        if isinstance(node, list):
            return [close(item, depth + 1) for item in node]
        if not isinstance(node, dict):
            return node
        branches = node.get("allOf")
        if isinstance(branches, list) and len(branches) == 1 and isinstance(branches[0], dict):
            node = {**branches[0], **{k: v for k, v in node.items() if k != "allOf"}}
        if "$ref" in node and len(node) > 1:
            target = resolve(node["$ref"])
            if target is None:
                ok = False
                return node
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return close(merged, depth + 1)
        out = {
            k: close(v, depth + 1) if k != "enum" and k != "const" else v for k, v in node.items()
        }
        if "default" in out and out["default"] is None:
            del out["default"]
        if out.get("type") == "object" or isinstance(out.get("properties"), dict):
            extra = out.get("additionalProperties", False)
            if extra is not False:
                ok = False
            out["additionalProperties"] = False
            properties = out.get("properties") or {}
            if set(properties) != set(out.get("required") or ()):
                ok = False
        return out

    closed = close(root, 0)
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
