"""What a vendor's HTTP error says: a refusal (:func:`match_http_refusal`), a quota
or rate limit and when it resets (:func:`rate_limit_fields`, :func:`reset_time`)."""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Mapping
from typing import Any

from zett_agent.stop import StopInfo, StopReason

from ._rows import Vendor

_DURATION = (
    r"^(?:(?P<h>\d+(?:\.\d+)?)h)?(?:(?P<m>\d+(?:\.\d+)?)m(?!s))?"
    r"(?:(?P<s>\d+(?:\.\d+)?)s)?(?:(?P<ms>\d+(?:\.\d+)?)ms)?$"
)
"""A Go duration; compiled by the first reset header read (``re`` caches it), not at import."""


def reset_time(value: str, now: float | None = None) -> float | None:
    """A rate-limit reset header value as a UNIX time: an RFC 3339 time
    (Anthropic), a Go duration such as ``6m0s`` or ``20ms`` (OpenAI), epoch
    milliseconds or seconds (OpenRouter), or plain seconds; None if unreadable."""
    now = time.time() if now is None else now
    text = value.strip()
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        if number > 1e11:
            return number / 1000
        return number if number > 1e9 else now + max(0.0, number)
    match = re.match(_DURATION, text)
    if match and any(match.groupdict().values()):
        parts = {k: float(v) for k, v in match.groupdict().items() if v}
        seconds = (
            parts.get("h", 0) * 3600
            + parts.get("m", 0) * 60
            + parts.get("s", 0)
            + parts.get("ms", 0) / 1000
        )
        return now + seconds
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.timestamp()


def rate_limit_fields(
    vendor: Vendor, headers: Mapping[str, str], body: Any, retry_after: float | None
) -> tuple[float | None, float | None, bool]:
    """What a 429 says: ``(reset_at, retry_after, quota_exhausted)``.

    ``retry_after`` (seconds, already read from ``retry-after-ms`` / ``retry-after``
    or the body) wins; else the row's ``reset_headers``: the latest reset among
    the limits whose ``-remaining`` header is 0, else the latest of all.
    ``quota_exhausted``: one of the row's ``quota_errors`` matches the body."""
    now = time.time()
    quota = any(
        isinstance(value := dig(body, rule.path), str | int) and str(value) in rule.values
        for rule in vendor.quota_errors
    )
    if retry_after is not None:
        return now + retry_after, retry_after, quota
    lowered = {k.lower(): v for k, v in headers.items()}
    found: list[tuple[bool, float]] = []
    for name in vendor.reset_headers:
        value = lowered.get(name)
        when = reset_time(value, now) if value else None
        if when is not None:
            remaining = lowered.get(name.replace("-reset", "-remaining"), "").strip()
            found.append((remaining == "0", when))
    if not found:
        return None, None, quota
    exhausted = [when for spent, when in found if spent]
    reset_at = max(exhausted or [when for _, when in found])
    return reset_at, max(0.0, reset_at - now), quota


def dig(data: Any, path: str) -> Any:
    """The value at dotted ``path`` in nested dicts, or None."""
    for part in path.split("."):
        if not isinstance(data, Mapping):
            return None
        data = data.get(part)
    return data


def match_http_refusal(vendor: Vendor, status: int, body: Any) -> StopInfo | None:
    """A REFUSAL StopInfo when ``status`` + JSON ``body`` match one of the vendor's
    :class:`HTTPRefusal` rules, else None.

    ``raw`` is the provider's own value (seed 002): the matched value when it is a
    code (an int, or a short string without spaces), else the body's error code or
    type (``error.code``, ``error.type``, ``code``, ``type``; a string first), else
    None -- never made up. ``category``: the rule's pattern or fixed category, else
    the matched value; a list (OpenRouter ``metadata.reasons`` / ``patterns``)
    becomes its distinct items joined with ``", "`` in the provider's order (the
    list itself stays in ``detail["error"]``). ``detail`` keeps the status and the
    error body."""
    for rule in vendor.http_refusals:
        if rule.status != status:
            continue
        value = dig(body, rule.path)
        if value in (None, "", [], {}):
            continue
        if rule.values and not (isinstance(value, str | int) and str(value) in rule.values):
            continue
        raw = _as_code(value) or _error_code(body)
        message = dig(body, rule.message_path)
        message = message if isinstance(message, str) and message else None
        if rule.message_contains and not (
            message and any(part.lower() in message.lower() for part in rule.message_contains)
        ):
            continue
        found = re.search(rule.category_pattern, message or "") if rule.category_pattern else None
        category = (found.group(1) if found else None) or rule.category or _as_category(value)
        return StopInfo(
            StopReason.REFUSAL,
            raw=raw,
            category=category,
            message=message,
            detail={
                "http_status": status,
                "error": body.get("error", body) if isinstance(body, Mapping) else body,
            },
        )
    return None


def _as_code(value: Any) -> str | None:
    """``value`` as an error code: an int, or a string of at most 64 characters
    without whitespace (not prose, not a list); else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if (
        isinstance(value, str)
        and value
        and len(value) <= 64
        and not any(c.isspace() for c in value)
    ):
        return value
    return None


def _error_code(body: Any) -> str | None:
    """The error code or type an error body carries (a string code first)."""
    found = [dig(body, path) for path in ("error.code", "error.type", "code", "type")]
    strings = [v for v in found if isinstance(v, str)]
    for value in [*strings, *found]:
        code = _as_code(value)
        if code is not None:
            return code
    return None


def _as_category(value: Any) -> str | None:
    """A matched value as one category string: a list's distinct items joined."""
    if isinstance(value, list):
        items = list(dict.fromkeys(str(v) for v in value if v not in (None, "")))
        return ", ".join(items) or None
    return str(value) if value not in (None, "") else None
