"""Recorded replies replayed in the process, paced by the event loop's clock.

:class:`ReplayTransport` answers like :class:`~zett_agent.testing.ReplayServer`
(the same :class:`Reply` script, ``requests``, ``unexpected``, ``route``) without a
socket or a thread: it is an ``httpx.AsyncBaseTransport`` whose body yields each
chunk after ``await anyio.sleep(delay)``. Every pause is a timer on the running
event loop, so on a loop with virtual time (``looptime``) a 10 s stall costs no
wall time while the watchdog, retry waits and deadlines see it whole::

    replay = ReplayTransport([Reply.file("tests/recordings/x.sse", delay=0.5)])
    model = Model("anthropic", "claude", base_url=replay.url, api_key="test",
                  client=replay.client())
    ...
    replay.requests[0].json   # what the client sent

``drop_after`` ends the body with ``httpx.RemoteProtocolError`` (as httpx reports a
connection closed in the middle of a chunked body); ``stall_after`` pauses for
``stall_seconds`` after that many chunks (0: after the headers, before any byte).
The clocks of the watchdog start when the request is sent: the transport calls the
request's ``trace`` hook as httpx's own transport does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx

from zett_agent.testing._replay import RecordedRequest, Reply, ReplyScript

__all__ = ["ReplayTransport"]


class _PacedBody(httpx.AsyncByteStream):
    def __init__(self, reply: Reply) -> None:
        self._reply = reply

    async def __aiter__(self) -> AsyncIterator[bytes]:
        reply = self._reply
        for n, chunk in enumerate(reply.chunks):
            if reply.drop_after is not None and n >= reply.drop_after:
                break
            if reply.stall_after is not None and n == reply.stall_after:
                await anyio.sleep(reply.stall_seconds)
            if n and reply.delay:
                await anyio.sleep(reply.delay)
            if chunk:
                yield chunk
        if reply.drop_after is not None and reply.drop_after <= len(reply.chunks):
            raise httpx.RemoteProtocolError(
                "peer closed connection without sending complete message body"
            )


class ReplayTransport(ReplyScript, httpx.AsyncBaseTransport):
    """Replays :class:`Reply` objects in the process, paced by the event loop.

    Each request takes the next reply (or ``route(request)``'s, when not None); a
    request beyond the script is answered 599 and recorded in ``unexpected``.
    ``url`` is a base URL for a :class:`~zett_agent.Model`; :meth:`client` an
    ``httpx.AsyncClient`` over this transport. Usable as a context manager, like
    :class:`~zett_agent.testing.ReplayServer` (there is nothing to start or stop).
    """

    url = "http://replay.invalid"

    def client(self, **options: Any) -> httpx.AsyncClient:
        """An ``httpx.AsyncClient`` that sends every request to this transport."""
        return httpx.AsyncClient(transport=self, **options)

    def __enter__(self) -> ReplayTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        trace = request.extensions.get("trace")
        if trace is not None:  # the request is being sent: the clocks start
            await trace("http11.send_request_headers.started", {"request": request})
        body = await request.aread()
        path = request.url.raw_path.decode("ascii")
        headers = {k.lower(): v for k, v in request.headers.items()}
        reply = self._next(RecordedRequest(request.method, path, headers, body))
        if reply is None:
            reply = Reply.json({"error": {"message": "no reply scripted"}}, status=599)
        head = {"content-type": reply.content_type, **reply.headers}
        head["transfer-encoding"] = "chunked"
        return httpx.Response(reply.status, headers=head, stream=_PacedBody(reply), request=request)
