"""What a model is sent and what it gives back, in no provider's wire format.

:class:`ModelRequest` (with :class:`ToolSpec` and :class:`OutputFormat`) is what the
loop asks a model for; :data:`StreamEvent` (:class:`TextDelta`,
:class:`ReasoningDelta`, :class:`ToolCallDelta`) is what a model streams;
:class:`ModelResponse` is one call's normalized result. Every layer uses these:
the loop, extensions, the model client, durable steps and each wire protocol
(:mod:`zett_agent.protocols`, which also holds :class:`HTTPRequest`'s users).
``StopInfo.detail`` keys a response may carry are named here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from zett_agent._messages import (
    AssistantMessage,
    Message,
    ModelAttempt,
    ToolCall,
    Usage,
)
from zett_agent.stop import StopInfo
from zett_agent.vendors import (
    ServerTool,
)

# ---------------------------------------------------------------- stream events


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of visible answer text (refusal text included)."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of reasoning / thinking text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of tool call number ``index`` (0-based, in final order).

    ``id`` and ``name`` are set on the fragment that first carried them;
    ``arguments`` is a piece of the JSON argument text (may be empty).
    """

    index: int
    id: str | None
    name: str | None
    arguments: str


StreamEvent: TypeAlias = TextDelta | ReasoningDelta | ToolCallDelta


# ---------------------------------------------------------------- requests


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def declaration(self, schema: str = "parameters") -> dict[str, Any]:
        """``{"name", "description", <schema>: the JSON schema}``, the core that every
        protocol's tool definition wraps."""
        return {"name": self.name, "description": self.description, schema: dict(self.parameters)}


@dataclass(frozen=True)
class OutputFormat:
    """A structured answer asked for in the provider's native mode: the answer's
    text is JSON matching ``schema`` (an object root), named ``name``. Each vendor
    row says how it is written (:func:`zett_agent.vendors.output_fields`)."""

    name: str
    schema: Mapping[str, Any]
    description: str = ""


@dataclass
class ModelRequest:
    """One request to a model, before it is put in a provider's wire format.

    ``max_tokens`` is the output limit in tokens; ``extra_body`` is merged into
    the JSON body last by :func:`merge_options` (provider-specific options; a key
    the encoder wrote is never replaced); ``tool_choice`` is ``"auto"``,
    ``"none"``, ``"required"`` or a tool name. ``reasoning``: an effort level
    (``"none"`` ... ``"max"``) or a thinking budget in tokens, written as the
    vendor row's ``reasoning`` says (:func:`zett_agent.vendors.reasoning_fields`).
    ``server_tools``: provider-run tools declared beside ``tools``
    (:class:`~zett_agent.vendors.ServerTool`). ``prompt_cache``: place cache
    breakpoints where the protocol has them (Anthropic); ``prompt_cache_key``:
    OpenAI's cache routing key (sent on rows that take it). ``output``: a
    structured answer in the provider's native mode (:class:`OutputFormat`;
    tool mode is ``tools`` and ``tool_choice``, set by the loop).
    """

    model: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None
    stop_sequences: list[str] = field(default_factory=list)
    tool_choice: str | None = None
    stream: bool = True
    extra_body: dict[str, Any] = field(default_factory=dict)
    reasoning: str | int | None = None
    server_tools: Sequence[ServerTool] = ()
    prompt_cache: bool = False
    prompt_cache_key: str | None = None
    output: OutputFormat | None = None

    def sampling(
        self, *, max_tokens: str | None, stop: str | None, temperature: str = "temperature"
    ) -> dict[str, Any]:
        """The output limit, temperature and stop sequences that are set, under one
        protocol's field names (None: the protocol has no such field)."""
        out: dict[str, Any] = {}
        if max_tokens and self.max_tokens is not None:
            out[max_tokens] = self.max_tokens
        if self.temperature is not None:
            out[temperature] = self.temperature
        if stop and self.stop_sequences:
            out[stop] = list(self.stop_sequences)
        return out


@dataclass(frozen=True)
class HTTPRequest:
    """What to send: ``path`` is appended to the vendor base URL.

    ``response_format`` says how a 2xx body is read: ``"sse"``, ``"ndjson"`` or
    ``"json"`` (non-streaming).
    """

    path: str
    body: Mapping[str, Any]
    response_format: Literal["sse", "ndjson", "json"]
    headers: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    method: str = "POST"


# ---------------------------------------------------------------- responses


@dataclass(frozen=True)
class ModelResponse:
    """The normalized result of one model call.

    ``stop_info`` is always set (END_TURN and TOOL_USE included); ``stop`` is the
    value the runtime stores on the message: None for a normal end.
    ``provider_record`` is the provider's own record of the assistant message,
    replayed unchanged to the vendor and model that produced it (its ``origin``).
    ``provider``: the vendor that answered, when the model client is not one
    vendor (a :class:`~zett_agent.model.FallbackModel`); ``attempts``: what
    each model of such a chain did, in order.
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_info: StopInfo
    usage: Usage = field(default_factory=Usage)
    reasoning: str = ""
    model: str | None = None
    provider_record: Mapping[str, Any] | None = None
    provider: str | None = None
    attempts: tuple[ModelAttempt, ...] = ()

    @property
    def stop(self) -> StopInfo | None:
        """The StopInfo when the step did not end normally, else None."""
        return None if self.stop_info.ok else self.stop_info

    def to_message(self, provider: str | None = None) -> AssistantMessage:
        """The :class:`AssistantMessage` this response becomes (its record and stop
        detail made storable: :meth:`AssistantMessage.storable`)."""
        return AssistantMessage(
            text=self.text,
            tool_calls=self.tool_calls,
            stop=self.stop,
            usage=self.usage,
            reasoning=self.reasoning,
            model=self.model,
            provider=self.provider or provider,
            provider_record=self.provider_record,
            attempts=self.attempts,
        ).storable()


CUT_TOOL_CALLS = "cut_tool_calls"
"""``StopInfo.detail`` key: the names of the calls the wire did not finish (in order)."""


def names_in(detail: Mapping[str, Any], key: str) -> list[str]:
    """The tool-call names listed under ``detail[key]`` (``withheld_tool_calls``,
    ``cut_tool_calls``...): the strings of a list, nothing else. Provider text can
    reach ``detail`` (Anthropic's ``stop_details`` fields), so a reader never walks
    what it holds: a deep or odd value there gives no names rather than an error."""
    value = detail.get(key)
    return [name for name in value if isinstance(name, str)] if isinstance(value, list) else []


AMBIGUOUS_TOOL_ARGUMENTS = "ambiguous_tool_arguments"
"""``StopInfo.detail`` key: the calls whose argument fragments repeated in a way that
cannot be read without guessing (their answer is INTERRUPTED, its calls withheld)."""
