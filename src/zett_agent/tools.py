"""Tools: plain Python functions (sync or async) offered to the model.

The JSON schema of a tool's arguments comes from the function's signature and
docstring through pydantic (a Google-style ``Args:`` section describes each
parameter). Arguments are validated before the function runs; a validation
failure, an unknown tool or an exception in the tool is answered to the model as
an error result (``ToolResultMessage.is_error``), never raised into the run.

:class:`ToolRunner` runs the tool calls of one answer for the agent loop: the
extensions' ``before_tool`` / ``after_tool`` hooks, one span per call, all calls
at once when ``parallel`` (results keep the model's order), and the cut-off rule:
under MAX_OUTPUT a call whose arguments are not a whole JSON object is answered
with an error result (:data:`CUT_OFF_ARGUMENTS`) and not run.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, get_type_hints

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from zett_agent.events import _maybe_await
from zett_agent.messages import AssistantMessage, ToolCall, ToolResultMessage
from zett_agent.protocols.base import ToolSpec

if TYPE_CHECKING:
    from zett_agent.extensions import Extension
    from zett_agent.telemetry import Telemetry

__all__ = ["CUT_OFF_ARGUMENTS", "Tool", "ToolRunner", "as_tool"]

CUT_OFF_ARGUMENTS = (
    "The arguments of this tool call were cut off at the output limit; it was not run."
)

_ARG_LINE = re.compile(r"^(\w+)\s*(?:\([^)]*\))?:\s*(.+)$")  # "name (type): text"


@dataclass(frozen=True)
class Tool:
    """A function the model may call.

    ``arguments`` is the pydantic model that validates the call's arguments;
    ``spec`` is what is sent to the provider. ``requires_approval``: each call
    waits for a person's decision (:mod:`zett_agent.approvals`).
    """

    name: str
    description: str
    function: Callable[..., Any]
    arguments: type[BaseModel]
    requires_approval: bool = False

    @cached_property
    def spec(self) -> ToolSpec:
        """The name, description and JSON schema sent to providers (built once)."""
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
        fields[name] = (annotation, Field(default, description=param_docs.get(name)))
    model = create_model(
        f"{function.__name__}_arguments",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    return Tool(function.__name__, summary or function.__name__, function, model)


@dataclass(frozen=True)
class ToolRunner:
    """Runs the tool calls of one answer: hooks, spans, the cut-off rule."""

    tools: Mapping[str, Tool]
    extensions: Sequence[Extension]
    telemetry: Telemetry
    parallel: bool = True

    async def run(
        self, answer: AssistantMessage, span: Any, results: list[ToolResultMessage | None]
    ) -> None:
        """Fill ``results`` (one slot per call of ``answer.tool_calls``, in order) as
        each call finishes (``span``: the run's). When the run is cancelled, the
        slots of the calls that finished are filled and the others stay None.

        Hooks of extensions (``before_tool``/``after_tool``) are host code: an
        exception they raise propagates. The tool function's own exceptions and
        invalid arguments are answered as error results."""
        calls = answer.tool_calls
        cut_off = answer.stop is not None and answer.stop.truncated

        async def run_one(index: int, call: ToolCall) -> None:
            results[index] = await self._call(call, cut_off, span)

        if self.parallel and len(calls) > 1:
            async with anyio.create_task_group() as group:
                for index, call in enumerate(calls):
                    group.start_soon(run_one, index, call)
        else:
            for index, call in enumerate(calls):
                await run_one(index, call)

    async def _call(self, call: ToolCall, cut_off: bool, parent: Any) -> ToolResultMessage:
        if cut_off and not _is_json_object(call.arguments):
            return ToolResultMessage(call.id, call.name, CUT_OFF_ARGUMENTS, is_error=True)
        span = self.telemetry.start_tool(parent, call)
        try:
            with self.telemetry.current(span):
                result = await self._execute(call)
        except BaseException as error:
            self.telemetry.end_tool(span, None, error)
            raise
        self.telemetry.end_tool(span, result)
        return result

    async def _execute(self, call: ToolCall) -> ToolResultMessage:
        for extension in self.extensions:
            early = await _maybe_await(extension.before_tool(call))
            if isinstance(early, ToolResultMessage):
                return early
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            result = _error(call, f"Unknown tool {call.name!r}. Tools: {known}.")
        else:
            result = await tool.call(call)
        for extension in self.extensions:
            changed = await _maybe_await(extension.after_tool(call, result))
            if isinstance(changed, ToolResultMessage):
                result = changed
        return result


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text or "{}"), dict)
    except ValueError:
        return False


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
            match = _ARG_LINE.match(stripped)
            if match:
                params[match.group(1)] = match.group(2).strip()
    return "\n".join(summary_lines).strip(), params


def _error(call: ToolCall, text: str) -> ToolResultMessage:
    return ToolResultMessage(call.id, call.name, text, is_error=True)


def _short(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()
    )
