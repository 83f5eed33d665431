"""The exception tree of zett-agent.

::

    ZettError
     ├── ConfigError          bad configuration: unknown provider, missing API key
     │    └── MCPAuthorizationError  an MCP server needs authorization zett could not get
     ├── ProviderError        the provider answered with an error and no usable output
     │    ├── ProviderHTTPError   a non-2xx status that is not a refusal
     │    │    ├── ContextOverflowError  the prompt does not fit the context window
     │    │    └── RateLimitError        429: a rate limit (reset time), or quota/billing
     │    └── StreamError         an error inside a 200 stream, before any output
     ├── TransportError       the connection failed or went idle before any output
     │    ├── CallTimeoutError     the first-output limit or the attempt deadline passed
     │    ├── PoolTimeoutError     no pooled connection came free in time (local)
     │    ├── ResponseLimitError   a size limit (zett_agent.model._limits) was exceeded
     │    └── UnexpectedContentError   a 2xx of a type that cannot be the wire's (HTML)
     ├── DecodeError          a body that no decoder can read (e.g. ``zett inspect``)
     ├── ResumeError          a session or history whose last answer cannot be resumed
     ├── HistoryError         a history the provider's rules refuse, in a message zett did
     │                        not produce (never rewritten: zett_agent.protocols._sendable)
     ├── SessionStoreError    a stored session that cannot be read or written as asked
     ├── PartTooLargeError    an image, document or audio part over the size limit
     ├── OutputValidationError  a structured answer failed validation after its retries
     ├── PendingApprovalError tool calls wait for a decision (zett_agent.approvals)
     └── ApprovalConflictError  the calls were decided already: this decision lost

``AgentStopError`` (an abnormal stop the caller asked to have raised) lives in
:mod:`zett_agent.stop`. Errors from httpx are mapped to this tree in
:mod:`zett_agent.model._transport` and re-raised ``from`` the original.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "CallTimeoutError",
    "ConfigError",
    "ContextOverflowError",
    "DecodeError",
    "HistoryError",
    "MCPAuthorizationError",
    "OutputAttempt",
    "OutputValidationError",
    "PartTooLargeError",
    "PoolTimeoutError",
    "ProviderError",
    "ProviderHTTPError",
    "RateLimitError",
    "ResponseLimitError",
    "ResumeError",
    "SessionStoreError",
    "StreamError",
    "TransportError",
    "UnexpectedContentError",
    "ZettError",
]

_RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 522, 524, 529})
_RETRYABLE_TYPES = frozenset(
    {
        "overloaded_error",
        "rate_limit_error",
        "api_error",
        "server_error",
        "RESOURCE_EXHAUSTED",
        "UNAVAILABLE",  # Google's 503 status, also sent as an error inside a 200 stream
    }
)


class ZettError(Exception):
    """Base of every error zett-agent raises on purpose.

    ``attempts``: when a fallback chain (:class:`~zett_agent.model.FallbackModel`)
    raises the last model's error, what every model of it did
    (:class:`~zett_agent.ModelAttempt`); else empty.
    """

    attempts: tuple[Any, ...] = ()


class ConfigError(ZettError):
    """The configuration cannot work: unknown provider, missing key, bad model string."""


@dataclass(frozen=True)
class OutputAttempt:
    """One answer of a structured run that failed validation: ``text`` is what was
    validated (the answer's text, or the output tool call's arguments), ``errors``
    what was sent back (one line per problem)."""

    text: str
    errors: str


class OutputValidationError(ZettError):
    """A structured run's answer ended normally and failed validation (the schema,
    or an output validator), and its ``output_retries`` are used up.

    ``attempts`` holds every failed answer's text and errors, in order (the first
    answer and each retry, :class:`OutputAttempt`); ``message`` is the last answer
    (stored, like the attempts before it). Never raised for an answer that stopped
    abnormally (MAX_OUTPUT, REFUSAL, CONTEXT_FULL, INTERRUPTED): the stop is
    reported instead. ``zett run`` exits 1.
    """

    def __init__(self, attempts: tuple[OutputAttempt, ...], message: Any = None) -> None:
        count = len(attempts)
        last = attempts[-1].errors if attempts else ""
        super().__init__(
            f"the structured answer failed validation {count} time"
            f"{'s' if count != 1 else ''}; last errors:\n{last}"
        )
        self.attempts = attempts
        self.message = message


class MCPAuthorizationError(ConfigError):
    """An MCP server answered 401 or 403 (or its OAuth flow failed), and zett could
    not obtain an authorization it accepts: give the server ``auth=`` (an OAuth
    provider or a token, :mod:`zett_agent.mcp._auth`) or the right token.

    A ``ConfigError``, so ``zett run`` still exits 1. ``server`` is the server's URL,
    ``status`` the HTTP status (None when the OAuth flow itself failed), ``scope``
    the scope a 403 ``insufficient_scope`` challenge asked for (or None). The
    message never holds a token.
    """

    def __init__(
        self, message: str, *, server: str, status: int | None = None, scope: str | None = None
    ) -> None:
        super().__init__(message)
        self.server = server
        self.status = status
        self.scope = scope


class DecodeError(ZettError):
    """A response body that cannot be read at all (not JSON, not SSE, not NDJSON)."""


class ResumeError(ZettError):
    """There is nothing to resume, or the last answer must not be continued.

    Raised by ``resume()`` for an empty history, an answer that ended normally,
    and a REFUSAL or CONTEXT_FULL (continuing those would meet the same refusal or
    overflow the context again). ``stop`` is the last answer's StopInfo, if any.
    """

    def __init__(self, message: str, *, stop: Any = None) -> None:
        super().__init__(message)
        self.stop = stop


class HistoryError(ZettError, ValueError):
    """A history holds what the provider's documented request rules refuse, in an
    assistant message zett did not produce by an interruption (a host's
    ``history=``/``messages=``, a record without zett's ``origin``): zett repairs
    only what it made itself, so nothing is sent. ``index`` is the message's place
    in the request, ``rule`` the rule it breaks, ``protocol`` the wire protocol."""

    def __init__(self, message: str, *, index: int, rule: str, protocol: str) -> None:
        super().__init__(message)
        self.index = index
        self.rule = rule
        self.protocol = protocol


class SessionStoreError(ZettError):
    """A stored session cannot be read (a corrupt row, a newer schema) or written.

    ``session_id`` and ``row`` (the row's sequence number) say where, when known.
    Rows are never skipped: loading the session fails instead.
    """

    def __init__(
        self, message: str, *, session_id: str | None = None, row: int | None = None
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.row = row


class PartTooLargeError(ZettError, ValueError):
    """An image, document or audio part is larger than a limit, found before its
    bytes were read whole (:mod:`zett_agent._parts`). ``size``: its bytes (None when
    it was cut while read); ``limit``: the limit in bytes. A ``ValueError`` too."""

    def __init__(self, message: str, *, size: int | None = None, limit: int) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit


class TransportError(ZettError):
    """The connection failed, was reset, or went idle before any output arrived.

    ``retryable`` is True: nothing was received, so sending again is safe
    (subclasses below say when it is not). ``limit`` names the limit that ended
    the call (``"first_output_timeout"``, ``"max_event_bytes"``...), if one did.
    """

    retryable = True
    limit: str | None = None

    def __init__(self, message: str, *, limit: str | None = None) -> None:
        super().__init__(message)
        if limit is not None:
            self.limit = limit


class CallTimeoutError(TransportError):
    """No output within ``first_output_timeout`` (``limit`` says so; retried), or
    the attempt's deadline ``attempt_timeout`` passed (not retried: the host's time
    for the call is spent). See :class:`zett_agent.model.CallTimeouts`."""

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return self.limit != "attempt_timeout"


class PoolTimeoutError(TransportError):
    """Every connection of the HTTP client's pool stayed busy for ``pool_timeout``
    seconds: local congestion (too many concurrent calls on one client), not the
    provider being idle. Not retried; raise the pool size or the timeout."""

    retryable = False


class ResponseLimitError(TransportError):
    """A response exceeded a size limit of :class:`zett_agent.model.ReadLimits`
    before any output (``limit`` names it). Not retried: the same request would
    fetch the same oversized answer."""

    retryable = False


class UnexpectedContentError(TransportError):
    """A 2xx answer whose content type cannot be the wire's (an HTML login or error
    page from a proxy). ``status``, ``content_type`` and ``excerpt`` (the first
    characters of the body) say what came back. Not retried."""

    retryable = False

    def __init__(self, message: str, *, status: int, content_type: str, excerpt: str) -> None:
        super().__init__(message, limit=None)
        self.status = status
        self.content_type = content_type
        self.excerpt = excerpt


class ProviderError(ZettError):
    """The provider reported an error and there was no output to keep.

    Attributes:
        provider: vendor name (``"anthropic"``, ``"openrouter"``...).
        status: HTTP status (200 for an error inside a successful stream).
        error_type: the provider's error type (``"overloaded_error"``), if any.
        code: the provider's error code (``"insufficient_quota"``, ``1301``), if any.
        message: the provider's message for a person.
        retry_after: seconds the provider asked to wait, if it said.
        body: the decoded error body (JSON-compatible) or the raw text.
        limit: ``"max_error_body_bytes"`` when the body was longer than the limit
            and only a prefix was read (the error is then not retried).
    """

    limit: str | None = None

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        error_type: str | None = None,
        code: str | int | None = None,
        retry_after: float | None = None,
        body: Any = None,
    ) -> None:
        parts = [p for p in (provider, str(status) if status else None, error_type) if p]
        super().__init__(f"[{' '.join(parts)}] {message}" if parts else message)
        self.provider = provider
        self.status = status
        self.error_type = error_type
        self.code = code
        self.message = message
        self.retry_after = retry_after
        self.body = body

    @property
    def retryable(self) -> bool:
        """Whether sending the same request again may succeed (429, 5xx, overloaded),
        unless a size limit was hit (the same request would fetch it again)."""
        if self.limit is not None:
            return False
        if self.status is not None and self.status in _RETRYABLE_STATUS:
            return True
        return self.error_type in _RETRYABLE_TYPES


class ProviderHTTPError(ProviderError):
    """A non-2xx HTTP status that is not a refusal."""


class RateLimitError(ProviderHTTPError):
    """HTTP 429: the provider's rate limit, or an exhausted quota or balance.

    ``retry_after``: seconds to wait, from ``retry-after-ms``, ``retry-after``, the
    vendor row's reset headers (Anthropic ``anthropic-ratelimit-*-reset``, OpenAI
    ``x-ratelimit-reset-*``...) or the body (Gemini ``RetryInfo``); ``reset_at``:
    the same moment as a UNIX time (``time.time()`` scale), None when the
    provider did not say. ``quota_exhausted``: the 429 says the quota or the
    billing balance is used up (a vendor row's ``quota_errors``: OpenAI
    ``insufficient_quota``...): waiting does not help, so it is not retried (a
    fallback chain still moves on).
    """

    def __init__(
        self,
        message: str,
        *,
        reset_at: float | None = None,
        quota_exhausted: bool = False,
        **fields: Any,
    ) -> None:
        super().__init__(message, **fields)
        self.reset_at = reset_at
        self.quota_exhausted = quota_exhausted

    @property
    def retryable(self) -> bool:
        return not self.quota_exhausted and super().retryable


class StreamError(ProviderError):
    """An error event inside a 200 stream that arrived before any output."""


class ContextOverflowError(ProviderHTTPError):
    """The provider said the input does not fit the model's context window:
    CONTEXT_FULL arriving as an error, before any output.

    Raised for Anthropic's 400 "prompt is too long" (``code="prompt_too_long"``),
    OpenAI's ``context_length_exceeded``, llama.cpp's "exceed context window",
    and the same words in an error inside a 2xx answer (``status`` is then 200),
    for every wire protocol (:func:`looks_like_context_overflow`). Catch it to
    shorten the prompt; :class:`~zett_agent.extensions.ContextCompaction` acts on
    it; ``zett run`` reports it as ``context_full`` (exit 5).
    """


_OVERFLOW_CODES = frozenset({"prompt_too_long", "context_length_exceeded"})
_OVERFLOW_TEXT = (
    "prompt is too long",
    "maximum context length",
    "context length exceeded",
    "context_length_exceeded",
    "context window",
    "input is too long",
    "exceeds the maximum number of tokens",
    "exceeds the context length",  # Ollama
)


def looks_like_context_overflow(status: int | None, code: object, message: object) -> bool:
    """Whether an error with this HTTP ``status``, provider ``code`` and ``message``
    says the input does not fit the context window: an overflow code
    (``prompt_too_long``, ``context_length_exceeded``) at any status, or overflow
    words in the message of a 400, a 413 or an in-stream error (``status`` 200 or
    None)."""
    if str(code) in _OVERFLOW_CODES:
        return True
    if status not in (None, 200, 400, 413):
        return False
    text = str(message).lower()
    return any(marker in text for marker in _OVERFLOW_TEXT)
