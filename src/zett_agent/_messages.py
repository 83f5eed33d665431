"""Conversation messages, and their JSON form for storage.

Four kinds, told apart by ``role`` in their stored form: :class:`UserMessage`,
:class:`AssistantMessage`, :class:`ToolResultMessage` and :class:`SystemMessage`.
They are frozen dataclasses; :func:`message_to_dict` / :func:`message_from_dict`
turn them into JSON-compatible dicts and back (validated by pydantic). A stored
assistant message with no ``stop`` key loads with ``stop is None``; its ``stop`` is
written and read by :meth:`StopInfo.to_dict` / :meth:`StopInfo.from_dict`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias

from typing_extensions import TypeVar

if TYPE_CHECKING:
    from pydantic import TypeAdapter


from zett_agent._parts import BlobReader, Part, parts_from_json, parts_to_json
from zett_agent.stop import AgentStopError, StopInfo, StopReason

__all__ = [
    "MAX_JSON_DEPTH",
    "TOO_DEEP",
    "AssistantMessage",
    "Cost",
    "Message",
    "ModelAttempt",
    "SystemMessage",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "json_too_deep",
    "loads_json",
    "message_from_dict",
    "message_to_dict",
    "messages_from_json",
    "messages_to_json",
    "storable_json",
]

MAX_JSON_DEPTH = 100
"""The deepest nesting of JSON arrays and objects a message keeps: tool arguments
deeper than this are not run (the call is answered with an error), and a provider
record or stop detail has its deeper parts replaced by :data:`TOO_DEEP` (see
:func:`storable_json`), so every
message can be stored, loaded and sent again (Python's ``json`` and pydantic stop
at a few hundred to a thousand levels, depending on the stack in use)."""

TOO_DEEP = f"[nested deeper than {MAX_JSON_DEPTH} levels: not kept]"
"""What takes the place of a JSON value nested deeper than :data:`MAX_JSON_DEPTH`."""


def json_too_deep(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` nests dicts/lists/tuples more than ``limit`` levels deep
    (``{}`` is one level). Iterative: safe for any depth."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def storable_json(value: Any, limit: int = MAX_JSON_DEPTH) -> Any:
    """``value`` itself when it can be stored as strict JSON, else a copy (dicts and
    lists) whose containers nested deeper than ``limit`` levels are replaced by
    :data:`TOO_DEEP` and whose NaN and infinite floats (Python's ``json`` reads
    ``NaN`` and ``Infinity``; strict JSON has neither) are None. Iterative: safe
    for any depth."""
    if not _unstorable(value, limit):
        return value

    def fresh(item: Any, depth: int) -> Any:
        if isinstance(item, float) and not math.isfinite(item):
            return None
        if isinstance(item, Mapping):
            copy: Any = {}
        elif isinstance(item, list | tuple):
            copy = []
        else:
            return item
        if depth > limit:
            return TOO_DEEP
        work.append((item, copy, depth))
        return copy

    work: list[tuple[Any, Any, int]] = []
    top = fresh(value, 1)
    while work:
        source, target, depth = work.pop()
        if isinstance(target, dict):
            for key, child in source.items():
                target[key] = fresh(child, depth + 1)
        else:
            target.extend(fresh(child, depth + 1) for child in source)
    return top


_LEAVES = frozenset({str, int, bool, type(None)})
"""Types :func:`_unstorable` passes over without a look (JSON's strings, numbers
other than floats, true/false and null: most of a provider record)."""


def _unstorable(value: Any, limit: int) -> bool:
    leaves = _LEAVES
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict or (kind is not list and isinstance(item, Mapping)):
            children: Any = item.values()
        elif kind is list or isinstance(item, list | tuple):
            children = item
        elif isinstance(item, float):
            if not math.isfinite(item):
                return True
            continue
        else:
            continue
        if depth > limit:
            return True
        below = depth + 1
        for child in children:
            if type(child) not in leaves:
                stack.append((child, below))
    return False


def loads_json(text: str | bytes) -> Any:
    """``json.loads(text)``, refusing nesting deeper than :data:`MAX_JSON_DEPTH`.

    Raises ``ValueError`` for text that is not JSON and for JSON nested too deep
    (Python's own ``RecursionError`` included), nothing else.
    """
    try:
        value = json.loads(text)
    except RecursionError as error:
        raise ValueError(f"JSON nested deeper than Python can read: {error}") from None
    if json_too_deep(value):
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return value


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for.

    ``arguments`` is the JSON text exactly as the model wrote it (it may be cut
    off or invalid when the step stopped at the output limit). ``closed`` says
    whether the wire finished the call (Anthropic ``content_block_stop``, a
    Responses item with status ``completed``, a Vertex call without a pending
    ``willContinue``...): a call that is not closed is never run, whatever its
    arguments look like; the model is answered with the cut-off error result.
    """

    id: str
    name: str
    arguments: str = "{}"
    closed: bool = True

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict. Raises ``ValueError`` when they are not a JSON
        object, or nest deeper than :data:`MAX_JSON_DEPTH` levels."""
        value = loads_json(self.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError(f"tool call arguments are not a JSON object: {self.arguments!r}")
        return value

    def arguments_object(self) -> dict[str, Any]:
        """The arguments as a dict, leniently: ``{}`` when they are not a JSON object
        (cut off, invalid, another JSON type, or nested too deep to parse). For
        encoders that must send an object whatever the model wrote."""
        try:
            return self.parsed_arguments()
        except (ValueError, RecursionError):
            return {}


@dataclass(frozen=True)
class Usage:
    """Token counts of one model call, in tokens (None: the provider did not say).

    ``input_tokens`` is the whole input, cached parts included: ``cached_input_tokens``
    were read from the provider's prompt cache (Anthropic ``cache_read_input_tokens``,
    OpenAI ``cached_tokens``, Gemini ``cachedContentTokenCount``, implicit caching
    too), ``cache_write_tokens`` were written to it (Anthropic
    ``cache_creation_input_tokens``; the others do not bill writes). ``output_tokens``
    includes ``reasoning_tokens``.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_write_tokens: int | None = None

    @property
    def cache_read_tokens(self) -> int | None:
        """``cached_input_tokens`` under the name genai-prices and OpenTelemetry use."""
        return self.cached_input_tokens

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens (0 for what the provider did not report)."""
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(
            add(self.input_tokens, other.input_tokens),
            add(self.output_tokens, other.output_tokens),
            add(self.cached_input_tokens, other.cached_input_tokens),
            add(self.reasoning_tokens, other.reasoning_tokens),
            add(self.cache_write_tokens, other.cache_write_tokens),
        )


@dataclass(frozen=True)
class Cost:
    """What model calls cost, in US dollars (:mod:`zett_agent.model._costs` prices them).

    ``usd`` None means unknown, never 0: ``unknown`` says why (a local model, a
    model the price table does not list, the ``prices`` extra not installed). A
    sum with an unknown part is unknown.
    """

    usd: float | None = None
    unknown: str | None = None

    @property
    def known(self) -> bool:
        return self.usd is not None

    def __str__(self) -> str:
        return "unknown" if self.usd is None else f"${self.usd:.6f}"

    def __add__(self, other: Cost) -> Cost:
        if self.usd is None or other.usd is None:
            reasons = [r for r in (self.unknown, other.unknown) if r]
            return Cost(None, "; ".join(dict.fromkeys(reasons)) or "unknown")
        return Cost(self.usd + other.usd)


@dataclass(frozen=True)
class ModelAttempt:
    """What one model of a fallback chain did for one answer.

    ``outcome``: ``"answered"`` (it produced the answer), ``"failed"`` (an error
    with no output made it unusable now: ``error`` names it), ``"stopped"`` (its
    answer stopped with a reason the chain falls back on: ``stop`` is the raw
    value), ``"skipped"`` (its circuit breaker is open: ``error`` says until when).
    """

    provider: str
    model: str
    outcome: Literal["answered", "failed", "stopped", "skipped"]
    error: str | None = None
    stop: str | None = None
    discarded_output: bool = False
    """Output of this attempt had streamed to the host before the chain moved on."""
    usage: Usage | None = None
    """A ``"stopped"`` attempt's usage: its answer was billed though the chain moved
    on (the run's ledger counts it, priced at this attempt's model); else None."""


@dataclass(frozen=True)
class SystemMessage:
    """Instructions for the model (sent as the provider's system prompt)."""

    content: str


@dataclass(frozen=True)
class UserMessage:
    """What the user (or the host, on the user's side) said.

    ``content`` is the text; ``parts`` (:mod:`zett_agent._parts`: images,
    documents, audio, more text) are sent after it, in order. A part the provider
    cannot take is a :class:`~zett_agent.errors.ConfigError` before sending."""

    content: str
    parts: tuple[Part, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.parts, tuple):
            object.__setattr__(self, "parts", tuple(self.parts))


@dataclass(frozen=True)
class ToolResultMessage:
    """The result of one tool call, sent back to the model.

    ``content`` is the result's text, what a text-only reader (and a provider
    whose tool results take text only) gets; it describes the ``parts``
    (``MediaPart.describe()``: MCP results and function tools write it so).
    ``parts`` are sent after it where the provider takes them in tool results
    (see docs/images.md's table); a part the provider cannot take there is left to
    the text, whose description of it is added when missing."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    parts: tuple[Part, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.parts, tuple):
            object.__setattr__(self, "parts", tuple(self.parts))


OutputT_co = TypeVar("OutputT_co", covariant=True, default=Any)
"""The type of ``AssistantMessage.output``; ``Any`` when not said (a bare
``AssistantMessage``: a message of a history or loaded from a store, whose
output is whatever JSON was stored)."""


@dataclass(frozen=True)
class AssistantMessage(Generic[OutputT_co]):
    """One answer of the model.

    Generic in the type of ``output``: ``AssistantMessage[City]`` is what a run
    with ``output_type=City`` returns, ``AssistantMessage[None]`` a run with no
    output type (its ``output`` is always None), and a bare ``AssistantMessage``
    (``AssistantMessage[Any]``) a message whose output type is not known
    statically: one of a history, loaded from a store, or of a run whose
    ``output_type`` is a JSON-schema dict. The parameter is for type checkers
    only: the class, its fields and its stored form are the same for all.

    Attributes:
        text: the visible text (a refusal text is kept here too).
        tool_calls: the tool calls the model asked for, in order. Empty when the
            step was refused or interrupted (they are withheld, see ``stop``).
        stop: None when the step finished or asked for tools (and for every
            message stored before this field existed); otherwise a
            :class:`StopInfo` saying why it did not end normally.
        usage: token counts of the call.
        reasoning: reasoning/thinking text when the provider returned it.
        model: the model that answered, as the provider named it.
        provider: the provider name (``"anthropic"``, ``"openrouter"``...).
        provider_record: the provider's own record of the message (e.g.
            Anthropic content blocks with signatures), replayed as-is to the
            vendor and model that produced it (``record["origin"]``), so nothing
            the provider needs is lost and no other provider sees it.
            JSON-compatible.
        attempts: for an answer of a fallback chain, what each model did
            (:class:`ModelAttempt`, in order; the last one answered); else empty.
        cost: what the call cost (:class:`Cost`), when the run priced it
            (``AgentRunConfig.cost`` or a budget); None: not priced.
        output: the typed value of a structured run's final answer
            (``output_type``, :mod:`zett_agent._structured`); None for any other
            answer, so typed ``OutputT_co | None``: a structured run whose answer
            stopped abnormally (a refusal, a cut-off) has no value either (check
            ``stop``, or call :meth:`raise_for_stop`). Stored as its JSON form: a
            loaded message holds that JSON, made the type again by
            ``AgentClient.messages(..., output_type=...)`` or
            :meth:`OutputType.load <zett_agent._output.OutputType.load>`.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    stop: StopInfo | None = None
    usage: Usage = field(default_factory=Usage)
    reasoning: str = ""
    model: str | None = None
    provider: str | None = None
    provider_record: Mapping[str, Any] | None = None
    attempts: tuple[ModelAttempt, ...] = ()
    cost: Cost | None = None
    output: OutputT_co | None = None

    def raise_for_stop(self) -> AssistantMessage[OutputT_co]:
        """Return this message, or raise :class:`AgentStopError` if it did not end normally."""
        if self.stop is not None and not self.stop.ok:
            raise AgentStopError(self.stop, self)
        return self

    def replace(self, **changes: Any) -> AssistantMessage[Any]:
        """A copy with ``changes`` applied (``output`` among them may be of another
        type, hence ``AssistantMessage[Any]``)."""
        return replace(self, **changes)

    def storable(self) -> AssistantMessage[OutputT_co]:
        """This message, or a copy whose ``provider_record`` and ``stop.detail`` are
        made strict JSON nested at most :data:`MAX_JSON_DEPTH` levels (see
        :func:`storable_json`), so it can be stored, loaded and sent again."""
        record = storable_json(self.provider_record)
        stop = self.stop
        if stop is not None:
            detail = storable_json(stop.detail)
            stop = stop if detail is stop.detail else replace(stop, detail=detail)
        if record is self.provider_record and stop is self.stop:
            return self
        return replace(self, provider_record=record, stop=stop)


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage
Role = Literal["system", "user", "assistant", "tool"]

_ROLE: dict[type[Any], Role] = {
    SystemMessage: "system",
    UserMessage: "user",
    AssistantMessage: "assistant",
    ToolResultMessage: "tool",
}


class _Adapters(dict[str, "TypeAdapter[Any]"]):
    """The pydantic adapter of each role, built when first used (building all four
    took a third of ``import zett_agent``; pydantic's model machinery itself is
    imported then, not by ``from zett_agent import ...``)."""

    def get(self, role: str, default: Any = None) -> Any:
        if role not in self:
            cls = next((c for c, r in _ROLE.items() if r == role), None)
            if cls is None:
                return default
            from pydantic import TypeAdapter

            self[role] = TypeAdapter(cls)
        return dict.__getitem__(self, role)

    def __missing__(self, role: str) -> TypeAdapter[Any]:
        adapter: TypeAdapter[Any] | None = self.get(role)
        if adapter is None:
            raise KeyError(role)
        return adapter


_ADAPTER = _Adapters()
_REASONS = frozenset(reason.value for reason in StopReason)


def message_to_dict(
    message: Message, blobs: dict[str, bytes | None] | None = None
) -> dict[str, Any]:
    """The JSON-compatible form of ``message``: ``{"role": ..., <fields>}``.

    An assistant message's provider record and stop detail are made storable
    first (:meth:`AssistantMessage.storable`). ``parts`` (a user message's or a
    tool result's) are written only when there are some
    (:func:`~zett_agent._parts.part_to_dict`): bytes inline as base64, or, with
    ``blobs`` (a store's), bytes over :data:`~zett_agent._parts.BLOB_THRESHOLD`
    put there under their SHA-256 and referred to by it."""
    if isinstance(message, AssistantMessage):
        message = message.storable()
    role = _ROLE[type(message)]
    if isinstance(message, UserMessage | ToolResultMessage):
        body: dict[str, Any] = _ADAPTER[role].dump_python(message, mode="json", exclude={"parts"})
        if message.parts:
            body["parts"] = parts_to_json(message.parts, blobs)
    else:
        body = _ADAPTER[role].dump_python(message, mode="json")
        if isinstance(message, AssistantMessage) and message.stop is not None:
            # StopInfo.to_dict's form, in place (the key order stays), detail as
            # pydantic made it JSON (tuples as lists)
            body["stop"] = {**message.stop.to_dict(), "detail": body["stop"]["detail"]}
    if body.get("output") is not None:  # a typed value, in its JSON form
        body["output"] = storable_json(body["output"])
    return {"role": role, **body}


def message_from_dict(data: Mapping[str, Any], reader: BlobReader | None = None) -> Message:
    """Load a message stored by :func:`message_to_dict`; ``reader`` reads the bytes
    of parts stored as references (:class:`~zett_agent.MediaPart` ``read``).

    Raises ``ValueError`` (a pydantic ``ValidationError`` is a subclass) when the
    data is not a message; unknown keys are ignored so newer stores stay readable.
    """
    rest = dict(data)
    role = rest.pop("role", None)
    stored_parts = rest.pop("parts", None)
    stored_stop = rest.pop("stop", None) if role == "assistant" else None
    adapter = _ADAPTER.get(role) if isinstance(role, str) else None
    if adapter is None:
        raise ValueError(f"not a stored message (role={role!r})")
    from pydantic import ValidationError

    try:
        message: Message = adapter.validate_python(rest)
    except ValidationError as error:
        raise ValueError(f"stored {role} message is invalid: {error}") from error
    if stored_parts is not None and isinstance(message, UserMessage | ToolResultMessage):
        try:
            message = replace(message, parts=parts_from_json(stored_parts, reader))
        except ValueError as error:
            raise ValueError(f"stored {role} message has invalid parts: {error}") from error
    if stored_stop is not None and isinstance(message, AssistantMessage):
        try:
            if isinstance(stored_stop, Mapping) and stored_stop.get("reason") not in _REASONS:
                # kept as it was: a stored message's stop has a reason this version
                # knows (StopInfo.from_dict alone would read it as OTHER)
                raise ValueError(f"unknown reason {stored_stop.get('reason')!r}")
            message = replace(message, stop=StopInfo.from_dict(stored_stop))
        except ValueError as error:
            raise ValueError(f"stored {role} message has an invalid stop: {error}") from error
    return message.storable() if isinstance(message, AssistantMessage) else message


def messages_to_json(messages: list[Message]) -> str:
    """A JSON array of :func:`message_to_dict` forms."""
    return json.dumps([message_to_dict(m) for m in messages], ensure_ascii=False)


def messages_from_json(text: str) -> list[Message]:
    """Inverse of :func:`messages_to_json`."""
    data = json.loads(text)
    if not isinstance(data, list):
        raise ValueError("stored messages must be a JSON array")
    return [message_from_dict(item) for item in data]
