"""Tool names and schemas from MCP servers, sanitized per wire protocol."""

from __future__ import annotations

import re

import pytest

mcp_schema = pytest.importorskip("zett_agent.mcp.schema", reason="the 'mcp' extra is not installed")
sanitize_name = mcp_schema.sanitize_name
sanitize_schema = mcp_schema.sanitize_schema

pytestmark = pytest.mark.mcp

EVERY_PROVIDER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


@pytest.mark.parametrize(
    "name",
    ["get-sum", "files.read", "9lives", "-dash", "ünïcode tool", "", "x" * 200, "a/b:c d"],
)
def test_every_name_becomes_one_every_provider_accepts(name: str) -> None:
    assert EVERY_PROVIDER.match(sanitize_name(name))


def test_valid_names_are_kept_and_long_ones_stay_apart() -> None:
    assert sanitize_name("get-sum") == "get-sum"
    assert sanitize_name("read_file") == "read_file"
    a, b = sanitize_name("x" * 70 + "a"), sanitize_name("x" * 70 + "b")
    assert a != b and len(a) == len(b) == 64


SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "when": {"$ref": "#/$defs/Time"},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "note": {"type": ["string", "null"], "const": "x"},
        "level": {"enum": [1, 2, 3]},
        "node": {"$ref": "#/$defs/Node"},
    },
    "required": ["when", "missing"],
    "$defs": {
        "Time": {"type": "object", "properties": {"hour": {"type": "integer", "minimum": 0}}},
        "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}},
    },
}


def test_gemini_gets_its_subset_refs_inlined_and_one_type() -> None:
    out = sanitize_schema(SCHEMA, "gemini")
    assert "$schema" not in out and "additionalProperties" not in out and "$defs" not in out
    when = out["properties"]["when"]
    assert when == {"type": "object", "properties": {"hour": {"type": "integer", "minimum": 0}}}
    assert "uniqueItems" not in out["properties"]["tags"]
    assert out["properties"]["note"] == {"type": "string", "nullable": True, "enum": ["x"]}
    assert "enum" not in out["properties"]["level"]  # Gemini enums are strings
    assert out["properties"]["node"]["properties"]["next"] == {}  # recursion cut
    assert out["required"] == ["when"]
    assert "$ref" not in repr(out)


def test_unknown_protocol_gets_what_every_protocol_accepts() -> None:
    assert sanitize_schema(SCHEMA, None) == sanitize_schema(SCHEMA, "gemini")


def test_anthropic_and_openai_keep_json_schema_but_get_an_object_root() -> None:
    out = sanitize_schema(SCHEMA, "anthropic")
    assert out["$defs"] == SCHEMA["$defs"] and out["additionalProperties"] is False
    root = sanitize_schema({"anyOf": [{"type": "string"}, {"type": "object"}]}, "openai-chat")
    assert root == {"type": "object", "properties": {}}


@pytest.mark.parametrize("junk", [None, 3, "x", [], {"type": 5, "properties": []}])
def test_unreadable_schemas_never_raise(junk: object) -> None:
    for protocol in (None, "anthropic", "gemini"):
        out = sanitize_schema(junk, protocol)
        assert out["type"] == "object" and isinstance(out["properties"], dict)


def test_deep_nesting_is_cut() -> None:
    deep: dict[str, object] = {"type": "object"}
    for _ in range(500):
        deep = {"type": "object", "properties": {"x": deep}}
    out = sanitize_schema(deep, "gemini")
    depth = 0
    node = out
    while node.get("properties"):
        node = node["properties"]["x"]
        depth += 1
    assert depth <= mcp_schema.MAX_DEPTH + 1
