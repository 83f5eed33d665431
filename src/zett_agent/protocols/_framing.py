"""Bounded, sans-IO framing of response bytes: SSE events, NDJSON lines, gzip/deflate.

The transport feeds raw bytes in and gets frames out; nothing here touches a socket,
so the same code is fuzzed and benchmarked from memory. Every buffer is bounded:

* :class:`SSEFramer` splits on ``\\r\\n``, ``\\r`` or ``\\n`` (the SSE spec, also across
  chunk boundaries) and assembles ``event``/``data`` fields into ``(event, data)``
  pairs; an event whose data, or a line still waiting for its end, grows past
  ``max_event_bytes`` raises :class:`FrameTooLargeError`.
* :class:`LineFramer` does the same for NDJSON lines (blank lines are skipped).
* :class:`Inflater` decompresses ``gzip``/``deflate`` in pieces of at most
  :data:`PIECE` bytes, so a small compressed body that inflates to gigabytes is
  seen a piece at a time and a limit applies after decompression.

Why not httpx-sse and httpx's line iterator: both buffer a line until its end
arrives, with no limit (a 300 MB line with no newline is held whole), and httpx
inflates each network chunk in one call (a 64 KB gzip chunk becomes 64 MB).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

__all__ = [
    "PIECE",
    "FrameTooLargeError",
    "Inflater",
    "LineFramer",
    "QuietTooLongError",
    "SSEFramer",
    "inflater_for",
]

PIECE = 64 * 1024
"""Largest piece :class:`Inflater` returns at once, in bytes."""

_NEWLINES = b"\r\n"
_FAST_TAIL = 64 * 1024
_EVENT_NAMES: dict[bytes, str] = {}
"""``event: name`` lines seen by the fast path, decoded once (at most 256 kept)."""
"""The most unparsed bytes :class:`SSEFramer`'s fast path keeps of an event not yet
ended; a longer one goes to the line parser, which bounds it exactly."""


class FrameTooLargeError(ValueError):
    """One SSE event or NDJSON line is larger than the framer's ``max_event_bytes``."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"one event is over {limit} bytes ({size} read)")
        self.size = size
        self.limit = limit


class QuietTooLongError(ValueError):
    """More than ``max_quiet`` bytes in a row that make no event or line (SSE
    comments, blank lines, ``id``/``retry`` fields; blank NDJSON lines), counted
    however the bytes were split into chunks."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes in a row made no event (limit {limit})")
        self.size = size
        self.limit = limit


class _Lines:
    """Splits bytes into complete lines (without their ends); keeps the unfinished
    last line, bounded by ``limit``."""

    __slots__ = ("_cr", "_limit", "_tail", "_tail_size", "error")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._tail: list[bytes] = []
        self._tail_size = 0
        self._cr = False  # the last chunk ended with "\r": a "\n" next is the same line end
        self.error: FrameTooLargeError | None = None
        """A line over the limit that followed complete lines in one chunk: those
        lines were returned, and this is raised by the next call."""

    def split(self, chunk: bytes) -> list[bytes]:
        if self.error is not None:
            raise self.error
        if self._cr:
            self._cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\n" not in chunk and b"\r" not in chunk:
            if chunk:
                self._tail.append(chunk)
                self._tail_size += len(chunk)
                if self._tail_size > self._limit:
                    raise FrameTooLargeError(self._tail_size, self._limit)
            return []
        if self._tail:
            self._tail.append(chunk)
            chunk = b"".join(self._tail)
            self._tail.clear()
            self._tail_size = 0
        lines = chunk.splitlines()
        last = chunk[-1:]
        if last == b"\r":
            self._cr = True
        elif last != b"\n":
            rest = lines.pop()
            if len(rest) > self._limit:
                self.error = FrameTooLargeError(len(rest), self._limit)
                if not lines:
                    raise self.error
                return lines  # the complete lines first; the error at the next call
            self._tail.append(rest)
            self._tail_size = len(rest)
        return lines

    def take(self) -> bytes:
        """The unfinished line held, handed over (the holder is empty after)."""
        tail = b"".join(self._tail)
        self._tail.clear()
        self._tail_size = 0
        return tail

    @property
    def idle(self) -> bool:
        """Whether no unfinished line (nor a lone ``\\r``) is held."""
        return not self._tail_size and not self._cr

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line held."""
        return self._tail_size


class SSEFramer:
    """Server-sent events from bytes (WHATWG HTML, "Parsing an event stream").

    :meth:`feed` returns ``(event, data)`` pairs, ``event`` being ``"message"`` when
    the event had no ``event:`` field. As httpx-sse did, an event is dispatched at a
    blank line when it had a ``data`` or an ``event`` field; comments (``:``), ``id``,
    ``retry`` and unknown fields are read and dropped. An event not ended by a blank
    line when the body ends is dropped (a truncated stream).
    """

    __slots__ = (
        "_data",
        "_error",
        "_event",
        "_limit",
        "_lines",
        "_max_quiet",
        "_quiet",
        "_raw",
        "_size",
    )

    def __init__(self, max_event_bytes: int, max_quiet: int | None = None) -> None:
        self._limit = max_event_bytes
        self._lines = _Lines(max_event_bytes)
        self._event: bytes | None = None
        self._data: list[bytes] = []
        self._size = 0
        self._error: FrameTooLargeError | QuietTooLongError | None = None
        self._quiet = 0  # bytes of lines that made no event since the last one
        self._max_quiet = max_quiet if max_quiet is not None else 1 << 62
        self._raw: bytes | None = b""
        """The fast path's unparsed start of the next event (None: the line parser
        holds the state, see :meth:`_blocks`)."""

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """The events completed by ``chunk``; raises :class:`FrameTooLargeError`, or
        :class:`QuietTooLongError` past ``max_quiet`` bytes in a row of lines that
        make no event.

        Events completed before the limit was passed in the same chunk are returned
        first; the error is raised by the next :meth:`feed` or :meth:`close`.
        """
        error = self._error or self._lines.error
        if error is not None:
            raise error
        out: list[tuple[str, str]] = []
        raw = self._raw
        if raw is not None:
            if b"\r" not in chunk:
                return self._blocks(raw + chunk if raw else chunk, out)
            chunk, self._raw = raw + chunk, None  # from an event boundary: the line parser
        if chunk[:1] in _NEWLINES and self._lines.idle and not chunk.strip(_NEWLINES):
            # only line ends (keep-alive newlines, a blank-line flood): at most one dispatch
            if self._data or self._event is not None:
                out = self._dispatch(out)
            else:
                self._quiet += len(chunk)
                if self._quiet > self._max_quiet:
                    self._error = QuietTooLongError(self._quiet, self._max_quiet)
                    raise self._error
        else:
            self._general(chunk, out)
        self._resume()
        return out

    def _resume(self) -> None:
        """Back to the fast path when the line parser is between events again (it
        holds at most an unfinished first line, which becomes the raw start)."""
        if self._error is None and not self._data and self._event is None and not self._lines._cr:
            self._raw = self._lines.take()

    def _blocks(self, data: bytes, out: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The fast path, from an event boundary with only ``\n`` line ends: split on
        the blank line, read whole events of the two usual shapes (``data: X``,
        ``event: N`` + ``data: X``) directly, and every other block through
        :meth:`_general`, with the same result; the unfinished rest is kept raw
        (at most :data:`_FAST_TAIL` bytes, then the line parser takes it)."""
        *blocks, rest = data.split(b"\n\n")
        limit = self._limit
        names = _EVENT_NAMES
        add = out.append
        for block in blocks:
            if not block:  # two blank lines between events (a keep-alive, a flood)
                self._quiet += 2
                if self._quiet > self._max_quiet:
                    self._error = QuietTooLongError(self._quiet, self._max_quiet)
                    self._raw = None
                    if not out:
                        raise self._error
                    return out
                continue
            if len(block) < limit:
                if block[:6] == b"data: " and b"\n" not in block:
                    add(("message", block[6:].decode("utf-8", "replace")))
                    self._quiet = 0
                    continue
                if block[:7] == b"event: ":
                    head, sep, line = block.partition(b"\n")
                    if sep and line[:6] == b"data: " and b"\n" not in line:
                        name = names.get(head)
                        if name is None:
                            name = head[7:].decode("utf-8", "replace") or "message"
                            if len(names) < 256:  # a wire's few event names, kept decoded
                                names[head] = name
                        add((name, line[6:].decode("utf-8", "replace")))
                        self._quiet = 0
                        continue
            try:
                self._general(block + b"\n\n", out)
            except (FrameTooLargeError, QuietTooLongError):
                self._raw = None
                raise
            if self._error is not None:
                self._raw = None
                return out
        if len(rest) <= min(_FAST_TAIL, limit):
            self._raw = rest
            return out
        self._raw = None  # a long unfinished event: the line parser bounds it exactly
        try:
            self._general(rest, out)
        except (FrameTooLargeError, QuietTooLongError) as error:
            if not out:
                raise
            self._error = error  # raised by the next feed, after these events
        self._resume()
        return out

    def _general(self, chunk: bytes, out: list[tuple[str, str]]) -> list[tuple[str, str]]:
        data = self._data
        for line in self._lines.split(chunk):
            if not line:
                if data or self._event is not None:
                    self._dispatch(out)
                    data = self._data
                    continue
                self._quiet += 1
            elif line[:5] == b"data:":
                value = line[6:] if line[5:6] == b" " else line[5:]
                data.append(value)
                self._size += len(value) + 1
                if self._size > self._limit:
                    self._error = FrameTooLargeError(self._size, self._limit)
                    if not out:
                        raise self._error
                    return out
                continue
            elif line[:1] != b":":
                name, _, value = line.partition(b":")
                if name == b"event":
                    self._event = value[1:] if value[:1] == b" " else value
                    continue
                self._quiet += len(line) + 1  # id, retry, an unknown field
            else:
                self._quiet += len(line) + 1  # a comment
            if self._quiet > self._max_quiet:
                self._error = QuietTooLongError(self._quiet, self._max_quiet)
                if not out:
                    raise self._error
                return out
        return out

    def close(self) -> None:
        """At the end of the body: raises the :class:`FrameTooLargeError` a last
        :meth:`feed` deferred (an unfinished event is dropped)."""
        error = self._error or self._lines.error
        if error is not None:
            raise error

    def _dispatch(self, out: list[tuple[str, str]]) -> list[tuple[str, str]]:
        event = self._event.decode("utf-8", "replace") if self._event else "message"
        data = self._data
        text = (data[0] if len(data) == 1 else b"\n".join(data)).decode("utf-8", "replace")
        out.append((event, text))
        self._event = None
        self._data = []
        self._size = 0
        self._quiet = 0
        return out


class LineFramer:
    """NDJSON lines from bytes: each non-blank line, decoded as UTF-8 (bad bytes
    replaced); raises :class:`FrameTooLargeError` for a line over ``max_event_bytes``.
    A last line without its newline is returned by :meth:`close`."""

    __slots__ = ("_error", "_lines", "_max_quiet", "_quiet")

    def __init__(self, max_event_bytes: int, max_quiet: int | None = None) -> None:
        self._lines = _Lines(max_event_bytes)
        self._quiet = 0  # bytes of blank lines since the last line
        self._max_quiet = max_quiet if max_quiet is not None else 1 << 62
        self._error: QuietTooLongError | None = None

    def feed(self, chunk: bytes) -> list[str]:
        """The lines completed by ``chunk``; raises :class:`FrameTooLargeError`, or
        :class:`QuietTooLongError` past ``max_quiet`` bytes of blank lines in a row
        (lines before it in the same chunk are returned first)."""
        if self._error is not None:
            raise self._error
        lines = self._lines.split(chunk)
        out = [line.decode("utf-8", "replace") for line in lines if line.strip()]
        if len(out) == len(lines):
            if out:
                self._quiet = 0
            return out
        kept = 0
        for line in lines:  # blank lines among them: count them in order
            if line.strip():
                kept += 1
                self._quiet = 0
                continue
            self._quiet += len(line) + 1
            if self._quiet > self._max_quiet:
                self._error = QuietTooLongError(self._quiet, self._max_quiet)
                if not kept:
                    raise self._error
                return out[:kept]
        return out

    def close(self) -> list[str]:
        """A last line without its newline; raises a deferred :class:`FrameTooLargeError`
        or :class:`QuietTooLongError`."""
        if self._lines.error is not None:
            raise self._lines.error
        if self._error is not None:
            raise self._error
        return self.feed(b"\n") if self._lines.pending else []


class Inflater:
    """Decompresses one body in pieces of at most :data:`PIECE` bytes.

    ``encoding`` is ``"gzip"`` or ``"deflate"`` (zlib-wrapped, or raw deflate as
    some servers send). :meth:`pieces` raises ``zlib.error`` for corrupt data.
    """

    __slots__ = ("_deflate", "_z")

    def __init__(self, encoding: str) -> None:
        self._deflate = encoding == "deflate"
        self._z = zlib.decompressobj(zlib.MAX_WBITS if self._deflate else zlib.MAX_WBITS | 16)

    def pieces(self, data: bytes) -> Iterator[bytes]:
        """The output of ``data``, a piece at a time (none may come: gzip headers)."""
        z = self._z
        try:
            piece = z.decompress(data, PIECE)
        except zlib.error:
            if not self._deflate:
                raise
            z = self._z = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, no zlib header
            piece = z.decompress(data, PIECE)
        self._deflate = False
        while True:
            if piece:
                yield piece
            tail = z.unconsumed_tail
            if not tail:
                return
            piece = z.decompress(tail, PIECE)


def inflater_for(content_encoding: str) -> Inflater | bool | None:
    """An :class:`Inflater` for a ``Content-Encoding`` value; None for none or
    ``identity``; False for an encoding this module does not read (br, zstd,
    several encodings), which the caller then leaves to httpx."""
    value = content_encoding.strip().lower()
    if value in ("", "identity"):
        return None
    if value in ("gzip", "x-gzip"):
        return Inflater("gzip")
    if value == "deflate":
        return Inflater("deflate")
    return False
