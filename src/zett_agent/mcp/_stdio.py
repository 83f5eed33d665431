"""A stdio MCP server's process and its messages, bounded: :func:`bounded_stdio`.

The ``mcp`` SDK's stdio client joins every chunk it reads to the text kept so far
and splits the whole again (``(buffer + chunk).split("\\n")``), so a line of N bytes
costs N²/64 KiB: 8 MiB took 3.1 s and +64 MB, 16 MiB 9.6 s and +128 MB, and no
line is too long. This transport speaks the same newline-delimited JSON-RPC with
the same streams (``SessionMessage | Exception`` in, ``SessionMessage`` out) and:

* reads bytes and looks for the newline only in the new chunk (one linear pass);
* holds at most ``max_message_bytes`` of a line; a longer one is skipped to its
  newline, keeping its first and last 4 KiB to learn its id
  (:func:`~zett_agent.mcp._limits.message_ids`; an answer whose id is in neither
  is taken for the only request waiting, when one alone waits);
* counts content blocks before the SDK's models are made
  (:func:`~zett_agent.mcp._limits.block_problem`);
* answers what is over a limit as :mod:`zett_agent.mcp._limits` says (an error of
  zett's request, an error to the server's request, a dropped notification).

The process is started in its own process group; on close its stdin is closed, it
gets 2 s to exit, then the group gets SIGTERM and, 2 s later, SIGKILL (the SDK's
order). On Windows the SDK's own client is used.

:func:`safe_errlog` gives the server's stderr to this process's stderr with
control characters escaped (:mod:`zett_agent._terminal_text`) when that is a
terminal.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO, Any, TextIO

import anyio
import mcp_types

from ._limits import MCPLimits, block_problem, limit_text, message_ids, needs_block_check

__all__ = ["bounded_stdio", "safe_errlog"]

logger = logging.getLogger("zett_agent.mcp")

_KEEP = 4096  # bytes kept of each end of a skipped line
_CHUNK = 65536
_EXIT_WAIT = 2.0


@asynccontextmanager
async def bounded_stdio(
    params: Any, errlog: TextIO | IO[Any], limits: MCPLimits
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server of ``params`` (the SDK's ``StdioServerParameters``) and
    yield ``(read_stream, write_stream)`` for the SDK's ``Client``; raises
    ``OSError`` when it cannot be started."""
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=get_default_environment() | (params.env or {}),
        cwd=params.cwd,
        start_new_session=True,
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    answers, answers_out = anyio.create_memory_object_stream[SessionMessage](16)
    pending: set[str | int] = set()  # ids of zett's requests not answered yet

    async def deliver(item: SessionMessage | Exception) -> None:
        message = getattr(item, "message", None)
        answer_id = getattr(message, "id", None)
        if answer_id is not None and not hasattr(message, "method"):
            pending.discard(answer_id)
        await read_writer.send(item)

    async def refuse(head: bytes, tail: bytes, why: str, parsed: Any = None) -> None:
        """A message over a limit (the module docstring says who hears what)."""
        if isinstance(parsed, dict):
            ids = [parsed["id"]] if isinstance(parsed.get("id"), str | int) else []
            request = "method" in parsed
        else:
            ids, request = message_ids(head, tail)
        error = mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=f"{why}; not read")
        if not request:
            if not ids and len(pending) == 1:  # an answer whose id is in its middle
                ids = list(pending)
            for candidate in ids:
                if candidate in pending:
                    reply = mcp_types.JSONRPCError(jsonrpc="2.0", id=candidate, error=error)
                    await deliver(SessionMessage(reply))
                    return
        elif ids:
            reply = mcp_types.JSONRPCError(jsonrpc="2.0", id=ids[0], error=error)
            await answers.send(SessionMessage(reply))
            return
        logger.warning("MCP server %s: a message was dropped: %s", params.command, why)

    async def line_read(line: bytes | bytearray) -> None:
        if not line.strip():
            return
        parsed: Any = None
        if needs_block_check(len(line), limits):
            try:
                parsed = json.loads(line)
            except ValueError as error:
                await deliver(error)
                return
            problem = block_problem(parsed, limits)
            if problem is not None:
                await refuse(b"", b"", problem, parsed)
                return
        try:
            if parsed is not None:
                message = mcp_types.jsonrpc_message_adapter.validate_python(parsed, by_name=False)
            else:
                message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError as error:
            await deliver(error)
            return
        await deliver(SessionMessage(message))

    async def reader() -> None:
        assert process.stdout is not None
        limit = limits.max_message_bytes
        line = bytearray()
        skipping = False  # in a line over the limit
        skipped = 0  # its bytes so far
        head = b""
        tail = bytearray()
        try:
            async with read_writer:
                while True:
                    try:
                        chunk = await process.stdout.receive(_CHUNK)
                    except (
                        anyio.EndOfStream,
                        anyio.ClosedResourceError,
                        anyio.BrokenResourceError,
                    ):
                        return
                    start = 0
                    while start <= len(chunk):
                        end = chunk.find(b"\n", start)
                        piece = chunk[start:] if end < 0 else chunk[start:end]
                        if not skipping and len(line) + len(piece) > limit:
                            skipping, skipped, head = True, len(line), bytes(line[:_KEEP])
                            tail = bytearray(line[-_KEEP:])
                            line.clear()
                            if not head:
                                head = piece[:_KEEP]
                        if skipping:
                            skipped += len(piece)
                            tail += piece[-_KEEP:]
                            del tail[:-_KEEP]
                        else:
                            line += piece
                        if end < 0:
                            break
                        if skipping:
                            why = limit_text(
                                "a message from the server", skipped, limit, "max_message_bytes"
                            )
                            await refuse(head, bytes(tail), why)
                            skipping, skipped, head, tail = False, 0, b"", bytearray()
                        else:
                            await line_read(line)  # parsed from the buffer: no copy
                            line = bytearray()
                        start = end + 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the session is gone

    async def writer() -> None:
        stdin = process.stdin
        assert stdin is not None
        try:
            async with write_reader, answers_out, anyio.create_task_group() as group:

                async def forward(source: Any) -> None:
                    async for item in source:
                        message = item.message
                        if hasattr(message, "method") and getattr(message, "id", None) is not None:
                            pending.add(message.id)
                        data = message.model_dump_json(by_alias=True, exclude_unset=True)
                        await stdin.send((data + "\n").encode())
                    group.cancel_scope.cancel()

                group.start_soon(forward, write_reader)
                group.start_soon(forward, answers_out)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(reader)
            group.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                    for stream in (read_stream, write_stream, answers):
                        await stream.aclose()
                group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process)


async def _stop(process: Any) -> None:
    """Close stdin, wait, then SIGTERM and SIGKILL the process group."""
    if process.returncode is not None:
        return
    with contextlib.suppress(Exception):
        await process.stdin.aclose()
    for sent in (None, signal.SIGTERM, signal.SIGKILL):
        if sent is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sent)
        with anyio.move_on_after(_EXIT_WAIT):
            await process.wait()
        if process.returncode is not None:
            break
    with contextlib.suppress(Exception):
        await process.aclose()


def safe_errlog(target: TextIO | None) -> tuple[Any, Any]:
    """Where a stdio server's stderr goes: ``target`` as it is when given (or when
    this process's stderr is not a terminal); else a pipe whose text a thread copies
    to stderr with control characters escaped. Returns ``(errlog, close)``:
    ``close()`` ends the copy once the server is stopped."""
    if target is not None:
        return target, lambda: None
    err = sys.stderr
    try:
        terminal = err.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if not terminal:
        return err, lambda: None
    read_end, write_end = os.pipe()
    writer = os.fdopen(write_end, "w")

    def copy() -> None:
        import codecs

        from zett_agent._terminal_text import terminal_safe

        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        with os.fdopen(read_end, "rb") as source:
            while data := source.read1(_CHUNK):
                with contextlib.suppress(OSError, ValueError):
                    err.write(terminal_safe(decoder.decode(data)))
                    err.flush()

    threading.Thread(target=copy, name="zett-mcp-stderr", daemon=True).start()

    def close() -> None:
        with contextlib.suppress(OSError):
            writer.close()

    return writer, close


_BOUNDARY = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def _error_json(request_id: Any, why: str) -> bytes:
    error = {"code": mcp_types.INVALID_REQUEST, "message": f"{why}; not read"}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


def _event_problem(event: bytes, limits: MCPLimits) -> str | None:
    """Too many content blocks in one SSE event's message (None: fine)."""
    if not needs_block_check(len(event), limits):
        return None
    lines = event.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    data = b"\n".join(line[5:].removeprefix(b" ") for line in lines if line.startswith(b"data:"))
    try:
        return block_problem(json.loads(data), limits) if data else None
    except ValueError:
        return None  # the SDK says what is wrong with it


@functools.cache
def _http_classes() -> tuple[type, type]:
    import httpx2

    class BoundedBody(httpx2.AsyncByteStream):
        """A response body read within ``limits``: a JSON body is held (at most
        ``max_message_bytes``) and checked whole; an SSE body is passed on one
        complete event at a time, each held at most ``max_message_bytes``. What is
        over a limit ends the body with a JSON-RPC error of ``request_id`` naming
        the limit (an SSE event, or the JSON body), so the call fails and the
        session goes on; with no request id (the GET stream) the body just ends."""

        def __init__(self, inner: Any, limits: MCPLimits, request_id: Any, sse: bool) -> None:
            self.inner, self.limits, self.request_id, self.sse = inner, limits, request_id, sse

        def _refusal(self, why: str) -> bytes:
            if self.request_id is None:
                logger.warning("MCP server: a message was dropped: %s", why)
                return b""
            body = _error_json(self.request_id, why)
            return b"event: message\ndata: " + body + b"\n\n" if self.sse else body

        async def __aiter__(self) -> AsyncIterator[bytes]:
            limit = self.limits.max_message_bytes
            held = bytearray()
            async for chunk in self.inner:
                searched = max(0, len(held) - 3)
                held += chunk
                if self.sse:
                    cut = 0
                    for match in _BOUNDARY.finditer(held, searched):
                        problem = _event_problem(bytes(held[cut : match.end()]), self.limits)
                        if problem is not None:
                            yield bytes(held[:cut]) + self._refusal(problem)
                            return
                        cut = match.end()
                    if cut:
                        yield bytes(held[:cut])
                        del held[:cut]
                if len(held) > limit:
                    why = limit_text(
                        "a message from the server", len(held), limit, "max_message_bytes"
                    ).replace(" has ", " has more than ", 1)
                    yield self._refusal(why)
                    return
            if held and not self.sse:
                problem = _event_problem(b"data: " + bytes(held), self.limits)
                yield self._refusal(problem) if problem is not None else bytes(held)
            elif held:
                yield bytes(held)

        async def aclose(self) -> None:
            await self.inner.aclose()

    class BoundedHTTP(httpx2.AsyncBaseTransport):
        """httpx2's transport, each response body read as :class:`BoundedBody`
        (the request's JSON-RPC id, read from the body zett sent, names the call
        an over-limit answer fails)."""

        def __init__(self, limits: MCPLimits) -> None:
            self.inner = httpx2.AsyncHTTPTransport()
            self.limits = limits

        async def handle_async_request(self, request: Any) -> Any:
            response = await self.inner.handle_async_request(request)
            kind = response.headers.get("content-type", "").lower()
            sse = kind.startswith("text/event-stream")
            if sse or kind.startswith("application/json"):
                request_id = None
                if request.method == "POST":
                    try:
                        sent = json.loads(request.content)
                    except (ValueError, httpx2.RequestNotRead):
                        sent = None
                    if isinstance(sent, dict) and "method" in sent:
                        request_id = sent.get("id")
                response.stream = BoundedBody(response.stream, self.limits, request_id, sse)
            return response

        async def aclose(self) -> None:
            await self.inner.aclose()

    return BoundedBody, BoundedHTTP


def __getattr__(name: str) -> Any:
    if name in ("BoundedBody", "BoundedHTTP"):  # httpx2 is imported when first used
        return dict(zip(("BoundedBody", "BoundedHTTP"), _http_classes(), strict=True))[name]
    raise AttributeError(name)
