"""The model client's own pool (zett_agent.model._pool.ModelTransport, over aiohttp's
connector) keeps httpx's meaning: the clocks start when a connection slot is held
(the ``trace`` extension), a full pool is ``httpx.PoolTimeout``, and each wire
failure is the httpx error that names it (a server that hangs up is not a connect
timeout). Every case runs over a real socket on 127.0.0.1; the fault matrix
(tests/faults) runs every limit and timeout through it via ``Model``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

from zett_agent import ModelRequest, UserMessage
from zett_agent.model import Model, ModelTransport
from zett_agent.testing import ReplayServer, Reply

pytest.importorskip("aiohttp", reason="aiohttp (a dependency of zett-agent) is not installed")


def client(max_connections: int = 10, **timeouts: float) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=ModelTransport(limits=httpx.Limits(max_connections=max_connections)),
        timeout=httpx.Timeout(5.0, **timeouts),
    )


def raw_server(handle: Callable[[socket.socket], None]) -> Iterator[str]:
    """A one-connection-at-a-time TCP server on 127.0.0.1 running ``handle``."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                handle(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()


def read_request(conn: socket.socket) -> None:
    """Reads one whole request (its head and a content-length body). A close with
    request bytes still unread makes the kernel send a reset, so a server that
    means to hang up cleanly must read everything first (``Model`` posts its body
    in a second write, which a single ``recv`` can miss)."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        piece = conn.recv(65536)
        if not piece:
            return
        body += piece


@pytest.fixture
def hangs_up() -> Iterator[str]:
    """Reads the request, then closes the connection without a response."""
    yield from raw_server(read_request)


@pytest.fixture
def cuts_the_body() -> Iterator[str]:
    """Sends the head and one chunk of a chunked body, then closes."""

    def handle(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n5\r\nhello\r\n"
        )

    yield from raw_server(handle)


@pytest.fixture
def says_nothing() -> Iterator[str]:
    """Reads the request and sends nothing for a second."""

    def handle(conn: socket.socket) -> None:
        read_request(conn)
        threading.Event().wait(1.0)

    yield from raw_server(handle)


async def test_the_trace_hook_is_called_once_a_connection_slot_is_held() -> None:
    seen: list[str] = []

    async def trace(name: str, info: dict[str, Any]) -> None:
        seen.append(name)

    with ReplayServer([Reply.json({"ok": True})]) as server:
        async with client() as http:
            request = http.build_request("POST", server.url, json={}, extensions={"trace": trace})
            response = await http.send(request)
            assert response.json() == {"ok": True}
    assert seen == ["http11.send_request_headers.started"]


async def test_a_full_pool_is_a_pool_timeout_and_the_holder_is_unharmed() -> None:
    slow = Reply([b"data: 1\n\n", b"data: 2\n\n"], content_type="text/event-stream", delay=0.6)
    with ReplayServer([slow, Reply.json({})]) as server:
        async with client(max_connections=1, pool=0.2) as http:
            async with http.stream("GET", server.url) as first:
                with pytest.raises(httpx.PoolTimeout):
                    await http.get(server.url)
                body = b"".join([piece async for piece in first.aiter_raw()])
            assert body == b"data: 1\n\ndata: 2\n\n"
            # the slot came back when the first response closed
            assert (await http.get(server.url)).status_code == 200
    assert len(server.requests) == 2  # the timed-out request was never sent


async def test_a_server_that_hangs_up_is_a_remote_protocol_error(hangs_up: str) -> None:
    async with client() as http:
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            await http.get(hangs_up)
    assert not isinstance(caught.value, httpx.TimeoutException)
    assert "disconnected" in str(caught.value)


async def test_a_body_cut_short_gives_what_arrived_then_a_remote_protocol_error(
    cuts_the_body: str,
) -> None:
    """aiohttp raises the drop before the bytes it buffered ahead of it; the
    transport hands those out first (the text before a dropped stream is kept)."""
    for _ in range(5):  # the drop may land before or after the consumer reads
        async with client() as http, http.stream("GET", cuts_the_body) as response:
            await anyio.sleep(0.2)  # the chunk and the close are both in by now
            pieces = response.aiter_raw()
            got = await anext(pieces)
            with pytest.raises(httpx.RemoteProtocolError):
                await anext(pieces)
        assert got == b"hello"


async def test_a_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once closed
    async with client() as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(f"http://127.0.0.1:{port}/")


async def test_silence_past_the_read_timeout_is_a_read_timeout(says_nothing: str) -> None:
    async with client(read=0.2) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.get(says_nothing)


async def test_model_errors_keep_their_meaning_through_the_pool(hangs_up: str) -> None:
    """Through Model: a hang-up before any output is a retryable TransportError that
    names the remote end, not a connect timeout."""
    from zett_agent.errors import CallTimeoutError, TransportError

    model = Model("openai", "m", base_url=hangs_up, api_key="k", max_retries=0)
    with pytest.raises(TransportError) as caught:
        await model.complete(ModelRequest("m", [UserMessage("hi")]))
    await model.aclose()
    assert not isinstance(caught.value, CallTimeoutError)
    assert "RemoteProtocolError" in str(caught.value) and caught.value.retryable


async def test_cookies_and_redirects_stay_httpx_s() -> None:
    """aiohttp's own cookie jar and redirects are off: httpx decides both."""
    first = Reply.body(b"", status=302, headers={"location": "/next", "set-cookie": "a=1; Path=/"})
    with ReplayServer([first, Reply.json({"ok": 1}), Reply.json({"ok": 2})]) as server:
        async with client() as http:
            response = await http.get(server.url + "/start")
            assert response.status_code == 302  # not followed by the transport
            assert http.cookies.get("a") == "1"  # httpx's jar has it
            await http.get(server.url + "/next")
            async with httpx.AsyncClient(transport=ModelTransport()) as bare:
                await bare.get(server.url + "/other", follow_redirects=False)
    assert server.requests[1].headers.get("cookie") == "a=1"  # sent by httpx
    assert "cookie" not in server.requests[2].headers  # no jar inside the transport


def test_a_transport_serves_a_new_event_loop_with_a_new_pool() -> None:
    with ReplayServer([Reply.json({"n": 1}), Reply.json({"n": 2})]) as server:
        http = client()

        async def get() -> Any:
            return (await http.get(server.url)).json()

        assert asyncio.run(get()) == {"n": 1}
        assert asyncio.run(get()) == {"n": 2}  # the first loop is closed: a new pool
        asyncio.run(http.aclose())


async def test_the_model_s_own_client_uses_the_pool() -> None:
    model = Model("openai", "m", base_url="http://127.0.0.1:9", api_key="k", max_connections=7)
    transport = model._client._transport
    assert isinstance(transport, ModelTransport)
    assert transport.limits.max_connections == 7
    await model.aclose()


async def test_a_stream_nobody_reads_holds_a_bounded_buffer_and_stalls_the_server() -> None:
    """Read-ahead is bounded: a response whose reader stopped after one piece holds
    at most ``2 * READ_AHEAD`` plus one socket read in the pool; aiohttp then stops
    reading the socket, so the server's writes block (it sees the stalled reader)
    instead of the client buffering the whole answer."""
    from zett_agent.model._pool import READ_AHEAD, _Body

    total = 64 * 1024 * 1024
    sent = [0]
    done = threading.Event()

    def handle(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"content-length: %d\r\n\r\n" % total
        )
        piece = b"data: " + b"x" * (64 * 1024 - 8) + b"\n\n"
        conn.settimeout(10)
        try:
            while sent[0] < total and not done.is_set():
                conn.sendall(piece)
                sent[0] += len(piece)
        except OSError:
            pass

    for url in raw_server(handle):
        async with client() as http, http.stream("GET", url) as response:
            pieces = response.aiter_raw()
            taken = len(await anext(pieces))
            body = response.stream._stream  # type: ignore[attr-defined]
            assert isinstance(body, _Body)
            content = body._response.content
            # until nothing moves: the client stopped reading, the server is blocked
            still = 0
            last = (-1, -1)
            while still < 10:
                await anyio.sleep(0.02)
                now = (content.total_bytes, sent[0])
                still = still + 1 if now == last else 0
                last = now
            buffered = content.total_bytes - taken
            assert buffered <= 2 * READ_AHEAD + 256 * 1024, buffered
            assert sent[0] < total / 4  # the server's writes block: back-pressure
            done.set()


# ---------------------------------------------------------------- every error mapping


def _listener_that_never_accepts() -> tuple[socket.socket, list[socket.socket]]:
    """A loopback listener whose backlog is full: a new connect is never answered
    (Linux drops the SYN), so only the connect timeout can end it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    held: list[socket.socket] = []
    for _ in range(3):
        waiting = socket.socket()
        waiting.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            waiting.connect(listener.getsockname())
        held.append(waiting)
    return listener, held


async def test_a_connect_that_is_never_answered_is_a_connect_timeout() -> None:
    listener, held = _listener_that_never_accepts()
    port = listener.getsockname()[1]
    try:
        await anyio.sleep(0.1)  # the held connections fill the backlog
        async with client(connect=0.3) as http:
            with pytest.raises(httpx.ConnectTimeout):
                await http.get(f"http://127.0.0.1:{port}/")
    finally:
        for sock in (*held, listener):
            sock.close()


@pytest.fixture
def resets_before_the_response() -> Iterator[str]:
    def handle(conn: socket.socket) -> None:
        read_request(conn)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    yield from raw_server(handle)


async def test_a_reset_before_the_response_is_a_read_error(resets_before_the_response: str) -> None:
    async with client() as http:
        with pytest.raises(httpx.ReadError):
            await http.get(resets_before_the_response)


@pytest.fixture(params=["not-http", "header-over-64-KiB"])
def not_http(request: pytest.FixtureRequest) -> Iterator[str]:
    answer = {
        "not-http": b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        "header-over-64-KiB": b"HTTP/1.1 200 OK\r\nx-long: " + b"a" * 70_000 + b"\r\n\r\n",
    }[request.param]

    def handle(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(answer)

    yield from raw_server(handle)


async def test_an_answer_that_is_not_http_is_a_remote_protocol_error(not_http: str) -> None:
    async with client() as http:
        with pytest.raises(httpx.RemoteProtocolError):
            await http.get(not_http)


async def test_a_url_that_is_not_http_is_an_unsupported_protocol() -> None:
    async with client() as http:
        with pytest.raises(httpx.UnsupportedProtocol):
            await http.get("ftp://127.0.0.1/file")


def test_every_aiohttp_error_has_its_httpx_meaning() -> None:
    """The table of ``_mapped``, each row (the socket tests above produce most of
    them for real; this pins the ones a socket rarely does, and the order)."""
    import types

    import aiohttp
    from multidict import CIMultiDict, CIMultiDictProxy
    from yarl import URL

    from zett_agent.model._pool import _mapped

    key: Any = types.SimpleNamespace(host="127.0.0.1", port=1, ssl=True, is_ssl=False)
    request = httpx.Request("GET", "http://127.0.0.1:1/")
    info = aiohttp.RequestInfo(URL("http://127.0.0.1:1/"), "GET", CIMultiDictProxy(CIMultiDict()))
    rows: list[tuple[Exception, type[Exception]]] = [
        (aiohttp.ServerDisconnectedError(), httpx.RemoteProtocolError),
        (aiohttp.ConnectionTimeoutError(), httpx.ConnectTimeout),
        (aiohttp.ServerTimeoutError(), httpx.ReadTimeout),
        (aiohttp.ClientProxyConnectionError(key, OSError(111, "refused")), httpx.ProxyError),
        (aiohttp.ClientHttpProxyError(info, (), status=407), httpx.ProxyError),
        (aiohttp.ClientConnectorError(key, OSError(111, "refused")), httpx.ConnectError),
        (aiohttp.ClientPayloadError("cut"), httpx.RemoteProtocolError),
        (aiohttp.ClientResponseError(info, (), status=400), httpx.RemoteProtocolError),
        (aiohttp.InvalidURL("x"), httpx.UnsupportedProtocol),
        (aiohttp.ClientOSError(104, "reset"), httpx.ReadError),
        (ConnectionResetError(104, "reset"), httpx.ReadError),
        (TimeoutError(), httpx.ReadTimeout),
    ]
    for error, kind in rows:
        mapped = _mapped(error, request, before_headers=False)
        assert type(mapped) is kind, (error, mapped)
        assert mapped.request is request  # type: ignore[attr-defined]
    disconnected = _mapped(aiohttp.ServerDisconnectedError(), request, before_headers=True)
    assert "without sending a response" in str(disconnected)
    other = ValueError("not the network's")
    assert _mapped(other, request, before_headers=False) is other  # passed on as it is


# ---------------------------------------------------------------- request bodies, trio


@pytest.fixture
def echoes_a_chunked_body() -> Iterator[str]:
    """Reads a chunked request body to its end; answers with the body's bytes."""

    def handle(conn: socket.socket) -> None:
        data = b""
        while b"\r\n0\r\n\r\n" not in data:
            piece = conn.recv(65536)
            if not piece:
                return
            data += piece
        head, _, body = data.partition(b"\r\n\r\n")
        chunked = b"transfer-encoding: chunked" in head.lower()
        reply = b"%d %s" % (chunked, body)
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(reply), reply))

    yield from raw_server(handle)


async def test_a_streamed_request_body_is_sent_chunked(echoes_a_chunked_body: str) -> None:
    async def pieces() -> AsyncIterator[bytes]:
        for piece in (b"first,", b"second"):
            await anyio.sleep(0)
            yield piece

    async with client() as http:
        response = await http.post(echoes_a_chunked_body, content=pieces())
    chunked, _, body = response.content.partition(b" ")
    assert chunked == b"1"  # one transfer-encoding header: aiohttp's, not httpx's too
    assert b"first," in body and b"second" in body


def test_under_trio_requests_go_through_httpx_s_own_transport() -> None:
    trio = pytest.importorskip("trio", reason="trio (in the dev extra) is not installed")
    body = {"choices": [{"message": {"role": "assistant", "content": "from trio"},
                         "finish_reason": "stop"}]}  # fmt: skip
    with ReplayServer([Reply.json({"ok": 1}), Reply.json(body)]) as server:

        async def main() -> tuple[Any, str]:
            transport = ModelTransport()
            async with httpx.AsyncClient(transport=transport) as http:
                got = (await http.get(server.url)).json()
            assert None in transport._fallbacks or not transport._fallbacks  # closed
            model = Model("openai", "m", base_url=server.url, api_key="k", stream=False)
            answer = await model.complete(ModelRequest("m", [UserMessage("hi")]))
            await model.aclose()
            return got, answer.text

        assert trio.run(main) == ({"ok": 1}, "from trio")
