"""The bounded, sans-IO framers (zett_agent.protocols._framing): the same events as
httpx-sse on every recording and any chunk split, lines bounded, inflation in pieces."""

from __future__ import annotations

import gzip
import sys
import zlib
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import EventSource
from hypothesis import given, settings
from hypothesis import strategies as st

from zett_agent.protocols._framing import (
    PIECE,
    FrameTooLargeError,
    Inflater,
    LineFramer,
    QuietTooLongError,
    SSEFramer,
    inflater_for,
)

RECORDINGS = sorted(Path(__file__).parent.joinpath("recordings").glob("*.sse"))


def httpx_sse_events(data: bytes) -> list[tuple[str, str]]:
    response = httpx.Response(200, content=data, headers={"content-type": "text/event-stream"})
    return [(sse.event, sse.data) for sse in EventSource(response).iter_sse()]


def framed(data: bytes, cuts: list[int], limit: int = 1 << 20) -> list[tuple[str, str]]:
    framer = SSEFramer(limit)
    out: list[tuple[str, str]] = []
    start = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        out += framer.feed(data[start:cut])
        start = cut
    return out


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_sse_framer_reads_every_recording_as_httpx_sse_does(path: Path) -> None:
    data = path.read_bytes()
    expected = httpx_sse_events(data)
    assert framed(data, []) == expected
    assert framed(data, list(range(1, len(data)))) == expected  # one byte at a time


@settings(max_examples=60, deadline=None)
@given(
    index=st.integers(0, len(RECORDINGS) - 1),
    cuts=st.lists(st.integers(0, 1 << 16), max_size=40),
    crlf=st.booleans(),
)
def test_any_chunk_split_and_line_end_gives_the_same_events(
    index: int, cuts: list[int], crlf: bool
) -> None:
    data = RECORDINGS[index].read_bytes().replace(b"\r\n", b"\n")
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    assert framed(data, cuts) == httpx_sse_events(data)


def test_sse_fields_comments_and_line_ends() -> None:
    data = (
        b": OPENROUTER PROCESSING\r\n\r\n"
        b"event: ping\rdata: {}\r\r"
        b"id: 7\nretry: 10\ndata: a\ndata:b\n\n"
        b"data: unterminated"
    )
    assert framed(data, [3, 30, 31]) == [("ping", "{}"), ("message", "a\nb")]


def test_a_cr_at_a_chunk_end_and_lf_at_the_next_start_is_one_line_end() -> None:
    framer = SSEFramer(1024)
    assert framer.feed(b"data: x\r") == []
    assert framer.feed(b"\n") == []  # the \n completes "\r\n": not a blank line
    assert framer.feed(b"\r\n") == [("message", "x")]


def test_blank_line_floods_dispatch_once_and_hold_nothing() -> None:
    framer = SSEFramer(1024)
    assert framer.feed(b"data: x\n") == []
    assert framer.feed(b"\n" * 100_000) == [("message", "x")]
    assert framer.feed(b"\r\n" * 100_000) == []


def test_a_line_without_end_is_bounded() -> None:
    framer = SSEFramer(1000)
    framer.feed(b"data: " + b"x" * 900)
    with pytest.raises(FrameTooLargeError) as caught:
        framer.feed(b"x" * 200)
    assert caught.value.limit == 1000 and caught.value.size > 1000


def test_an_event_of_many_lines_is_bounded() -> None:
    framer = SSEFramer(1000)
    with pytest.raises(FrameTooLargeError):
        framer.feed(b"data: " + b"y" * 100 + b"\n" + b"data: zz\n" * 400)


def test_events_before_an_oversized_one_in_the_same_chunk_come_first() -> None:
    """One network read may hold complete events and then one over the limit (a
    transport that reads more at a time): the complete ones are returned, and the
    limit is raised by the next feed, or by close() when the body ends there."""
    chunk = b"data: a\n\ndata: b\n\ndata: " + b"x" * 100 + b"\n\n"
    framer = SSEFramer(64)
    assert framer.feed(chunk) == [("message", "a"), ("message", "b")]
    with pytest.raises(FrameTooLargeError):
        framer.feed(b"data: c\n\n")
    ended = SSEFramer(64)
    assert ended.feed(chunk) == [("message", "a"), ("message", "b")]
    with pytest.raises(FrameTooLargeError):
        ended.close()
    # a line still waiting for its end, past the limit, after complete lines
    waiting = SSEFramer(64)
    assert waiting.feed(b"data: a\n\ndata: " + b"y" * 100) == [("message", "a")]
    with pytest.raises(FrameTooLargeError):
        waiting.close()
    lines = LineFramer(64)
    assert lines.feed(b'{"a": 1}\n' + b"z" * 100) == ['{"a": 1}']
    with pytest.raises(FrameTooLargeError):
        lines.close()
    assert SSEFramer(64).close() is None  # nothing deferred: nothing raised


framer_got: list[Any] = []


def feed_all(framer: SSEFramer | LineFramer, data: bytes, size: int) -> None:
    """Feed ``data`` in pieces of ``size``, then close; what came out is in framer_got."""
    framer_got.clear()
    for start in range(0, len(data), size):
        framer_got.extend(framer.feed(data[start : start + size]))
    framer.close()


@pytest.mark.parametrize("size", [1, 7, 100, 1 << 20])
def test_bytes_in_a_row_without_an_event_are_bounded_however_they_are_split(size: int) -> None:
    """Comments and blank lines between two events count as one run whether they
    came in one read with the events around them or spread over many; the events
    before the limit in the same chunk come first."""
    flood = b": keep-alive\n\n" * 100  # 1,400 bytes
    body = b"data: a\n\n" + flood + b"data: b\n\n"
    framer = SSEFramer(1 << 20, max_quiet=1000)
    with pytest.raises(QuietTooLongError):
        feed_all(framer, body, size)
    assert framer_got == [("message", "a")]
    assert SSEFramer(1 << 20, max_quiet=2000).feed(body) == [("message", "a"), ("message", "b")]
    lines = LineFramer(1 << 20, max_quiet=1000)
    ndjson = b'{"a": 1}\n' + b"\n" * 1400 + b'{"b": 2}\n'
    with pytest.raises(QuietTooLongError):
        feed_all(lines, ndjson, size)
    assert framer_got == ['{"a": 1}']


def test_lines_under_the_limit_pass() -> None:
    framer = SSEFramer(1000)
    assert framer.feed(b"data: " + b"x" * 990 + b"\n\n") == [("message", "x" * 990)]


def test_ndjson_lines() -> None:
    lines = LineFramer(100)
    assert lines.feed(b'{"a": 1}\n\n  \r\n{"b"') == ['{"a": 1}']
    assert lines.feed(b": 2}\r\n") == ['{"b": 2}']
    assert lines.feed(b'{"c": 3}') == []
    assert lines.close() == ['{"c": 3}']
    with pytest.raises(FrameTooLargeError):
        lines.feed(b"x" * 101)


def test_utf8_split_across_chunks_is_decoded_whole() -> None:
    data = 'data: {"t": "héllo ✓"}\n\n'.encode()
    assert framed(data, list(range(len(data)))) == [("message", '{"t": "héllo ✓"}')]


def test_inflater_gives_bounded_pieces_of_a_bomb() -> None:
    bomb = gzip.compress(b"\n" * (16 * PIECE))
    inflater = inflater_for("gzip")
    assert isinstance(inflater, Inflater)
    pieces = list(inflater.pieces(bomb))
    assert max(len(p) for p in pieces) <= PIECE
    assert sum(len(p) for p in pieces) == 16 * PIECE


@pytest.mark.parametrize("wrap", ["zlib", "raw"])
def test_deflate_with_and_without_the_zlib_header(wrap: str) -> None:
    body = b'{"ok": true}' * 100
    if wrap == "zlib":
        data = zlib.compress(body)
    else:
        packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        data = packer.compress(body) + packer.flush()
    inflater = inflater_for("deflate")
    assert isinstance(inflater, Inflater)
    assert b"".join(p for half in (data[:5], data[5:]) for p in inflater.pieces(half)) == body


def test_encodings() -> None:
    assert inflater_for("") is None and inflater_for("identity") is None
    assert isinstance(inflater_for("GZIP"), Inflater)
    assert inflater_for("br") is False and inflater_for("gzip, br") is False
    with pytest.raises(zlib.error):
        list(Inflater("gzip").pieces(b"not gzip at all"))


def test_blank_lines_between_events_are_read_in_bulk_and_counted_alike() -> None:
    """A flood of blank lines right after an event (the hostile gzip bomb's body)
    is skipped a block at a time, not line by line through the general parser (it
    was 8 million calls, 5 s of CPU for 16 MiB), and still counts towards
    ``max_quiet``."""
    flood = b"data: a\n\n" + b"\n" * 20_000 + b"data: b\n\n"
    framer = SSEFramer(1 << 20, max_quiet=30_000)
    general = SSEFramer._general.__code__
    calls = 0

    def probe(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call" and frame.f_code is general:
            calls += 1

    sys.setprofile(probe)
    try:
        events = framer.feed(flood)
    finally:
        sys.setprofile(None)
    assert events == [("message", "a"), ("message", "b")]
    assert calls == 0
    strict = SSEFramer(1 << 20, max_quiet=19_000)  # the limit still holds, in bulk too
    assert strict.feed(flood) == [("message", "a")]  # the events before the limit first
    with pytest.raises(QuietTooLongError):
        strict.feed(b"data: c\n\n")
    assert SSEFramer(1 << 20, max_quiet=20_010).feed(flood) == [("message", "a"), ("message", "b")]
