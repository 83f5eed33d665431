"""Typed results: a Python type (or a JSON schema) as a model's final answer.

:func:`output_type_of` turns what a host passes as ``output_type`` into an
:class:`OutputType`: a pydantic model, a dataclass, a TypedDict, a scalar,
``list[...]``, a union, or a JSON schema (a dict; validated with ``jsonschema``).
What it gives the rest of the runtime:

* ``schema``: the JSON schema sent to the provider. Its root is always an object
  (strict OpenAI schemas take no root ``anyOf``, tool arguments are objects):
  a type whose schema is not an object (a scalar, a list, a union) is wrapped as
  ``{"result": ...}`` (:data:`WRAPPER_KEY`), and the value unwrapped before
  validation;
* ``branches``: one output tool per branch of a union (tool mode), each named
  ``final_result_<Branch>``; one ``final_result`` tool otherwise;
* :meth:`OutputType.validate` (the text of an answer, or a tool call's
  arguments) returning the typed value or raising :class:`OutputInvalid` with
  the errors to send back; :meth:`OutputType.partial` (pydantic's partial
  validation, ``experimental_allow_partial="trailing-strings"``) for an answer
  still streaming; :meth:`OutputType.dump` / :meth:`OutputType.load` for the
  stored JSON form (``AssistantMessage.output``).

How a structured run uses it (the stop decides before validation, retries, the
output tool in the gate) is :mod:`zett_agent._structured`.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import pydantic_core
from pydantic_core import ValidationError  # pydantic's own class (pydantic re-exports it)

from zett_agent._exchange import ToolSpec
from zett_agent.errors import ConfigError

if TYPE_CHECKING:  # pydantic's model machinery is imported by the first output type made
    from pydantic import TypeAdapter

__all__ = [
    "OUTPUT_TOOL",
    "WRAPPER_KEY",
    "OutputBranch",
    "OutputInvalid",
    "OutputMode",
    "OutputRetry",
    "OutputType",
    "output_type_of",
]

OutputMode: TypeAlias = Literal["auto", "native", "tool"]
"""How a structured answer is asked for: ``"native"`` (the provider's own
structured-output setting, :func:`zett_agent.vendors.output_kind`), ``"tool"`` (a
forced output tool), ``"auto"`` (native where the vendor row has it, else tool)."""

OUTPUT_TOOL = "final_result"
"""The name of the output tool (``final_result_<Branch>`` for a union's branches)."""

WRAPPER_KEY = "result"
"""The property a non-object output is wrapped in: ``{"result": <value>}``."""

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_NOT_NAME = re.compile(r"[^A-Za-z0-9_]")


class OutputRetry(Exception):  # noqa: N818 - the host raises it to ask for a retry
    """Raised by an output validator (a host function run after the schema) to
    reject a value: ``str(error)`` is sent back to the model as the reason, and
    the answer is retried like one that failed the schema."""


class OutputInvalid(Exception):  # noqa: N818 - an outcome, caught by the loop
    """An answer that is not a valid output; ``errors`` is the text sent back to
    the model (one line per problem)."""

    def __init__(self, errors: str) -> None:
        super().__init__(errors)
        self.errors = errors


@dataclass(frozen=True)
class OutputBranch:
    """One output tool of tool mode: ``name``, its argument ``schema`` (an object;
    ``wrapped`` when the branch's own schema is not one) and the type it yields."""

    name: str
    description: str
    schema: Mapping[str, Any]
    wrapped: bool
    adapter: TypeAdapter[Any] | None
    raw_schema: Mapping[str, Any] | None = None  # a JSON-schema output: validated with it

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.schema)

    def value_of(self, data: Any) -> Any:
        """``data`` (JSON) as this branch's value; raises :class:`OutputInvalid`."""
        if self.wrapped:
            if not isinstance(data, dict) or WRAPPER_KEY not in data:
                raise OutputInvalid(f"- the answer must be an object with a {WRAPPER_KEY!r} key")
            data = data[WRAPPER_KEY]
        if self.adapter is not None:
            try:
                return self.adapter.validate_python(data)
            except ValidationError as error:
                raise OutputInvalid(_errors(error, self.wrapped)) from None
        assert self.raw_schema is not None
        return _check_schema(self.raw_schema, data)

    def partial_of(self, data: Any) -> Any:
        if self.wrapped:
            if not isinstance(data, dict) or WRAPPER_KEY not in data:
                raise OutputInvalid("")
            data = data[WRAPPER_KEY]
        if self.adapter is None:
            return data
        try:
            return self.adapter.validate_python(data, experimental_allow_partial="trailing-strings")
        except ValidationError:
            raise OutputInvalid("") from None


@dataclass(frozen=True)
class OutputType:
    """A host's output type, ready for a request and for validation.

    ``type`` is what the host passed (a JSON schema dict for a schema output);
    ``name`` and ``description`` name the format; ``native`` is the answer of a
    native mode (its object-rooted ``schema``, ``wrapped`` or not); ``branches``
    are the output tools of tool mode (more than one for a union).
    """

    type: Any
    name: str
    description: str
    native: OutputBranch
    branches: tuple[OutputBranch, ...]
    adapter: TypeAdapter[Any] | None

    @property
    def schema(self) -> Mapping[str, Any]:
        """The JSON schema a native mode sends (an object root)."""
        return self.native.schema

    @property
    def wrapped(self) -> bool:
        return self.native.wrapped

    @property
    def tool_names(self) -> frozenset[str]:
        return frozenset(b.name for b in self.branches)

    def tool_specs(self) -> list[ToolSpec]:
        return [b.spec for b in self.branches]

    # ------------------------------------------------------------ validation

    def validate(self, text: str) -> Any:
        """The typed value of an answer's ``text`` (JSON; a surrounding Markdown code
        fence is ignored). Raises :class:`OutputInvalid` with the errors."""
        return self.native.value_of(_parse(text))

    def validate_call(self, name: str, arguments: str) -> Any:
        """The typed value of a call of output tool ``name``; raises
        :class:`OutputInvalid`."""
        branch = next(b for b in self.branches if b.name == name)
        return branch.value_of(_parse(arguments, what="the tool call's arguments"))

    def partial(self, text: str, tool: str | None = None) -> Any:
        """The value of JSON still arriving (``text``), validated leniently
        (pydantic's partial validation: an unfinished last string or item is kept
        or dropped); None when it does not validate yet."""
        stripped = text.strip()
        if not stripped:
            return None
        try:
            data = pydantic_core.from_json(stripped, allow_partial="trailing-strings")
        except ValueError:
            return None
        branch = self.native if tool is None else next(b for b in self.branches if b.name == tool)
        try:
            return branch.partial_of(data)
        except OutputInvalid:
            return None

    # ------------------------------------------------------------ stored form

    def dump(self, value: Any) -> Any:
        """The JSON-compatible form of ``value`` (what a session stores)."""
        if self.adapter is None:
            return value
        return self.adapter.dump_python(value, mode="json")

    def load(self, data: Any) -> Any:
        """A stored output (``dump``'s form) validated again into the type."""
        if self.adapter is None:
            return data
        for branch in self.branches if len(self.branches) > 1 else ():
            try:
                return branch.value_of({WRAPPER_KEY: data} if branch.wrapped else data)
            except OutputInvalid:
                continue
        return self.adapter.validate_python(data)


def output_type_of(output_type: Any, *, name: str | None = None) -> OutputType:
    """The :class:`OutputType` of ``output_type`` (an :class:`OutputType` is returned
    as it is; a dict is a JSON schema). Raises :class:`~zett_agent.errors.ConfigError`
    for a type pydantic cannot make a schema of."""
    if isinstance(output_type, OutputType):
        return output_type
    if isinstance(output_type, Mapping):
        return _from_schema(dict(output_type), name)
    from pydantic import TypeAdapter

    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        schema = adapter.json_schema()
    except Exception as error:  # pydantic's schema errors are of several kinds
        raise ConfigError(f"output_type {output_type!r} has no JSON schema: {error}") from error
    title = _name(name or _type_name(output_type))
    description = _description(output_type, schema)
    native = _native(title, description, schema, adapter)
    members = _union_members(output_type)
    if len(members) > 1:
        branches = tuple(_branch(member) for member in members)
    else:
        branches = (replace(native, name=OUTPUT_TOOL, description=description or _FINAL),)
    return OutputType(output_type, title, description, native, branches, adapter)


_FINAL = "The final answer."


def _native(
    name: str,
    description: str,
    schema: dict[str, Any],
    adapter: TypeAdapter[Any] | None,
    raw: Mapping[str, Any] | None = None,
) -> OutputBranch:
    rooted, wrapped = _object_schema(schema, description)
    return OutputBranch(name, description, rooted, wrapped, adapter, raw)


def _from_schema(schema: dict[str, Any], name: str | None) -> OutputType:
    _jsonschema()  # a clear error now rather than at the first answer
    title = _name(name or str(schema.get("title") or "result"))
    description = str(schema.get("description") or "")
    native = _native(title, description, schema, None, schema)
    branch = replace(native, name=OUTPUT_TOOL, description=description or _FINAL)
    return OutputType(schema, title, description, native, (branch,), None)


def _branch(member: Any) -> OutputBranch:
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(member)
    schema = adapter.json_schema()
    description = _description(member, schema)
    name = f"{OUTPUT_TOOL}_{_name(_type_name(member))}"[:64]
    return _native(
        name, description or f"The final answer, as {_type_name(member)}.", schema, adapter
    )


def _object_schema(schema: dict[str, Any], description: str) -> tuple[dict[str, Any], bool]:
    """``(schema, False)`` when it is a plain object schema, else ``({"result":
    schema}, True)``; a ``title`` at the root is left out (the name says it)."""
    if schema.get("type") == "object" and not any(k in schema for k in ("anyOf", "oneOf")):
        return {k: v for k, v in schema.items() if k != "title"}, False
    defs = schema.get("$defs")
    inner = {k: v for k, v in schema.items() if k != "$defs"}
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {WRAPPER_KEY: inner},
        "required": [WRAPPER_KEY],
        "additionalProperties": False,
    }
    if description:
        wrapped["description"] = description
    if defs:
        wrapped["$defs"] = defs
    return wrapped, True


def _union_members(output_type: Any) -> list[Any]:
    origin = typing.get_origin(output_type)
    if origin is typing.Union or origin is types.UnionType:
        members = [m for m in typing.get_args(output_type) if m is not type(None)]
        if len(members) == len(typing.get_args(output_type)):  # Optional[X] stays one
            return members
    return [output_type]


def _type_name(output_type: Any) -> str:
    name = getattr(output_type, "__name__", None)
    if isinstance(name, str) and typing.get_origin(output_type) is None:
        return name
    return "result"


def _name(text: str) -> str:
    return _NOT_NAME.sub("_", text) or "result"


def _description(output_type: Any, schema: Mapping[str, Any]) -> str:
    text = schema.get("description")
    if isinstance(text, str):
        return text
    if dataclasses.is_dataclass(output_type) and isinstance(output_type, type):
        doc = output_type.__doc__ or ""
        if not doc.startswith(f"{output_type.__name__}("):  # the generated signature
            return doc.strip()
    return ""


def _parse(text: str, what: str = "the answer") -> Any:
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    if not stripped:
        raise OutputInvalid(f"- {what} is empty; it must be JSON matching the schema")
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError) as error:
        raise OutputInvalid(f"- {what} is not valid JSON: {error}") from None


def _errors(error: ValidationError, wrapped: bool) -> str:
    lines = []
    for item in error.errors(include_url=False, include_context=False)[:20]:
        path = [str(p) for p in item.get("loc", ())]
        where = ".".join([WRAPPER_KEY, *path] if wrapped else path) or "(the whole value)"
        lines.append(f"- {where}: {item.get('msg', 'invalid')}")
    return "\n".join(lines)


def _jsonschema() -> Any:
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError as error:  # pragma: no cover - a core requirement
        raise ConfigError("a JSON-schema output needs the jsonschema package") from error
    return jsonschema


def _check_schema(schema: Mapping[str, Any], data: Any) -> Any:
    jsonschema = _jsonschema()
    try:
        validator = jsonschema.validators.validator_for(schema)
        validator.check_schema(schema)
        problems: Sequence[Any] = sorted(
            validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path)
        )
    except jsonschema.exceptions.SchemaError as error:
        raise ConfigError(f"the output schema is not a valid JSON schema: {error}") from error
    if problems:
        lines = []
        for problem in problems[:20]:
            where = ".".join(str(p) for p in problem.absolute_path) or "(the whole value)"
            lines.append(f"- {where}: {problem.message}")
        raise OutputInvalid("\n".join(lines))
    return data
