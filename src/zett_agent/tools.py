"""Tools: plain Python functions (sync or async) offered to the model.

The JSON schema of a tool's arguments comes from the function's signature and
docstring through pydantic (a Google-style ``Args:`` section describes each
parameter). Arguments are validated before the function runs; a validation
failure, an unknown tool or an exception in the tool is answered to the model as
an error result (``ToolResultMessage.is_error``), never raised into the run.

:class:`ToolRunner` runs the tool calls of one answer for the agent loop: the
extensions' ``before_tool`` / ``after_tool`` hooks, one span per call, all calls
at once when ``parallel`` (results keep the model's order), and the cut-off rule:
a call the wire did not finish (``ToolCall.closed`` False, under any stop), and
under MAX_OUTPUT a call whose arguments are not a whole JSON object, is answered
with an error result (:data:`CUT_OFF_ARGUMENTS`) and not run.

The runner also holds the limits that apply to every tool, whatever made it (a
Python function, an MCP server, a subagent): a timeout per call
(:attr:`Tool.timeout`, else the run's :data:`DEFAULT_TOOL_TIMEOUT`), the number
of calls per answer, the size of a call's arguments and of its result. A call
over a limit is answered with an error result saying which, and the run goes on;
so is a call whose tool raises ``CancelledError`` by itself (a cancellation of
the run still cancels), and a call whose return value JSON cannot encode.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any, get_type_hints

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from zett_agent.events import _maybe_await
from zett_agent.messages import (
    MAX_JSON_DEPTH,
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    json_too_deep,
)
from zett_agent.protocols.base import ModelResponse, ToolSpec

if TYPE_CHECKING:
    from zett_agent.extensions import Extension
    from zett_agent.telemetry import Telemetry

__all__ = [
    "CUT_OFF_ARGUMENTS",
    "DEFAULT_MAX_TOOL_ARGUMENT_CHARS",
    "DEFAULT_MAX_TOOL_CALLS",
    "DEFAULT_MAX_TOOL_RESULT_CHARS",
    "DEFAULT_TOOL_TIMEOUT",
    "Tool",
    "ToolRunner",
    "as_tool",
    "distinct_call_ids",
    "is_cut_off",
]

CUT_OFF_ARGUMENTS = (
    "The arguments of this tool call were cut off at the output limit; it was not run."
)

DEFAULT_TOOL_TIMEOUT = 300.0
"""Seconds a tool call may run when neither the tool nor the run sets a timeout."""
DEFAULT_MAX_TOOL_CALLS = 64
"""Tool calls run per answer; the calls after them are answered with an error."""
DEFAULT_MAX_TOOL_ARGUMENT_CHARS = 1_000_000
"""Characters of a call's argument JSON; a longer call is answered with an error."""
DEFAULT_MAX_TOOL_RESULT_CHARS = 100_000
"""Characters of a result sent to the model (about 25,000 tokens); the rest is cut
and the result says so."""

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
    timeout: float | None = None
    """Seconds one call may run before it is answered with a timeout error (the run
    goes on); None: the run's default (``AgentRunConfig.tool_timeout``);
    ``math.inf``: no limit. A sync function runs in a thread that cannot be
    stopped: its result then says it may still be running."""
    requires_approval: bool = False

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
        value JSON cannot encode (cancellation still propagates).
        """
        try:
            raw = json.loads(call.arguments or "{}")
        except RecursionError:
            raw = _TOO_DEEP
        except ValueError:
            return _error(call, f"arguments are not valid JSON: {call.arguments[:200]!r}")
        if raw is _TOO_DEEP or json_too_deep(raw):
            return _error(
                call, f"the arguments are nested deeper than {MAX_JSON_DEPTH} levels; not run"
            )
        try:
            validated = self.arguments.model_validate(raw)
        except ValidationError as error:
            return _error(call, f"invalid arguments: {_short(error)}")
        kwargs = {name: getattr(validated, name) for name in type(validated).model_fields}
        try:
            if not inspect.iscoroutinefunction(self.function):  # abandoned on cancel
                run = partial(self.function, **kwargs)
                value = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
            else:
                value = await self.function(**kwargs)
        except Exception as error:  # the model is told; the run goes on
            return _error(call, f"{type(error).__name__}: {error}")
        if isinstance(value, str):
            return ToolResultMessage(call.id, call.name, value)
        try:
            content = json.dumps(value, default=str)
        except Exception as error:  # tuple keys, a cycle, too deep, a failing __str__
            return _error(
                call,
                f"the tool's return value cannot be encoded as JSON "
                f"({type(error).__name__}: {error}); it ran, but its result is lost",
            )
        return ToolResultMessage(call.id, call.name, content)


_TOO_DEEP = object()


def as_tool(function: Callable[..., Any] | Tool, *, timeout: float | None = None) -> Tool:
    """A :class:`Tool` for ``function``: name, description and argument schema
    from its signature and docstring; ``timeout`` sets :attr:`Tool.timeout`.
    Raises ``TypeError`` for ``*args``/``**kwargs``."""
    if isinstance(function, Tool):
        return function if timeout is None else replace(function, timeout=timeout)
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
    return Tool(function.__name__, summary or function.__name__, function, model, timeout=timeout)


@dataclass(frozen=True)
class ToolRunner:
    """Runs the tool calls of one answer: hooks, spans, the cut-off rule, limits.

    ``timeout`` (seconds, None: no limit) applies to tools whose own
    :attr:`Tool.timeout` is None; ``max_calls`` calls of an answer run (None: all);
    ``max_argument_chars`` and ``max_result_chars`` bound a call's argument JSON
    and its result (None: no limit). A result over the limit is cut and says so.
    """

    tools: Mapping[str, Tool]
    extensions: Sequence[Extension]
    telemetry: Telemetry
    parallel: bool = True
    timeout: float | None = DEFAULT_TOOL_TIMEOUT
    max_calls: int | None = DEFAULT_MAX_TOOL_CALLS
    max_argument_chars: int | None = DEFAULT_MAX_TOOL_ARGUMENT_CHARS
    max_result_chars: int | None = DEFAULT_MAX_TOOL_RESULT_CHARS

    async def run(
        self, answer: AssistantMessage, span: Any, results: list[ToolResultMessage | None]
    ) -> None:
        """Fill ``results`` (one slot per call of ``answer.tool_calls``, in order) as
        each call finishes (``span``: the run's); a slot already filled is left as
        it is (the call is not run). When the run is cancelled, the slots of the
        calls that finished are filled and the others stay None.

        Hooks of extensions (``before_tool``/``after_tool``) are host code: an
        exception they raise propagates. The tool function's own exceptions
        (``CancelledError`` included), invalid arguments, timeouts and limits are
        answered as error results."""
        calls = answer.tool_calls
        cut_off = answer.stop is not None and answer.stop.truncated

        async def run_one(index: int, call: ToolCall) -> None:
            results[index] = await self._call(call, cut_off, span)

        for index, call in enumerate(calls):
            if results[index] is None:
                results[index] = self._over_limit(index, len(calls), call)
        pending = [(index, call) for index, call in enumerate(calls) if results[index] is None]
        if self.parallel and len(pending) > 1:
            async with anyio.create_task_group() as group:
                for index, call in pending:
                    group.start_soon(run_one, index, call)
        else:
            for index, call in pending:
                await run_one(index, call)

    async def _call(self, call: ToolCall, cut_off: bool, parent: Any) -> ToolResultMessage:
        if not call.closed or (cut_off and not _is_json_object(call.arguments)):
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

    def _over_limit(self, index: int, count: int, call: ToolCall) -> ToolResultMessage | None:
        """The error result for call ``index`` of ``count`` when it is over the number
        of calls per answer or the argument size; None when it may run."""
        if self.max_calls is not None and index >= self.max_calls:
            return _error(
                call,
                f"The answer asked for {count} tool calls; at most {self.max_calls} run per "
                "answer, so this one was not run.",
            )
        size = len(call.arguments)
        if self.max_argument_chars is not None and size > self.max_argument_chars:
            return _error(
                call,
                f"The arguments are {size} characters long, more than the limit of "
                f"{self.max_argument_chars}; the call was not run.",
            )
        return None

    async def _execute(self, call: ToolCall) -> ToolResultMessage:
        for extension in self.extensions:
            early = await _maybe_await(extension.before_tool(call))
            if isinstance(early, ToolResultMessage):
                return self._bounded(early)
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            result = _error(call, f"Unknown tool {call.name!r}. Tools: {known}.")
        else:
            result = await self._run_tool(tool, call)
        for extension in self.extensions:
            changed = await _maybe_await(extension.after_tool(call, result))
            if isinstance(changed, ToolResultMessage):
                result = changed
        return self._bounded(result)

    async def _run_tool(self, tool: Tool, call: ToolCall) -> ToolResultMessage:
        """``tool.call`` under its timeout; a ``CancelledError`` the tool raised by
        itself (the run was not cancelled) is the tool's failure."""
        limit = tool.timeout if tool.timeout is not None else self.timeout
        scope = anyio.move_on_after(math.inf if limit is None else limit)
        try:
            with scope:
                result = await tool.call(call)
        except anyio.get_cancelled_exc_class() as error:
            if _cancel_requested():
                raise
            return _error(call, f"the tool failed: it raised {type(error).__name__}")
        except Exception as error:  # a Tool subclass's call that raised
            if scope.cancel_called:  # it turned the timeout's cancellation into an error
                return _error(call, _timed_out(tool, limit))
            return _error(call, f"{type(error).__name__}: {error}")
        if scope.cancelled_caught:
            return _error(call, _timed_out(tool, limit))
        if scope.cancel_called and result.is_error:  # it failed as the timeout stopped it
            return _error(call, f"{_timed_out(tool, limit)} (it said: {result.content})")
        return result

    def _bounded(self, result: ToolResultMessage) -> ToolResultMessage:
        limit, size = self.max_result_chars, len(result.content)
        if limit is None or size <= limit:
            return result
        note = f"\n[the result was cut to its first {limit} of {size} characters]"
        return replace(result, content=result.content[:limit] + note)


def distinct_call_ids(
    response: ModelResponse,
) -> tuple[ModelResponse, dict[str, ToolResultMessage]]:
    """``response`` with each tool call id unique, and the error results of the
    calls that repeated an earlier call's id (by their new id).

    A repeated call gets a new id (``<id>_2``, ...) and an error result instead of
    running; the provider record is dropped (it would send the repeated id back),
    so the answer is replayed from its text and tool calls. A response whose ids
    are all distinct is returned as it is."""
    calls = response.tool_calls
    taken = {call.id for call in calls}
    if len(taken) == len(calls):
        return response, {}
    seen: set[str] = set()
    renamed: list[ToolCall] = []
    answered: dict[str, ToolResultMessage] = {}
    for call in calls:
        if call.id not in seen:
            seen.add(call.id)
            renamed.append(call)
            continue
        number = 2
        while f"{call.id or 'call'}_{number}" in taken:
            number += 1
        fresh = replace(call, id=f"{call.id or 'call'}_{number}")
        taken.add(fresh.id)
        renamed.append(fresh)
        answered[fresh.id] = _error(
            fresh,
            f"This call repeated the id {call.id!r} of an earlier call in the same answer, "
            f"so it was not run (its id is now {fresh.id!r}).",
        )
    return replace(response, tool_calls=tuple(renamed), provider_record=None), answered


def _cancel_requested() -> bool:
    """Whether the running task is being cancelled (not a ``CancelledError`` that
    code raised by itself). On asyncio, ``Task.cancelling()``; on other backends a
    cancellation cannot be raised by user code, so it is always real."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return True
    return task is None or task.cancelling() > 0


def _timed_out(tool: Tool, limit: float | None) -> str:
    text = f"The tool did not finish within its timeout of {limit:g} seconds"
    if tool.in_thread:
        return (
            text + "; it runs in a thread that cannot be stopped, so it may still be "
            "running and may still take effect."
        )
    return text + "; it was stopped."


def is_cut_off(answer: AssistantMessage, call: ToolCall) -> bool:
    """Whether :class:`ToolRunner` answers ``call`` of ``answer`` with
    :data:`CUT_OFF_ARGUMENTS` instead of running it: the wire did not finish the call
    (``closed`` False, where the call says), or the answer stopped at a limit
    (MAX_OUTPUT, CONTEXT_FULL) and the arguments are not a whole JSON object. For
    those who show calls before they run (``zett_agent.serve``); must say what
    ``ToolRunner._call`` does (tests/test_serve_stream.py checks both agree)."""
    if not call.closed:
        return True
    return answer.stop is not None and answer.stop.truncated and not _is_json_object(call.arguments)


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text or "{}"), dict)
    except (ValueError, RecursionError):  # too deep to tell: treated as cut off
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
