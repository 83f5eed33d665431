"""A hand-written MCP server (JSON-RPC written out, no SDK) that fails one request
of the client in a chosen way, after answering the others correctly.

    python faulty_server.py METHOD HOW [--nth N] [--http PORT]

``METHOD`` is the request to fail (``initialize``, ``tools/list``, ``tools/call``,
``logging/setLevel``...); its ``N``-th occurrence fails (default 1; ``tools/list``
with ``--nth 2`` fails the listing after a ``list_changed``; ``--nth 0``: every one). ``HOW``:

==========  =====================================================================
error       a JSON-RPC error answer (-32603)
garbage     a line / body that is not JSON
invalid     a result of the wrong shape (``tools`` is a number)
hangup      stdio: the process exits; HTTP: the connection is closed unanswered
silent      no answer at all (the client's timeout must end the wait)
http500     HTTP only: status 500 with a text body
http401     HTTP only: 401 with ``WWW-Authenticate: Bearer``
http403     HTTP only: 403 ``insufficient_scope`` asking for scope ``files:write``
==========  =====================================================================

Every request's method is appended as one line to the file named by
``FAULTY_LOG`` (when set), with the ``clientInfo`` of ``initialize``. A call of
the tool ``echo`` answers its ``text``; a call of ``change`` answers and sends
``notifications/tools/list_changed`` first.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

METHOD, HOW = sys.argv[1], sys.argv[2]
NTH = int(sys.argv[sys.argv.index("--nth") + 1]) if "--nth" in sys.argv else 1
HTTP_PORT = int(sys.argv[sys.argv.index("--http") + 1]) if "--http" in sys.argv else None
SEEN: dict[str, int] = {}
LOCK = threading.Lock()

TOOLS = [
    {"name": "echo", "description": "Echo the text.", "inputSchema": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "change", "description": "Say the tool list changed.",
     "inputSchema": {"type": "object", "properties": {}}},
]  # fmt: skip
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


def log(message: dict[str, Any]) -> None:
    path = os.environ.get("FAULTY_LOG")
    if path and "method" in message:
        entry: dict[str, Any] = {"method": message["method"]}
        if message["method"] == "initialize":
            entry["clientInfo"] = message.get("params", {}).get("clientInfo")
        with LOCK, open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def result_for(message: dict[str, Any]) -> Any:
    method = message["method"]
    params = message.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": {"name": "faulty", "version": "1.0"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text = params.get("arguments", {}).get("text", "changed")
        return {"content": [{"type": "text", "text": text}]}
    return {}


def fails(method: str) -> bool:
    with LOCK:
        SEEN[method] = SEEN.get(method, 0) + 1
        return method == METHOD and NTH in (0, SEEN[method])


def answer(message: dict[str, Any]) -> str | None:
    """The JSON text answering ``message`` (None: a notification, or silence)."""
    if "id" not in message:
        return None
    if fails(message["method"]):
        if HOW == "error":
            error = {"code": -32603, "message": f"{message['method']} broke on purpose"}
            return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error})
        if HOW == "garbage":
            return "this is not JSON {"
        if HOW == "invalid":
            return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": 7}})
        raise FaultError(HOW)
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result_for(message)})


class FaultError(Exception):
    """A failure that is not an answer (hang up, silence, an HTTP status)."""


def serve_stdio() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        log(message)
        try:
            text = answer(message)
        except FaultError as fault:
            if str(fault) == "silent":
                continue
            os._exit(0)  # hangup
        if message.get("params", {}).get("name") == "change" and text is not None:
            sys.stdout.write(json.dumps(LIST_CHANGED) + "\n")
        if text is not None:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return

    def do_GET(self) -> None:  # no server-to-client stream
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        message = json.loads(body)
        log(message)
        try:
            text = answer(message)
        except FaultError as fault:
            self.fault(str(fault))
            return
        if text is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if message.get("params", {}).get("name") == "change":
            events = f"event: message\ndata: {json.dumps(LIST_CHANGED)}\n\n"
            events += f"event: message\ndata: {text}\n\n"
            self.send("text/event-stream", events.encode())
            return
        self.send("application/json", text.encode())

    def send(self, kind: str, data: bytes, status: int = 200, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Mcp-Session-Id", "faulty-session")
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(data)

    def fault(self, how: str) -> None:
        if how == "silent":
            threading.Event().wait(3600)
        elif how == "http500":
            self.send("text/plain", b"internal trouble", status=500)
        elif how == "http401":
            self.send("text/plain", b"no", status=401, WWW_Authenticate='Bearer realm="mcp"')
        elif how == "http403":
            challenge = 'Bearer error="insufficient_scope", scope="files:write"'
            self.send("text/plain", b"no", status=403, WWW_Authenticate=challenge)
        else:  # hangup
            self.close_connection = True
            self.connection.shutdown(2)


if __name__ == "__main__":
    if HTTP_PORT is None:
        serve_stdio()
    else:
        ThreadingHTTPServer(("127.0.0.1", HTTP_PORT), Handler).serve_forever()
