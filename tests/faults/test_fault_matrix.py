"""Fault injection: every fault x every wire protocol, over a real socket.

Each test runs the whole stack (ReplayServer on 127.0.0.1, httpx, httpx-sse, the
protocol's decoder, Model retries, the agent loop, an AgentClient storing to
SQLite) against one fault and checks that

* the run ends with the right stop: INTERRUPTED with the text kept when output
  had arrived, a typed zett error when nothing came;
* retries happen only before output and honour retry-after (the wait is measured
  between the requests' arrival times);
* no tool runs twice, and a tool call cut off by the fault never runs;
* what the session store holds is exactly the conversation, readable again;
* nothing hangs: every test is inside ``anyio.fail_after``.

The tests that wait (stalls, retry waits) run on virtual time (``looptime``,
tests/conftest.py) against :class:`ReplayTransport` (the same replies in the
process, paced by the loop's clock) and an in-memory store, so the waits cost no
wall time and are checked exactly; every other test keeps the real socket.

The 50 MB body case is ``@pytest.mark.slow`` (``pytest -m slow tests/faults``).
``conftest.py`` prints the pass counts as a faults x protocols table.
"""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from zett_agent import (
    AgentClient,
    AssistantMessage,
    Message,
    Model,
    ModelRequest,
    ProviderError,
    ProviderHTTPError,
    StopReason,
    StreamError,
    ToolResultMessage,
    TransportError,
    UserMessage,
    create_agent,
)
from zett_agent.errors import CallTimeoutError
from zett_agent.sessions import InMemorySessionStore, SessionStore
from zett_agent.testing import RecordedRequest, ReplayServer, ReplayTransport, Reply

from .wire import TOOL, WIRES, Call, Wire

PROTOCOLS = list(WIRES)
TEXTS = ["Hello, ", "this is ", "a partial ", "answer."]
CALL = Call(("abc", "def", "ghi"))
LIMIT = 15.0  # seconds: no single fault test may take longer

RAN: list[str] = []


def write_note(text: str) -> str:
    """Write a note."""
    RAN.append(text)
    return "written"


@pytest.fixture(autouse=True)
def _reset() -> None:
    RAN.clear()


@pytest.fixture(params=PROTOCOLS)
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


EXACT = 0.005  # on virtual time a wait lasts what it should, to the tick


class Timed(ReplayTransport):
    """A ReplayTransport that notes when each request arrived (the loop's clock)."""

    def __init__(self, replies: Sequence[Reply]) -> None:
        super().__init__(replies)
        self.arrived: list[float] = []

    def _next(self, request: RecordedRequest) -> Reply | None:
        self.arrived.append(asyncio.get_running_loop().time())
        return super()._next(request)


def model(server: ReplayServer | ReplayTransport, wire: Wire, **options: Any) -> Model:
    options.setdefault("max_retries", 2)
    if isinstance(server, ReplayTransport):
        options["client"] = server.client()
    return Model(wire.vendor, "m", base_url=server.url, api_key="test-key", **options)


async def run_client(
    server: ReplayServer | ReplayTransport, wire: Wire, tmp_path: Path, **options: Any
) -> tuple[AssistantMessage | BaseException, list[Message]]:
    """One run through an AgentClient storing to SQLite (in memory with a
    ReplayTransport: SQLite works in threads, which virtual time does not wait
    for): (final message or the error raised, the messages the store holds
    afterwards, loaded again)."""
    agent = await create_agent(model(server, wire, **options), tools=[write_note])
    store: SessionStore | Path = tmp_path / "sessions.sqlite3"
    if isinstance(server, ReplayTransport):
        store = InMemorySessionStore()
    outcome: AssistantMessage | BaseException
    with anyio.fail_after(LIMIT):
        async with AgentClient(agent, store, session_id="s") as client:
            try:
                outcome = await client.run("Write a note.", session_id="s")
            except (ProviderError, TransportError) as error:
                outcome = error
        await agent.aclose()
        async with AgentClient(agent, store) as again:  # a new client reads the file
            stored = await again.messages("s")
    return outcome, stored


def assert_interrupted(
    outcome: AssistantMessage | BaseException, stored: list[Message], text: str
) -> AssistantMessage:
    assert isinstance(outcome, AssistantMessage), outcome
    assert outcome.stop is not None and outcome.stop.reason is StopReason.INTERRUPTED
    assert outcome.text == text
    assert outcome.tool_calls == ()
    assert RAN == []  # a tool call cut off, or with an interrupted answer, never runs
    assert [type(m) for m in stored] == [UserMessage, AssistantMessage]
    last = stored[-1]
    assert isinstance(last, AssistantMessage) and last.text == text
    assert last.stop is not None and last.stop.reason is StopReason.INTERRUPTED
    return outcome


def assert_nothing_stored_but_the_prompt(stored: list[Message]) -> None:
    assert [type(m) for m in stored] == [UserMessage]


def unused() -> Reply:
    """A reply that must never be asked for (a retry after output would take it)."""
    return Reply.json({"error": {"message": "a retry after output"}}, status=599)


def text_after(wire: Wire, n: int) -> int:
    """How many chunks come before the end of the ``n``-th text delta."""
    return len(wire.head()) + n


# ---------------------------------------------------------------- dropped connection


async def test_drop_mid_text(wire: Wire, tmp_path: Path) -> None:
    reply = wire.reply(wire.answer(TEXTS), drop_after=text_after(wire, 2))
    with ReplayServer([reply, unused()]) as server:
        outcome, stored = await run_client(server, wire, tmp_path)
    assert_interrupted(outcome, stored, "".join(TEXTS[:2]))
    assert len(server.requests) == 1 and server.remaining == 1


async def test_drop_mid_tool_call(wire: Wire, tmp_path: Path) -> None:
    chunks = wire.answer(TEXTS[:1], CALL)
    cut = len(wire.head()) + 1 + len(wire.tool_start()) + 2  # two argument fragments in
    if wire.name == "ollama":  # the call is one line: cut before the done line
        cut = len(chunks) - 1
    reply = wire.reply(chunks, drop_after=cut)
    with ReplayServer([reply, unused()]) as server:
        outcome, stored = await run_client(server, wire, tmp_path)
    message = assert_interrupted(outcome, stored, TEXTS[0])
    assert message.stop is not None and message.stop.detail.get("withheld_tool_calls") == [TOOL]
    assert not any(isinstance(m, ToolResultMessage) for m in stored)
    assert len(server.requests) == 1


async def test_drop_before_output_is_a_transport_error_after_retries(
    wire: Wire, tmp_path: Path
) -> None:
    dead = [wire.reply(wire.answer(TEXTS), drop_after=len(wire.head())) for _ in range(2)]
    with ReplayServer(dead) as server:
        outcome, stored = await run_client(server, wire, tmp_path, max_retries=1)
    assert isinstance(outcome, TransportError)
    assert len(server.requests) == 2
    assert_nothing_stored_but_the_prompt(stored)


# ---------------------------------------------------------------- stalls


@pytest.mark.looptime
async def test_stall_mid_text_hits_the_idle_timeout(wire: Wire, tmp_path: Path) -> None:
    reply = wire.reply(wire.answer(TEXTS), stall_after=text_after(wire, 3), stall_seconds=3.0)
    start = asyncio.get_running_loop().time()
    with ReplayTransport([reply, unused()]) as server:
        outcome, stored = await run_client(server, wire, tmp_path, idle_timeout=0.5)
        elapsed = asyncio.get_running_loop().time() - start
    message = assert_interrupted(outcome, stored, "".join(TEXTS[:3]))
    assert message.stop is not None and "idle" in message.stop.detail["transport_error"]
    # ended by the 0.5 s idle timeout after the last text, not by the server (3 s)
    assert abs(elapsed - 0.5) < EXACT, elapsed
    assert len(server.requests) == 1


@pytest.mark.looptime
async def test_stall_before_output_is_a_transport_error(wire: Wire, tmp_path: Path) -> None:
    reply = wire.reply(wire.answer(TEXTS), stall_after=len(wire.head()), stall_seconds=3.0)
    start = asyncio.get_running_loop().time()
    with ReplayTransport([reply]) as server:
        outcome, stored = await run_client(
            server, wire, tmp_path, idle_timeout=0.2, first_output_timeout=0.5, max_retries=0
        )
        elapsed = asyncio.get_running_loop().time() - start
    # before output the first-output limit applies, not the (shorter) idle one
    assert isinstance(outcome, CallTimeoutError) and outcome.limit == "first_output_timeout"
    assert outcome.retryable and "first-output" in str(outcome)
    assert abs(elapsed - 0.5) < EXACT, elapsed
    assert_nothing_stored_but_the_prompt(stored)


# ---------------------------------------------------------------- bad events


async def test_garbage_event_is_skipped_and_counted(wire: Wire, tmp_path: Path) -> None:
    chunks = wire.answer(TEXTS)
    at = text_after(wire, 2)
    chunks = [*chunks[:at], wire.garbage(), *chunks[at:]]
    with ReplayServer([wire.reply(chunks), wire.reply(chunks)]) as server:
        outcome, stored = await run_client(server, wire, tmp_path)
        with anyio.fail_after(LIMIT):
            m = model(server, wire)
            response = await m.complete(ModelRequest("m", [UserMessage("hi")]))
            await m.aclose()
    assert isinstance(outcome, AssistantMessage) and outcome.stop is None
    assert outcome.text == "".join(TEXTS)
    assert response.stop_info.detail.get("malformed_events") == 1
    assert response.stop_info.reason is StopReason.END_TURN
    assert [type(m) for m in stored] == [UserMessage, AssistantMessage]
    assert stored[-1] == outcome


async def test_truncated_event_then_end_of_stream(wire: Wire, tmp_path: Path) -> None:
    chunks = [*wire.head(), *(c for t in TEXTS[:2] for c in wire.text(t)), wire.truncated()]
    with ReplayServer([wire.reply(chunks), unused()]) as server:
        outcome, stored = await run_client(server, wire, tmp_path)
    assert_interrupted(outcome, stored, "".join(TEXTS[:2]))
    assert len(server.requests) == 1


async def test_empty_200_body_is_a_transport_error_after_retries(
    wire: Wire, tmp_path: Path
) -> None:
    with ReplayServer([wire.reply([b""]), wire.reply([b""])]) as server:
        outcome, stored = await run_client(server, wire, tmp_path, max_retries=1)
    assert isinstance(outcome, TransportError)
    assert len(server.requests) == 2
    assert_nothing_stored_but_the_prompt(stored)


# ---------------------------------------------------------------- HTTP errors before output


def error_reply(wire: Wire, status: int, **headers: str) -> Reply:
    return Reply.json(
        wire.error_body(status, f"HTTP {status} from the fault server"),
        status=status,
        headers=dict(headers),
    )


@pytest.mark.looptime
async def test_429_retry_after_is_honoured(wire: Wire, tmp_path: Path) -> None:
    replies = [error_reply(wire, 429, **{"retry-after": "0.6"}), wire.reply(wire.answer(TEXTS))]
    with Timed(replies) as server:
        outcome, stored = await run_client(server, wire, tmp_path)
    assert isinstance(outcome, AssistantMessage) and outcome.stop is None
    assert outcome.text == "".join(TEXTS)
    assert len(server.arrived) == 2
    waited = server.arrived[1] - server.arrived[0]
    assert abs(waited - 0.6) < EXACT, waited
    assert [type(m) for m in stored] == [UserMessage, AssistantMessage]


@pytest.mark.looptime
@pytest.mark.parametrize("status", [500, 503, 529])
async def test_5xx_before_output_is_retried(wire: Wire, status: int, tmp_path: Path) -> None:
    replies = [
        error_reply(wire, status),
        wire.reply(wire.answer(TEXTS[:1], CALL)),
        wire.reply(wire.answer(["Done."])),
    ]
    with Timed(replies) as server:
        outcome, stored = await run_client(server, wire, tmp_path)
    assert isinstance(outcome, AssistantMessage) and outcome.text == "Done."
    assert RAN == ["abcdefghi"]  # the tool ran once, with its whole arguments
    assert len(server.requests) == 3
    waited = server.arrived[1] - server.arrived[0]
    assert 0.25 - EXACT <= waited <= 0.5 + EXACT, waited  # backoff 0.5 s x (0.5..1), 1st retry
    kinds = [type(m) for m in stored]
    assert kinds == [UserMessage, AssistantMessage, ToolResultMessage, AssistantMessage]


async def test_retries_exhausted_raise_a_typed_error(wire: Wire, tmp_path: Path) -> None:
    replies = [error_reply(wire, 503, **{"retry-after": "0"}) for _ in range(2)]
    with ReplayServer(replies) as server:
        outcome, stored = await run_client(server, wire, tmp_path, max_retries=1)
    assert isinstance(outcome, ProviderHTTPError) and outcome.status == 503
    assert len(server.requests) == 2
    assert_nothing_stored_but_the_prompt(stored)


async def test_400_is_not_retried(wire: Wire, tmp_path: Path) -> None:
    with ReplayServer([error_reply(wire, 400), unused()]) as server:
        outcome, stored = await run_client(server, wire, tmp_path)
    assert isinstance(outcome, ProviderHTTPError) and outcome.status == 400
    assert len(server.requests) == 1
    assert_nothing_stored_but_the_prompt(stored)


# ---------------------------------------------------------------- errors inside the stream


async def test_error_event_before_output(wire: Wire, tmp_path: Path) -> None:
    failing = wire.reply([*wire.head(), *wire.error_event("Overloaded")])
    with ReplayServer([failing, wire.reply(wire.answer(TEXTS))]) as server:
        outcome, stored = await run_client(server, wire, tmp_path)
    if wire.error_retryable:
        assert isinstance(outcome, AssistantMessage) and outcome.text == "".join(TEXTS)
        assert outcome.stop is None and len(server.requests) == 2
        assert [type(m) for m in stored] == [UserMessage, AssistantMessage]
    else:
        assert isinstance(outcome, StreamError) and outcome.message == "Overloaded"
        assert len(server.requests) == 1
        assert_nothing_stored_but_the_prompt(stored)


async def test_error_event_after_output_is_interrupted(wire: Wire, tmp_path: Path) -> None:
    chunks = [
        *wire.head(),
        *(c for t in TEXTS[:2] for c in wire.text(t)),
        *wire.error_event("Upstream died"),
    ]
    with ReplayServer([wire.reply(chunks), unused()]) as server:
        outcome, stored = await run_client(server, wire, tmp_path)
    message = assert_interrupted(outcome, stored, "".join(TEXTS[:2]))
    assert message.stop is not None and message.stop.message == "Upstream died"
    assert len(server.requests) == 1


async def test_error_event_after_tool_call_withholds_it(wire: Wire, tmp_path: Path) -> None:
    chunks = [
        *wire.head(),
        *wire.text(TEXTS[0]),
        *wire.tool_start(),
        *wire.tool_args(CALL),
        *wire.error_event("Upstream died"),
    ]
    with ReplayServer([wire.reply(chunks), unused()]) as server:
        outcome, stored = await run_client(server, wire, tmp_path)
    message = assert_interrupted(outcome, stored, TEXTS[0])
    assert message.stop is not None and message.stop.detail["withheld_tool_calls"] == [TOOL]
    assert len(server.requests) == 1


# ---------------------------------------------------------------- duplicates


async def test_duplicate_terminal_events_run_the_tool_once(wire: Wire, tmp_path: Path) -> None:
    chunks = wire.answer(TEXTS[:1], CALL)
    tail = wire.tail(TEXTS[0], CALL)
    replies = [wire.reply([*chunks, *tail, *tail]), wire.reply(wire.answer(["Done."]))]
    with ReplayServer(replies) as server:
        outcome, stored = await run_client(server, wire, tmp_path)
    assert isinstance(outcome, AssistantMessage) and outcome.text == "Done."
    assert outcome.stop is None
    assert RAN == ["abcdefghi"]
    kinds = [type(m) for m in stored]
    assert kinds == [UserMessage, AssistantMessage, ToolResultMessage, AssistantMessage]
    first = stored[1]
    assert isinstance(first, AssistantMessage) and first.text == TEXTS[0]
    assert [c.name for c in first.tool_calls] == [TOOL]
    assert len(server.requests) == 2


# ---------------------------------------------------------------- a 50 MB body


class LazyChunks(Sequence[bytes]):
    """Chunks made on demand, so the 50 MB body is never held by the test itself."""

    def __init__(self, head: list[bytes], make: Any, n: int, tail: list[bytes]) -> None:
        self.head, self.make, self.n, self.tail = head, make, n, tail

    def __len__(self) -> int:
        return len(self.head) + self.n + len(self.tail)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < len(self.head):
            return self.head[index]
        index -= len(self.head)
        if index < self.n:
            return self.make(index)
        return self.tail[index - self.n]

    def __iter__(self) -> Iterator[bytes]:
        for i in range(len(self)):
            yield self[i]


SHAPES = {
    # events, characters of text per event, padding per event: ~50 MB bodies
    "large-deltas": (5_000, 1_000, 9_000),
    "small-deltas": (100_000, 50, 450),
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(SHAPES))
async def test_50mb_body_memory_is_bounded(wire: Wire, shape: str) -> None:
    events, size, pad = SHAPES[shape]
    piece, padding = "x" * (size - 1), "p" * pad
    chunks = LazyChunks(
        wire.head(),
        lambda i: wire.text(piece + str(i % 10), padding=padding)[0],
        events,
        [*wire.close_text(), *wire.tail("", None)],
    )
    body_size = sum(len(c) for c in chunks)
    assert body_size > 50 * 2**20 * 0.9, body_size
    text_size = events * size
    with ReplayServer([wire.reply(chunks)]) as server:
        m = model(server, wire)
        gc.collect()
        tracemalloc.start()
        try:
            with anyio.fail_after(60):
                response = await m.complete(ModelRequest("m", [UserMessage("hi")]))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        await m.aclose()
    assert len(response.text) == text_size
    assert response.stop_info.reason is StopReason.END_TURN
    # The text must be held: the answer, the provider record's copy (Anthropic's and
    # Gemini's records keep their own), and the pieces each was joined from. The
    # rest of the body must not be: the peak stays well below the body size.
    assert peak < 4 * text_size + 2 * 2**20, (peak, text_size, body_size)
    assert peak < body_size / 2.5, (peak, body_size)
