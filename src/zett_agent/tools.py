"""Tools: plain Python functions (sync or async) offered to the model.

The JSON schema of a tool's arguments comes from the function's signature and
docstring through pydantic (a Google-style ``Args:`` section describes each
parameter). Arguments are validated before the function runs; a validation
failure, an unknown tool or an exception in the tool is answered to the model as
an error result (``ToolResultMessage.is_error``), never raised into the run.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from zett_agent.messages import ToolCall, ToolResultMessage
from zett_agent.protocols.base import ToolSpec

__all__ = ["Tool", "as_tool"]

_ARG_LINE = re.compile(r"^\s{2,}(\w+)\s*(?:\([^)]*\))?:\s*(.+)$")


@dataclass(frozen=True)
class Tool:
    """A function the model may call.

    ``arguments`` is the pydantic model that validates the call's arguments;
    ``spec`` is what is sent to the provider.
    """

    name: str
    description: str
    function: Callable[..., Any]
    arguments: type[BaseModel]

    @property
    def spec(self) -> ToolSpec:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        return ToolSpec(self.name, self.description, schema)

    async def call(self, call: ToolCall) -> ToolResultMessage:
        """Validate ``call.arguments`` and run the function.

        Returns the result (a str as-is, anything else as JSON) or an error
        result saying what was wrong; never raises for bad arguments or a failing
        tool (cancellation still propagates).
        """
        try:
            raw = json.loads(call.arguments or "{}")
        except ValueError:
            return _error(call, f"arguments are not valid JSON: {call.arguments[:200]!r}")
        try:
            validated = self.arguments.model_validate(raw)
        except ValidationError as error:
            return _error(call, f"invalid arguments: {_short(error)}")
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        try:
            if inspect.iscoroutinefunction(self.function):
                value = await self.function(**kwargs)
            else:
                value = await anyio.to_thread.run_sync(lambda: self.function(**kwargs))
        except Exception as error:  # the model is told; the run goes on
            return _error(call, f"{type(error).__name__}: {error}")
        content = value if isinstance(value, str) else json.dumps(value, default=str)
        return ToolResultMessage(call.id, call.name, content)


def as_tool(function: Callable[..., Any] | Tool) -> Tool:
    """A :class:`Tool` for ``function``: name, description and argument schema
    from its signature and docstring. Raises ``TypeError`` for ``*args``/``**kwargs``."""
    if isinstance(function, Tool):
        return function
    hints = get_type_hints(function)
    doc = inspect.getdoc(function) or ""
    summary, param_docs = _parse_doc(doc)
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(function).parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {function.__name__}: *args/**kwargs are not supported")
        annotation = hints.get(name, Any)
        default = ... if param.default is param.empty else param.default
        from pydantic import Field

        fields[name] = (annotation, Field(default, description=param_docs.get(name)))
    model = create_model(
        f"{function.__name__}_arguments",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    return Tool(function.__name__, summary or function.__name__, function, model)


def _parse_doc(doc: str) -> tuple[str, dict[str, str]]:
    summary_lines: list[str] = []
    params: dict[str, str] = {}
    section = "summary"
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in {"Args:", "Arguments:", "Parameters:"}:
            section = "args"
            continue
        if stripped.endswith(":") and stripped[:-1] in {"Returns", "Raises", "Yields", "Examples"}:
            section = "other"
            continue
        if section == "summary":
            summary_lines.append(line)
        elif section == "args":
            match = (
                _ARG_LINE.match("  " + stripped)
                if not line.startswith("  ")
                else _ARG_LINE.match(line)
            )
            if match:
                params[match.group(1)] = match.group(2).strip()
    return "\n".join(summary_lines).strip(), params


def _error(call: ToolCall, text: str) -> ToolResultMessage:
    return ToolResultMessage(call.id, call.name, text, is_error=True)


def _short(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()
    )
