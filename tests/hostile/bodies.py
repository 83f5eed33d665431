"""The hostile responses of ``shared/cases/hostile/make.py`` this suite owns, written
the same way (same kinds, same sizes) into a folder at test time, and served lazily.

``write(out, big)`` writes ``sse_endless_line.sse``, ``gzip_bomb_error_body.json.gz``,
``gzip_bomb_blank_lines.sse.gz``, ``huge_error_body.json`` and ``html_page.html``: 8 MB
inputs and 64 MB bombs by default, 300 MB and 1 GiB with ``big`` (made in pieces, so
writing them never holds them in memory). :func:`reply` serves one as the case says.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from zett_agent.testing import Reply

MiB = 1024 * 1024
CHUNK = 64 * 1024


def sizes(big: bool) -> tuple[int, int]:
    """(input size, decompressed bomb size) in bytes, as make.py has them."""
    return (300 if big else 8) * MiB, (1024 if big else 64) * MiB


def _write_repeated(path: Path, head: bytes, byte: bytes, n: int, tail: bytes = b"") -> None:
    block = byte * MiB
    with path.open("wb") as f:
        f.write(head)
        for _ in range(n // MiB):
            f.write(block)
        f.write(byte * (n % MiB))
        f.write(tail)


def _write_gzip(path: Path, head: bytes, byte: bytes, n: int, tail: bytes = b"") -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = byte * MiB
    with path.open("wb") as f:
        f.write(packer.compress(head))
        for _ in range(n // MiB):
            f.write(packer.compress(block))
        f.write(packer.compress(byte * (n % MiB) + tail))
        f.write(packer.flush())


def write(out: Path, big: bool = False) -> None:
    size, bomb = sizes(big)
    out.mkdir(parents=True, exist_ok=True)
    _write_repeated(
        out / "sse_endless_line.sse",
        b'data: {"choices":[{"index":0,"delta":{"content":"',
        b"x",
        size,
    )
    _write_gzip(out / "gzip_bomb_error_body.json.gz", b'{"error":{"message":"', b"a", bomb, b'"}}')
    _write_gzip(out / "gzip_bomb_blank_lines.sse.gz", b"", b"\n", bomb)
    _write_repeated(out / "huge_error_body.json", b'{"error":{"message":"', b"e", size, b'"}}')
    (out / "html_page.html").write_bytes(
        b"<!doctype html><html><body><h1>Sign in</h1></body></html>"
    )


class FileChunks(Sequence[bytes]):
    """A file as 64 KiB chunks, read when asked for (a 300 MB body is never held)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = path.stat().st_size

    def __len__(self) -> int:
        return (self.size + CHUNK - 1) // CHUNK

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        with self.path.open("rb") as f:
            f.seek(index * CHUNK)
            return f.read(CHUNK)

    def __iter__(self) -> Iterator[bytes]:
        with self.path.open("rb") as f:
            while chunk := f.read(CHUNK):
                yield chunk


SERVE: dict[str, tuple[int, str, dict[str, str]]] = {
    "sse_endless_line.sse": (200, "text/event-stream", {}),
    "gzip_bomb_error_body.json.gz": (500, "application/json", {"content-encoding": "gzip"}),
    "gzip_bomb_blank_lines.sse.gz": (200, "text/event-stream", {"content-encoding": "gzip"}),
    "huge_error_body.json": (500, "application/json", {}),
    "html_page.html": (200, "text/html; charset=utf-8", {}),
}


def reply(folder: Path, name: str) -> Reply:
    status, content_type, headers = SERVE[name]
    return Reply(FileChunks(folder / name), status, content_type, headers=headers)
