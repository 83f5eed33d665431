"""What zett sends with ``strict: true`` to ``openai`` (Chat ``response_format``) and
``openai-responses`` (``text.format``) is what OpenAI documents for strict mode
(https://platform.openai.com/docs/guides/structured-outputs#supported-schemas) and
what the pinned openai SDK's own strict helper (``openai/lib/_pydantic.py``,
``_ensure_strict_json_schema``) makes of the same schema: a ``$ref`` beside other
keywords (a described nested model field) is inlined, every object closed."""

from __future__ import annotations

import copy
import enum
from typing import Any

import pytest
from pydantic import BaseModel, Field

from zett_agent._output import output_type_of
from zett_agent._schemas import openai_strict
from zett_agent.vendors import get_vendor
from zett_agent.vendors._fields import output_fields


class Unit(enum.Enum):
    KM = "km"
    MI = "mi"


class Point(BaseModel):
    x: float
    y: float


class Route(BaseModel):
    """A route between two points."""

    start: Point = Field(description="where it starts")
    end: Point = Field(description="where it ends", title="End")
    stops: list[Point]
    unit: Unit = Field(description="the unit of length")
    note: str = Field(description="a remark")


class Tree(BaseModel):
    label: str
    children: list[Tree] = Field(description="the subtrees")


MODELS = [Route, Tree, Point]


def refs_beside_keywords(node: Any, path: str = "#") -> list[str]:
    """Where a node holds ``$ref`` and another keyword: OpenAI strict mode rejects it
    (the SDK's helper: "we can't use `$ref`s if there are also other properties")."""
    found: list[str] = []
    if isinstance(node, dict):
        if "$ref" in node and len(node) > 1:
            found.append(path)
        for key, value in node.items():
            found += refs_beside_keywords(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += refs_beside_keywords(value, f"{path}/{index}")
    return found


def open_objects(node: Any) -> int:
    """Objects without ``additionalProperties: false`` (strict requires it)."""
    if isinstance(node, list):
        return sum(open_objects(v) for v in node)
    if not isinstance(node, dict):
        return 0
    here = int(
        (node.get("type") == "object" or "properties" in node)
        and node.get("additionalProperties") is not False
    )
    return here + sum(open_objects(v) for v in node.values())


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_zett_makes_what_the_sdk_makes(model: type[BaseModel]) -> None:
    from openai.lib._pydantic import _ensure_strict_json_schema

    schema = model.model_json_schema()
    theirs = _ensure_strict_json_schema(copy.deepcopy(schema), path=(), root=schema)
    assert openai_strict(schema) == theirs


@pytest.mark.parametrize("vendor", ["openai", "openai-responses"])
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_a_strict_schema_keeps_the_strict_rules(vendor: str, model: type[BaseModel]) -> None:
    output = output_type_of(model)
    fields = output_fields(get_vendor(vendor), "out", output.schema)
    entry = (
        fields["response_format"]["json_schema"] if vendor == "openai" else fields["text.format"]
    )
    assert entry["strict"] is True
    assert refs_beside_keywords(entry["schema"]) == []
    assert open_objects(entry["schema"]) == 0


def test_the_described_field_keeps_its_description() -> None:
    strict = openai_strict(Route.model_json_schema())
    assert strict is not None
    start = strict["properties"]["start"]
    assert start["description"] == "where it starts"
    assert set(start["properties"]) == {"x", "y"} and start["additionalProperties"] is False
    assert strict["properties"]["end"]["title"] == "End"  # the node's own keyword wins
    assert strict["properties"]["unit"]["enum"] == ["km", "mi"]
    assert strict["properties"]["stops"]["items"] == {"$ref": "#/$defs/Point"}  # bare: kept


def test_a_ref_that_does_not_resolve_is_not_strict() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/Missing", "description": "x"}},
        "required": ["a"],
    }
    assert openai_strict(schema) is None
