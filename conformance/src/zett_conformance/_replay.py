"""A local replay of one case: a real HTTP server on 127.0.0.1.

The first request gets the case's recorded response (status, headers, body; a
stream is sent one SSE event or NDJSON line per HTTP chunk). Every later request
gets the same reply when the recorded status is an error (a retry cannot turn a
refusal into an answer), else a plain finished answer in the protocol
(:func:`zett_conformance._wire.follow_up`), streamed when the request asked for a
stream, so a runtime that goes on after a step (tool results, a pause) ends.
Any path and method are answered: each runtime builds its own URL.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ._cases import Case
from ._wire import follow_up

__all__ = ["ReplayServer", "wants_stream"]


def wants_stream(protocol: str, path: str, body: Any) -> bool:
    """Whether a request asks for a stream, as its protocol says so."""
    if protocol == "gemini":
        return "streamGenerateContent" in path
    if not isinstance(body, dict):
        return False
    if protocol == "ollama":
        return body.get("stream", True) is not False  # Ollama streams by default
    return body.get("stream") is True


def _chunks(body: str, content_type: str) -> list[bytes]:
    data = body.encode()
    if "event-stream" in content_type:
        text = data.replace(b"\r\n", b"\n")
        return [p + b"\n\n" for p in text.split(b"\n\n") if p.strip()] or [data]
    if "ndjson" in content_type:
        return [line + b"\n" for line in data.splitlines() if line.strip()] or [data]
    return [data]


class ReplayServer:
    """``with ReplayServer(case) as server:`` ... ``server.url``, ``server.requests``
    (``(method, path, JSON body or None)`` in arrival order)."""

    def __init__(self, case: Case) -> None:
        self.case = case
        self.requests: list[tuple[str, str, Any]] = []
        self._lock = threading.Lock()
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                with replay._lock:
                    first = not replay.requests
                    replay.requests.append((self.command, self.path, body))
                status, headers, text = replay.reply(first, self.path, body)
                ctype = headers.get("content-type", "application/json")
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if status == 200 and ("event-stream" in ctype or "ndjson" in ctype):
                    self.send_header("transfer-encoding", "chunked")
                    self.send_header("connection", "close")
                    self.end_headers()
                    for chunk in _chunks(text, ctype):
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.close_connection = True
                else:
                    data = text.encode()
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            def _safe(self) -> None:
                try:
                    self._answer()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client went away mid-reply

            do_POST = do_GET = _safe  # noqa: N815 - the names http.server looks up

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def reply(self, first: bool, path: str, body: Any) -> tuple[int, dict[str, str], str]:
        case = self.case
        if first or case.status != 200:
            return case.status, case.headers, case.body
        ctype, text = follow_up(case.protocol, stream=wants_stream(case.protocol, path, body))
        return 200, {"content-type": ctype}, text

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
