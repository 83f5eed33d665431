"""The HTTP layer: send an :class:`HTTPRequest` with httpx, feed a decoder.

This is the only module that does network I/O for model calls. It reads the body's
raw bytes, inflates gzip/deflate itself and frames SSE events and NDJSON lines with
the bounded, sans-IO framers of :mod:`zett_agent.protocols._framing`, and turns what
goes wrong on the wire into the rules of the stop vocabulary:

* a connection that fails or resets, a stall (no content progress for the idle
  timeout), the attempt's deadline or a size limit **after** output arrived ends
  the response as INTERRUPTED with the text kept (``detail["transport_error"]``,
  and ``detail["limit"]`` naming the limit when one did);
* the same **before** any output raises a :class:`~zett_agent.errors.TransportError`
  (retryable for a failed connection or the first-output limit; not for the
  deadline, a size limit, pool exhaustion or an HTML page).

Timing has one watchdog per attempt (:mod:`zett_agent.model._watchdog`): a timer on the event loop
that sleeps until the next limit is due. The read loop only stamps the time after
a chunk produced stream events (keep-alives produce none), so no per-chunk timer
is made or cancelled. When a limit passes while the loop waits for bytes, the
watchdog cancels that wait. Waiting for a pooled connection is not counted: the
clocks start when the request is being sent (httpx's ``trace`` extension).
"""

from __future__ import annotations

import json
import logging
import weakref
import zlib
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import replace

import anyio
import anyio.lowlevel
import httpx

from zett_agent._exchange import HTTPRequest, ModelResponse, StreamEvent
from zett_agent.errors import (
    CallTimeoutError,
    PoolTimeoutError,
    ProviderError,
    ResponseLimitError,
    TransportError,
    UnexpectedContentError,
)
from zett_agent.model._limits import CallTimeouts, ReadLimits
from zett_agent.model._pool import ModelTransport, PoolResponse
from zett_agent.model._watchdog import ExpiredError, Watchdog, next_chunk, wait_for
from zett_agent.protocols._base import Decoder
from zett_agent.protocols._framing import (
    FrameTooLargeError,
    Inflater,
    LineFramer,
    QuietTooLongError,
    SSEFramer,
)
from zett_agent.protocols._framing import inflater_for as _inflater_for
from zett_agent.stop import StopReason

__all__ = ["credential_headers", "send"]

Response = httpx.Response | PoolResponse
"""A response as the transport reads it: httpx's, or the pool's own (the direct path)."""

_YIELD_EVERY = 256 * 1024
"""Bytes of input that produced no event between two yields to the event loop."""
_EXCERPT = 300
"""Characters of an unexpected body quoted in the error."""
_CREDENTIALS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie"}
)


def credential_headers(headers: Mapping[str, str], secrets: frozenset[str]) -> set[str]:
    """Lower-cased names of the headers that carry a credential: the usual auth
    headers, and any header whose value holds one of ``secrets``."""
    names = {k.lower() for k in headers if k.lower() in _CREDENTIALS}
    names |= {k.lower() for k, v in headers.items() if any(s in v for s in secrets)}
    return names


async def send(
    client: httpx.AsyncClient,
    url: str,
    request: HTTPRequest,
    headers: Mapping[str, str],
    decoder: Decoder,
    *,
    timeout: httpx.Timeout | None = None,
    timeouts: CallTimeouts | None = None,
    limits: ReadLimits | None = None,
    secrets: frozenset[str] = frozenset(),
    pool: httpx.AsyncBaseTransport | None = None,
) -> AsyncIterator[list[StreamEvent] | ModelResponse]:
    """Send ``request`` to ``url`` and yield stream events, then one ModelResponse.

    The events come in lists, one list per network chunk that made any (never an
    empty list), so the layers between the socket and the consumer pass one item
    per chunk, not one per event; :meth:`Model.stream` yields them one by one.

    Raises :class:`~zett_agent.errors.ProviderError` (from the decoder) for an
    error status that is not a refusal, and a :class:`TransportError` (or one of
    its subclasses) when the call fails before any output. ``timeout`` replaces the
    client's httpx timeouts for this request; ``timeouts`` and ``limits`` are the
    watchdog's clocks and the size limits (defaults: :mod:`zett_agent.model._limits`).
    ``secrets``: values whose headers never follow a redirect to another origin.

    ``pool``: the client's own transport, for a client that zett made (it follows
    no redirects): the request is built and handed to it directly, skipping
    httpx's client layer (URL merging, auth, the redirect loop), with the same
    request as ``client.send`` would make (the client's default headers and
    timeout, its cookies sent and kept, its log line). A host's client is always
    used through ``client.send``.
    """
    timeouts = timeouts or CallTimeouts()
    limits = limits or ReadLimits()
    streamed = request.response_format != "json"
    watch = Watchdog(timeouts, decoder, streamed=streamed)
    try:
        sent_headers = {"accept-encoding": "gzip, deflate", **headers, **request.headers}
        try:
            if pool is not None and not client.follow_redirects:
                response: Response = await _open_direct(
                    client, pool, url, request, sent_headers, watch, timeout
                )
            else:
                response = await _open(client, url, request, sent_headers, watch, timeout, secrets)
        except ExpiredError as expired:
            raise CallTimeoutError(str(expired), limit=expired.limit) from None
        except httpx.PoolTimeout as error:
            raise PoolTimeoutError(
                f"no free connection in the HTTP client's pool within its pool timeout "
                f"({type(error).__name__}); too many calls share one client",
                limit="pool_timeout",
            ) from error
        except httpx.TransportError as error:
            raise TransportError(_describe(error)) from error
        try:
            whole = await _whole(response, request, decoder, watch, limits)
            if whole is not None:  # an error status, a whole (JSON) body
                yield whole
            else:
                async for item in _stream(response, request, decoder, watch, limits):
                    yield item
        finally:
            await response.aclose()
    finally:
        watch.close()


async def _open(
    client: httpx.AsyncClient,
    url: str,
    request: HTTPRequest,
    headers: dict[str, str],
    watch: Watchdog,
    timeout: httpx.Timeout | None,
    secrets: frozenset[str],
) -> httpx.Response:
    """Send the request and return the response with its headers read. Redirects
    are followed here (when the client follows them) so that credentials never go
    to another origin."""
    outgoing = client.build_request(
        request.method,
        url,
        json=dict(request.body),
        headers=headers,
        params=dict(request.params) or None,
        timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
        extensions={"trace": watch.trace},
    )
    credentials = credential_headers(headers, secrets)
    for _ in range(client.max_redirects + 1):
        response = await wait_for(watch, client.send(outgoing, stream=True, follow_redirects=False))
        watch.pooling = False
        following = response.next_request
        if following is None or not client.follow_redirects:
            return response
        await response.aclose()
        if _origin(following.url) != _origin(outgoing.url):
            for name in credentials:
                following.headers.pop(name, None)
        outgoing = following
    raise TransportError(f"more than {client.max_redirects} redirects")


_URLS: dict[str, tuple[httpx.URL, str]] = {}
"""Parsed request URLs and their ``Host`` header (a model calls the same few URLs
again and again)."""
_HTTPX_LOG = logging.getLogger("httpx")


def _parsed(url: str) -> tuple[httpx.URL, str]:
    parsed = _URLS.get(url)
    if parsed is None:
        if len(_URLS) > 1024:
            _URLS.clear()
        target = httpx.URL(url)
        parsed = _URLS[url] = (target, target.netloc.decode("ascii"))
    return parsed


_DEFAULTS: weakref.WeakKeyDictionary[httpx.AsyncClient, tuple[httpx.Headers, dict[str, str]]]
_DEFAULTS = weakref.WeakKeyDictionary()


def _defaults(client: httpx.AsyncClient) -> dict[str, str]:
    """The client's default headers, lower-cased (read again when they are replaced)."""
    seen = _DEFAULTS.get(client)
    current = client.headers
    if seen is None or seen[0] is not current:
        seen = _DEFAULTS[client] = (current, {k.lower(): v for k, v in current.items()})
    return seen[1]


async def _open_direct(
    client: httpx.AsyncClient,
    pool: httpx.AsyncBaseTransport,
    url: str,
    request: HTTPRequest,
    headers: dict[str, str],
    watch: Watchdog,
    timeout: httpx.Timeout | None,
) -> Response:
    """:func:`_open` for zett's own client, which follows no redirects: the request
    ``client.build_request`` would make (its ``Host``, default headers, timeout,
    cookies and log line), handed to the pool without httpx's client layer. The
    JSON body is encoded as httpx 0.28 encodes it. Without cookies to send, the
    pool sends it with no ``httpx.Request`` or ``httpx.Response`` made
    (:meth:`ModelTransport.open`; an error still names the request)."""
    target, host = _parsed(url)
    if request.params:
        target = target.copy_merge_params(dict(request.params))
    body = json.dumps(
        dict(request.body), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")
    merged = {**_defaults(client), **{k.lower(): v for k, v in headers.items()}}
    merged["content-type"] = "application/json"
    merged["content-length"] = str(len(body))
    timeouts = (timeout if timeout is not None else client.timeout).as_dict()
    extensions = {"trace": watch.trace, "timeout": timeouts}
    method = request.method

    def outgoing() -> httpx.Request:
        return httpx.Request(method, target, headers=merged, content=body, extensions=extensions)

    jar = client.cookies
    transport = pool if isinstance(pool, ModelTransport) else None
    route = transport.route(target) if transport is not None else False
    response: Response
    ascii_headers = ("".join(merged) + "".join(merged.values())).isascii()
    if transport is None or route is False or jar or not ascii_headers:
        # cookies to send, httpx's own transport (trio, SOCKS), or what httpx refuses
        sent = outgoing()
        if jar:
            jar.set_cookie_header(sent)
        response = await wait_for(watch, pool.handle_async_request(sent))
    else:
        opening = transport.open(
            method,
            target,
            [("Host", host), *merged.items()],
            body,
            timeouts,
            watch.trace,
            outgoing,
            proxy=route,
        )
        response = await wait_for(watch, opening)
    watch.pooling = False
    if _header(response, "set-cookie"):
        jar.extract_cookies(
            response if isinstance(response, httpx.Response) else response.to_httpx(outgoing())
        )
    _HTTPX_LOG.info(
        'HTTP Request: %s %s "%s %d %s"',
        method,
        target,
        response.http_version,
        response.status_code,
        response.reason_phrase,
    )
    return response


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


async def _whole(
    response: Response,
    request: HTTPRequest,
    decoder: Decoder,
    watch: Watchdog,
    limits: ReadLimits,
) -> ModelResponse | None:
    """The response of an error status or of a whole (JSON) body; None for a stream
    (:func:`_stream` reads it)."""
    status = response.status_code
    try:
        if status >= 300:
            body, cut = await _read_body(response, watch, limits.max_error_body_bytes)
            try:
                return decoder.decode_error(status, response.headers, body)
            except ProviderError as error:
                if cut:
                    error.limit = "max_error_body_bytes"
                raise
        ctype = _header(response, "content-type").partition(";")[0].strip().lower()
        if _foreign(ctype):
            body, _ = await _read_body(response, watch, 2 * _EXCERPT)
            excerpt = body.decode("utf-8", "replace")[:_EXCERPT]
            raise UnexpectedContentError(
                f"the endpoint answered {status} {ctype} to a model call (expected "
                f"{_EXPECTED[request.response_format]}), not a model's answer: {excerpt!r}",
                status=status,
                content_type=ctype,
                excerpt=excerpt,
            )
        if request.response_format == "json" or (
            request.response_format == "sse" and _is_json(ctype)
        ):  # a gateway that ignored stream: true sends a whole body
            body, cut = await _read_body(response, watch, limits.max_body_bytes)
            if cut:
                raise ResponseLimitError(
                    f"the response body is over max_body_bytes={limits.max_body_bytes}",
                    limit="max_body_bytes",
                )
            return decoder.decode_body(body)
    except ExpiredError as expired:
        raise CallTimeoutError(str(expired), limit=expired.limit) from None
    except (httpx.TransportError, httpx.DecodingError, zlib.error) as error:
        raise TransportError(_describe(error)) from error
    return None


def _header(response: Response, name: str) -> str:
    """A response header's value (several joined with ``", "``), or ``""``."""
    if type(response) is PoolResponse:
        return response.header(name)
    value: str = response.headers.get(name, "")
    return value


async def _read_body(response: Response, watch: Watchdog, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit`` bytes of the body after decompression, and whether there
    was more (the rest is not read: the connection is closed)."""
    parts: list[bytes] = []
    size = 0
    async for piece in _pieces(response, watch):
        parts.append(piece)
        size += len(piece)
        if size > limit:
            return b"".join(parts)[:limit], True
    return b"".join(parts), False


def _pieces(response: Response, watch: Watchdog) -> AsyncIterator[bytes]:
    """The body after decompression, in pieces of at most 64 KiB when zett inflates
    it (gzip, deflate; yields to the event loop between inflated pieces); each wait
    for bytes under the watchdog (:func:`next_chunk`)."""
    inflater = _inflater_for(_header(response, "content-encoding"))
    chunks = response.aiter_bytes() if inflater is False else response.aiter_raw()
    if isinstance(inflater, Inflater):
        return _inflated(watch, chunks, inflater)
    return _Chunks(watch, chunks)


class _Chunks:
    """The raw chunks, each waited for under the watchdog (an iterator, no generator)."""

    __slots__ = ("_chunks", "_watch")

    def __init__(self, watch: Watchdog, chunks: AsyncIterator[bytes]) -> None:
        self._watch = watch
        self._chunks = chunks

    def __aiter__(self) -> _Chunks:
        return self

    def __anext__(self) -> Awaitable[bytes]:
        return next_chunk(self._watch, self._chunks)


async def _inflated(
    watch: Watchdog, chunks: AsyncIterator[bytes], inflater: Inflater
) -> AsyncIterator[bytes]:
    while True:
        try:
            raw = await next_chunk(watch, chunks)
        except StopAsyncIteration:
            return
        for n, piece in enumerate(inflater.pieces(raw)):
            if n:
                await anyio.lowlevel.checkpoint()
            yield piece


async def _stream(
    response: Response,
    request: HTTPRequest,
    decoder: Decoder,
    watch: Watchdog,
    limits: ReadLimits,
) -> AsyncIterator[list[StreamEvent] | ModelResponse]:
    """The hot path: frames to the decoder, events out, the limits checked per chunk."""
    why: str | None = None
    limit: str | None = None
    total = skipped = next_yield = 0  # skipped: bytes of chunks in a row that made no event
    quiet = 0  # bytes of events or lines in a row that made no stream event
    cut: _LimitError | None = None
    max_body, max_skipped = limits.max_body_bytes, limits.max_skipped_bytes
    try:
        if request.response_format == "sse":
            feed_sse = decoder.feed_sse
            framer = SSEFramer(limits.max_event_bytes, max_skipped)
            async for data in _pieces(response, watch):
                batch: list[StreamEvent] = []
                for name, payload in framer.feed(data):
                    events = feed_sse(name, payload)
                    if events:
                        batch += events
                        quiet = 0
                    else:  # an event that made none (a ping, an empty delta)
                        quiet += len(payload)
                        if quiet > max_skipped:
                            cut = _LimitError("max_skipped_bytes", max_skipped)
                            break
                total += len(data)
                if cut is not None:
                    if batch:
                        yield batch
                    raise cut
                if batch:
                    yield batch  # one item per network chunk through the layers above
                    watch.last = watch.now()
                    skipped = next_yield = 0
                else:
                    skipped += len(data)
                    if skipped > max_skipped:
                        raise _LimitError("max_skipped_bytes", max_skipped)
                    if skipped >= next_yield:  # a long run of input without events
                        next_yield = skipped + _YIELD_EVERY
                        await anyio.lowlevel.checkpoint()
                if total > max_body:
                    raise _LimitError("max_body_bytes", max_body)
            framer.close()
        else:
            feed_line = decoder.feed_line
            lines = LineFramer(limits.max_event_bytes, max_skipped)
            async for data in _pieces(response, watch):
                batch = []
                for line in lines.feed(data):
                    events = feed_line(line)
                    if events:
                        batch += events
                        quiet = 0
                    else:
                        quiet += len(line)
                        if quiet > max_skipped:
                            cut = _LimitError("max_skipped_bytes", max_skipped)
                            break
                total += len(data)
                if cut is not None:
                    if batch:
                        yield batch
                    raise cut
                if batch:
                    yield batch
                    watch.last = watch.now()
                    skipped = next_yield = 0
                else:
                    skipped += len(data)
                    if skipped > max_skipped:
                        raise _LimitError("max_skipped_bytes", max_skipped)
                    if skipped >= next_yield:
                        next_yield = skipped + _YIELD_EVERY
                        await anyio.lowlevel.checkpoint()
                if total > max_body:
                    raise _LimitError("max_body_bytes", max_body)
            batch = [event for line in lines.close() for event in feed_line(line)]
            if batch:
                yield batch
    except ExpiredError as expired:
        why, limit = str(expired), expired.limit
    except FrameTooLargeError as error:
        why, limit = f"one event is over max_event_bytes={error.limit}", "max_event_bytes"
    except QuietTooLongError as error:  # comments or blank lines, however they were split
        why, limit = f"the response is over max_skipped_bytes={error.limit}", "max_skipped_bytes"
    except _LimitError as error:
        why, limit = str(error), error.limit
    except (httpx.TransportError, httpx.DecodingError, zlib.error) as error:
        why = _describe(error)
    if why is not None:
        if not decoder.builder.has_output:
            if limit is None:
                raise TransportError(why)
            if limit.endswith("_timeout"):
                raise CallTimeoutError(why, limit=limit)
            raise ResponseLimitError(why, limit=limit)
        yield _interrupted(decoder.finish(), why, limit)
        return
    final = decoder.finish()
    if final.stop_info.detail.get("incomplete_stream") and not decoder.builder.has_output:
        raise TransportError("the stream ended before any output and without a terminal event")
    yield final


class _LimitError(Exception):
    def __init__(self, limit: str, size: int) -> None:
        super().__init__(f"the response is over {limit}={size}")
        self.limit = limit


_EXPECTED = {
    "sse": "text/event-stream",
    "ndjson": "application/x-ndjson",
    "json": "application/json",
}
_FOREIGN_MAJOR = frozenset({"image", "audio", "video", "font", "multipart", "model"})


def _foreign(ctype: str) -> bool:
    """Whether a content type cannot be any wire protocol's (HTML, XML, media)."""
    return "html" in ctype or "xml" in ctype or ctype.partition("/")[0] in _FOREIGN_MAJOR


def _is_json(ctype: str) -> bool:
    return ctype == "application/json" or ctype.endswith("+json")


def _interrupted(response: ModelResponse, why: str, limit: str | None) -> ModelResponse:
    info = response.stop_info
    if info.reason is not StopReason.INTERRUPTED:
        return response
    if limit is None:
        return replace(response, stop_info=info.with_detail(transport_error=why))
    # a limit the host set ended it: say which, rather than "the stream ended"
    info = replace(info, message=why)
    return replace(response, stop_info=info.with_detail(transport_error=why, limit=limit))


def _describe(error: BaseException) -> str:
    if isinstance(error, httpx.TimeoutException):
        kind = type(error).__name__
        if isinstance(error, httpx.ReadTimeout):
            return f"read timeout: no data from the provider ({kind})"
        return f"{kind}: {error}" if str(error) else kind
    if isinstance(error, zlib.error):
        return f"the compressed body is corrupt ({error})"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
