"""Sessions (issue 12): an empty session id is an error, and a database that
cannot be written is still read (load, list) and says it cannot be written."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from stores import STORE_KINDS, open_store
from zett_agent import AgentClient, AssistantMessage, UserMessage, create_agent
from zett_agent.errors import SessionStoreError
from zett_agent.sessions import SQLiteSessionStore
from zett_agent.testing import ScriptedModel, reply


async def test_an_empty_session_id_is_an_error_not_the_default_session() -> None:
    agent = await create_agent(ScriptedModel(reply("one")))
    async with AgentClient(agent, session_id="default") as client:
        with pytest.raises(SessionStoreError, match="non-empty"):
            await client.run("hi", session_id="")
        with pytest.raises(SessionStoreError, match="non-empty"):
            await client.messages("")
        with pytest.raises(SessionStoreError, match="non-empty"):
            await client.delete("")
        assert await client.messages() == []  # nothing went to the default session
        assert (await client.run("hi")).text == "one"
    with pytest.raises(SessionStoreError, match="non-empty"):
        AgentClient(agent, session_id="")


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_a_store_refuses_an_empty_session_id(tmp_path: Path, kind: str) -> None:
    async with open_store(kind, tmp_path) as store:
        with pytest.raises(SessionStoreError, match="non-empty"):
            await store.append("", UserMessage("hi"))
        assert await store.list_sessions() == []


async def written(path: Path) -> None:
    async with SQLiteSessionStore(path) as store:
        await store.append("s1", UserMessage("hello"))
        await store.append("s1", AssistantMessage("hi there"))
        await store.append("s2", UserMessage("other"))


async def check_read_only(store: SQLiteSessionStore) -> None:
    async with store:
        assert await store.load("s1") == [UserMessage("hello"), AssistantMessage("hi there")]
        assert {info.session_id for info in await store.list_sessions()} == {"s1", "s2"}
        assert await store.load("unknown") == []
        assert store.read_only
        with pytest.raises(SessionStoreError, match="read-only") as caught:
            await store.append("s1", UserMessage("more"))
        assert "loaded and listed, not written" in str(caught.value)
        with pytest.raises(SessionStoreError, match="read-only"):
            await store.delete("s1")


async def test_a_database_opened_read_only_reads_and_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    await written(path)
    before = path.read_bytes()
    await check_read_only(SQLiteSessionStore(path, read_only=True))
    assert path.read_bytes() == before


async def test_a_layout_0_database_opened_read_only_is_read_without_upgrading(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # the layout before the replaces column
        conn.execute(
            "CREATE TABLE messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
            " schema_version INTEGER NOT NULL, created_at REAL NOT NULL, data TEXT NOT NULL,"
            " PRIMARY KEY (session_id, seq)) WITHOUT ROWID"
        )
        conn.execute(
            'INSERT INTO messages VALUES (\'s1\', 1, 1, 0, \'{"role":"user","content":"old"}\')'
        )
    conn.close()
    async with SQLiteSessionStore(path, read_only=True) as store:
        assert await store.load("s1") == [UserMessage("old")]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0  # not upgraded
    conn.close()


async def test_an_empty_or_missing_database_opened_read_only(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    async with SQLiteSessionStore(empty, read_only=True) as store:
        assert await store.list_sessions() == [] and await store.load("s") == []
    async with SQLiteSessionStore(tmp_path / "missing.db", read_only=True) as store:
        with pytest.raises(SessionStoreError, match="cannot open for reading"):
            await store.load("s")


def make_read_only(path: Path, folder: Path) -> Callable[[], object] | None:
    """Make ``path`` and ``folder`` unwritable (``chmod``; for root, which
    permissions do not bind, ``chattr +i``); the function that undoes it, or None."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        path.chmod(0o444)
        folder.chmod(0o555)
        return lambda: (folder.chmod(0o755), path.chmod(0o644))
    chattr = shutil.which("chattr")
    if chattr is None:
        return None

    def undo() -> object:
        return subprocess.run([chattr, "-i", str(path), str(folder)], check=False)

    if subprocess.run([chattr, "+i", str(path), str(folder)], check=False).returncode:
        undo()
        return None
    return undo


async def test_a_database_that_cannot_be_written_is_opened_read_only(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "s.db"
    await written(path)
    undo = make_read_only(path, folder)
    if undo is None:
        pytest.skip("cannot make a file unwritable here (root without chattr +i)")
    try:
        await check_read_only(SQLiteSessionStore(path))
    finally:
        undo()
