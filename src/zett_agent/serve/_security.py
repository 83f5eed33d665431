"""Safe defaults for a server that runs tools: who may talk to it.

:class:`Guard` is plain ASGI middleware in front of every route:

* **Host** must name this server (``127.0.0.1``, ``localhost``, ``[::1]``, the bound
  address, or an ``--allowed-host``): a DNS-rebinding page reaches a loopback
  server under its own host name and is refused (HTTP 421).
* **Origin**, when a browser sends one, must be this server's own origin or a
  configured CORS origin: a cross-site page's POST is refused (403) even on
  loopback. Clients that send no Origin (curl, scripts) are not browsers.
* **Bearer token** on ``/api/``: required when a token is set, and a token must be
  set to listen on any address other than loopback (401 otherwise). The page
  itself is public static files; it reads the token from the URL fragment
  (``/#token=...``, never sent to the server) and sends ``Authorization: Bearer``.
* **Body size**: a ``Content-Length`` over the limit (the path's own, where it has
  one: ``POST /api/chat`` carries attachments) is refused before reading (413);
  bodies without one are counted as they are read (``read_json``).

Every refusal is a JSON body ``{"error": {"status", "message"}}``. Both apps that
face a network (``create_app`` and ``create_a2a_app``) put it in front of their
routes with :func:`guard_middleware`, from their ``ServeSettings``.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

if TYPE_CHECKING:
    from ._context import ServeSettings

__all__ = [
    "LOOPBACK_HOSTS",
    "Guard",
    "error_response",
    "guard_middleware",
    "host_name",
    "is_loopback",
]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def error_response(status: int, message: str, **headers: str) -> JSONResponse:
    """The JSON error every refusal and bad request gets."""
    return JSONResponse(
        {"error": {"status": status, "message": message}}, status_code=status, headers=headers
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine only."""
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str:
    """The host of a ``Host`` header or an origin's netloc, without the port,
    lowercased (``[::1]:8000`` -> ``::1``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value[1:]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """Host, Origin, token and body-size checks (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        bind_host: str,
        token: str | None,
        allowed_hosts: Iterable[str] = (),
        cors_origins: Iterable[str] = (),
        max_body_bytes: int,
        path_body_bytes: Mapping[str, int] | None = None,
    ) -> None:
        self.app = app
        self.token = token
        hosts = {host_name(h) for h in allowed_hosts}  # a port given with a name is ignored
        self.any_host = "*" in hosts
        hosts |= LOOPBACK_HOSTS
        if bind_host not in ("0.0.0.0", "::", ""):
            hosts.add(host_name(bind_host))
        self.hosts = frozenset(hosts)
        self.cors_origins = frozenset(o.rstrip("/").lower() for o in cors_origins)
        self.max_body_bytes = max_body_bytes
        self.path_body_bytes = dict(path_body_bytes or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._check(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _check(self, scope: Scope) -> JSONResponse | None:
        headers = _headers(scope)
        host = headers.get("host", "")
        if not self.any_host and host_name(host) not in self.hosts:
            return error_response(421, "this server does not answer to that Host name")
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin, host, scope):
            return error_response(403, "cross-origin requests are not allowed")
        path: str = scope.get("path", "")
        if self.token is not None and path.startswith("/api/") and scope["method"] != "OPTIONS":
            given = headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                value.strip().encode(), self.token.encode()
            ):
                return error_response(
                    401, "a bearer token is required", **{"www-authenticate": "Bearer"}
                )
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                return error_response(400, "invalid Content-Length")
            limit = self.path_body_bytes.get(path, self.max_body_bytes)
            if int(length) > limit:
                return error_response(413, f"the body is larger than {limit} bytes")
        return None

    def _origin_allowed(self, origin: str, host: str, scope: Scope) -> bool:
        origin = origin.strip().rstrip("/").lower()
        if origin in self.cors_origins:
            return True
        scheme = scope.get("scheme", "http")
        return origin == f"{scheme}://{host.strip().lower()}"


def guard_middleware(
    settings: ServeSettings,
    *,
    max_body_bytes: int | None = None,
    path_body_bytes: Mapping[str, int] | None = None,
) -> Middleware:
    """The :class:`Guard` in front of an app's routes, from ``settings`` (its host,
    token, allowed hosts and CORS origins); ``max_body_bytes`` None:
    ``settings.max_body_bytes``; ``path_body_bytes``: a path's own limit."""
    return Middleware(
        Guard,
        bind_host=settings.host,
        token=settings.token,
        allowed_hosts=settings.allowed_hosts,
        cors_origins=settings.cors_origins,
        max_body_bytes=settings.max_body_bytes if max_body_bytes is None else max_body_bytes,
        path_body_bytes=path_body_bytes,
    )


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    raw: Any = scope.get("headers") or []
    for key, value in raw:
        out[key.decode("latin-1").lower()] = value.decode("latin-1")
    return out
