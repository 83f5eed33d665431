"""The loopback OpenAI Responses fake that bench/durable_peers.py points every
runtime at (zett and the peers alike), standard library only.

Each prompt carries a tag ``[[MODE:KEY]]``; the fake finds it anywhere in the
request body, counts the request under KEY and answers by MODE, without streaming
(``"stream": true`` is answered with the same object as server-sent events):

* ``refusal``: a completed response whose message is a refusal;
* ``max_output_tokens`` / ``content_filter``: ``status: "incomplete"`` with that
  ``incomplete_details.reason`` and a partial text;
* ``pay`` / ``approve``: a ``function_call`` of tool ``pay`` (``{"invoice": KEY}``)
  until the request carries a ``function_call_output``, then the text
  ``done: <that output>``.

Shapes from OpenAI's Responses API reference (the ``Response`` object: ``status``,
``incomplete_details``, output items ``message`` with ``output_text`` / ``refusal``
content, and ``function_call``)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TAG = re.compile(r"\[\[(\w+):([\w.-]+)\]\]")


def tag(mode: str, key: str) -> str:
    """The prompt that makes the fake answer ``mode`` and count under ``key``."""
    return f"Please go on. [[{mode}:{key}]]"


def _response(
    output: list[dict[str, Any]], status: str = "completed", reason: str | None = None
) -> dict[str, Any]:
    return {
        "id": f"resp_{time.monotonic_ns()}",
        "object": "response",
        "created_at": int(time.time()),
        "model": "m",
        "status": status,
        "incomplete_details": {"reason": reason} if reason else None,
        "error": None,
        "output": output,
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "temperature": 1.0,
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        },
    }


def _message(content: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{time.monotonic_ns()}",
        "role": "assistant",
        "status": status,
        "content": [content],
    }


def _text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


def answer(mode: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
    """The Responses object for one request."""
    if mode == "refusal":
        refusal = {"type": "refusal", "refusal": "I can't help with that."}
        return _response([_message(refusal)])
    if mode in ("max_output_tokens", "content_filter"):
        return _response([_message(_text("Partial ans"), "incomplete")], "incomplete", mode)
    outputs = [
        item.get("output")
        for item in body.get("input") or []
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    if outputs:
        last = outputs[-1]
        if not isinstance(last, str):
            last = json.dumps(last)
        return _response([_message(_text(f"done: {last}"))])
    call = {
        "type": "function_call",
        "id": f"fc_{key}",
        "call_id": f"call_{key}",
        "name": "pay",
        "arguments": json.dumps({"invoice": key}),
        "status": "completed",
    }
    return _response([call])


class FakeProvider:
    """A ThreadingHTTPServer on 127.0.0.1 in a daemon thread; ``counts[KEY]`` is
    the number of requests seen for KEY."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                text = raw.decode("utf-8", "replace")
                found = TAG.search(text)
                if found is None:
                    self._send(
                        400,
                        {
                            "error": {
                                "message": "no [[mode:key]] tag",
                                "type": "invalid_request_error",
                            }
                        },
                    )
                    return
                mode, key = found.groups()
                with fake.lock:
                    fake.counts[key] += 1
                body = json.loads(raw)
                data = answer(mode, key, body)
                if body.get("stream"):
                    self._send_sse(data)
                else:
                    self._send(200, data)

            def _send(self, status: int, data: dict[str, Any]) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _send_sse(self, data: dict[str, Any]) -> None:
                events: list[tuple[str, dict[str, Any]]] = [
                    (
                        "response.created",
                        {"response": {**data, "status": "in_progress", "output": []}},
                    )
                ]
                for index, item in enumerate(data["output"]):
                    events.append(
                        ("response.output_item.done", {"output_index": index, "item": item})
                    )
                final = (
                    "response.incomplete"
                    if data["status"] == "incomplete"
                    else "response.completed"
                )
                events.append((final, {"response": data}))
                chunks = b"".join(
                    f"event: {name}\ndata: {json.dumps({'type': name, **payload})}\n\n".encode()
                    for name, payload in events
                )
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(chunks)))
                self.end_headers()
                self.wfile.write(chunks)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL (``/v1``) to give a client."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeProvider:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
