"""A real HTTP server on 127.0.0.1 that replays recorded responses, in order.

Tests and benchmarks use it to run the whole HTTP stack (httpx, httpx-sse, the
decoders) over a real socket::

    with ReplayServer([Reply.file("tests/recordings/x.sse")]) as server:
        model = Model("anthropic", "claude", base_url=server.url, api_key="test")
        ...
    server.requests[0].json   # what the client sent

Each request takes the next :class:`Reply`. Streams are sent with chunked
transfer encoding, one chunk per piece, so a test controls where bytes split;
``drop_after`` closes the connection without the final chunk (a dropped stream),
``stall_after`` stops sending for ``stall_seconds`` (an idle stream). A request
beyond the script is answered 599 and recorded in ``unexpected``.

For many concurrent clients, ``route`` answers each request by what it asks
rather than in arrival order::

    ReplayServer(route=lambda request: REPLIES[request.json["messages"][-1]["content"]])
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["RecordedRequest", "ReplayServer", "Reply", "ReplyScript"]

_TYPES = {
    ".sse": "text/event-stream",
    ".ndjson": "application/x-ndjson",
    ".json": "application/json",
}


@dataclass
class Reply:
    """One scripted HTTP answer.

    ``chunks`` are sent in order (each as one HTTP chunk); ``delay`` seconds pass
    between chunks. ``drop_after`` (a chunk count) ends the connection abruptly
    after that many chunks; ``stall_after`` pauses for ``stall_seconds`` after that
    many chunks before going on.
    """

    chunks: Sequence[bytes]
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop_after: int | None = None
    stall_after: int | None = None
    stall_seconds: float = 0.0

    @classmethod
    def body(
        cls,
        body: bytes | str,
        status: int = 200,
        content_type: str = "application/json",
        **options: Any,
    ) -> Reply:
        data = body.encode() if isinstance(body, str) else body
        return cls([data], status=status, content_type=content_type, **options)

    @classmethod
    def json(cls, data: Any, status: int = 200, **options: Any) -> Reply:
        return cls.body(json.dumps(data), status=status, **options)

    @classmethod
    def file(
        cls, path: str | Path, status: int = 200, *, split: str = "event", **options: Any
    ) -> Reply:
        """A recorded body from a file; ``.sse`` and ``.ndjson`` are streamed.

        ``split``: ``"event"`` sends one SSE event (or NDJSON line) per chunk,
        ``"whole"`` sends the body in one chunk.
        """
        p = Path(path)
        data = p.read_bytes()
        ctype = _TYPES.get(p.suffix, "application/json")
        chunks = [data]
        if split == "event" and p.suffix == ".sse":
            chunks = split_sse(data)
        elif split == "event" and p.suffix == ".ndjson":
            chunks = [line + b"\n" for line in data.splitlines() if line.strip()]
        return cls(chunks, status=status, content_type=ctype, **options)

    @classmethod
    def sse(cls, events: Iterable[tuple[str | None, Any]], **options: Any) -> Reply:
        """An SSE stream from ``(event name or None, data)`` pairs; data that is not
        a string is JSON-encoded."""
        chunks = []
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            head = f"event: {name}\n" if name else ""
            chunks.append(f"{head}data: {text}\n\n".encode())
        return cls(chunks, content_type="text/event-stream", **options)


def split_sse(data: bytes) -> list[bytes]:
    """Split an SSE body into events (blank-line separated), separators kept."""
    text = data.replace(b"\r\n", b"\n")
    parts = [p + b"\n\n" for p in text.split(b"\n\n") if p.strip()]
    return parts or [data]


@dataclass
class RecordedRequest:
    """A request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class _Server(ThreadingHTTPServer):
    request_queue_size = 512  # many concurrent clients (load tests) connect at once
    tls: ssl.SSLContext | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        try:  # the handshake in the connection's own thread
            wrapped = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return  # a client that does not trust the certificate
        with wrapped:
            super().finish_request(wrapped, client_address)


class ReplyScript:
    """What both replays share: the scripted replies, the requests that arrived, and
    the rule for the next reply (``route(request)`` when it gives one, else the next
    scripted reply; past the script, None, and the request is ``unexpected``)."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        route: Callable[[RecordedRequest], Reply | None] | None = None,
    ) -> None:
        self._replies = list(replies)
        self._route = route
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.unexpected: list[RecordedRequest] = []

    @property
    def remaining(self) -> int:
        return len(self._replies)

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def _next(self, request: RecordedRequest) -> Reply | None:
        routed = self._route(request) if self._route is not None else None
        with self._lock:
            self.requests.append(request)
            if routed is not None:
                return routed
            if not self._replies:
                self.unexpected.append(request)
                return None
            return self._replies.pop(0)


class ReplayServer(ReplyScript):
    """Replays :class:`Reply` objects on ``url`` (``http://127.0.0.1:<port>``).

    Use as a context manager; ``requests`` lists what arrived, ``remaining`` how
    many replies were not used. ``route``, when given, answers each request with
    ``route(request)`` (a :class:`Reply`; None takes the next scripted reply).
    ``ssl_context``: a server-side TLS context (its certificate for ``127.0.0.1``
    or ``host``): the server speaks https, and ``url`` is ``https://<host>:<port>``.
    ``host``: the name ``url`` uses (the socket listens on 127.0.0.1 either way).
    """

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        route: Callable[[RecordedRequest], Reply | None] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        super().__init__(replies, route=route)
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._server.tls = ssl_context
        self._host = host
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        port = self._server.server_address[1]
        scheme = "https" if self._server.tls is not None else "http"
        return f"{scheme}://{self._host}:{port}"

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                recorded = RecordedRequest(
                    self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
                )
                reply = server._next(recorded)
                if reply is None:
                    reply = Reply.json({"error": {"message": "no reply scripted"}}, status=599)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(reply)

            def _send(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for n, chunk in enumerate(reply.chunks):
                    if reply.drop_after is not None and n >= reply.drop_after:
                        self.wfile.flush()
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    if reply.stall_after is not None and n == reply.stall_after:
                        time.sleep(reply.stall_seconds)
                    if n and reply.delay:
                        time.sleep(reply.delay)
                    if chunk:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                if reply.drop_after is not None and reply.drop_after <= len(reply.chunks):
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        return Handler
