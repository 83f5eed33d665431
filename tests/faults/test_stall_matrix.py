"""Stalls, keep-alives, trickles and deadlines: every wire protocol, on virtual time.

A stalled stream always ends at the time the host set (issue 11, part 2):

* after output, idle means no **content progress**: keep-alives (SSE comments, an
  Anthropic ``ping``, an empty delta, blank NDJSON lines) and a byte trickle do not
  reset it; the answer ends INTERRUPTED with the text kept about ``idle_timeout``
  after the last content;
* before output, keep-alives may hold the call open up to ``first_output_timeout``
  (then a retryable :class:`CallTimeoutError`), however short the idle timeout;
* every attempt has a deadline, ``attempt_timeout``, streamed or not: INTERRUPTED
  with the text kept after output, a :class:`CallTimeoutError` that is not retried
  before;
* waiting for a pooled connection is :class:`PoolTimeoutError`, not "idle".

The tests run on an event loop with virtual time (``looptime``, tests/conftest.py)
and the replies come from :class:`ReplayTransport`, in the process, paced by that
loop's clock: a 10 s stall costs no wall time, and the times are exact. They are
measured from the client's side (the last TEXT_DELTA event) on the loop's clock,
so each test checks *which* clock ended the call and *when*, to the millisecond.
The pool's tests need the model's own pool (a real socket): they are in
``test_pool_matrix.py``, on the real clock.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anyio
import pytest

from zett_agent import (
    AgentClient,
    AgentEventType,
    AssistantMessage,
    Message,
    Model,
    ModelRequest,
    StopReason,
    UserMessage,
    create_agent,
)
from zett_agent.errors import CallTimeoutError, TransportError
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayTransport, Reply

from .test_fault_matrix import TEXTS, unused, write_note
from .wire import WIRES, Wire, sse

pytestmark = pytest.mark.looptime

LIMIT = 15.0
KINDS = ["comment", "empty"]
EXACT = 0.005  # virtual time: a limit ends the call at its time, to the tick


def now() -> float:
    """The event loop's clock (virtual here)."""
    return asyncio.get_running_loop().time()


@pytest.fixture(params=list(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


class Outcome:
    """What one run gave: the final message or the error, when the last text delta
    arrived and when the run ended (the loop's clock), and what the store holds."""

    def __init__(self) -> None:
        self.result: AssistantMessage | BaseException | None = None
        self.last_text = 0.0
        self.ended = 0.0
        self.started = 0.0
        self.stored: list[Message] = []

    @property
    def after_text(self) -> float:
        return self.ended - self.last_text

    @property
    def elapsed(self) -> float:
        return self.ended - self.started

    def interrupted(self, limit: str) -> AssistantMessage:
        message = self.result
        assert isinstance(message, AssistantMessage), message
        assert message.stop is not None and message.stop.reason is StopReason.INTERRUPTED
        assert message.stop.detail["limit"] == limit, message.stop.detail
        assert message.text and message.tool_calls == ()
        last = self.stored[-1]
        assert isinstance(last, AssistantMessage) and last.text == message.text
        assert last.stop is not None and last.stop.detail["limit"] == limit
        return message


async def run(server: ReplayTransport, wire: Wire, tmp_path: Path, **options: Any) -> Outcome:
    """One run through an AgentClient; the store is in memory (a SQLite store works
    in threads, which virtual time would not wait for)."""
    options.setdefault("max_retries", 0)
    client_ = server.client()
    model = Model(
        wire.vendor, "m", base_url=server.url, api_key="test-key", client=client_, **options
    )
    agent = await create_agent(model, tools=[write_note])
    store = InMemorySessionStore()
    out = Outcome()
    with anyio.fail_after(LIMIT):
        async with AgentClient(agent, store, session_id="s") as client:
            out.started = now()
            try:
                async for event in client.stream("Write a note.", session_id="s"):
                    if event.type is AgentEventType.TEXT_DELTA:
                        out.last_text = now()
                    elif event.type is AgentEventType.RUN_COMPLETED:
                        out.result = event.message
            except TransportError as error:
                out.result = error
            out.ended = now()
        await agent.aclose()
        await client_.aclose()
        async with AgentClient(agent, store) as again:
            out.stored = await again.messages("s")
    return out


def paced(wire: Wire, chunks: list[bytes], delay: float) -> Reply:
    return wire.reply(chunks, delay=delay)


# ---------------------------------------------------------------- after output


@pytest.mark.parametrize("kind", KINDS)
async def test_keepalive_stall_after_text_ends_at_the_idle_timeout(
    wire: Wire, kind: str, tmp_path: Path
) -> None:
    chunks = [*wire.head(), *wire.text(TEXTS[0]), *wire.text(TEXTS[1])]
    chunks += [wire.keepalive(kind)] * 100  # 10 s of keep-alives, 0.1 s apart
    with ReplayTransport([paced(wire, chunks, 0.1), unused()]) as server:
        out = await run(server, wire, tmp_path, idle_timeout=0.6)
    message = out.interrupted("idle_timeout")
    assert message.text == TEXTS[0] + TEXTS[1]
    assert abs(out.after_text - 0.6) < EXACT, out.after_text  # not when the keep-alives stop
    assert len(server.requests) == 1


async def test_trickle_after_text_ends_at_the_idle_timeout(wire: Wire, tmp_path: Path) -> None:
    event = wire.text(TEXTS[2])[0]  # its bytes arrive one by one, 0.1 s apart
    chunks = [*wire.head(), *wire.text(TEXTS[0]), *wire.text(TEXTS[1])]
    chunks += [event[i : i + 1] for i in range(len(event))]
    with ReplayTransport([paced(wire, chunks, 0.1), unused()]) as server:
        out = await run(server, wire, tmp_path, idle_timeout=0.6)
    message = out.interrupted("idle_timeout")
    assert message.text == TEXTS[0] + TEXTS[1]
    assert abs(out.after_text - 0.6) < EXACT, out.after_text  # the trickle is no progress
    assert len(server.requests) == 1


async def test_attempt_deadline_mid_stream_keeps_the_text(wire: Wire, tmp_path: Path) -> None:
    chunks = [*wire.head(), *(c for i in range(100) for c in wire.text(f"{i} "))]
    with ReplayTransport([paced(wire, chunks, 0.1), unused()]) as server:
        out = await run(server, wire, tmp_path, idle_timeout=5, attempt_timeout=1.2)
    message = out.interrupted("attempt_timeout")  # content kept flowing: not idle
    assert message.text.startswith("0 1 2 ") and len(message.text) < 200
    assert abs(out.elapsed - 1.2) < EXACT, out.elapsed
    assert len(server.requests) == 1


# ---------------------------------------------------------------- before output


@pytest.mark.parametrize("kind", KINDS)
async def test_keepalives_before_output_outlast_the_idle_timeout(
    wire: Wire, kind: str, tmp_path: Path
) -> None:
    chunks = [*wire.head(), *[wire.keepalive(kind)] * 12, *wire.answer(TEXTS)[len(wire.head()) :]]
    with ReplayTransport([paced(wire, chunks, 0.1)]) as server:
        out = await run(server, wire, tmp_path, idle_timeout=0.4, first_output_timeout=8)
    assert isinstance(out.result, AssistantMessage) and out.result.stop is None, out.result
    assert out.result.text == "".join(TEXTS)
    assert out.elapsed > 3 * 0.4  # the keep-alives alone lasted three idle timeouts
    assert abs(out.elapsed - 0.1 * (len(chunks) - 1)) < EXACT, out.elapsed  # all of them


@pytest.mark.parametrize("kind", KINDS)
async def test_keepalives_before_output_end_at_the_first_output_limit(
    wire: Wire, kind: str, tmp_path: Path
) -> None:
    chunks = [*wire.head(), *[wire.keepalive(kind)] * 100, *wire.answer(TEXTS)]
    with ReplayTransport([paced(wire, chunks, 0.1)]) as server:
        out = await run(server, wire, tmp_path, idle_timeout=0.3, first_output_timeout=1.0)
    error = out.result
    assert isinstance(error, CallTimeoutError) and error.limit == "first_output_timeout"
    assert error.retryable  # nothing came: sending again is safe
    assert abs(out.elapsed - 1.0) < EXACT, out.elapsed
    assert [type(m) for m in out.stored] == [UserMessage]


async def test_attempt_deadline_before_any_byte_is_not_retried(wire: Wire, tmp_path: Path) -> None:
    reply = wire.reply(wire.answer(TEXTS), stall_after=0, stall_seconds=4.0)
    with ReplayTransport([reply, unused()]) as server:
        out = await run(server, wire, tmp_path, attempt_timeout=0.8, max_retries=2)
    error = out.result
    assert isinstance(error, CallTimeoutError) and error.limit == "attempt_timeout"
    assert not error.retryable
    assert abs(out.elapsed - 0.8) < EXACT, out.elapsed
    assert len(server.requests) == 1


async def test_attempt_deadline_bounds_a_trickled_whole_body(wire: Wire, tmp_path: Path) -> None:
    """The case from the issue: ``response_timeout=3`` on a non-streamed answer that
    trickles 2 bytes a second returned after 78 s; the deadline ends it."""
    body = b'{"id": "x", "choices": [], "candidates": [], "content": []}' * 4
    reply = Reply([body[i : i + 1] for i in range(len(body))], delay=0.5)
    with ReplayTransport([reply, unused()]) as server:
        out = await run(
            server, wire, tmp_path, stream=False, response_timeout=3, attempt_timeout=1.5
        )
    error = out.result
    assert isinstance(error, CallTimeoutError) and error.limit == "attempt_timeout"
    assert abs(out.elapsed - 1.5) < EXACT, out.elapsed
    assert len(server.requests) == 1


# ---------------------------------------------------------------- the case file


CASES = Path(__file__).parent.parent / "cases" / "stalls"


async def test_case_anthropic_text_then_pings_every_half_second(tmp_path: Path) -> None:
    """``cases/stalls``: some text, then only ``ping`` events every 0.5 s for 30 s,
    ``idle_timeout=1``: INTERRUPTED with the text kept about 1 s after the last
    content, not when the pings stop."""
    head = Reply.file(CASES / "anthropic_text_then.sse").chunks
    ping = (CASES / "anthropic_ping.sse").read_bytes()
    reply = Reply([*head, *[ping] * 60], content_type="text/event-stream", delay=0.5)
    with ReplayTransport([reply, unused()]) as server:
        out = await run(server, WIRES["anthropic"], tmp_path, idle_timeout=1, max_retries=2)
    message = out.interrupted("idle_timeout")
    assert message.text == "The three root causes were"
    assert abs(out.after_text - 1.0) < EXACT, out.after_text  # not when the pings stop
    assert len(server.requests) == 1


# ---------------------------------------------------------------- opaque progress


def _anthropic_thinking(pieces: list[bytes]) -> list[bytes]:
    wire = WIRES["anthropic"]
    start = {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    }
    return [*wire.head(), *wire.text("Let me think. "), sse(start, "content_block_start"), *pieces]


def _signature(n: int) -> bytes:
    delta = {"type": "signature_delta", "signature": f"sig{n}"}
    return sse({"type": "content_block_delta", "index": 1, "delta": delta}, "content_block_delta")


def _redacted(n: int) -> bytes:
    block = {"type": "redacted_thinking", "data": f"enc{n}"}
    start = {"type": "content_block_start", "index": 2 + n, "content_block": block}
    return sse(start, "content_block_start")


@pytest.mark.parametrize("piece", [_signature, _redacted], ids=["signature", "redacted"])
async def test_encrypted_reasoning_is_progress(piece: Any, tmp_path: Path) -> None:
    """Signature deltas and redacted thinking blocks make no stream event, but they
    are the model working: 2 s of them, 0.2 s apart, outlast idle_timeout=0.6."""
    wire = WIRES["anthropic"]
    opaque = [piece(n) for n in range(10)]
    tail = [*wire.text("Done."), *wire.close_text(), *wire.tail("", None)]
    reply = wire.reply([*_anthropic_thinking(opaque), *tail], delay=0.2)
    with ReplayTransport([reply]) as server:
        out = await run(server, wire, tmp_path, idle_timeout=0.6)
    assert isinstance(out.result, AssistantMessage) and out.result.stop is None, out.result
    assert out.result.text == "Let me think. Done."


async def test_responses_encrypted_reasoning_items_are_progress(tmp_path: Path) -> None:
    wire = WIRES["openai-responses"]
    items = [
        sse(
            {
                "type": "response.output_item.done",
                "output_index": 1 + n,
                "item": {"type": "reasoning", "id": f"rs_{n}", "encrypted_content": "gAAA"},
            },
            "response.output_item.done",
        )
        for n in range(10)
    ]
    chunks = [*wire.head(), *wire.text("Hm. "), *items, *wire.text("Done.")]
    chunks += [*wire.close_text(), *wire.tail("Hm. Done.", None)]
    with ReplayTransport([wire.reply(chunks, delay=0.2)]) as server:
        out = await run(server, wire, tmp_path, idle_timeout=0.6)
    assert isinstance(out.result, AssistantMessage) and out.result.stop is None, out.result
    assert out.result.text == "Hm. Done."


# ---------------------------------------------------------------- without the timer


@pytest.fixture
def no_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The watchdog as under a backend other than asyncio: a cancel scope per read."""
    from zett_agent.model import _watchdog as watchdog

    monkeypatch.setattr(watchdog, "asyncio_loop", lambda: None)


@pytest.mark.usefixtures("no_timer")
async def test_without_the_timer_keepalives_still_end_at_the_idle_timeout(tmp_path: Path) -> None:
    wire = WIRES["anthropic"]
    chunks = [*wire.head(), *wire.text(TEXTS[0]), *[wire.keepalive("empty")] * 100]
    with ReplayTransport([paced(wire, chunks, 0.1), unused()]) as server:
        out = await run(server, wire, tmp_path, idle_timeout=0.6)
    assert out.interrupted("idle_timeout").text == TEXTS[0]
    assert abs(out.after_text - 0.6) < EXACT, out.after_text


@pytest.mark.usefixtures("no_timer")
async def test_without_the_timer_the_deadline_ends_a_silent_call(tmp_path: Path) -> None:
    wire = WIRES["openai-chat"]
    reply = wire.reply(wire.answer(TEXTS), stall_after=0, stall_seconds=4.0)
    with ReplayTransport([reply, unused()]) as server:
        out = await run(server, wire, tmp_path, attempt_timeout=0.8, max_retries=2)
    assert isinstance(out.result, CallTimeoutError) and out.result.limit == "attempt_timeout"
    assert abs(out.elapsed - 0.8) < EXACT, out.elapsed


async def test_a_host_cancellation_is_never_taken_for_a_limit() -> None:
    """The host's own cancel scope ends a stalled call at its time, as a cancellation
    (the watchdog only converts the cancellations it made itself)."""
    wire = WIRES["anthropic"]
    reply = wire.reply(wire.answer(TEXTS), stall_after=len(wire.head()) + 1, stall_seconds=3.0)
    with ReplayTransport([reply]) as server:
        client = server.client()
        model = Model(
            wire.vendor, "m", base_url=server.url, api_key="k", idle_timeout=0.5, client=client
        )
        start = now()
        with anyio.move_on_after(0.45) as scope:  # just before the idle limit
            await model.complete(ModelRequest("m", [UserMessage("hi")]))
        elapsed = now() - start
        # the same stall, no host deadline: the idle limit ends it as a stop
        server.add(reply)
        response = await model.complete(ModelRequest("m", [UserMessage("hi")]))
        await model.aclose()
        await client.aclose()
    assert scope.cancelled_caught and abs(elapsed - 0.45) < EXACT, elapsed
    assert response.stop_info.detail["limit"] == "idle_timeout"
