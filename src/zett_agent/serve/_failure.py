"""What a person is told when a run fails: the ``errorText`` of the stream's ``error``.

:func:`failure_text` says what kind of failure it was, in one sentence, as ``zett
run`` names the error on stderr: the provider refused the credentials, a rate limit
or an exhausted quota (with the wait when the provider said), the provider could not
be reached or did not answer in time, a size limit, the provider's own error. The
provider's message is added only where it is safe to show: never for an
authentication failure (providers echo the key they were sent), always after
:func:`safe_excerpt` (credential-looking words masked, one line, at most
:data:`MAX_SHOWN` characters); ``Model`` has already replaced the API key and
credential headers with ``[redacted]``. Nothing here is a ``repr``. The full error
goes to the server log.
"""

from __future__ import annotations

import re

from zett_agent.errors import (
    CallTimeoutError,
    ConfigError,
    ContextOverflowError,
    PoolTimeoutError,
    ProviderError,
    RateLimitError,
    ResponseLimitError,
    StreamError,
    TransportError,
    UnexpectedContentError,
    ZettError,
)
from zett_agent.model._redact import REDACTED

__all__ = ["MAX_SHOWN", "failure_text", "safe_excerpt"]

MAX_SHOWN = 200
"""The most characters of a provider's message shown."""

_CREDENTIAL = re.compile(
    r"\b(?:sk|pk|rk|ak|key|api|token|bearer|ghp|gho|xox[abpr]|AIza)[-_A-Za-z0-9.]{6,}"
    r"|\b(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{24,}",
    re.IGNORECASE,
)
"""Words that look like a credential: a key prefix followed by more characters, or a
long run of letters and digits (tokens, hashes)."""


def safe_excerpt(text: str) -> str:
    """``text`` on one line, credential-looking words masked, cut to :data:`MAX_SHOWN`."""
    line = " ".join(text.split())
    line = _CREDENTIAL.sub(REDACTED, line)
    return line if len(line) <= MAX_SHOWN else line[: MAX_SHOWN - 1] + "…"


def _said(error: ProviderError) -> str:
    message = error.message if isinstance(error.message, str) else ""
    excerpt = safe_excerpt(message)
    return f": {excerpt}" if excerpt else "."


def _status(error: ProviderError) -> str:
    parts = [f"HTTP {error.status}" if error.status else None, error.error_type]
    named = ", ".join(p for p in parts if p)
    return f" ({named})" if named else ""


def _who(error: ProviderError) -> str:
    return f"the model provider ({error.provider})" if error.provider else "the model provider"


def _provider(error: ProviderError) -> str:
    who = _who(error)
    return who[0].upper() + who[1:]


def failure_text(error: BaseException) -> str:
    """One sentence saying why the run failed, safe to show on a page."""
    match error:
        case ContextOverflowError():
            return (
                "The conversation is too long for the model's context window"
                f"{_status(error)}: start a new chat or use a model with a larger window."
            )
        case RateLimitError(quota_exhausted=True):
            return (
                f"{_provider(error)} says the quota or billing balance is used up"
                f"{_status(error)}{_said(error)}"
            )
        case RateLimitError():
            wait = (
                f" Try again in {error.retry_after:.0f} s."
                if error.retry_after is not None
                else " Try again later."
            )
            return f"{_provider(error)} is rate limiting this server{_status(error)}.{wait}"
        case ProviderError(status=401 | 403):
            return (
                f"Authentication failed: {_who(error)} did not accept the "
                f"credentials{_status(error)}. Check the API key the server uses."
            )
        case StreamError():
            return (
                f"{_provider(error)} reported an error in its stream{_status(error)}{_said(error)}"
            )
        case ProviderError(status=int() as status) if status >= 500:
            return f"{_provider(error)} failed{_status(error)}{_said(error)}"
        case ProviderError():
            return f"{_provider(error)} rejected the request{_status(error)}{_said(error)}"
        case CallTimeoutError():
            return f"The model did not answer in time ({safe_excerpt(str(error))})."
        case PoolTimeoutError():
            return "Too many model calls at once on this server: no connection came free in time."
        case ResponseLimitError():
            return f"The model's answer was larger than a size limit ({error.limit or 'size'})."
        case UnexpectedContentError():
            return (
                f"The model's address answered with {safe_excerpt(error.content_type)} "
                f"(HTTP {error.status}), not its API: a proxy or login page?"
            )
        case TransportError():
            return f"The model provider could not be reached ({safe_excerpt(str(error))})."
        case ConfigError():
            return f"The server's configuration cannot work: {safe_excerpt(str(error))}"
        case ZettError():
            return f"The run failed ({type(error).__name__}): {safe_excerpt(str(error))}"
        case _:
            return "The run failed with an internal error. The server log has the details."
