"""The bench's stream server: raw asyncio on 127.0.0.1, run in its own process.

It writes pre-built bytes (status line, headers and an HTTP/1.1 chunked body) so
that it is not the bottleneck; ``run.py`` measures its floor with a raw socket
reader. The stream is chosen by the URL path, so every client (zett, the floors,
pydantic-ai, LiteLLM, zett-agent 0.2.1) can be pointed at a base URL::

    /s/<framing>/<protocol>/<n_text>/<n_tool>/...   the whole answer, written at once

``<framing>`` is ``event`` (one HTTP chunk per SSE event) or ``coalesced`` (the SSE
bytes cut into 4 KiB chunks, events split across chunk boundaries, as servers that
buffer their writes send them).
    /p/<burst>/<ms>/<n_text>/...            OpenAI-chat text, ``burst`` events every
                                            ``ms`` milliseconds, each delta's text
                                            ``@<time.monotonic_ns()> `` when written

A request whose body holds a tool result gets the short final answer instead
(:func:`streams.final`), so agent runs end. Start it with ``python bench/server.py``;
it prints its port on the first line of stdout.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import streams

_TOOL_RESULT_MARKERS = (b'"tool_call_id"', b'"tool_result"', b'"functionResponse"')
_cache: dict[tuple[str, str, int, int], bytes] = {}
COALESCE = 4096


def _head(ctype: str = "text/event-stream") -> bytes:
    return (
        f"HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\ncache-control: no-cache\r\n"
        "transfer-encoding: chunked\r\n\r\n"
    ).encode()


def static_response(framing: str, protocol: str, n_text: int, n_tool: int) -> bytes:
    key = (framing, protocol, n_text, n_tool)
    data = _cache.get(key)
    if data is None:
        events = streams.final(protocol) if n_text < 0 else streams.build(protocol, n_text, n_tool)
        if framing == "event":
            body = streams.chunked_body(events)
        elif framing == "coalesced":
            body = streams.coalesced_body(events, COALESCE)
        else:
            raise ValueError(f"unknown framing {framing!r}")
        data = _cache[key] = _head() + body
    return data


def _paced_template() -> tuple[bytes, bytes]:
    event = streams.openai_chat(0, 0, texts=["@STAMP "])[1]
    piece = streams.sse_bytes(None, event[1])
    before, after = piece.split(b"STAMP")
    return before, after


_BEFORE, _AFTER = _paced_template()


async def paced(writer: asyncio.StreamWriter, burst: int, ms: int, n_text: int) -> None:
    events = streams.openai_chat(n_text, 0)
    head = streams.chunked_body(events[:1])[:-5]  # the role chunk, no terminator
    tail = streams.chunked_body(events[-3:])  # finish, usage, [DONE], terminator
    writer.write(_head() + head)
    sent = 0
    while sent < n_text:
        out = bytearray()
        for _ in range(min(burst, n_text - sent)):
            piece = b"%s%d%s" % (_BEFORE, time.monotonic_ns(), _AFTER)
            out += b"%x\r\n%s\r\n" % (len(piece), piece)
            sent += 1
        writer.write(out)
        await writer.drain()
        if sent < n_text:
            await asyncio.sleep(ms / 1000)
    writer.write(tail)
    await writer.drain()


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.split(b"\r\n")
            path = lines[0].split(b" ")[1].decode()
            length = 0
            for line in lines[1:]:
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            body = await reader.readexactly(length) if length else b""
            parts = path.split("?")[0].strip("/").split("/")
            if parts[0] == "s":
                framing, protocol = parts[1], parts[2]
                n_text, n_tool = int(parts[3]), int(parts[4])
                if any(marker in body for marker in _TOOL_RESULT_MARKERS):
                    n_text, n_tool = -1, 0
                writer.write(static_response(framing, protocol, n_text, n_tool))
                await writer.drain()
            elif parts[0] == "p":
                await paced(writer, int(parts[1]), int(parts[2]), int(parts[3]))
            else:
                message = json.dumps({"error": {"message": f"unknown path {path}"}}).encode()
                writer.write(
                    b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(message), message)
                )
                await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
