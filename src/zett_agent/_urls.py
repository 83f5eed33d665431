"""Credentials in URLs a user gives zett (an ``--mcp`` server's ``?api_key=``, a
``user:password@``): taken out wherever a URL is stored or shown.

:func:`redact_url` is the URL as a session's ``run_settings`` row stores it, and
as messages, errors and logs name it; :func:`url_secrets` gives the values taken
out, for a :class:`~zett_agent.model._redact.Redactor` of text that may quote
the URL itself (an HTTP library's error, an SDK's log line). No imports of zett's
own: every layer may use it.
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["REDACTED", "redact_url", "redact_urls_in", "url_secrets"]

REDACTED = "[redacted]"
"""The marker in place of a credential (the same as ``model/_redact.py``'s)."""

_URL_CREDENTIAL_WORDS = (
    *("auth", "key", "token", "secret", "cookie", "password", "signature"),
    *("sig", "pass", "pwd", "credential", "session"),
)


def _credential_name(name: str) -> bool:
    name = urllib.parse.unquote_plus(name).lower()
    return any(word in name for word in _URL_CREDENTIAL_WORDS)


def redact_url(url: str) -> str:
    """``url`` as zett stores and shows it: without a ``user:password@`` part, and
    with the value of each query parameter whose name says it carries a credential
    (``api_key``, ``key``, ``token``, ``access_token``, ``sig``, ``password``...)
    replaced by ``[redacted]``, the rest of the text unchanged. Text that is not an
    ``http(s)://`` URL is returned as it is."""
    if not url.lower().startswith(("http://", "https://")):
        return url
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    query = "&".join(
        f"{name}={REDACTED}" if sep and value and _credential_name(name) else piece
        for piece in parts.query.split("&")
        for name, sep, value in [piece.partition("=")]
    )
    if netloc == parts.netloc and query == parts.query:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


def url_secrets(url: str) -> frozenset[str]:
    """The credentials :func:`redact_url` takes out of ``url`` (its password and
    the credential parameters' values, as written and decoded), for a
    :class:`Redactor` of text that may quote the URL."""
    if not url.lower().startswith(("http://", "https://")):
        return frozenset()
    parts = urllib.parse.urlsplit(url)
    found = {parts.password or ""}
    for piece in parts.query.split("&"):
        name, sep, value = piece.partition("=")
        if sep and value and _credential_name(name):
            found |= {value, urllib.parse.unquote_plus(value)}
    return frozenset(s for s in found if s)


_URL_IN_TEXT = re.compile(r"https?://[^\s'\"<>`]+", re.IGNORECASE)


def redact_urls_in(text: str) -> str:
    """``text`` with every ``http(s)://`` URL in it as :func:`redact_url` gives it
    (an error or a log line quoting a URL, whatever its credentials' length)."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda found: redact_url(found.group()), text)
