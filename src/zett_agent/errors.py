"""The exception tree of zett-agent.

::

    ZettError
     ├── ConfigError          bad configuration: unknown provider, missing API key
     ├── ProviderError        the provider answered with an error and no usable output
     │    ├── ProviderHTTPError   a non-2xx status that is not a refusal
     │    └── StreamError         an error inside a 200 stream, before any output
     ├── TransportError       the connection failed or went idle before any output
     ├── DecodeError          a body that no decoder can read (e.g. ``zett inspect``)
     ├── ResumeError          a session or history whose last answer cannot be resumed
     ├── SessionStoreError    a stored session that cannot be read or written as asked
     └── PendingApprovalError tool calls wait for a decision (zett_agent.approvals)

``AgentStopError`` (an abnormal stop the caller asked to have raised) lives in
:mod:`zett_agent.stop`. Errors from httpx are mapped to this tree in
:mod:`zett_agent.transport` and re-raised ``from`` the original.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "DecodeError",
    "ProviderError",
    "ProviderHTTPError",
    "ResumeError",
    "SessionStoreError",
    "StreamError",
    "TransportError",
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
    """Base of every error zett-agent raises on purpose."""


class ConfigError(ZettError):
    """The configuration cannot work: unknown provider, missing key, bad model string."""


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


class TransportError(ZettError):
    """The connection failed, was reset, or went idle before any output arrived.

    ``retryable`` is True: nothing was received, so sending again is safe.
    """

    retryable = True


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
    """

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
        """Whether sending the same request again may succeed (429, 5xx, overloaded)."""
        if self.status is not None and self.status in _RETRYABLE_STATUS:
            return True
        return self.error_type in _RETRYABLE_TYPES


class ProviderHTTPError(ProviderError):
    """A non-2xx HTTP status that is not a refusal."""


class StreamError(ProviderError):
    """An error event inside a 200 stream that arrived before any output."""
