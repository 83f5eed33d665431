"""Clients that never read cannot starve the other chats of a server.

A full UI queue stops the run from reading its model stream (back-pressure reaches
the model connection), and at most ``max_stalled_streams`` runs of one app wait at
once for a reader that does not read (each keeps its model connection while it
waits): a run whose queue fills past that is cancelled at once, INTERRUPTED with
``detail["limit"] == "max_stalled_streams"``, and can be resumed.

On virtual time (``looptime``): the app is called in the process (ASGI) with a model
on :class:`ReplayTransport`, a client that reads nothing is a ``send`` that never
returns (the harness of tests/test_serve_slow_client.py). What 120 such clients do to
the first output of other chats over real sockets is measured by
``bench/serve_hostile_clients.py --stalled``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import FLOOD_DELTA, FLOOD_DELTAS, make_agent, scenario_reply
from test_serve_slow_client import post_chat, stored_session
from zett_agent.serve import ServeSettings, create_app
from zett_agent.serve._backpressure import STALLED_AFTER
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import RecordedRequest, ReplayTransport, Reply

pytestmark = pytest.mark.looptime

TIMEOUT = 30.0


class Counted(list[bytes]):
    """A reply's chunks that count how many the model's transport has taken."""

    taken = 0

    def __iter__(self) -> Iterator[bytes]:
        for chunk in super().__iter__():
            self.taken += 1
            yield chunk


def app_with(settings: ServeSettings, replies: list[Counted] | None = None) -> Any:
    def route(request: RecordedRequest) -> Reply:
        reply = scenario_reply(request)
        if replies is not None:
            reply.chunks = Counted(reply.chunks)
            replies.append(reply.chunks)
        return reply

    replay = ReplayTransport(route=route)
    agent = make_agent(replay.url, client=replay.client())
    return create_app(agent, InMemorySessionStore(), settings, owns=True)


def stop_of(stored: dict[str, Any]) -> dict[str, Any]:
    [stop] = [p["data"] for p in stored["messages"][-1]["parts"] if p["type"] == "data-stop"]
    return stop


async def test_a_full_queue_stops_the_run_reading_its_model_stream() -> None:
    settings = ServeSettings(stream_buffer_bytes=16 * 1024, slow_client_timeout=TIMEOUT)
    replies: list[Counted] = []
    app = app_with(settings, replies)
    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: post_chat(app, "stalled", pause=None))
            await anyio.sleep(TIMEOUT / 2)  # the client has read nothing for a while
            [chunks] = replies
            # the 16 KiB queue and the one chunk being put hold ~10 of the 2,000-character
            # deltas; the run took no more from the model while it waited
            assert chunks.taken < 40, chunks.taken
            assert len(chunks) > FLOOD_DELTAS  # of 4,000 (8 MB)
    assert stop_of(await stored_session(app, "stalled"))["detail"]["limit"] == (
        "slow_client_timeout"
    )


async def test_at_most_max_stalled_streams_runs_wait_for_readers_that_never_read() -> None:
    settings = ServeSettings(
        stream_buffer_bytes=16 * 1024, slow_client_timeout=TIMEOUT, max_stalled_streams=2
    )
    app = app_with(settings)
    ends: dict[str, float] = {}

    async def stalled(chat_id: str, after: float) -> None:
        await anyio.sleep(after)
        _, first, ended = await post_chat(app, chat_id, pause=None)
        ends[chat_id] = ended - first

    with anyio.fail_after(300):
        async with anyio.create_task_group() as group:
            for n in range(5):  # the first two wait; the others find the limit reached
                group.start_soon(stalled, f"s{n}", n * 0.1)
            await anyio.sleep(1)
            # meanwhile a client that reads, if slower than the model writes (its queue
            # full for 0.5 s at a time), gets its whole answer
            body, _, _ = await post_chat(app, "reader", pause=STALLED_AFTER / 2)
            text = body.decode()
            assert text.rstrip().endswith("data: [DONE]")
            assert text.count('"text-delta"') == FLOOD_DELTAS
        assert abs(ends["s0"] - TIMEOUT) < 0.01 and abs(ends["s1"] - TIMEOUT) < 0.01, ends
        for chat_id in ("s2", "s3", "s4"):
            # cancelled as soon as it counted as stalled (its queue full for STALLED_AFTER)
            assert abs(ends[chat_id] - STALLED_AFTER) < 0.01, ends
            stop = stop_of(await stored_session(app, chat_id))
            assert stop["reason"] == "interrupted" and stop["detail"]["cancelled"] is True
            assert stop["detail"]["limit"] == "max_stalled_streams"
            assert "max_stalled_streams" in stop["message"]
            text = "".join(
                p["text"]
                for p in (await stored_session(app, chat_id))["messages"][-1]["parts"]
                if p["type"] == "text"
            )
            assert text.startswith("0000") and len(text) < FLOOD_DELTAS * FLOOD_DELTA  # kept
        # the waits are over, so the count is back to none: a new stalled run waits again
        _, first, ended = await post_chat(app, "later", pause=None)
        assert abs((ended - first) - TIMEOUT) < 0.01


def test_the_stalled_stream_limit_is_a_setting_with_a_default() -> None:
    assert ServeSettings().max_stalled_streams == 16
