"""The gate: the one place every tool call passes, whatever made the tool.

A Python function, an MCP server's tool, a subagent, a durable run's step: the
loop hands each answer's calls to one :class:`ToolGate`, which applies these
rules in this order (the first that answers a call decides it):

====  ====================  ===================================================
1     stop rules            a call of an answer the model stopped abnormally
                            (REFUSAL, INTERRUPTED) is withheld (the loop removes
                            such calls before they get here); a call whose id
                            repeats an earlier one's; a call the wire did not
                            finish, or with cut-off arguments at an output limit
                            (:data:`CUT_OFF_ARGUMENTS`); a call the request did
                            not allow (:func:`allowed_tools`: a tool it did not
                            offer, any tool under ``tool_choice="none"``,
                            another tool than the one it forced). Each gets an
                            error result and never runs.
2     limits                calls per answer, characters of the arguments
3     approval              a call that needs a person's decision waits
                            (:mod:`zett_agent.tools._approvals`); the run ends
                            with it pending, and a decision comes back here
                            (approved: it goes on at 4; denied: its error result)
4     ``before_tool``       an extension may answer the call instead
5     started marker        the run's :class:`~zett_agent.tools.ToolJournal`
                            records that the call is about to be entered
6     idempotency rule      a call recorded as started before (a replay after a
                            crash) runs again only if the tool is idempotent; else
                            its result is "may or may not have taken effect"
7     timeout               the call runs under its timeout (:attr:`Tool.timeout`,
                            else the run's ``tool_timeout``)
8     result                ``after_tool`` hooks, then bounded: its text (content
                            and text parts) cut to ``max_result_chars``, its
                            media parts (images, documents, audio) to
                            ``max_result_bytes`` of bytes; handed to the caller at
                            once (stored before the next call ends)
====  ====================  ===================================================

How a result with parts is bounded: text parts count with the content towards
``max_result_chars`` (the text past it is cut, with a note); media parts are kept
in order while their bytes add up to at most ``max_result_bytes``, and each one
after that is left out, the text saying so with the part's description. Part
metadata (media type, name, URL) is bounded where a part is made
(:mod:`zett_agent._parts`: lengths, no control characters, no credentials in a
URL), so every tool source's parts follow the same rules.

Calls of a structured run's output tools (``final_result``, tool mode of
``output_type``, :mod:`zett_agent._structured`) are not tool calls of this gate:
the request offers those tools (so :func:`allowed_tools` counts them as offered,
and when the request forces one, a call of any other offered tool is "not
allowed" here by rule 1 and never runs), but the loop takes their calls out of
the answer before :meth:`ToolGate.screen` and answers them itself (the
validation errors as an error result, or "accepted"); they are never run as a
function, never refused as not offered, never counted against the limits.

Limits come before approval so that a person is never asked about a call that
would not run. Everything from 4 on happens only for a call that passed 1-3, so
the started marker never records a call that was refused, cut, over a limit or
waiting. A durable run passes the same gate: only its journal differs (the marker
and the call are DBOS steps).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio

from zett_agent._await import maybe_await
from zett_agent._exchange import ModelRequest, ModelResponse
from zett_agent._messages import AssistantMessage, ToolCall, ToolResultMessage
from zett_agent._parts import Part, TextPart
from zett_agent.stop import StopReason
from zett_agent.tools._approvals import ApprovalPolicy, needs_approval
from zett_agent.tools._definition import Tool, error_result, is_idempotent
from zett_agent.tools._outcomes import (
    CUT_OFF_ARGUMENTS,
    NO_JOURNAL,
    TOOL_CANCELLED,
    ToolJournal,
    outcome_unknown,
)

if TYPE_CHECKING:
    from zett_agent._telemetry import Telemetry
    from zett_agent.extensions._extension import Extension

__all__ = [
    "DEFAULT_MAX_TOOL_ARGUMENT_CHARS",
    "DEFAULT_MAX_TOOL_CALLS",
    "DEFAULT_MAX_TOOL_RESULT_BYTES",
    "DEFAULT_MAX_TOOL_RESULT_CHARS",
    "DEFAULT_TOOL_TIMEOUT",
    "NOT_OFFERED_TOOL_CALLS",
    "Screening",
    "ToolGate",
    "allowed_tools",
    "distinct_call_ids",
    "is_cut_off",
]

DEFAULT_TOOL_TIMEOUT = 300.0
"""Seconds a tool call may run when neither the tool nor the run sets a timeout."""
DEFAULT_MAX_TOOL_CALLS = 64
"""Tool calls run per answer; the calls after them are answered with an error."""
DEFAULT_MAX_TOOL_ARGUMENT_CHARS = 1_000_000
"""Characters of a call's argument JSON; a longer call is answered with an error."""
DEFAULT_MAX_TOOL_RESULT_CHARS = 100_000
"""Characters of a result sent to the model (about 25,000 tokens); the rest is cut
and the result says so."""
DEFAULT_MAX_TOOL_RESULT_BYTES = 10 * 1024 * 1024
"""Bytes of a result's media parts (images, documents, audio) sent to the model
(10 MiB); parts past it are left out and the result's text says so."""

NOT_OFFERED_TOOL_CALLS = "not_offered_tool_calls"
"""``stop.detail`` key: names of the answer's calls the request did not allow."""

CANCELLED_BEFORE_START = "The run was cancelled before this tool call started; it was not run."


def allowed_tools(request: ModelRequest | None) -> frozenset[str] | None:
    """The tool names whose calls ``request`` allowed: every offered tool, none
    under ``tool_choice="none"``, only the forced one when it names a tool (a call
    to another offered tool then is not allowed either: the provider was told to
    call that one). None: no request to judge by (every known tool is allowed)."""
    if request is None:
        return None
    offered = frozenset(spec.name for spec in request.tools)
    choice = request.tool_choice
    if choice == "none":
        return frozenset()
    if choice in (None, "auto", "required"):
        return offered
    return offered & {choice}


@dataclass
class Screening:
    """What rules 1-3 made of one answer's calls (in the answer's order).

    ``answered``: error results of the calls that will not run, by call id;
    ``waiting``: the calls that wait for approval; ``runnable``: the calls that go
    on (rules 4-8); ``not_offered``: names of the calls the request did not allow.
    """

    answered: dict[str, ToolResultMessage] = field(default_factory=dict)
    waiting: list[ToolCall] = field(default_factory=list)
    runnable: list[ToolCall] = field(default_factory=list)
    not_offered: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ToolGate:
    """Runs the tool calls of one run through the rules of this module, in order.

    ``tools`` are the run's tools by name; ``timeout`` (seconds, None: no limit)
    applies to tools whose own :attr:`Tool.timeout` is None; ``max_calls`` calls
    of an answer run (None: all); ``max_argument_chars`` and ``max_result_chars``
    bound a call's argument JSON and its result's text, ``max_result_bytes`` its
    media parts' bytes (None: no limit); ``approval`` is
    the run's policy (``AgentRunConfig.approval``); ``journal`` records starts
    (:mod:`zett_agent.tools._outcomes`) for run ``run_id``; ``parallel`` runs an
    answer's calls at once.
    """

    tools: Mapping[str, Tool]
    extensions: Sequence[Extension]
    telemetry: Telemetry
    parallel: bool = True
    timeout: float | None = DEFAULT_TOOL_TIMEOUT
    max_calls: int | None = DEFAULT_MAX_TOOL_CALLS
    max_argument_chars: int | None = DEFAULT_MAX_TOOL_ARGUMENT_CHARS
    max_result_chars: int | None = DEFAULT_MAX_TOOL_RESULT_CHARS
    max_result_bytes: int | None = DEFAULT_MAX_TOOL_RESULT_BYTES
    approval: ApprovalPolicy | None = None
    journal: ToolJournal = NO_JOURNAL
    run_id: str = ""

    # ------------------------------------------------------------ rules 1-3

    def screen(
        self,
        answer: AssistantMessage,
        request: ModelRequest | None = None,
        *,
        answered: Mapping[str, ToolResultMessage] | None = None,
    ) -> Screening:
        """Rules 1-3 for every call of ``answer`` (which ``request`` asked for;
        None: no request rule). ``answered`` holds results decided before (a
        repeated id's)."""
        screening = Screening()
        allowed = allowed_tools(request)
        calls = answer.tool_calls
        stop = answer.stop
        withheld = stop is not None and stop.reason in (StopReason.REFUSAL, StopReason.INTERRUPTED)
        truncated = stop is not None and stop.truncated
        for index, call in enumerate(calls):
            early = (answered or {}).get(call.id)
            if early is None and withheld:
                early = error_result(call, _WITHHELD)
            if early is None and (
                not call.closed or (truncated and not _is_object(call.arguments))
            ):
                early = ToolResultMessage(call.id, call.name, CUT_OFF_ARGUMENTS, is_error=True)
            if early is None and allowed is not None and call.name not in allowed:
                early = error_result(call, self._not_allowed(call, request))
                screening.not_offered.append(call.name)
            if early is None:
                early = self._over_limit(index, len(calls), call)
            if early is not None:
                screening.answered[call.id] = early
            elif needs_approval(call, self.tools.get(call.name), self.approval):
                screening.waiting.append(call)
            else:
                screening.runnable.append(call)
        return screening

    def _not_allowed(self, call: ToolCall, request: ModelRequest | None) -> str:
        choice = request.tool_choice if request is not None else None
        if choice == "none":
            return (
                f"The request allowed no tool calls (tool_choice none), so this call of "
                f"{call.name!r} was not run."
            )
        offered = {spec.name for spec in request.tools} if request is not None else set()
        if call.name in offered:
            return (
                f"The request required a call of {choice!r}, so this call of {call.name!r} "
                "was not run."
            )
        known = ", ".join(sorted(offered)) or "none"
        return (
            f"Unknown tool {call.name!r}: the request did not offer it, so it was not run. "
            f"Tools: {known}."
        )

    def _over_limit(self, index: int, count: int, call: ToolCall) -> ToolResultMessage | None:
        """The error result for call ``index`` of ``count`` when it is over the number
        of calls per answer or the argument size; None when it may run."""
        if self.max_calls is not None and index >= self.max_calls:
            return error_result(
                call,
                f"The answer asked for {count} tool calls; at most {self.max_calls} run per "
                "answer, so this one was not run.",
            )
        size = len(call.arguments)
        if self.max_argument_chars is not None and size > self.max_argument_chars:
            return error_result(
                call,
                f"The arguments are {size} characters long, more than the limit of "
                f"{self.max_argument_chars}; the call was not run.",
            )
        return None

    # ------------------------------------------------------------ rules 4-8

    async def run(
        self,
        calls: Sequence[ToolCall],
        span: Any,
        on_result: Callable[[int, ToolResultMessage], Awaitable[None]],
        *,
        answered: Mapping[str, ToolResultMessage] | None = None,
    ) -> None:
        """Run ``calls`` through rules 4-8 (those in ``answered``, by id, were
        decided by rules 1-3 and are handed over as they are); ``on_result(index,
        result)`` is awaited as each call ends (``span``: the run's). One after
        another in the calls' order, or all at once when ``parallel`` (then the
        answered ones first, the others as they end).

        Cancelled (the run, not a tool by itself): each call that had not ended is
        handed its result first, :data:`TOOL_CANCELLED` for a call that had
        started, "not run" for one that had not; then the cancellation propagates.
        Hooks of extensions are host code: an exception they raise propagates.
        The tool's own exceptions (``CancelledError`` included), invalid
        arguments, timeouts and limits are error results."""
        decided = answered or {}
        done: set[int] = set()
        entered: set[int] = set()

        async def one(index: int, call: ToolCall) -> None:
            result = decided.get(call.id)
            if result is None:
                result = await self._call(call, span, lambda: entered.add(index))
            done.add(index)
            await on_result(index, result)

        try:
            if self.parallel and len(calls) - len(decided) > 1:
                for index, call in enumerate(calls):
                    if call.id in decided:
                        await one(index, call)
                async with anyio.create_task_group() as group:
                    for index, call in enumerate(calls):
                        if index not in done:
                            group.start_soon(one, index, call)
            else:
                for index, call in enumerate(calls):
                    await one(index, call)
        except BaseException as error:
            if not _is_cancellation(error):
                raise
            with anyio.CancelScope(shield=True):
                for index, call in enumerate(calls):
                    if index not in done:
                        done.add(index)
                        text = TOOL_CANCELLED if index in entered else CANCELLED_BEFORE_START
                        await on_result(index, error_result(call, text))
            raise

    async def _call(
        self, call: ToolCall, parent: Any, entering: Callable[[], None]
    ) -> ToolResultMessage:
        span = self.telemetry.start_tool(parent, call)
        try:
            with self.telemetry.current(span):
                result = await self._execute(call, entering)
        except BaseException as error:
            self.telemetry.end_tool(span, None, error)
            raise
        self.telemetry.end_tool(span, result)
        return result

    async def _execute(self, call: ToolCall, entering: Callable[[], None]) -> ToolResultMessage:
        for extension in self.extensions:  # rule 4
            early = await maybe_await(extension.before_tool(call))
            if isinstance(early, ToolResultMessage):
                return self._bounded(early)
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            result = error_result(call, f"Unknown tool {call.name!r}. Tools: {known}.")
        else:
            entering()
            first = await self.journal.started(call, self.run_id)  # rule 5

            async def execute() -> ToolResultMessage:
                if not first and not is_idempotent(tool):  # rule 6
                    return outcome_unknown(call)
                return await self._run_tool(tool, call)  # rule 7

            result = await self.journal.run(call, execute)
        for extension in self.extensions:  # rule 8
            changed = await maybe_await(extension.after_tool(call, result))
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
            return error_result(call, f"the tool failed: it raised {type(error).__name__}")
        except Exception as error:  # a Tool subclass's call that raised
            if scope.cancel_called:  # it turned the timeout's cancellation into an error
                return error_result(call, _timed_out(tool, limit))
            return error_result(call, f"{type(error).__name__}: {error}")
        if scope.cancelled_caught:
            return error_result(call, _timed_out(tool, limit))
        if scope.cancel_called and result.is_error:  # it failed as the timeout stopped it
            return error_result(call, f"{_timed_out(tool, limit)} (it said: {result.content})")
        return result

    def _bounded(self, result: ToolResultMessage) -> ToolResultMessage:
        limit, size = self.max_result_chars, len(result.content)
        if limit is not None and size > limit:
            note = f"\n[the result was cut to its first {limit} of {size} characters]"
            result = replace(result, content=result.content[:limit] + note)
        if result.parts:
            result = self._bounded_parts(result)
        return result

    def _bounded_parts(self, result: ToolResultMessage) -> ToolResultMessage:
        """Text parts within what is left of ``max_result_chars``; media parts while
        their bytes fit ``max_result_bytes`` (see the module docstring)."""
        chars = None if self.max_result_chars is None else self.max_result_chars
        chars_left = None if chars is None else max(0, chars - len(result.content))
        bytes_left = self.max_result_bytes
        kept: list[Part] = []
        notes: list[str] = []
        for part in result.parts:
            if isinstance(part, TextPart):
                if chars_left is not None and len(part.text) > chars_left:
                    if chars_left:
                        kept.append(TextPart(part.text[:chars_left]))
                    notes.append(f"[the result's text was cut at {chars} characters]")
                    chars_left = 0
                    continue
                if chars_left is not None:
                    chars_left -= len(part.text)
                kept.append(part)
                continue
            size = part.size or 0
            if bytes_left is not None and size > bytes_left:
                notes.append(
                    f"{part.describe()} was left out: a result's parts are limited to "
                    f"{self.max_result_bytes} bytes"
                )
                continue
            if bytes_left is not None:
                bytes_left -= size
            kept.append(part)
        if not notes and len(kept) == len(result.parts):
            return result
        notes = list(dict.fromkeys(notes))
        content = "\n".join([result.content, *notes]) if result.content else "\n".join(notes)
        return replace(result, content=content, parts=tuple(kept))


_WITHHELD = "This tool call came with an answer the model did not finish normally; it was not run."


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
        answered[fresh.id] = error_result(
            fresh,
            f"This call repeated the id {call.id!r} of an earlier call in the same answer, "
            f"so it was not run (its id is now {fresh.id!r}).",
        )
    return replace(response, tool_calls=tuple(renamed), provider_record=None), answered


def is_cut_off(answer: AssistantMessage, call: ToolCall) -> bool:
    """Whether the gate answers ``call`` of ``answer`` with :data:`CUT_OFF_ARGUMENTS`
    instead of running it: the wire did not finish the call (``closed`` False,
    where the call says), or the answer stopped at a limit (MAX_OUTPUT,
    CONTEXT_FULL) and the arguments are not a whole JSON object. For those who
    show calls before they run (``zett_agent.serve``); :meth:`ToolGate.screen`
    applies the same rule."""
    if not call.closed:
        return True
    return answer.stop is not None and answer.stop.truncated and not _is_object(call.arguments)


def _cancel_requested() -> bool:
    """Whether the running task is being cancelled (not a ``CancelledError`` that
    code raised by itself). On asyncio, ``Task.cancelling()``; on other backends a
    cancellation cannot be raised by user code, so it is always real."""
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return True
    return task is None or task.cancelling() > 0


def _is_cancellation(error: BaseException) -> bool:
    """The run is being cancelled (a cancel scope, task cancellation, the consumer
    closing the stream), as opposed to an error that ends it."""
    return isinstance(error, GeneratorExit | anyio.get_cancelled_exc_class())


def _timed_out(tool: Tool, limit: float | None) -> str:
    text = f"The tool did not finish within its timeout of {limit:g} seconds"
    if tool.in_thread:
        return (
            text + "; it runs in a thread that cannot be stopped, so it may still be "
            "running and may still take effect."
        )
    return text + "; it was stopped."


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text or "{}"), dict)
    except (ValueError, RecursionError):  # too deep to tell: treated as cut off
        return False
