"""The model client's connection pool: an httpx transport over aiohttp's connector.

httpx's default pool (httpcore 1.0) walks every pooled connection, polling each
socket, on every request and every release: its cost grows with the square of the
calls in flight (``bench/pool.py``: 1,000 concurrent streams took 27 s of CPU,
against 1.2 s over aiohttp's connector, which keeps idle connections per host in a
deque). Every :class:`~zett_agent.model.Model` that makes its own client uses
:class:`ModelTransport`; a host that passes ``client=`` keeps its own httpx client
and pool. The API above the transport is httpx's (``httpx.AsyncClient``, its
requests, responses, redirects, cookies), so the transport module, the watchdog,
the size limits and the redirect rule of :mod:`zett_agent.model._transport` are
the same whichever pool serves a call.

**Proxies and CAs are read here.** httpx reads no environment proxy for a client
given a transport, so this transport does, by httpx 0.28's rules
(:mod:`zett_agent.model._proxies`: ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY``/
``NO_PROXY``, lower-case too; no CIDR ranges), unless ``trust_env=False`` or an
explicit ``proxy=``. http goes to the proxy, https through a CONNECT tunnel; the
proxy URL's credentials become ``Proxy-Authorization`` for the proxy alone (never a
header httpx sees, so never one a redirect could carry). A SOCKS proxy goes through
httpx's own transport (which needs ``socksio``). The TLS context is the one passed,
else :func:`shared_ssl_context` (``SSL_CERT_FILE``/``SSL_CERT_DIR`` or certifi).

What this adapter does that ``httpx-aiohttp`` 0.2.0 does not (each is tested):

* **The clocks start where zett's do.** The request's ``trace`` extension is called
  with ``http11.send_request_headers.started`` once a connection slot is held, so
  the watchdog never counts the wait for a pooled connection (httpx-aiohttp never
  calls it).
* **Pool exhaustion is its own error.** The ``max_connections`` slots are an
  ``asyncio.Semaphore`` held from the request until its response is closed; the wait
  for one is bounded by the request's ``pool`` timeout and raises
  ``httpx.PoolTimeout`` (httpx-aiohttp folds the wait into aiohttp's connect
  timeout: a ``ConnectTimeout``, retried as if the provider were unreachable).
* **What arrived before a failure is read.** aiohttp raises a dropped
  connection's error before the bytes it buffered ahead of it; they are passed on
  first (the text, the tool-call fragments before the drop), then the error.
* **Errors mean what they say.** A server that closes the connection is
  ``httpx.RemoteProtocolError`` (before the headers, or a body cut short: a reset
  in the middle of a body too, which aiohttp reports as a short payload), an answer
  that is not HTTP or a header line over 64 KiB ``RemoteProtocolError``, a reset
  before the response ``httpx.ReadError``, a failed connect ``httpx.ConnectError``, a
  connect timeout ``httpx.ConnectTimeout``, a read timeout ``httpx.ReadTimeout``, a
  proxy that cannot be reached or refuses the tunnel (407) ``httpx.ProxyError``, a
  URL that is not http(s) ``httpx.UnsupportedProtocol`` (httpx-aiohttp maps every
  ``ClientConnectionError``, a server disconnect included, to ``ConnectTimeout``).
  ``tests/test_model_pool.py`` produces each on a socket and pins the whole table.

Also: bytes are passed as they arrive, everything read so far in one piece (HTTP
chunk boundaries mean nothing to SSE or NDJSON, and fewer, larger pieces are less
work for every layer above; the transport counts its limits per event, not per
piece), bodies are
never decompressed here (the transport inflates them with its own bounded
inflater), redirects are never followed here (httpx and the redirect rule do it),
cookies are httpx's (aiohttp's jar is a dummy), response header lines may be up to
64 KiB. Idle connections close after ``keepalive_expiry``; aiohttp keeps no count
limit on them (``max_keepalive_connections`` is not used).

aiohttp runs on asyncio only and is imported by the first request (about 130 ms
once per process; so is the TLS context): under another anyio backend (trio) the
transport hands requests to httpx's own transport. A transport serves the event
loop it first ran on; used from a new loop it opens a new pool for it (the old
loop's connections cannot be used from another loop).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import ssl
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx

from zett_agent.model._proxies import ProxyRoutes

if TYPE_CHECKING:
    import aiohttp

__all__ = ["DEFAULT_LIMITS", "ModelTransport", "PoolResponse", "shared_ssl_context"]

DEFAULT_LIMITS = httpx.Limits(max_connections=100)
"""A transport's limits when none are given (a Model passes its own ``max_connections``)."""

READ_AHEAD = 64 * 1024
"""aiohttp's read buffer per response, in bytes: it stops reading the socket once
twice this is buffered and not taken (aiohttp 3.14's default is 256 KiB, so 512 KiB
per stream nobody reads); with one socket read past it (asyncio reads up to 256
KiB at a time) a stalled response holds at most ~384 KiB here, then the kernel's
buffers fill and the server's writes block: back-pressure reaches the provider."""

MAX_HEADER_LINE = 64 * 1024
"""The longest response status or header line, in bytes (aiohttp's default: 8190)."""


def shared_ssl_context(trust_env: bool = True) -> ssl.SSLContext:
    """The TLS context every :class:`~zett_agent.model.Model`'s own client uses, made
    once per process (per ``trust_env``): httpx's defaults, the CA bundle from
    ``SSL_CERT_FILE`` or else ``SSL_CERT_DIR`` (read when it is first made, and only
    with ``trust_env``), else certifi's."""
    return _ssl_context(bool(trust_env))


@functools.cache
def _ssl_context(trust_env: bool) -> ssl.SSLContext:
    return httpx.create_ssl_context(trust_env=trust_env)


def ca_bundle(trust_env: bool = True) -> str:
    """Where :func:`shared_ssl_context` takes its CA certificates from, as
    ``"SSL_CERT_FILE=<path>"``, ``"SSL_CERT_DIR=<path>"`` or ``"certifi <path>"``."""
    import os

    if trust_env and os.environ.get("SSL_CERT_FILE"):
        return "SSL_CERT_FILE=" + os.environ["SSL_CERT_FILE"]
    if trust_env and os.environ.get("SSL_CERT_DIR"):
        return "SSL_CERT_DIR=" + os.environ["SSL_CERT_DIR"]
    import certifi

    return "certifi " + certifi.where()


class ModelTransport(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport`` over one aiohttp connector per event loop.

    Args:
        limits: ``max_connections`` (None: no limit) and ``keepalive_expiry``.
        ssl_context: a TLS context, or a function returning one (called by the
            first https request, so making a transport loads no CA bundle);
            None: :func:`shared_ssl_context` (``SSL_CERT_FILE``/``SSL_CERT_DIR``
            or certifi; with ``trust_env=False``, certifi).
        proxy: one proxy URL for every request (``http://``, ``https://``;
            ``socks5://`` goes through httpx's own transport and needs
            ``socksio``); credentials in it go to the proxy only.
        trust_env: without ``proxy``, read ``HTTP_PROXY``/``HTTPS_PROXY``/
            ``ALL_PROXY``/``NO_PROXY`` (:mod:`zett_agent.model._proxies`: httpx
            0.28's rules) when the transport is made; False: connect directly.

    Use it as ``httpx.AsyncClient(transport=ModelTransport(...))``: httpx reads no
    environment proxy for a client given a transport, so this transport does.
    """

    def __init__(
        self,
        *,
        limits: httpx.Limits = DEFAULT_LIMITS,
        ssl_context: ssl.SSLContext | Callable[[], ssl.SSLContext] | None = None,
        proxy: str | httpx.URL | None = None,
        trust_env: bool = True,
    ) -> None:
        self.limits = limits
        self._ssl = ssl_context
        self.trust_env = trust_env
        if proxy is not None:
            self.proxies = ProxyRoutes.single(proxy)
        else:
            self.proxies = ProxyRoutes.from_env() if trust_env else ProxyRoutes.none()
        self._proxy_args: dict[httpx.URL, tuple[str, str | None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: aiohttp.ClientSession | None = None
        self._slots: asyncio.Semaphore | None = None
        self._fallbacks: dict[httpx.URL | None, httpx.AsyncHTTPTransport] = {}
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._timeouts: dict[tuple[float | None, float | None], Any] = {}

    # ------------------------------------------------------------ set-up

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = shared_ssl_context(self.trust_env)
        elif callable(self._ssl):
            self._ssl = self._ssl()
        return self._ssl

    def _open(self, loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is not None:
            _abandon(self._session)  # another loop's: its connections cannot serve this one
        if self._finalizer is not None:
            self._finalizer.detach()
        connector = aiohttp.TCPConnector(
            limit=0,  # the slots below bound the connections
            keepalive_timeout=self.limits.keepalive_expiry or 0.0,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
            read_bufsize=READ_AHEAD,
            max_line_size=MAX_HEADER_LINE,
            max_field_size=MAX_HEADER_LINE,
        )
        # a transport dropped without aclose() (an agent never closed) closes its
        # connections quietly, as httpx's pool does, instead of aiohttp's report
        self._finalizer = weakref.finalize(self, _abandon, self._session)
        limit = self.limits.max_connections
        self._slots = asyncio.Semaphore(limit) if limit is not None else None
        self._loop = loop
        self._timeouts.clear()
        return self._session

    def _timeout(self, connect: float | None, read: float | None) -> Any:
        key = (connect, read)
        timeout = self._timeouts.get(key)
        if timeout is None:
            import aiohttp

            timeout = self._timeouts[key] = aiohttp.ClientTimeout(
                total=None, connect=None, sock_connect=connect, sock_read=read
            )
        return timeout

    def _httpx(self, proxy: httpx.URL | None) -> httpx.AsyncHTTPTransport:
        """httpx's own transport (trio; a SOCKS proxy), one per proxy."""
        transport = self._fallbacks.get(proxy)
        if transport is None:
            transport = self._fallbacks[proxy] = httpx.AsyncHTTPTransport(
                verify=self._context(),
                limits=self.limits,
                proxy=proxy,
                trust_env=self.trust_env,
            )
        return transport

    def _proxy(self, proxy: httpx.URL) -> tuple[str, str | None]:
        """aiohttp's form of ``proxy``: its URL without credentials, and the
        ``Proxy-Authorization`` value they make (None without credentials)."""
        args = self._proxy_args.get(proxy)
        if args is None:
            auth = None
            if proxy.username or proxy.password:
                pair = f"{proxy.username}:{proxy.password}".encode()
                auth = "Basic " + base64.b64encode(pair).decode("ascii")
            bare = proxy.copy_with(username=None, password=None)
            args = self._proxy_args[proxy] = (str(bare), auth)
        return args

    # ------------------------------------------------------------ requests

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        proxy = self.proxies.for_url(request.url) if self.proxies else None
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # trio: aiohttp needs asyncio
            return await self._httpx(proxy).handle_async_request(request)
        if proxy is not None and proxy.scheme not in ("http", "https"):  # socks
            return await self._httpx(proxy).handle_async_request(request)
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        body: Any
        try:
            body = request.content or None
        except httpx.RequestNotRead:
            body = _chunks(request.stream)  # type: ignore[arg-type]
            headers = [(k, v) for k, v in headers if k.lower() != "transfer-encoding"]
        response = await self.open(
            request.method,
            request.url,
            headers,
            body,
            request.extensions.get("timeout", {}),
            request.extensions.get("trace"),
            request,
            proxy=proxy,
            sni_hostname=request.extensions.get("sni_hostname"),
        )
        return response.to_httpx(request)

    def route(self, url: httpx.URL) -> httpx.URL | bool | None:
        """How :meth:`open` sends a request to ``url``: the proxy (None: directly), or
        False when the request must go through :meth:`handle_async_request` (not
        under asyncio, a SOCKS proxy: httpx's own transport)."""
        proxy = self.proxies.for_url(url) if self.proxies else None
        if proxy is not None and proxy.scheme not in ("http", "https"):
            return False
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        return proxy

    async def open(
        self,
        method: str,
        url: httpx.URL,
        headers: list[tuple[str, str]],
        body: Any,
        timeouts: dict[str, float | None],
        trace: Callable[[str, dict[str, Any]], Awaitable[None]] | None,
        request: httpx.Request | Callable[[], httpx.Request],
        *,
        proxy: httpx.URL | bool | None = True,
        sni_hostname: str | None = None,
    ) -> PoolResponse:
        """Send one request on aiohttp (under asyncio, where :meth:`route` allows it)
        and return its response with the headers read, without httpx's request and
        response objects: what :meth:`handle_async_request` does, for zett's own
        transport (:mod:`zett_agent.model._transport`).

        ``headers`` are sent as given (``Host`` included); ``timeouts`` is httpx's
        ``timeout`` extension (``pool``, ``connect``, ``read`` in seconds), ``trace``
        its ``trace`` extension; ``request`` is the ``httpx.Request`` the errors
        name, or a function that makes it (called only for an error). ``proxy``:
        the route (:meth:`route`'s; True: looked up for ``url``). Raises the httpx exceptions of the
        table in the module docstring."""
        if proxy is True:
            proxy = self.proxies.for_url(url) if self.proxies else None
        loop = asyncio.get_running_loop()
        session = self._session
        if session is None or loop is not self._loop or session.closed:
            session = self._open(loop)
        slots = self._slots
        if slots is not None:
            if slots.locked():
                try:
                    async with asyncio.timeout(timeouts.get("pool")):
                        await slots.acquire()
                except TimeoutError:
                    raise httpx.PoolTimeout(
                        f"no free connection within the pool timeout "
                        f"(max_connections={self.limits.max_connections})",
                        request=_request_of(request),
                    ) from None
            else:
                await slots.acquire()
        try:
            if trace is not None:
                await trace("http11.send_request_headers.started", {"request": request})
            https = url.scheme == "https"
            via: str | None = None
            proxy_headers: dict[str, str] | None = None
            if proxy is not None:
                assert isinstance(proxy, httpx.URL)
                via, auth = self._proxy(proxy)
                if auth is not None:
                    if https:  # on the CONNECT request only
                        proxy_headers = {"Proxy-Authorization": auth}
                    else:  # a plain request goes to the proxy itself
                        headers = [*headers, ("Proxy-Authorization", auth)]
            try:
                response = await session.request(
                    method,
                    str(url),
                    headers=headers,
                    data=body,
                    allow_redirects=False,
                    timeout=self._timeout(timeouts.get("connect"), timeouts.get("read")),
                    ssl=self._context() if https else True,
                    server_hostname=sni_hostname,
                    proxy=via,
                    proxy_headers=proxy_headers,
                )
            except Exception as error:
                raise _mapped(error, _request_of(request), before_headers=True) from error
        except BaseException:
            if slots is not None:
                slots.release()
            raise
        return PoolResponse(response, _Body(response, request, slots))

    async def aclose(self) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()
        session, self._session = self._session, None
        if session is not None and not session.closed:
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is self._loop:
                await session.close()
            else:
                _abandon(session)
        fallbacks, self._fallbacks = self._fallbacks, {}
        for transport in fallbacks.values():
            await transport.aclose()


class PoolResponse:
    """A response as :meth:`ModelTransport.open` read it: the status, the headers
    (``header()`` for one value; ``headers``, an ``httpx.Headers``, made on first use)
    and the raw body (:meth:`aiter_raw`: bytes as they arrive, never decompressed);
    :meth:`aclose` gives the connection back (or closes it, the body unread).
    :meth:`to_httpx` is the ``httpx.Response`` of it, for the httpx layer."""

    __slots__ = ("_body", "_headers", "_response", "status_code")

    def __init__(self, response: aiohttp.ClientResponse, body: _Body) -> None:
        self._response = response
        self._body = body
        self._headers: httpx.Headers | None = None
        self.status_code: int = response.status

    @property
    def headers(self) -> httpx.Headers:
        if self._headers is None:
            self._headers = httpx.Headers(self._response.raw_headers)
        return self._headers

    def header(self, name: str) -> str:
        """The header's value as ``httpx.Headers.get`` gives it (several joined with
        ``", "``), or ``""``."""
        if self._headers is not None:
            value: str = self._headers.get(name, "")
            return value
        values: list[str] = self._response.headers.getall(name, [])
        if len(values) == 1:
            return values[0]
        return ", ".join(values)

    @property
    def http_version(self) -> str:
        return "HTTP/1.1"

    @property
    def reason_phrase(self) -> str:
        return self._response.reason or ""

    def aiter_raw(self) -> _Body:
        return self._body

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body decoded by httpx (an encoding zett does not inflate itself)."""
        return self.to_httpx().aiter_bytes()

    async def aclose(self) -> None:
        await self._body.aclose()

    def to_httpx(self, request: httpx.Request | None = None) -> httpx.Response:
        """The ``httpx.Response`` of this response (its body this one's)."""
        response = self._response
        extensions: dict[str, Any] = {"http_version": b"HTTP/1.1"}
        if response.reason:
            extensions["reason_phrase"] = response.reason.encode("latin-1", "replace")
        return httpx.Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=self._body,
            request=request,
            extensions=extensions,
        )


class _Body(httpx.AsyncByteStream):
    """A response body as aiohttp reads it (an async iterator: one ``readany`` per
    item, no generator); closing it gives back the slot."""

    __slots__ = ("_closed", "_failed", "_readany", "_request", "_response", "_slots")

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        request: httpx.Request | Callable[[], httpx.Request],
        slots: asyncio.Semaphore | None,
    ) -> None:
        self._response = response
        self._readany = response.content.readany
        self._request = request
        self._slots = slots
        self._failed: Exception | None = None
        self._closed = False

    def __aiter__(self) -> _Body:
        return self

    async def __anext__(self) -> bytes:
        if self._failed is not None:
            raise self._failed
        try:
            data = await self._readany()
        except Exception as error:
            # aiohttp raises a failure before handing out what arrived ahead of it
            # (text before a dropped connection): that goes first, as httpcore does
            mapped = _mapped(error, _request_of(self._request), before_headers=False)
            rest = _buffered(self._response.content)
            if rest:
                if mapped is not error:
                    mapped.__cause__ = error
                self._failed = mapped
                return rest
            raise mapped from error
        if not data:
            raise StopAsyncIteration
        return data

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        response = self._response
        try:
            if response.content.at_eof():
                response.release()  # the connection goes back to the pool
            else:
                response.close()  # a body not read to its end: the connection is closed
        finally:
            slots, self._slots = self._slots, None
            if slots is not None:
                slots.release()


def _request_of(request: httpx.Request | Callable[[], httpx.Request]) -> httpx.Request:
    return request if isinstance(request, httpx.Request) else request()


def _buffered(content: Any) -> bytes:
    """The bytes a failed aiohttp body still holds unread (its buffer: aiohttp 3.x)."""
    buffer = getattr(content, "_buffer", None)
    if not buffer:
        return b""
    data = b"".join(buffer)
    buffer.clear()
    return data


def _abandon(session: aiohttp.ClientSession) -> None:
    """Close a session that cannot be awaited (its loop is gone or another thread's):
    its sockets are closed without the shutdown handshake, and aiohttp does not
    report it as unclosed when it is collected."""
    if session.closed:
        return
    connector = session.connector
    session.detach()
    close = getattr(connector, "_close", None)  # aiohttp 3.x: close()'s synchronous part
    if close is not None:
        with contextlib.suppress(Exception):  # a loop already torn down
            close(abort_ssl=True)


async def _chunks(stream: httpx.AsyncByteStream) -> AsyncIterator[bytes]:
    async for chunk in stream:
        yield chunk


def _mapped(error: Exception, request: httpx.Request, *, before_headers: bool) -> Exception:
    """The httpx exception for an aiohttp one (most specific first)."""
    import aiohttp

    text = str(error) or type(error).__name__
    kind: type[httpx.TransportError]
    if isinstance(error, aiohttp.ServerDisconnectedError):
        kind = httpx.RemoteProtocolError
        if before_headers:
            text = "Server disconnected without sending a response."
    elif isinstance(error, aiohttp.ConnectionTimeoutError):
        kind = httpx.ConnectTimeout
    elif isinstance(error, aiohttp.ServerTimeoutError):
        kind = httpx.ReadTimeout
    elif isinstance(error, aiohttp.ClientProxyConnectionError | aiohttp.ClientHttpProxyError):
        kind = httpx.ProxyError  # the proxy unreachable, or its answer to CONNECT (407)
    elif isinstance(error, aiohttp.ClientConnectorError):
        kind = httpx.ConnectError
    elif isinstance(error, aiohttp.ClientPayloadError):
        kind = httpx.RemoteProtocolError  # the body ended before its declared end
    elif isinstance(error, aiohttp.ClientResponseError):
        kind = httpx.RemoteProtocolError  # not HTTP, or a header line over the limit
    elif isinstance(error, aiohttp.NonHttpUrlClientError | aiohttp.InvalidURL):
        kind = httpx.UnsupportedProtocol
    elif isinstance(error, TimeoutError):  # before OSError, its base class
        kind = httpx.ReadTimeout
    elif isinstance(error, aiohttp.ClientConnectionError | OSError):
        kind = httpx.ReadError  # a reset, a closed transport
    else:
        return error
    return kind(text, request=request)
