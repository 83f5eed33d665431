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

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from zett_agent._exchange import HTTPRequest, ModelRequest, ModelResponse, StreamEvent
from zett_agent.errors import (
    ContextOverflowError,
    ProviderError,
    ProviderHTTPError,
    RateLimitError,
    StreamError,
    looks_like_context_overflow,
)
from zett_agent.protocols._body import _pick, as_code, as_text, retry_after_seconds
from zett_agent.protocols._builder import ResponseBuilder
from zett_agent.protocols._sendable import NOT_RESENT, OWN_STOPS
from zett_agent.stop import StopInfo, StopReason
from zett_agent.vendors import (
    Vendor,
    match_http_refusal,
    rate_limit_fields,
)

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

    def record_rules(self, record: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, list[str]]:
        """The protocol's request rules for a record sent back
        (:data:`~zett_agent.protocols._sendable.RecordRules`): by default none."""
        return record, []

    def build(
        self, info: StopInfo, provider_record: Mapping[str, Any] | None = None
    ) -> ModelResponse:
        """The response, with ``detail["malformed_events"]`` when pieces were skipped
        and, for an answer a stop may have left unfinished, ``detail["not_resent"]``:
        what of its record is left out when it is sent again (:meth:`record_rules`)."""
        if self.malformed:
            info = info.with_detail(malformed_events=self.malformed)
        if provider_record is not None and info.reason in OWN_STOPS:
            repairs = self.record_rules(provider_record)[1]
            if repairs:
                info = info.with_detail(**{NOT_RESENT: repairs})
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
