"""Tool names and schemas from MCP servers, sanitized per wire protocol."""

from __future__ import annotations

import re

import pytest

mcp_schema = pytest.importorskip(
    "zett_agent.mcp._schema", reason="the 'mcp' extra is not installed"
)
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


# ---------------------------------------------------------------- Gemini, rule by rule


def gemini(schema: dict[str, object]) -> dict[str, object]:
    return sanitize_schema(schema, "gemini")


def prop(schema: dict[str, object], name: str = "p") -> object:
    return gemini({"type": "object", "properties": {name: schema}})["properties"][name]  # type: ignore[index]


def test_rule_1_only_the_subset_with_one_of_const_and_all_of_rewritten() -> None:
    assert prop({"oneOf": [{"type": "string"}, {"type": "integer"}]}) == {
        "anyOf": [{"type": "string"}, {"type": "integer"}]
    }
    assert prop({"type": "string", "const": "on"}) == {"type": "string", "enum": ["on"]}
    assert prop({"allOf": [{"type": "string", "maxLength": 3}], "description": "d"}) == {
        "type": "string", "maxLength": 3, "description": "d"
    }  # fmt: skip
    assert prop({"type": "string", "uniqueItems": True, "x-vendor": 1, "$comment": "c"}) == {
        "type": "string"
    }


@pytest.mark.parametrize(
    ("ref", "document"),
    [
        ("#/$defs/Header", {"$defs": {"Header": {"type": "string"}}}),
        ("#/definitions/Header", {"definitions": {"Header": {"type": "string"}}}),
        ("#/properties/headers", {}),  # a pointer to another property (the issue's case)
        ("#/properties/headers/items", {}),
        ("#/x-shared/a~1b/c~0d", {"x-shared": {"a/b": {"c~d": {"type": "string"}}}}),
        ("#/x-shared/with%20space", {"x-shared": {"with space": {"type": "string"}}}),
        ("#/x-list/1", {"x-list": [{"type": "integer"}, {"type": "string"}]}),
        ("#header", {"$defs": {"H": {"$anchor": "header", "type": "string"}}}),
    ],
)
def test_rule_2_every_local_pointer_is_inlined(ref: str, document: dict[str, object]) -> None:
    headers = {"type": "array", "items": {"type": "string"}}
    if ref == "#/properties/headers":
        expected: object = headers
    else:
        expected = {"type": "string"}
    schema = {
        "type": "object",
        "properties": {"headers": headers, "copy": {"$ref": ref, "description": "d"}},
        **document,
    }
    out = gemini(schema)
    assert out["properties"]["copy"] == {**expected, "description": "d"}  # type: ignore[index, dict-item]
    assert "$ref" not in repr(out) and "$defs" not in out and "definitions" not in out


@pytest.mark.parametrize(
    "ref", ["https://example.com/s.json#/A", "other.json", "#/nowhere", "#/properties/self"]
)
def test_rule_2_remote_missing_and_recursive_references_become_any_value(ref: str) -> None:
    out = gemini({"type": "object", "properties": {"self": {"$ref": ref, "description": "kept"}}})
    assert out["properties"] == {"self": {"description": "kept"}}


def test_rule_2_the_whole_document_is_inlined_once_then_the_recursion_is_cut() -> None:
    out = gemini({"type": "object", "properties": {"self": {"$ref": "#", "description": "kept"}}})
    inner = out["properties"]["self"]  # type: ignore[index]
    assert inner == {
        "type": "object",
        "description": "kept",
        "properties": {"self": {"description": "kept"}},
    }


def test_rule_2_reference_chains_and_blowups_are_bounded() -> None:
    chain = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(100)}
    chain["d100"] = {"type": "string"}
    out = gemini({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": chain})
    assert out["properties"] == {"x": {}}  # past the hop limit: any value

    # each level refers to the next twice: 2**40 nodes if inlined naively
    def twice(i: int) -> dict[str, object]:
        ref = {"$ref": f"#/$defs/L{i + 1}"}
        return {"type": "object", "properties": {"a": ref, "b": ref}}

    defs = {f"L{i}": twice(i) for i in range(40)}
    defs["L40"] = {"type": "string"}
    out = gemini({"type": "object", "properties": {"x": {"$ref": "#/$defs/L0"}}, "$defs": defs})
    assert len(repr(out)) < 2_000_000


def test_rule_3_one_type_and_nullable() -> None:
    assert prop({"type": ["integer", "null"]}) == {"type": "integer", "nullable": True}
    assert prop({"anyOf": [{"type": "string"}, {"type": "null"}]}) == {
        "type": "string", "nullable": True
    }  # fmt: skip
    assert prop({"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}) == {
        "anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": True
    }  # fmt: skip
    assert prop({"type": 7}) == {}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (  # properties/required on a string node
            {"type": "string", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "string"},
        ),
        (  # items on an object
            {"type": "object", "properties": {}, "items": {"type": "string"}, "minItems": 1},
            {"type": "object", "properties": {}},
        ),
        (
            {"type": "integer", "minLength": 1, "pattern": "x", "minimum": 0},
            {"type": "integer", "minimum": 0},
        ),
        ({"type": "boolean", "format": "x", "maximum": 3}, {"type": "boolean"}),
        (
            {"type": "array", "items": {"type": "string"}, "maxProperties": 2},
            {"type": "array", "items": {"type": "string"}},
        ),
        (  # no type: properties make it an object
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        ),
        ({"items": {"type": "string"}}, {"type": "array", "items": {"type": "string"}}),
        (
            {"type": "integer", "format": "enum", "enum": ["101", "201"]},
            {"type": "integer", "format": "enum", "enum": ["101", "201"]},
        ),
    ],
)
def test_rule_4_keywords_only_on_nodes_of_their_type(
    schema: dict[str, object], expected: dict[str, object]
) -> None:
    assert prop(schema) == expected


def test_rule_4_follows_the_google_genai_schema_documentation() -> None:
    genai = pytest.importorskip("google.genai.types", reason="google-genai is the documentation")
    fields = genai.Schema.model_fields

    def snake(name: str) -> str:
        return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()

    for keyword in mcp_schema.GEMINI_KEYWORDS:
        assert snake(keyword) in fields, keyword
    for keyword, kinds in mcp_schema.TYPED_KEYWORDS.items():
        doc = fields[snake(keyword)].description or ""
        said = set(re.findall(r"`(OBJECT|ARRAY|STRING|INTEGER|NUMBER)`", doc.split(".")[1]))
        if said:  # "If type is `OBJECT`, ..."
            assert {k.lower() for k in said} <= kinds, (keyword, said)
    # the fields the docs tie to a type are all typed here
    for name, info in fields.items():
        if re.search(r"If type is `", info.description or ""):
            camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), name)
            assert camel in mcp_schema.TYPED_KEYWORDS, name


def test_rule_5_enums_hold_strings() -> None:
    assert prop({"type": "string", "enum": ["a", 1]}) == {"type": "string"}
    assert prop({"type": "string", "enum": []}) == {"type": "string"}
    assert prop({"type": "object", "properties": {}, "enum": ["a"]}) == {
        "type": "object",
        "properties": {},
    }


def test_rule_6_required_names_only_listed_properties() -> None:
    out = gemini({"type": "object", "properties": {"a": {}}, "required": ["a", "b", 3]})
    assert out["required"] == ["a"]


def test_the_root_is_an_object_without_foreign_keywords() -> None:
    out = gemini({"type": ["object", "null"], "properties": {}, "items": {}, "minLength": 2})
    assert out == {"type": "object", "properties": {}}


@pytest.mark.parametrize("depth", [90, 100, 101, 600, 10_000])
@pytest.mark.parametrize("protocol", [None, "anthropic", "gemini"])
def test_any_depth_is_sanitized_without_recursion(depth: int, protocol: str | None) -> None:
    nested: dict[str, object] = {"type": "string"}
    default: object = "leaf"
    for _ in range(depth):
        nested = {"type": "object", "properties": {"x": nested}}
        default = [default]
    chain = {
        f"d{i}": {"type": "object", "properties": {"x": {"$ref": f"#/$defs/d{i + 1}"}}}
        for i in range(depth)
    }
    chain[f"d{depth}"] = {"type": "string"}
    schema = {
        "type": "object",
        "properties": {"deep": nested, "value": {"type": "array", "default": default},
                       "linked": {"$ref": "#/$defs/d0"}},
        "$defs": chain,
    }  # fmt: skip
    out = sanitize_schema(schema, protocol)
    assert out["type"] == "object"
    assert "default" not in out["properties"]["value"]  # nested deeper than MAX_DEPTH
    node = out["properties"]["deep"]
    levels = 0
    while isinstance(node, dict) and node.get("properties"):
        node = node["properties"]["x"]
        levels += 1
    assert levels <= mcp_schema.MAX_DEPTH + 1
