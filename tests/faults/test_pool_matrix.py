"""The model's own pool under stalls, every wire protocol, over a real socket.

Waiting for a pooled connection is :class:`PoolTimeoutError`, not "idle", and is
not charged to the call's clocks (they start when the request is sent). These need
the model's own pool (aiohttp's connector on a real socket to ``ReplayServer``),
so they run on the real clock; they assert nothing about time, only which limit
ended which call. The other stalls are in ``test_stall_matrix.py``, on virtual time.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from zett_agent import Model, ModelRequest, UserMessage
from zett_agent.errors import CallTimeoutError, PoolTimeoutError, TransportError
from zett_agent.testing import ReplayServer

from .test_fault_matrix import TEXTS
from .wire import WIRES, Wire

LIMIT = 15.0


@pytest.fixture(params=list(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


async def first_request_in(server: ReplayServer) -> None:
    """Until the server has the first request (its call holds the connection)."""
    while not server.requests:
        await anyio.sleep(0.01)


# ---------------------------------------------------------------- the pool


async def test_pool_exhaustion_is_its_own_error(wire: Wire) -> None:
    slow = wire.reply(wire.answer(TEXTS), stall_after=len(wire.head()) + 1, stall_seconds=2.0)
    with ReplayServer([slow, wire.reply(wire.answer(TEXTS))]) as server:
        model = Model(
            wire.vendor,
            "m",
            base_url=server.url,
            api_key="test-key",
            max_connections=1,
            pool_timeout=0.3,
            idle_timeout=5,
            max_retries=0,
        )
        request = ModelRequest("m", [UserMessage("hi")])
        errors: list[BaseException] = []

        async def second() -> None:
            await first_request_in(server)  # the first call holds the only connection
            try:
                await model.complete(request)
            except TransportError as error:
                errors.append(error)

        with anyio.fail_after(LIMIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(second)
                first = await model.complete(request)
        await model.aclose()
    assert first.text == "".join(TEXTS)  # the call that held the connection is unharmed
    assert len(errors) == 1 and isinstance(errors[0], PoolTimeoutError), errors
    assert errors[0].limit == "pool_timeout" and "idle" not in str(errors[0])
    assert len(server.requests) == 1


async def test_waiting_for_the_pool_is_not_charged_to_the_call(wire: Wire) -> None:
    """The second call waits ~1.2 s for the only connection; its own clocks (first
    output 0.8 s, deadline 1.0 s) start when it is sent, so it still succeeds."""
    slow = wire.reply(wire.answer(TEXTS), stall_after=len(wire.head()) + 1, stall_seconds=1.2)
    with ReplayServer([slow, wire.reply(wire.answer(TEXTS))]) as server:
        model = Model(
            wire.vendor,
            "m",
            base_url=server.url,
            api_key="test-key",
            max_connections=1,
            pool_timeout=10,
            idle_timeout=5,
            first_output_timeout=0.8,
            attempt_timeout=5,
            max_retries=0,
        )
        request = ModelRequest("m", [UserMessage("hi")])
        second: list[Any] = []

        async def later() -> None:
            await first_request_in(server)
            second.append(await model.complete(request))

        with anyio.fail_after(LIMIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(later)
                await model.complete(request)
        await model.aclose()
    assert second[0].text == "".join(TEXTS) and second[0].stop is None
    assert len(server.requests) == 2


async def test_the_first_output_limit_counts_from_the_send_after_a_pool_wait(wire: Wire) -> None:
    """The second call waits ~1.2 s for the only connection, then its answer stalls
    2.5 s before any output: its first-output limit (0.5 s, idle 5 s) still ends it,
    counted from when it was sent (a timer pushed back by the idle period while the
    call waited for the pool let that answer through as if no limit were set)."""
    slow = wire.reply(wire.answer(TEXTS), stall_after=len(wire.head()) + 1, stall_seconds=1.2)
    late = wire.reply(wire.answer(TEXTS), stall_after=len(wire.head()), stall_seconds=2.5)
    with ReplayServer([slow, late]) as server:
        model = Model(
            wire.vendor,
            "m",
            base_url=server.url,
            api_key="test-key",
            max_connections=1,
            pool_timeout=10,
            idle_timeout=5,
            first_output_timeout=0.5,
            attempt_timeout=8,
            max_retries=0,
        )
        request = ModelRequest("m", [UserMessage("hi")])
        errors: list[BaseException] = []

        async def later() -> None:
            await first_request_in(server)
            try:
                await model.complete(request)
            except TransportError as error:
                errors.append(error)

        with anyio.fail_after(LIMIT):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(later)
                first = await model.complete(request)
        await model.aclose()
    assert first.text == "".join(TEXTS)
    assert len(errors) == 1 and isinstance(errors[0], CallTimeoutError), errors
    assert errors[0].limit == "first_output_timeout"
