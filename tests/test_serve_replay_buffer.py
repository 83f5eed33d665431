"""The replay buffer of a running message: bounded by whole complete steps, never
cutting what a reader that keeps up has yet to send, and readers that join late get
the message from ``start`` (``zett_agent.serve._replay_buffer``)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from zett_agent.serve._replay_buffer import HARD_FACTOR, ReplayBuffer
from zett_agent.serve._stream import sse

pytestmark = pytest.mark.looptime

START = sse({"type": "start", "messageId": "a1"})
STEP = sse({"type": "start-step"})
END_STEP = sse({"type": "finish-step"})


def delta(n: int) -> bytes:
    return sse({"type": "text-delta", "id": "t", "delta": f"{n:04d}" + "x" * 60})


def steps(count: int, deltas: int) -> list[bytes]:
    out = [START]
    for _ in range(count):
        out += [STEP, *(delta(n) for n in range(deltas)), END_STEP]
    return out


def test_past_the_bound_only_complete_steps_are_dropped_and_start_is_kept() -> None:
    buffer = ReplayBuffer(limit=2000)
    for data in steps(5, 30):  # each step ~2.3 KB
        buffer.append(data)
    assert buffer.steps_dropped >= 3
    assert buffer.first == START
    kept = buffer.events_from(buffer.dropped + 1)
    assert kept is not None and kept[0] == STEP  # from a step's start
    assert buffer.events_from(0) is None  # a late reader must rebuild the dropped steps
    assert buffer.size < 2 * 2400


def test_one_long_step_is_kept_whole() -> None:
    buffer = ReplayBuffer(limit=1000)
    for data in steps(1, 200):
        buffer.append(data)
    assert buffer.dropped == 0
    assert b"".join(buffer.events_from(0) or []) == b"".join(steps(1, 200))


async def test_a_reader_that_keeps_up_gets_every_event_past_the_bound() -> None:
    buffer = ReplayBuffer(limit=500)
    sent = steps(20, 40)  # each step past the hard bound
    for n in range(len(sent) - 1, 0, -1):  # one write per event, as the encoder does:
        if sent[n] == STEP and sent[n - 1] == END_STEP:  # finish-step with start-step
            sent[n - 1 : n + 1] = [END_STEP + STEP]
    got: list[bytes] = []

    async def read() -> None:
        async for data in buffer.follow(0):
            got.append(data)

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        await anyio.sleep(0)
        for data in sent:
            buffer.append(data)
            await anyio.lowlevel.checkpoint()  # as the run's pump does
        buffer.close()
    assert b"".join(got) == b"".join(sent)
    assert buffer.steps_dropped > 10


async def test_a_stalled_reader_holds_steps_only_up_to_the_hard_bound() -> None:
    buffer = ReplayBuffer(limit=500)
    sent = steps(40, 20)
    buffer.append(sent[0])
    reader = buffer.follow(0)
    first = await reader.__anext__()  # then it reads nothing more
    assert first == START
    for data in sent[1:]:
        buffer.append(data)
    assert buffer.size <= HARD_FACTOR * 500 + 2000  # at most a step more
    assert buffer.dropped > 0
    with pytest.raises(StopAsyncIteration):  # it fell behind: its stream ends
        await reader.__anext__()


async def test_finished_runs_are_forgotten_after_the_grace_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from zett_agent.serve import _rejoin

    state: Any = SimpleNamespace(live_runs={})
    now = [1000.0]
    monkeypatch.setattr(_rejoin.time, "monotonic", lambda: now[0])
    done = _rejoin.LiveRun("done", "a1", ReplayBuffer(), ended_at=now[0])
    running = _rejoin.LiveRun("running", "a1", ReplayBuffer())
    state.live_runs.update(done=done, running=running)
    assert _rejoin.live_run(state, "done") is done  # within the grace time
    now[0] += _rejoin.GRACE + 1
    assert _rejoin.live_run(state, "other") is None
    assert set(state.live_runs) == {"running"}  # the finished one's buffer is freed


async def test_a_stalled_reader_is_dropped_and_its_run_goes_on() -> None:
    """A resumable run's reader that reads nothing is closed after
    ``slow_client_timeout``; the run is not cancelled: it stores the whole answer."""
    from serve_support import make_agent, scenario_reply
    from test_serve_slow_client import post_chat, stored_session
    from zett_agent.serve import ServeSettings, create_app
    from zett_agent.sessions import InMemorySessionStore
    from zett_agent.testing import ReplayTransport

    replay = ReplayTransport(route=scenario_reply)
    agent = make_agent(replay.url, client=replay.client())
    settings = ServeSettings(resumable=True, slow_client_timeout=1.0)
    app = create_app(agent, InMemorySessionStore(), settings, owns=True)
    with anyio.fail_after(120):
        sent, _, _ = await post_chat(app, "stalled", pause=None)
        stored = await stored_session(app, "stalled")
    last = stored["messages"][-1]
    assert not [p for p in last["parts"] if p["type"] == "data-stop"]
    assert last["metadata"]["finishReason"] == "stop"
    assert len(last["parts"][1]["text"]) > 100 * len(sent)  # it got far more than was read
