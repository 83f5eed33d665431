"""A structured run: what the loop does with ``output_type``.

**The stop decides before validation does.** After each answer the loop asks
:meth:`StructuredRun.judge` for a :class:`Verdict` (a closed set, :class:`Outcome`):

=========================================  ==================================
the answer                                 verdict
=========================================  ==================================
not a final-answer attempt (function tool  NOT_FINAL: the loop goes on as
calls only; a native answer that is        without ``output_type``
PAUSED)
an attempt that stopped MAX_OUTPUT,        STOPPED: the run ends with that
CONTEXT_FULL, REFUSAL (a ``refusal``       stop, nothing validated, no retry
field or block, a refusal finish value,    (the partial text is kept;
an HTTP-error refusal) or INTERRUPTED      ``resume()`` continues a cut one)
an attempt that stopped OTHER              validated; if it fails: STOPPED
ended normally, valid                      ACCEPTED: ``message.output``, the
                                           run completes
ended normally, invalid (the schema, or    RETRY with the errors sent back,
an output validator's ``OutputRetry``)     while ``output_retries`` last;
                                           then FAILED:
                                           :class:`~zett_agent.errors.OutputValidationError`
=========================================  ==================================

An attempt is, in native mode, an answer with no tool calls (its text is the
JSON); in tool mode, an answer with a call of an output tool, or a text answer
(accepted when its text validates, else retried with a reminder to call the
tool). A retry is one more model call and counts against ``max_turns`` like every
call. The failed attempts stay in the history, followed by what was sent back: a
user turn with the errors (native mode, or a text answer in tool mode), or the
output tool call's error result (tool mode), so the stored history stays
truthful.

**Modes.** ``auto`` takes the vendor row's native mode
(:func:`zett_agent.vendors.output_kind`: OpenAI Chat ``response_format``
json_schema strict, Responses ``text.format``, Gemini ``responseJsonSchema`` /
``responseSchema``, Ollama ``format``, Anthropic ``output_config.format``,
llama.cpp ``json_object`` + ``schema``), and a forced output tool where the row has
none, or where the native mode does not hold beside what the request sends
(:data:`NATIVE_NOT_WITH`: llama.cpp applies its schema only without
``tool_choice``; Gemini's JSON mode is not used beside function tools). For a
fallback chain, native only when every model of it has a native mode. A model
client zett cannot see into (a test double, a host's own) gets native: the
request's ``output`` carries the schema. ``native`` or ``tool`` force a mode
(``native`` on a row without one is a ConfigError).

**Tool mode and the gate.** The output tools (``final_result``, one per union
branch) are offered in the request beside the agent's tools, so the gate's
``allowed_tools`` sees them as offered; their calls never reach the gate: the
loop takes them out of the answer before the gate screens it
(:meth:`StructuredRun.output_calls`) and answers them itself (an error result
with the validation errors, or "accepted"). The request forces the output tool
when it offers nothing else (``tool_choice`` = its name), else asks for
``"required"`` (a function tool or the output tool); a ``tool_choice`` the host
set stays (``"auto"``: a text answer that validates is accepted too); with the
host's ``tool_choice="none"`` only the output tools are offered. A call of another
offered tool while the output tool is forced is not allowed by the request: the
gate's rule 1 answers it "not run". Never a forced tool together with extended
thinking where the protocol rejects it
(:func:`zett_agent.vendors.forced_tool_allowed`, Anthropic): ``auto`` then.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from zett_agent._await import maybe_await
from zett_agent._exchange import ModelRequest, OutputFormat, TextDelta, ToolCallDelta
from zett_agent._messages import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from zett_agent._output import OutputInvalid, OutputMode, OutputRetry, OutputType
from zett_agent.errors import ConfigError, OutputAttempt, OutputValidationError
from zett_agent.stop import StopReason
from zett_agent.vendors import StructuredOutput, Vendor, forced_tool_allowed, output_kind

if TYPE_CHECKING:
    from zett_agent.model._model import ModelClient

__all__ = [
    "DEFAULT_OUTPUT_RETRIES",
    "NATIVE_NOT_WITH",
    "Outcome",
    "OutputValidator",
    "PartialOutputs",
    "StructuredRun",
    "Verdict",
    "vendors_of",
]

DEFAULT_OUTPUT_RETRIES = 1
"""Retries of an answer that ended normally and failed validation."""

OutputValidator = Callable[[Any], Any]
"""A host function given the validated value: returns the value to keep (None: keep
it as it is), raises :class:`~zett_agent.OutputRetry` to have the answer
retried with its message; may be ``async``."""

NATIVE_NOT_WITH: Mapping[StructuredOutput, str] = {
    # llama-cpp-python 0.3.36 llama_chat_format: a named tool_choice builds its own
    # grammar, and the response_format grammar is used only without one
    "json_object_schema": "tool_choice",
    # Gemini 2.x: "Function calling with a response mime type 'application/json' is
    # unsupported"
    "response_json_schema": "tools",
    "response_schema": "tools",
}
"""Native modes ``auto`` does not use when the request sends ``tool_choice`` /
function ``tools``; a forced output tool instead."""

_ABNORMAL_END = frozenset(
    {StopReason.MAX_OUTPUT, StopReason.CONTEXT_FULL, StopReason.REFUSAL, StopReason.INTERRUPTED}
)

ACCEPTED_RESULT = "The final output was accepted."
NOT_RUN_AFTER_OUTPUT = "This tool call was not run: the same answer gave the run's final output."


class Outcome(Enum):
    """What a structured run does after one answer (a closed set)."""

    NOT_FINAL = "not_final"  # not an attempt at the final answer: the loop goes on
    STOPPED = "stopped"  # an abnormal stop: end with it, nothing validated
    ACCEPTED = "accepted"  # valid: complete with the typed value
    RETRY = "retry"  # invalid: send the errors back, ask again
    FAILED = "failed"  # invalid and no retries left: OutputValidationError


@dataclass(frozen=True)
class Verdict:
    """One :class:`Outcome` and what goes with it: the typed ``value`` (ACCEPTED),
    the ``messages`` to add after the answer (ACCEPTED in tool mode: the output
    call's result; RETRY: the errors sent back), the ``errors`` text (RETRY,
    FAILED) and the ``error`` to raise (FAILED)."""

    outcome: Outcome
    value: Any = None
    messages: tuple[Message, ...] = ()
    errors: str = ""
    error: OutputValidationError | None = None


def vendors_of(model: ModelClient) -> list[Vendor] | None:
    """The vendor rows a model client sends to: a :class:`~zett_agent.model.Model`'s
    row, every row of a :class:`~zett_agent.model.FallbackModel`, the inner
    model's of a wrapper that names it ``inner`` (a durable run's model); None
    when zett cannot tell (a test double, a host's own client)."""
    from zett_agent.model._fallback import FallbackModel
    from zett_agent.model._model import Model

    if isinstance(model, Model):
        return [model.vendor]
    if isinstance(model, FallbackModel):
        found: list[Vendor] = []
        for member in model.models:
            rows = vendors_of(member)
            if rows is None:
                return None
            found += rows
        return found
    inner = getattr(model, "inner", None)  # durable.steps.DurableModel (the core never imports it)
    return vendors_of(inner) if inner is not None and inner is not model else None


@dataclass
class StructuredRun:
    """One run's structured output: how requests ask for it, how answers are judged.

    ``output``: the type; ``mode``: ``"auto"``, ``"native"`` or ``"tool"``;
    ``retries``: retries of an invalid answer; ``validators``: host functions run
    after the schema (:data:`OutputValidator`); ``prefix``: the cut-off text a
    resumed run's first answer continues (validated joined to it, when the
    answer alone is not a whole value).
    """

    output: OutputType
    mode: OutputMode = "auto"
    retries: int = DEFAULT_OUTPUT_RETRIES
    validators: Sequence[OutputValidator] = ()
    prefix: str = ""
    attempts: list[OutputAttempt] = field(default_factory=list)
    tool_mode: bool = False  # what the last request asked for

    # ------------------------------------------------------------ requests

    def prepare(self, request: ModelRequest, model: ModelClient) -> ModelRequest:
        """``request`` asking for the output: ``output`` set (native), or the output
        tools offered and ``tool_choice`` set (tool mode). Raises ConfigError for
        ``mode="native"`` on a row without a native mode."""
        self.tool_mode = self._uses_tool(request, model)
        output = self.output
        if not self.tool_mode:
            schema = dict(output.schema)
            return replace(request, output=OutputFormat(output.name, schema, output.description))
        specs = output.tool_specs()
        names = output.tool_names
        tools = [t for t in request.tools if t.name not in names]
        choice = request.tool_choice
        if choice == "none":
            tools, choice = [], None  # only the output tools are offered
        if choice is None:  # the output must come: the one output tool, or some tool
            choice = specs[0].name if not tools and len(specs) == 1 else "required"
        rows = vendors_of(model) or []
        if not all(forced_tool_allowed(v, request.reasoning) for v in rows):
            choice = "auto"  # extended thinking: the provider rejects a forced tool
        return replace(request, tools=[*tools, *specs], tool_choice=choice)

    def _uses_tool(self, request: ModelRequest, model: ModelClient) -> bool:
        if self.mode == "tool":
            return True
        rows = vendors_of(model)
        if rows is None:
            return False
        kinds = [output_kind(v) for v in rows]
        if self.mode == "native":
            lacking = [v.name for v, kind in zip(rows, kinds, strict=True) if kind == "tool"]
            if lacking:
                raise ConfigError(
                    f"output_mode='native': {', '.join(lacking)} has no native structured "
                    "output zett uses; use output_mode='tool' or 'auto'"
                )
            return False
        for kind in kinds:
            if kind == "tool":
                return True
            clash = NATIVE_NOT_WITH.get(kind)
            if clash == "tool_choice" and request.tools and request.tool_choice:
                return True
            if clash == "tools" and request.tools:
                return True
        return False

    # ------------------------------------------------------------ answers

    def output_calls(self, message: AssistantMessage) -> list[ToolCall]:
        """The calls of output tools in ``message`` (tool mode), which never pass
        the gate."""
        if not self.tool_mode:
            return []
        names = self.output.tool_names
        return [c for c in message.tool_calls if c.name in names]

    async def judge(self, message: AssistantMessage) -> Verdict:
        """The :class:`Verdict` on one stored-to-be answer (the table of this module)."""
        calls = self.output_calls(message)
        attempt = bool(calls) or not message.tool_calls
        if not attempt:
            return Verdict(Outcome.NOT_FINAL)
        stop = message.stop
        reason = stop.reason if stop is not None and not stop.ok else None
        if reason is StopReason.PAUSED and not calls:
            return Verdict(Outcome.NOT_FINAL)
        if reason in _ABNORMAL_END:
            return Verdict(Outcome.STOPPED)
        text, value, errors = await self._validate(message, calls)
        if not errors:
            closing: tuple[Message, ...] = ()
            if calls:
                closing = tuple(_closing_results(message, calls))
            return Verdict(Outcome.ACCEPTED, value=value, messages=closing)
        if reason is not None:  # OTHER: not an answer that ended normally; no retry
            return Verdict(Outcome.STOPPED, errors=errors)
        self.attempts.append(OutputAttempt(text, errors))
        if len(self.attempts) > self.retries:
            error = OutputValidationError(tuple(self.attempts), message)
            return Verdict(Outcome.FAILED, errors=errors, error=error)
        return Verdict(Outcome.RETRY, messages=self._feedback(calls, errors), errors=errors)

    async def _validate(
        self, message: AssistantMessage, calls: list[ToolCall]
    ) -> tuple[str, Any, str]:
        """``(text validated, value, errors)``; errors empty when valid."""
        problems: list[str] = []
        text = message.text
        candidates: list[tuple[str, str | None]]
        if calls:
            candidates = [(c.arguments, c.name) for c in calls]
        else:
            candidates = [(message.text, None)]
            if self.prefix:  # a resumed answer: joined to the cut-off text, or alone
                candidates.insert(0, (self.prefix + message.text, None))
        for candidate, tool in candidates:
            text = candidate
            try:
                if tool is None:
                    value = self.output.validate(candidate)
                else:
                    value = self.output.validate_call(tool, candidate)
                value = await self._host_checks(value)
            except OutputInvalid as invalid:
                problems.append(invalid.errors)
                continue
            self.prefix = ""
            return candidate, value, ""
        self.prefix = ""
        return text, None, "\n".join(dict.fromkeys(problems))

    async def _host_checks(self, value: Any) -> Any:
        for validator in self.validators:
            try:
                changed = await maybe_await(validator(value))
            except OutputRetry as retry:
                raise OutputInvalid(f"- {retry}") from None
            if changed is not None:
                value = changed
        return value

    def _feedback(self, calls: list[ToolCall], errors: str) -> tuple[Message, ...]:
        if calls:
            text = (
                "The output did not validate:\n"
                f"{errors}\nCall the tool again with arguments that fix these errors."
            )
            return tuple(ToolResultMessage(c.id, c.name, text, is_error=True) for c in calls)
        if self.tool_mode:
            names = " or ".join(sorted(self.output.tool_names))
            return (
                UserMessage(
                    f"Give the final answer by calling the tool {names}; a text answer "
                    f"does not count.\n{errors}"
                ),
            )
        return (
            UserMessage(
                "Your answer did not match the required output schema:\n"
                f"{errors}\nAnswer again with only the JSON value, fixing these errors."
            ),
        )


def _closing_results(message: AssistantMessage, calls: list[ToolCall]) -> list[ToolResultMessage]:
    """The results that close an accepted tool-mode answer: its output calls are
    "accepted", its other calls were not run (the run ends)."""
    ids = {c.id for c in calls}
    return [
        ToolResultMessage(c.id, c.name, ACCEPTED_RESULT)
        if c.id in ids
        else ToolResultMessage(c.id, c.name, NOT_RUN_AFTER_OUTPUT, is_error=True)
        for c in message.tool_calls
    ]


class PartialOutputs:
    """The partial outputs of one model call: fed its text deltas (native mode) or
    the output tool's argument deltas (tool mode); :meth:`feed` returns the value so
    far when it changed (validated leniently, :meth:`OutputType.partial`), else
    None. The text is parsed again only after a piece that can change the value."""

    def __init__(self, run: StructuredRun) -> None:
        self.output = run.output
        self.tool_mode = run.tool_mode
        self.prefix = run.prefix
        self._text: list[str] = []
        self._calls: dict[int, tuple[str, list[str]]] = {}
        self._last: Any = None

    def feed(self, item: TextDelta | ToolCallDelta | Any) -> Any:
        if type(item) is TextDelta and not self.tool_mode:
            self._text.append(item.text)
            value = self.output.partial(self.prefix + "".join(self._text))
        elif type(item) is ToolCallDelta and self.tool_mode:
            name, pieces = self._calls.get(item.index, (item.name or "", []))
            name = name or item.name or ""
            pieces.append(item.arguments)
            self._calls[item.index] = (name, pieces)
            if name not in self.output.tool_names or not item.arguments:
                return None
            value = self.output.partial("".join(pieces), tool=name)
        else:
            return None
        if value is None or value == self._last:
            return None
        self._last = value
        return value
