"""What a tool is: a plain Python function (sync or async) offered to the model.

The JSON schema of a tool's arguments comes from the function's signature and
docstring through pydantic (a Google-style ``Args:`` section describes each
parameter). :meth:`Tool.call` validates the arguments, then runs the function; a
validation failure or an exception in the tool is answered to the model as an
error result (``ToolResultMessage.is_error``), never raised into the run.

A tool's fields say how the gate (:mod:`zett_agent.tools._gate`) treats its calls:
``timeout``, ``requires_approval`` (a person decides first) and ``idempotent``
(safe to run again when a crash left its outcome unknown). A wrapper that changes
how a tool runs (an MCP server's tool, a subagent) is a subclass or a
``dataclasses.replace`` of a tool, never a copy of its fields made by hand, so a
field added later survives every wrapper.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, get_type_hints, overload

import anyio
import anyio.to_thread

from zett_agent._exchange import ToolSpec
from zett_agent._messages import MAX_JSON_DEPTH, ToolCall, ToolResultMessage, json_too_deep
from zett_agent._parts import MediaPart, TextPart

if TYPE_CHECKING:  # pydantic's model machinery is imported by the first as_tool
    from pydantic import BaseModel, ValidationError

__all__ = ["Tool", "as_tool", "error_result", "idempotent", "is_idempotent"]

_ARG_LINE = r"^(\w+)\s*(?:\([^)]*\))?:\s*(.+)$"  # "name (type): text"; re caches it
_IDEMPOTENT = "__zett_idempotent__"
_F = TypeVar("_F", bound=Callable[..., Any])


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
    timeout: float | None = None
    """Seconds one call may run before it is answered with a timeout error (the run
    goes on); None: the run's default (``AgentRunConfig.tool_timeout``);
    ``math.inf``: no limit. A sync function runs in a thread that cannot be
    stopped: its result then says it may still be running."""
    requires_approval: bool = False
    """Each call waits for a person's decision (:mod:`zett_agent.approvals`)."""
    idempotent: bool = False
    """Running a call twice has the effect of running it once: when a process died
    while the call ran (its outcome unknown), a resumed or recovered run runs it
    again instead of answering "may or may not have taken effect". Set by
    :func:`idempotent`."""
    reports_events: ClassVar[bool] = False
    """A class whose calls report progress, logs or requests for input while they
    run (:func:`zett_agent._events.tool_events`): the loop then runs them beside
    the event stream, so those events reach the host at once."""

    @property
    def in_thread(self) -> bool:
        """Whether :meth:`call` runs the function in a worker thread (a sync function),
        which a timeout or cancellation cannot stop."""
        return type(self).call is Tool.call and not inspect.iscoroutinefunction(self.function)

    @cached_property
    def spec(self) -> ToolSpec:
        """The name, description and JSON schema sent to providers (built once)."""
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        return ToolSpec(self.name, self.description, schema)

    async def call(self, call: ToolCall) -> ToolResultMessage:
        """Validate ``call.arguments`` and run the function.

        Returns the result (a str as-is, anything else as JSON) or an error
        result saying what was wrong; never raises for bad arguments (not JSON,
        nested deeper than ``MAX_JSON_DEPTH`` levels), a failing tool or a return
        value JSON cannot encode (cancellation still propagates). A function that
        returns a content part (:class:`~zett_agent.ImagePart`...), or a
        list or tuple holding parts beside strings, gives a result whose
        ``parts`` are the media parts and whose text is the strings, text parts
        and a description of each media part (what a text-only provider reads).
        """
        try:
            raw = json.loads(call.arguments or "{}")
        except RecursionError:
            raw = _TOO_DEEP
        except ValueError:
            return error_result(call, f"arguments are not valid JSON: {call.arguments[:200]!r}")
        if raw is _TOO_DEEP or json_too_deep(raw):
            return error_result(
                call, f"the arguments are nested deeper than {MAX_JSON_DEPTH} levels; not run"
            )
        from pydantic import ValidationError

        try:
            validated = self.arguments.model_validate(raw)
        except ValidationError as error:
            return error_result(call, f"invalid arguments: {_short(error)}")
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        try:
            if not inspect.iscoroutinefunction(self.function):  # abandoned on cancel
                run = partial(self.function, **kwargs)
                value = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
            else:
                value = await self.function(**kwargs)
        except Exception as error:  # the model is told; the run goes on
            return error_result(call, f"{type(error).__name__}: {error}")
        if isinstance(value, str):
            return ToolResultMessage(call.id, call.name, value)
        with_parts = _with_parts(call, value)
        if with_parts is not None:
            return with_parts
        try:
            content = json.dumps(value, default=str)
        except Exception as error:  # tuple keys, a cycle, too deep, a failing __str__
            return error_result(
                call,
                f"the tool's return value cannot be encoded as JSON "
                f"({type(error).__name__}: {error}); it ran, but its result is lost",
            )
        return ToolResultMessage(call.id, call.name, content)


_TOO_DEEP = object()


def _with_parts(call: ToolCall, value: Any) -> ToolResultMessage | None:
    """The result of a function that returned parts (None: it did not)."""
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not any(isinstance(item, TextPart | MediaPart) for item in items):
        return None
    lines: list[str] = []
    media: list[MediaPart] = []
    for item in items:
        if isinstance(item, MediaPart):
            media.append(item)
            lines.append(item.describe())
        elif isinstance(item, TextPart):
            lines.append(item.text)
        elif isinstance(item, str):
            lines.append(item)
        else:
            try:
                lines.append(json.dumps(item, default=str))
            except Exception as error:
                return error_result(call, f"a value beside the parts cannot be encoded: {error}")
    return ToolResultMessage(call.id, call.name, "\n".join(lines), parts=tuple(media))


def as_tool(function: Callable[..., Any] | Tool, *, timeout: float | None = None) -> Tool:
    """A :class:`Tool` for ``function``: name, description and argument schema
    from its signature and docstring; ``timeout`` sets :attr:`Tool.timeout`; a
    function marked with :func:`idempotent` makes an idempotent tool. Raises
    ``TypeError`` for ``*args``/``**kwargs``."""
    if isinstance(function, Tool):
        return function if timeout is None else replace(function, timeout=timeout)
    from pydantic import ConfigDict, Field, create_model

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
    return Tool(
        function.__name__,
        summary or function.__name__,
        function,
        model,
        timeout=timeout,
        idempotent=getattr(function, _IDEMPOTENT, False) is True,
    )


@overload
def idempotent(function: Tool) -> Tool: ...
@overload
def idempotent(function: _F) -> _F: ...
def idempotent(function: Any) -> Any:
    """Declare a tool safe to run again when a crash left a call's outcome unknown
    (the process died while it ran): a resumed session or a recovered durable run
    then runs it again instead of answering "may or may not have taken effect".

    On a function, returns the function itself, marked (``@idempotent`` above
    ``def``); on a :class:`Tool`, a copy with ``idempotent=True``."""
    if isinstance(function, Tool):
        return replace(function, idempotent=True)
    setattr(function, _IDEMPOTENT, True)
    return function


def is_idempotent(tool: Tool) -> bool:
    """Whether ``tool`` is idempotent (:attr:`Tool.idempotent`, or its function was
    marked with :func:`idempotent` after the tool was made)."""
    return tool.idempotent or getattr(tool.function, _IDEMPOTENT, False) is True


def error_result(call: ToolCall, text: str) -> ToolResultMessage:
    """The error result (``is_error=True``) answering ``call`` with ``text``."""
    return ToolResultMessage(call.id, call.name, text, is_error=True)


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
            match = re.match(_ARG_LINE, stripped)
            if match:
                params[match.group(1)] = match.group(2).strip()
    return "\n".join(summary_lines).strip(), params


def _short(error: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()
    )
