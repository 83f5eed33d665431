"""The shape every wire protocol has: request in, sans-IO decoder out.

A :class:`WireProtocol` turns a :class:`ModelRequest` into an :class:`HTTPRequest`
(path, JSON body, headers) and makes one :class:`Decoder` per response. A decoder
never touches a socket: it is fed what came over HTTP (SSE events, NDJSON lines,
a whole body, or an error status and body) and returns normalized
:data:`StreamEvent` values and, at the end, one :class:`ModelResponse`. Streaming
and non-streaming share it, so recordings replay, fuzz and benchmark without I/O.

Decoders accumulate through :class:`ResponseBuilder`, the one place where text,
reasoning and tool-call fragments become a message.
"""

from __future__ import annotations

import datetime
import email.utils
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, NamedTuple, TypeAlias

from zett_agent.errors import (
    ConfigError,
    ContextOverflowError,
    DecodeError,
    ProviderError,
    ProviderHTTPError,
    RateLimitError,
    StreamError,
    looks_like_context_overflow,
)
from zett_agent.messages import (
    AssistantMessage,
    Message,
    ModelAttempt,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from zett_agent.parts import MediaPart, Part, TextPart
from zett_agent.protocols.arguments import ArgumentText, Shape
from zett_agent.stop import StopInfo, StopReason
from zett_agent.vendors import (
    ServerTool,
    Vendor,
    dig,
    match_http_refusal,
    media_problem,
    output_fields,
    rate_limit_fields,
    reasoning_fields,
    server_tool_fields,
)

__all__ = [
    "AMBIGUOUS_TOOL_ARGUMENTS",
    "CUT_TOOL_CALLS",
    "Decoder",
    "ErrorFields",
    "ErrorShape",
    "HTTPRequest",
    "ModelRequest",
    "ModelResponse",
    "OutputFormat",
    "Pieces",
    "ReasoningDelta",
    "ResponseBuilder",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "ToolSpec",
    "WireProtocol",
    "add_settings",
    "apply_output_limit",
    "is_json_object",
    "load_json",
    "merge_options",
    "names_in",
    "parse_json",
    "raw_value",
    "result_parts",
    "retry_after_seconds",
    "user_parts",
]


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
    vendor (a :class:`~zett_agent.fallback.FallbackModel`); ``attempts``: what
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


class _CallAccumulator:
    __slots__ = ("arguments", "closed", "id", "index", "name")

    def __init__(self, index: int) -> None:
        self.index = index
        self.id: str | None = None
        self.name: str | None = None
        self.arguments = ArgumentText()
        self.closed: bool | None = None  # None: the wire does not say (see build)


class Pieces:
    """Text that arrives in pieces. Every 512 pieces are joined into one string (each
    piece is copied once: linear), so a long stream of small deltas costs about the
    size of its text, not ~60 bytes of object header per delta."""

    __slots__ = ("_limit", "_parts")
    RUN = 512

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._limit = self.RUN  # the length at which the loose pieces are joined

    def append(self, piece: str) -> None:
        parts = self._parts
        parts.append(piece)
        if len(parts) == self._limit:
            parts[-self.RUN :] = ["".join(parts[-self.RUN :])]
            self._limit = len(parts) + self.RUN

    def join(self) -> str:
        return "".join(self._parts)

    def __bool__(self) -> bool:
        return bool(self._parts)


class ResponseBuilder:
    """Accumulates decoded pieces into a :class:`ModelResponse`.

    Tool calls are keyed by whatever identifies a call on the wire (an index, an
    item id, a content-block index); their order is the order keys first appear.
    """

    def __init__(self) -> None:
        self._text = Pieces()
        self._reasoning = Pieces()
        self._calls: dict[Hashable, _CallAccumulator] = {}
        self.usage = Usage()
        self.model: str | None = None

    # -- adding
    def text(self, piece: str) -> list[StreamEvent]:
        """Add answer text; returns the event to emit (none for an empty piece)."""
        if not piece:
            return []
        self._text.append(piece)
        return [TextDelta(piece)]

    def reasoning(self, piece: str) -> list[StreamEvent]:
        """Add reasoning text; returns the event to emit (none for an empty piece)."""
        if not piece:
            return []
        self._reasoning.append(piece)
        return [ReasoningDelta(piece)]

    def tool_call(
        self,
        key: Hashable,
        *,
        id: str | None = None,  # noqa: A002 - the wire field name
        name: str | None = None,
        arguments: str | None = None,
    ) -> list[StreamEvent]:
        """Start or extend the tool call identified by ``key``.

        ``id``/``name`` fill in when not yet known (an empty string counts as
        unknown); ``arguments`` is appended.
        """
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = _CallAccumulator(len(self._calls))
        new_id = id if id and not call.id else None
        new_name = name if name and not call.name else None
        if new_id:
            call.id = new_id
        if new_name:
            call.name = new_name
        if arguments:
            call.arguments.append(arguments)
        if new_id is None and new_name is None and not arguments:
            return []
        return [ToolCallDelta(call.index, new_id, new_name, arguments or "")]

    def has_tool_call(self, key: Hashable) -> bool:
        return key in self._calls

    def close_call(self, key: Hashable, closed: bool | None = True) -> None:
        """Record whether the wire finished the call ``key`` (``closed=False``: it
        started and was never finished). A call no decoder marks (or marked None)
        is judged by the stop (see :meth:`build`)."""
        call = self._calls.get(key)
        if call is not None:
            call.closed = closed

    def read_arguments(self, key: Hashable) -> tuple[str, Shape | None] | None:
        """The argument text of call ``key`` as :meth:`tool_calls` reads it, and the
        repeated shape found (None: no such call), for a decoder's provider record."""
        call = self._calls.get(key)
        return call.arguments.read() if call is not None else None

    def call_closed(self, key: Hashable) -> bool | None:
        """What :meth:`close_call` recorded for ``key`` (None: nothing, or no such call)."""
        call = self._calls.get(key)
        return call.closed if call is not None else None

    def tool_call_id(self, key: Hashable) -> str | None:
        call = self._calls.get(key)
        return call.id if call else None

    def set_usage(self, usage: Usage) -> None:
        """Replace the usage (providers that report cumulative or last-wins usage)."""
        self.usage = usage

    # -- reading
    @property
    def has_output(self) -> bool:
        """Whether any text, reasoning or tool call has arrived."""
        return bool(self._text or self._reasoning or self._calls)

    @property
    def current_text(self) -> str:
        return self._text.join()

    @property
    def current_reasoning(self) -> str:
        return self._reasoning.join()

    def tool_calls(self, *, truncated: bool = False) -> tuple[ToolCall, ...]:
        """The calls so far, in order, their arguments read as
        :meth:`~zett_agent.protocols.arguments.ArgumentText.read` reads them (an
        exact repeat or cumulative fragments give the arguments once). ``closed`` is
        what the wire said; a call it said nothing about is closed, except under an
        output limit (``truncated``, see :meth:`build`)."""
        calls = [
            ToolCall(
                id=c.id or f"call_{c.index}",
                name=c.name or "",
                arguments=c.arguments.read()[0] or "{}",
                closed=c.closed is not False,
            )
            for c in self._calls.values()
        ]
        if truncated:
            unknown = [n for n, c in enumerate(self._calls.values()) if c.closed is None]
            for n, call in enumerate(calls):
                if call.closed and (
                    (unknown and n == unknown[-1]) or not is_json_object(call.arguments)
                ):
                    calls[n] = replace(call, closed=False)
        return tuple(calls)

    def build(
        self,
        stop_info: StopInfo,
        provider_record: Mapping[str, Any] | None = None,
    ) -> ModelResponse:
        """The response, with these rules applied the same way for every protocol:

        * which calls the wire did not finish (``ToolCall.closed`` False): those a
          decoder marked open; under an output limit (MAX_OUTPUT, CONTEXT_FULL) also
          the last call the wire said nothing about (a Chat ``length`` answer cut
          the call being generated) and any call whose arguments are not a JSON
          object. ``detail["cut_tool_calls"]`` names them;
        * a call left open under a label that is not a limit (an Anthropic
          ``tool_use`` block with no ``content_block_stop`` under ``tool_use``) makes
          the answer broken: INTERRUPTED, raw kept, so no tool of it runs
          (ARCHITECTURE.md says why this reason);
        * argument fragments that repeat themselves (:mod:`~zett_agent.protocols.arguments`):
          an exact repeat or cumulative fragments give the arguments once, named in
          ``detail["repeated_tool_arguments"]`` / ``["cumulative_tool_arguments"]``;
          an ambiguous repeat (a complete JSON value followed by more) is never
          guessed at: the answer is INTERRUPTED (raw kept, so the loop withholds its
          calls) with ``detail["ambiguous_tool_arguments"]`` naming the calls;
        * the content decides between the normal ends (seed 003): END_TURN with
          tool calls is TOOL_USE, TOOL_USE without any is END_TURN (raw kept);
        * ``category`` is None for a normal end; for an abnormal stop without a
          policy category it is the raw value (seed 002: "the provider's policy
          category where there is one and otherwise the raw value").
        """
        calls = self.tool_calls(truncated=stop_info.truncated)
        stop_info = _with_cut_calls(stop_info, calls)
        if self._calls:
            shapes = [c.arguments.read()[1] for c in self._calls.values()]
            stop_info = _with_shapes(stop_info, calls, shapes)
        if stop_info.ok:
            reason = StopReason.TOOL_USE if calls else StopReason.END_TURN
            if reason is not stop_info.reason or stop_info.category is not None:
                stop_info = replace(stop_info, reason=reason, category=None)
        elif stop_info.category is None and stop_info.raw:
            stop_info = replace(stop_info, category=stop_info.raw)
        return ModelResponse(
            text=self._text.join(),
            tool_calls=calls,
            stop_info=stop_info,
            usage=self.usage,
            reasoning=self._reasoning.join(),
            model=self.model,
            provider_record=provider_record,
        )


CUT_TOOL_CALLS = "cut_tool_calls"
"""``StopInfo.detail`` key: the names of the calls the wire did not finish (in order)."""


def names_in(detail: Mapping[str, Any], key: str) -> list[str]:
    """The tool-call names listed under ``detail[key]`` (``withheld_tool_calls``,
    ``cut_tool_calls``...): the strings of a list, nothing else. Provider text can
    reach ``detail`` (Anthropic's ``stop_details`` fields), so a reader never walks
    what it holds: a deep or odd value there gives no names rather than an error."""
    value = detail.get(key)
    return [name for name in value if isinstance(name, str)] if isinstance(value, list) else []


def _with_cut_calls(info: StopInfo, calls: Sequence[ToolCall]) -> StopInfo:
    """``info`` naming the open calls; INTERRUPTED when a normal end left one open."""
    cut = [c.name for c in calls if not c.closed]
    if not cut:
        return info
    if info.ok:
        return StopInfo(
            StopReason.INTERRUPTED,
            info.raw,
            message="the provider ended the answer with a tool call it did not finish: "
            + ", ".join(cut),
            detail={**info.detail, CUT_TOOL_CALLS: cut},
        )
    return info.with_detail(**{CUT_TOOL_CALLS: cut})


AMBIGUOUS_TOOL_ARGUMENTS = "ambiguous_tool_arguments"
"""``StopInfo.detail`` key: the calls whose argument fragments repeated in a way that
cannot be read without guessing (their answer is INTERRUPTED, its calls withheld)."""

_WITHHOLDING = frozenset({StopReason.REFUSAL, StopReason.INTERRUPTED})


def _with_shapes(
    info: StopInfo, calls: Sequence[ToolCall], shapes: Sequence[Shape | None]
) -> StopInfo:
    """``info`` naming the calls whose fragments repeated (``shapes``: each call's);
    INTERRUPTED for an ambiguous one that would otherwise run (a cut call never runs
    anyway)."""
    detail: dict[str, list[str]] = {}
    for call, shape in zip(calls, shapes, strict=True):
        if shape is not None:
            detail.setdefault(f"{shape}_tool_arguments", []).append(call.name)
    if not detail:
        return info
    ambiguous = detail.get(AMBIGUOUS_TOOL_ARGUMENTS, [])
    would_run = any(s == "ambiguous" and c.closed for c, s in zip(calls, shapes, strict=True))
    if would_run and info.reason not in _WITHHOLDING:
        return StopInfo(
            StopReason.INTERRUPTED,
            info.raw,
            message="the provider sent tool-call arguments that repeat in a way that "
            "cannot be read without guessing: " + ", ".join(ambiguous),
            detail={**info.detail, **detail},
        )
    return info.with_detail(**detail)


def apply_output_limit(response: ModelResponse, max_tokens: int | None) -> ModelResponse:
    """``response`` judged against the output limit that was requested.

    A label that says tools (TOOL_USE: ``tool_calls``, ``tool_use``, or a normal end
    with calls) over arguments that are not a JSON object, with ``usage.output_tokens``
    equal to ``max_tokens``, was cut by the limit (vLLM-served models say
    ``tool_calls`` for arguments the limit truncated, WIRE.md "STOP / stop with
    tools"): the result is MAX_OUTPUT with ``raw`` kept, those calls open, and
    ``detail["cut_tool_calls"]`` and ``detail["max_tokens"]`` set. Anything else is
    returned unchanged. The loop applies it to every answer (it knows the request);
    ``zett inspect --max-tokens`` does the same.
    """
    info = response.stop_info
    if (
        max_tokens is None
        or info.reason is not StopReason.TOOL_USE
        or response.usage.output_tokens != max_tokens
    ):
        return response
    calls = tuple(
        c if not c.closed or is_json_object(c.arguments) else replace(c, closed=False)
        for c in response.tool_calls
    )
    if calls == response.tool_calls:
        return response
    cut = [c.name for c in calls if not c.closed]
    info = StopInfo(
        StopReason.MAX_OUTPUT,
        info.raw,
        info.raw,  # no policy category: the raw value (seed 002)
        f"the output limit of {max_tokens} tokens cut a tool call: " + ", ".join(cut),
        None,
        {**info.detail, CUT_TOOL_CALLS: cut, "max_tokens": max_tokens},
    )
    return replace(response, tool_calls=calls, stop_info=info)


def is_json_object(text: str) -> bool:
    """Whether ``text`` parses as a JSON object (empty text counts as ``{}``)."""
    try:
        return isinstance(json.loads(text or "{}"), dict)
    except (ValueError, RecursionError):
        return False


# ---------------------------------------------------------------- interfaces


@dataclass(frozen=True, slots=True)
class ErrorShape:
    """Where a protocol's error body keeps its message, type and code: dotted paths
    (see :func:`~zett_agent.vendors.dig`), the first that holds a value wins.
    ``"error"`` alone reads a plain ``{"error": "text"}``."""

    message: tuple[str, ...] = ("error.message",)
    type: tuple[str, ...] = ("error.type",)
    code: tuple[str, ...] = ("error.code",)


class ErrorFields(NamedTuple):
    """What :meth:`Decoder.error_fields` read from an error body."""

    message: str | None
    error_type: str | None = None
    code: str | int | None = None
    retry_after: float | None = None
    """Seconds asked for in the body; a ``retry-after`` header wins over it."""


_ERROR_TEXT = 2000
"""Characters of a non-JSON error body kept as ``ProviderHTTPError.body``."""
_ERROR_MESSAGE = 500
"""Characters of a non-JSON error body used as the message."""


class Decoder(ABC):
    """Sans-IO decoder for one response. Feed it, then call :meth:`finish`.

    Methods raise :class:`~zett_agent.errors.ProviderError` subclasses for an
    error with no output to keep, and never any other exception for bad input:
    malformed pieces are skipped and counted in :attr:`malformed`, which the
    response reports as ``detail["malformed_events"]`` (see :meth:`build`).
    """

    error_shape: ClassVar[ErrorShape] = ErrorShape()
    """Where this protocol's HTTP error bodies keep their fields."""

    def __init__(self, vendor: Vendor) -> None:
        self.vendor = vendor
        self.builder = ResponseBuilder()
        self.malformed = 0
        self.opaque_progress = 0
        """Count of content pieces that make no stream event (an encrypted reasoning
        item, a thinking signature, a redacted thinking block): the transport's idle
        clock counts them as progress. Decoders add 1 for each."""

    def feed_sse(self, event: str, data: str) -> list[StreamEvent]:
        """Feed one SSE event (``event`` is "message" when unnamed)."""
        raise NotImplementedError(f"{type(self).__name__} does not read SSE")

    def feed_line(self, line: str) -> list[StreamEvent]:
        """Feed one NDJSON line."""
        raise NotImplementedError(f"{type(self).__name__} does not read NDJSON")

    @abstractmethod
    def finish(self) -> ModelResponse:
        """The stream ended (cleanly or not): the final response.

        A stream that ended before its terminal event is INTERRUPTED with the
        text kept (``detail["incomplete_stream"]``), also when nothing arrived: the
        transport then raises :class:`~zett_agent.errors.TransportError`. An error
        the provider reported in the stream before any output raises
        :class:`~zett_agent.errors.StreamError`.
        """

    @abstractmethod
    def decode_body(self, body: bytes) -> ModelResponse:
        """Decode a whole non-streaming 2xx body."""

    def reason_for(self, raw: str, table: Mapping[str, StopReason]) -> StopReason:
        """The :class:`StopReason` of the provider's stop value ``raw``: the vendor
        row's ``finish_reasons`` first, then the protocol's ``table``, then the
        lower-cased value in both (gateways send ``"STOP"``, ``"Stop"``); else OTHER."""
        vendor = self.vendor.finish_reasons
        reason = vendor.get(raw) or table.get(raw)
        if reason is None:
            lowered = raw.lower()
            reason = vendor.get(lowered) or table.get(lowered) or StopReason.OTHER
        return reason

    def decode_error(self, status: int, headers: Mapping[str, str], body: bytes) -> ModelResponse:
        """Decode a non-2xx answer: a refusal (a vendor's ``http_refusals`` rule)
        becomes a REFUSAL response with no text; anything else raises
        :class:`~zett_agent.errors.ProviderHTTPError` with the fields of
        :meth:`error_fields` (:class:`~zett_agent.errors.ContextOverflowError` when
        they say the input does not fit the context window)."""
        data = self.error_body(body)
        refusal = match_http_refusal(self.vendor, status, data)
        if refusal is not None:
            return self.builder.build(refusal)
        fields = self.error_fields(data)
        retry_after = retry_after_seconds(headers)
        if retry_after is None:
            retry_after = fields.retry_after
        message = fields.message or f"HTTP {status}"
        if status == 429:
            reset_at, retry_after, quota = rate_limit_fields(
                self.vendor, headers, data, retry_after
            )
            raise RateLimitError(
                message,
                provider=self.vendor.name,
                status=status,
                error_type=fields.error_type,
                code=fields.code,
                retry_after=retry_after,
                body=data,
                reset_at=reset_at,
                quota_exhausted=quota,
            )
        overflow = looks_like_context_overflow(status, fields.code, fields.message)
        raise (ContextOverflowError if overflow else ProviderHTTPError)(
            message,
            provider=self.vendor.name,
            status=status,
            error_type=fields.error_type,
            code=fields.code,
            retry_after=retry_after,
            body=data,
        )

    def error_body(self, body: bytes) -> Any:
        """The JSON value of an error body, else its text (the first 2,000 characters)."""
        try:
            return json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return body.decode("utf-8", "replace")[:_ERROR_TEXT]

    def error_fields(self, data: Any) -> ErrorFields:
        """Message, type and code of an error body, read where :attr:`error_shape`
        says; a text body is its own message (the first 500 characters)."""
        shape = self.error_shape
        message = _pick(data, shape.message, as_text)
        if message is None and isinstance(data, str):
            message = data.strip()[:_ERROR_MESSAGE] or None
        return ErrorFields(
            message, _pick(data, shape.type, as_text), _pick(data, shape.code, as_code)
        )

    def provider_error(
        self,
        message: str,
        *,
        streamed: bool,
        error_type: str | None = None,
        code: str | int | None = None,
        status: int = 200,
        body: Any = None,
    ) -> ProviderError:
        """The error to raise for an error reported inside a 2xx answer before any
        output: :class:`~zett_agent.errors.StreamError` in a stream,
        :class:`~zett_agent.errors.ProviderError` in a whole body;
        :class:`~zett_agent.errors.ContextOverflowError` in both when the error
        says the input does not fit the context window."""
        kind: type[ProviderError] = StreamError if streamed else ProviderError
        if looks_like_context_overflow(status, code, message):
            kind = ContextOverflowError
        return kind(
            message,
            provider=self.vendor.name,
            status=status,
            error_type=error_type,
            code=code,
            body=body,
        )

    def build(
        self, info: StopInfo, provider_record: Mapping[str, Any] | None = None
    ) -> ModelResponse:
        """The response, with ``detail["malformed_events"]`` when pieces were skipped."""
        if self.malformed:
            info = info.with_detail(malformed_events=self.malformed)
        return self.builder.build(info, provider_record)


class WireProtocol(ABC):
    """One wire protocol (Anthropic Messages, OpenAI Chat, ...)."""

    name: str

    @abstractmethod
    def encode_request(self, request: ModelRequest, vendor: Vendor) -> HTTPRequest:
        """Put ``request`` in this protocol's wire format."""

    @abstractmethod
    def decoder(self, vendor: Vendor) -> Decoder:
        """A fresh decoder for one response."""

    supports_prefill: bool = False
    """Whether the protocol continues a trailing assistant message (a prefill)."""

    def join_prefill(self, prefix: str, record: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The record of a continuation with the prefilled text ``prefix`` put in
        front, or None when records of this protocol cannot be joined (the joined
        message is then replayed from its text and tool calls)."""
        return None

    def without_tool_calls(self, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        """``record`` (a provider record) with every tool call removed.

        Used when tool calls are withheld, so a replayed history never holds a
        tool call without a result. The default drops the record entirely.
        """
        return None


# ---------------------------------------------------------------- helpers


def load_json(body: bytes | str) -> Any:
    """Parse a JSON body; raises :class:`DecodeError` with a short excerpt."""
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        text = body[:200] if isinstance(body, str) else body[:200].decode("utf-8", "replace")
        raise DecodeError(f"body is not JSON: {text!r}") from error


def user_parts(message: UserMessage, vendor: Vendor, *, loaded: bool = True) -> tuple[Part, ...]:
    """The parts of a user message, each checked against ``vendor``'s row
    (:func:`~zett_agent.vendors.media_problem`). Raises
    :class:`~zett_agent.errors.ConfigError` naming the part and the provider (and
    the row's ``media_note``) for one it cannot take, or, with ``loaded`` (when
    encoding), whose bytes are not loaded: nothing is sent, never a silent drop."""
    for number, part in enumerate(message.parts, 1):
        if isinstance(part, TextPart):
            continue
        problem = media_problem(vendor, part)
        if problem is None and loaded and part.needs_loading:
            problem = "its bytes are not loaded (Model.stream loads stored parts first)"
        if problem is not None:
            note = f"; {vendor.media_note}" if vendor.media_note else ""
            raise ConfigError(
                f"{vendor.name} cannot take part {number} of the user message, "
                f"{part.describe()}: {problem}{note}"
            )
    return message.parts


def result_parts(message: ToolResultMessage, vendor: Vendor) -> tuple[str, list[Part]]:
    """What a tool result sends on ``vendor``: its text and the parts the row takes
    in tool results (``MediaInput.in_tool_results``; text parts always). A media
    part it cannot take there is left to the text, which gets the part's
    description (``MediaPart.describe()``) when it does not hold it already."""
    text = message.content
    sent: list[Part] = []
    for part in message.parts:
        if isinstance(part, MediaPart) and (
            part.needs_loading or media_problem(vendor, part, tool_result=True) is not None
        ):
            description = part.describe()
            if description not in text:
                text = f"{text}\n{description}" if text else description
        else:
            sent.append(part)
    return text, sent


def add_settings(body: dict[str, Any], request: ModelRequest, vendor: Vendor) -> dict[str, Any]:
    """Write the request's portable settings into ``body`` as ``vendor``'s row says:
    ``reasoning`` (:func:`~zett_agent.vendors.reasoning_fields`, dotted paths into
    nested objects), a native structured ``output``
    (:func:`~zett_agent.vendors.output_fields`, into the same nested objects:
    Anthropic's ``output_config`` holds both ``effort`` and ``format``),
    ``server_tools`` after the agent's own tools
    (:func:`~zett_agent.vendors.server_tool_fields`), and ``prompt_cache_key`` on
    rows that take it. Raises :class:`~zett_agent.errors.ConfigError` for a
    setting the row does not have. Every protocol calls it, then
    :func:`merge_options`."""
    fields: dict[str, Any] = {}
    if request.reasoning is not None:
        fields.update(reasoning_fields(vendor, request.reasoning))
    if request.output is not None:
        output = request.output
        fields.update(output_fields(vendor, output.name, output.schema, output.description))
    for path, value in fields.items():
        *parents, leaf = path.split(".")
        node = body
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    for tool in request.server_tools:
        shape = server_tool_fields(vendor, tool)
        if shape.append:
            body[shape.field] = [*body.get(shape.field, ()), shape.entry]
        elif shape.field in body:
            raise ConfigError(f"server tool {tool.kind!r} is declared twice")
        else:
            body[shape.field] = shape.entry
    if request.prompt_cache_key and vendor.prompt_cache_key:
        body["prompt_cache_key"] = request.prompt_cache_key
    return body


def merge_options(
    body: dict[str, Any], options: Mapping[str, Any], nested: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """``body`` (what an encoder wrote) with ``options`` (``model_options``,
    ``ModelRequest.extra_body``) merged in; every protocol calls it last.

    A key the encoder did not write is added as given. A key in ``nested`` (the
    protocol's documented nested objects: Gemini ``generationConfig``, Anthropic
    ``output_config``, Responses ``reasoning``...) holding an object on both sides
    is merged key by key, and so are objects inside it. Any other key the
    encoder wrote (messages, tools, the output limit, a structured-output format,
    what a reasoning or cache setting wrote) may only be given again with the
    same value: a different one raises :class:`~zett_agent.errors.ConfigError`
    naming it, before anything is sent, so ``model_options`` can never replace
    the agent's tools or a setting zett made. ``body`` is changed in place and
    returned.
    """
    _merge(body, options, nested, "")
    return body


def _merge(
    body: dict[str, Any], options: Mapping[str, Any], nested: frozenset[str], at: str
) -> None:
    for key, value in options.items():
        path = f"{at}.{key}" if at else key
        if key not in body:
            body[key] = value
        elif (at or key in nested) and isinstance(body[key], dict) and isinstance(value, Mapping):
            body[key] = dict(body[key])
            _merge(body[key], value, nested, path)
        elif body[key] != value:
            raise ConfigError(
                f"model_options[{path!r}] clashes with what zett writes there "
                f"({_short(body[key])}); use the agent's own setting for it "
                "(tools, max_tokens, reasoning, server_tools...) or leave it out"
            )


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


_raw_decode = json.JSONDecoder().raw_decode


def parse_json(text: str) -> Any:
    """``json.loads(text)`` for the hot path: one event's data. ``json.loads`` wraps
    the scanner in two whitespace regex matches and type checks (~0.8 µs a call);
    this goes to the scanner first and leaves any other text (whitespace around the
    value, not JSON) to ``json.loads``, so it returns and raises exactly as that does
    (ValueError, RecursionError)."""
    try:
        value, end = _raw_decode(text)
    except json.JSONDecodeError:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from a ``retry-after-ms`` header, or a ``retry-after`` header
    given as seconds or as an HTTP date (RFC 9110 section 10.2.3); None if absent
    or unreadable."""
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.UTC)
        return max(0.0, (when - datetime.datetime.now(datetime.UTC)).total_seconds())
    return None


def stop(
    reason: StopReason,
    raw: str | None = None,
    *,
    category: str | None = None,
    message: str | None = None,
    recommended_model: str | None = None,
    detail: Mapping[str, Any] | None = None,
) -> StopInfo:
    """Shorthand for building a :class:`StopInfo` in decoders."""
    return StopInfo(reason, raw, category, message, recommended_model, dict(detail or {}))


def as_text(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def raw_value(value: Any) -> str | None:
    """A provider's stop value as ``StopInfo.raw`` keeps it: a non-empty string as it
    is; a number or a boolean as its JSON text (``42`` -> ``"42"``, seed 001: a value
    no table knows is OTHER "with the original kept"); None for anything else
    (absent, null, empty, an object or an array)."""
    if type(value) is str:
        return value or None
    if type(value) in (int, float, bool):
        return json.dumps(value)
    return None


# JSON-shape accessors: json.loads makes only dict, list, str, int, float, bool and
# None, so concrete-type checks suffice (an ABC check such as ``Mapping`` costs more).


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int | None:
    """``value`` if it is an int (not a bool), else None."""
    return value if type(value) is int else None


def as_code(value: Any) -> str | int | None:
    """``value`` if it is a string or an int (not a bool): an error code."""
    return value if type(value) is str or type(value) is int else None


def _pick(data: Any, paths: Sequence[str], read: Callable[[Any], Any]) -> Any:
    """The first non-None ``read(dig(data, path))`` over ``paths``."""
    for path in paths:
        value = read(dig(data, path))
        if value is not None:
            return value
    return None
