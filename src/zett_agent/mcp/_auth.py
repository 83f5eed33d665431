"""Authorizing zett at streamable HTTP MCP servers, through the ``mcp`` SDK's OAuth
client (MCP specification, "Authorization"): each function returns an
``httpx2.Auth`` to give as ``MCPServer.http(url, auth=...)``.

===========================  ===================================================
:func:`oauth`                authorization code with PKCE: protected-resource and
                             authorization-server metadata discovery, dynamic
                             client registration (or a pre-registered client, or a
                             client ID metadata document), refresh, and scope
                             step-up on a 403 ``insufficient_scope`` (the SDK's
                             ``OAuthClientProvider``). The host is asked to send a
                             person to the authorization URL (``authorize``): it
                             returns the URL the browser was sent back to, or the
                             code. :func:`ask_in_terminal` is the CLI's: it prints
                             the URL and reads the answer; it opens nothing.
:func:`client_credentials`   machine to machine: a client secret
                             (``client_secret_basic``/``_post``) or a private key
                             (``private_key_jwt``).
:func:`identity_assertion`   enterprise-managed authorization (SEP-990): an
                             identity assertion grant (ID-JAG) from the host's
                             identity provider, exchanged at the configured
                             authorization server (RFC 7523 jwt-bearer).
:func:`bearer`               a token provider: the host fetches tokens itself; it
                             is asked again after a 401.
===========================  ===================================================

Tokens live in a ``TokenStorage`` (the SDK's protocol) the host supplies; the
default, :class:`FileTokenStorage`, is one JSON file per server that only its owner
can read (mode 0600 in a 0700 folder). Tokens are never written to session rows,
logs, spans or events: the connection redacts every token, refresh token and
client secret it knows of (:func:`auth_secrets`) from result texts, error
messages and events, as :mod:`zett_agent.model._redact` does for API keys.

A 401 or 403 none of these can resolve is
:class:`~zett_agent.errors.MCPAuthorizationError` when connecting, and an error
result saying authorization is needed for a call.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from zett_agent.errors import MCPAuthorizationError
from zett_agent.mcp._current import person_asked

__all__ = [
    "DEFAULT_REDIRECT_URI",
    "Authorize",
    "FileTokenStorage",
    "MemoryTokenStorage",
    "ask_in_terminal",
    "auth_secrets",
    "bearer",
    "client_credentials",
    "identity_assertion",
    "oauth",
]

DEFAULT_REDIRECT_URI = "http://127.0.0.1:33418/callback"
"""Where the authorization server sends the browser back (registered as the
client's redirect URI). zett listens on nothing: the person copies the URL the
browser shows (:func:`ask_in_terminal`), or the host's ``authorize`` receives it."""

Authorize = Callable[[str], Awaitable[str]]
"""The host callback of :func:`oauth`: given the authorization URL, have a person
authorize zett and return the URL the browser was sent back to (with ``code`` and
``state``), or only the code."""


class MemoryTokenStorage(TokenStorage):
    """Tokens and the client registration in memory (lost when the process ends)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class FileTokenStorage(TokenStorage):
    """One server's tokens and client registration in a JSON file only its owner
    can read: the file is created with mode 0600 (a new temporary file opened with
    ``O_CREAT | O_EXCL`` and that mode, then renamed over the old one), so no moment
    exists where another user could read it.

    ``path`` default: ``$XDG_STATE_HOME/zett/mcp-auth/<16 hex of the URL's
    SHA-256>.json`` (``~/.local/state`` without ``XDG_STATE_HOME``), one per
    ``server_url``; zett's own folder ``mcp-auth`` is kept at mode 0700. The folder
    of a ``path`` the host gives is made (0700) only when it is missing: an existing
    folder's mode is the host's, never changed. A file that cannot be read is
    treated as empty.
    """

    def __init__(self, path: str | Path | None = None, *, server_url: str | None = None) -> None:
        self._own_folder = path is None
        if path is None:
            if server_url is None:
                raise ValueError("FileTokenStorage needs a path or a server_url")
            state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
            name = hashlib.sha256(server_url.encode()).hexdigest()[:16]
            path = Path(state) / "zett" / "mcp-auth" / f"{name}.json"
        self.path = Path(path)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: dict[str, Any]) -> None:
        data = self._read()
        data[key] = value
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # only if missing
        if self._own_folder:  # zett's folder, never one the host chose
            with contextlib.suppress(OSError):
                self.path.parent.chmod(0o700)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()  # a stale one (any mode, any owner's link) is never reused
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        descriptor = os.open(temporary, flags, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                if hasattr(os, "fchmod"):
                    os.fchmod(out.fileno(), 0o600)  # whatever the umask
                json.dump(data, out)
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise

    async def get_tokens(self) -> OAuthToken | None:
        raw = self._read().get("tokens")
        try:
            return OAuthToken.model_validate(raw) if raw else None
        except ValueError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = self._read().get("client_info")
        try:
            return OAuthClientInformationFull.model_validate(raw) if raw else None
        except ValueError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._write("client_info", client_info.model_dump(mode="json", exclude_none=True))


def oauth(
    server_url: str,
    authorize: Authorize,
    *,
    storage: TokenStorage | None = None,
    redirect_uri: str = DEFAULT_REDIRECT_URI,
    scope: str | None = None,
    client_name: str = "zett-agent",
    client_id: str | None = None,
    client_secret: str | None = None,
    client_metadata_url: str | None = None,
) -> httpx2.Auth:
    """Authorization code with PKCE for the server at ``server_url`` (the SDK's
    ``OAuthClientProvider``: discovery, registration, refresh, scope step-up).

    ``authorize`` is the host callback (:data:`Authorize`); the time a person takes
    there does not count against the connection's timeouts. ``storage`` (default
    :class:`FileTokenStorage` for the URL) keeps tokens and the registration.
    ``client_id`` (and ``client_secret`` for a confidential client) is a client
    registered beforehand: no dynamic registration then. ``client_metadata_url``:
    an HTTPS URL of a client ID metadata document, used when the authorization
    server supports it. ``scope``: asked for unless the server's challenge or
    metadata name scopes."""
    store = storage if storage is not None else FileTokenStorage(server_url=server_url)
    if client_id is not None:
        store = _Preregistered(
            store,
            OAuthClientInformationFull(
                client_id=client_id,
                client_secret=client_secret,
                redirect_uris=[redirect_uri],  # type: ignore[list-item]
                token_endpoint_auth_method="client_secret_basic" if client_secret else "none",
            ),
        )
    metadata = OAuthClientMetadata(
        client_name=client_name,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=scope,
    )
    answer: dict[str, str] = {}

    async def redirect(url: str) -> None:
        query = parse_qs(urlsplit(url).query)
        answer.clear()
        answer["state"] = (query.get("state") or [""])[0]
        with person_asked():
            answer["reply"] = await authorize(url)

    async def callback() -> AuthorizationCodeResult:
        reply = answer.get("reply", "").strip()
        if "code=" in reply or reply.startswith(("http://", "https://")):
            query = parse_qs(urlsplit(reply).query)
            code = (query.get("code") or [""])[0]
            state = query["state"][0] if query.get("state") else None
            issuer = query["iss"][0] if query.get("iss") else None
            return AuthorizationCodeResult(code=code, state=state, iss=issuer)
        return AuthorizationCodeResult(code=reply, state=answer.get("state"))

    return OAuthClientProvider(
        server_url,
        metadata,
        store,
        redirect_handler=redirect,
        callback_handler=callback,
        client_metadata_url=client_metadata_url,
    )


def client_credentials(
    server_url: str,
    *,
    client_id: str,
    client_secret: str | None = None,
    private_key: str | None = None,
    signing_algorithm: str = "RS256",
    token_endpoint_auth_method: Literal[
        "client_secret_basic", "client_secret_post"
    ] = "client_secret_basic",
    scope: str | None = None,
    issuer: str | None = None,
    storage: TokenStorage | None = None,
) -> httpx2.Auth:
    """The OAuth client credentials grant: with ``client_secret`` (sent as
    ``token_endpoint_auth_method`` says), or with ``private_key`` (PEM) signing a
    ``private_key_jwt`` assertion with ``signing_algorithm``. ``issuer``: the
    authorization server the client is registered with (tokens are asked only
    there). ``storage`` default: :class:`MemoryTokenStorage` (a new token is cheap
    to get)."""
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    store = storage if storage is not None else MemoryTokenStorage()
    if private_key is not None:
        assertion = SignedJWTParameters(
            issuer=client_id,
            subject=client_id,
            signing_key=private_key,
            signing_algorithm=signing_algorithm,
        ).create_assertion_provider()
        return _quiet(
            PrivateKeyJWTOAuthProvider,
            server_url=server_url,
            storage=store,
            client_id=client_id,
            assertion_provider=assertion,
            scope=scope,
            issuer=issuer,
        )
    if client_secret is None:
        raise ValueError("client_credentials needs client_secret or private_key")
    return _quiet(
        ClientCredentialsOAuthProvider,
        server_url=server_url,
        storage=store,
        client_id=client_id,
        client_secret=client_secret,
        token_endpoint_auth_method=token_endpoint_auth_method,
        scope=scope,
        issuer=issuer,
    )


def identity_assertion(
    server_url: str,
    *,
    client_id: str,
    client_secret: str,
    issuer: str,
    assertion: Callable[[str, str], Awaitable[str]],
    token_endpoint_auth_method: Literal[
        "client_secret_basic", "client_secret_post"
    ] = "client_secret_basic",
    scope: str | None = None,
    storage: TokenStorage | None = None,
) -> httpx2.Auth:
    """Enterprise-managed authorization (SEP-990, the SDK's
    ``IdentityAssertionOAuthProvider``): ``assertion(audience, resource)`` returns
    an ID-JAG for the authorization server ``issuer`` and this server's resource
    (how the host gets it from its identity provider, e.g. an RFC 8693 token
    exchange, is the host's); it is exchanged there for an access token with the
    confidential client ``client_id``/``client_secret``, sent as
    ``token_endpoint_auth_method`` says."""
    from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider

    return IdentityAssertionOAuthProvider(
        server_url,
        storage if storage is not None else MemoryTokenStorage(),
        client_id,
        client_secret,
        issuer,
        assertion,
        scope=scope,
        token_endpoint_auth_method=token_endpoint_auth_method,
    )


def _quiet(cls: Any, **arguments: Any) -> httpx2.Auth:
    """``cls(**arguments)`` without the SDK's deprecation warning for a missing
    ``issuer`` (discovery then decides; docs/mcp.md says so)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        provider: httpx2.Auth = cls(**arguments)
    return provider


class _Bearer(httpx2.Auth):
    """``Authorization: Bearer <token>`` from the host's token provider; asked once
    more after a 401 (a fresh token), then the 401 stands."""

    def __init__(self, token: Callable[[], str | Awaitable[str]]) -> None:
        self.token = token
        self.last: str | None = None

    async def _fresh(self) -> str:
        value = self.token()
        if not isinstance(value, str):
            value = await value
        self.last = value
        return value

    async def async_auth_flow(self, request: httpx2.Request) -> Any:
        token = self.last or await self._fresh()
        request.headers["Authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = f"Bearer {await self._fresh()}"
            yield request


def bearer(token: Callable[[], str | Awaitable[str]]) -> httpx2.Auth:
    """A token provider: ``token()`` (plain or async) returns an access token the
    host obtained itself; it is called on first use and again after a 401."""
    return _Bearer(token)


def auth_secrets(auth: Any) -> set[str]:
    """The credentials ``auth`` holds now (tokens, refresh token, client secret):
    what the connection redacts from text it keeps or shows."""
    found: set[str] = set()
    if isinstance(auth, _Bearer) and auth.last:
        found.add(auth.last)
    context = getattr(auth, "context", None)
    tokens = getattr(context, "current_tokens", None)
    if tokens is not None:
        found.update(t for t in (tokens.access_token, tokens.refresh_token) if t)
    info = getattr(context, "client_info", None) or getattr(auth, "_fixed_client_info", None)
    secret = getattr(info, "client_secret", None)
    if secret:
        found.add(secret)
    return found


class _Preregistered(TokenStorage):
    """A storage whose client registration is the pre-registered one."""

    def __init__(self, inner: TokenStorage, info: OAuthClientInformationFull) -> None:
        self.inner = inner
        self.info = info

    async def get_tokens(self) -> OAuthToken | None:
        return await self.inner.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self.inner.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.info = client_info
        await self.inner.set_client_info(client_info)


async def ask_in_terminal(url: str) -> str:
    """The CLI's :data:`Authorize`: prints the authorization URL to stderr (its
    control characters shown escaped, :func:`~zett_agent._terminal_text.one_line`) and
    reads, from the terminal, the URL the browser was sent back to (or the code).
    Opens nothing. Raises :class:`~zett_agent.errors.MCPAuthorizationError` when
    stdin is not a terminal (nobody can be asked)."""
    if not sys.stdin.isatty():
        raise MCPAuthorizationError(
            "an MCP server needs authorization and no terminal can ask for it: run "
            "zett on a terminal once (the token is kept), or pass a token",
            server=url.split("?", 1)[0],
        )
    from zett_agent._terminal_text import one_line

    # the URL is the authorization server's endpoint: text zett did not write
    print(f"\nAuthorize zett-agent: open this URL in a browser\n  {one_line(url)}", file=sys.stderr)
    prompt = "Paste the URL the browser was sent back to (or the code): "
    reply: str = await anyio.to_thread.run_sync(lambda: input(prompt))
    return reply
