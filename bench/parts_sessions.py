"""Sessions with images: the SQLite file and the time to load a session, parts' bytes
kept once per session by hash (the blobs table) against the same rows with every
part inline (base64 in its row, what a store that keeps no blobs writes), measured
in the same run.

A script, not a test. The session: ``TURNS`` user turns, each with an image of
``SIZE`` bytes; in half of them the user attaches the same screenshot again (as a
chat about one picture does), the other half are new images.

    PYTHONPATH=src python bench/parts_sessions.py [TURNS] [SIZE]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from zett_agent import AssistantMessage, ImagePart, SQLiteSessionStore, UserMessage
from zett_agent.sessions import SessionEntry
from zett_agent.sessions._base import encode_message


class InlineStore(SQLiteSessionStore):
    """The baseline: every part's bytes inline in its row (no blobs)."""

    async def append(self, session_id: str, message: SessionEntry, **options: Any) -> int:
        data = encode_message(session_id, message)
        seq: int = await self._run(
            self._append, session_id, data, options.get("replaces"), options.get("key"), {}
        )
        return seq


async def fill(store: SQLiteSessionStore, turns: int, size: int) -> None:
    screenshot = b"\x89PNG\r\n\x1a\n" + os.urandom(size - 8)
    for turn in range(turns):
        data = screenshot if turn % 2 == 0 else b"\x89PNG\r\n\x1a\n" + os.urandom(size - 8)
        image = ImagePart(media_type="image/png", data=data)
        await store.append("chat", UserMessage(f"turn {turn}: what changed?", (image,)))
        await store.append("chat", AssistantMessage(f"Answer {turn}."))


async def measure(
    cls: type[SQLiteSessionStore], folder: Path, turns: int, size: int
) -> tuple[float, float, float]:
    path = folder / f"{cls.__name__}.sqlite3"
    async with cls(path, synchronous="NORMAL") as store:
        await fill(store, turns, size)
    megabytes = sum(p.stat().st_size for p in folder.glob(f"{cls.__name__}.sqlite3*")) / 1e6
    times = []
    for _ in range(5):
        async with SQLiteSessionStore(path) as reader:
            started = time.perf_counter()
            messages = await reader.load("chat")
            times.append(time.perf_counter() - started)
            assert len(messages) == 2 * turns
    listed = []
    for _ in range(5):
        async with SQLiteSessionStore(path) as reader:
            started = time.perf_counter()
            await reader.list_sessions()
            listed.append(time.perf_counter() - started)
    return megabytes, sorted(times)[2] * 1000, sorted(listed)[2] * 1000


async def main(turns: int, size: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        inline = await measure(InlineStore, Path(folder), turns, size)
        blobs = await measure(SQLiteSessionStore, Path(folder), turns, size)
    print(f"{turns} turns, one {size}-byte image each, half of them the same screenshot")
    print(f"{'':28}{'inline (baseline)':>20}{'blobs':>12}{'blobs / inline':>16}")
    for label, a, b in zip(
        ("file size, MB", "load the session, ms", "list sessions, ms"), inline, blobs, strict=True
    ):
        print(f"{label:28}{a:>20.2f}{b:>12.2f}{b / a:>16.3f}")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    asyncio.run(main(*(args + [40, 1_000_000][len(args) :])))
