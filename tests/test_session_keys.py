"""Keyed, idempotent appends in every store: a replayed write stores nothing, a
key reused for another message is refused, and files of older layouts load."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stores import STORE_KINDS, open_store
from zett_agent import (
    AssistantMessage,
    SessionStore,
    SessionStoreError,
    SQLiteSessionStore,
    StopInfo,
    StopReason,
    UserMessage,
)
from zett_agent.sessions import DB_LAYOUT_VERSION

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    async with open_store(request.param, tmp_path) as made:
        yield made


async def test_a_keyed_append_stores_once(store: SessionStore) -> None:
    first = await store.append("s", UserMessage("q"), key="run1:0")
    answer = AssistantMessage("a")
    second = await store.append("s", answer, key="run1:1")
    # replayed: the same keys again store nothing and give the same seqs
    assert await store.append("s", UserMessage("q"), key="run1:0") == first
    assert await store.append("s", answer, key="run1:1") == second
    assert (first, second) == (1, 2)
    rows = await store.rows("s")
    assert [(r.seq, r.key) for r in rows] == [(1, "run1:0"), (2, "run1:1")]
    assert await store.load("s") == [UserMessage("q"), answer]
    # an unkeyed append is stored every time, and keys are per session
    await store.append("s", UserMessage("q"))
    await store.append("s", UserMessage("q"))
    assert await store.append("other", UserMessage("q"), key="run1:0") == 1
    assert [r.key for r in await store.rows("s")] == ["run1:0", "run1:1", None, None]


async def test_a_key_reused_for_another_message_is_refused(store: SessionStore) -> None:
    await store.append("s", UserMessage("q"), key="k")
    with pytest.raises(SessionStoreError, match=r"key 'k' is already stored \(row 1\)"):
        await store.append("s", UserMessage("something else"), key="k")
    assert await store.load("s") == [UserMessage("q")]


async def test_a_keyed_replacement_replayed_after_later_rows_stores_nothing(
    store: SessionStore,
) -> None:
    await store.append("s", UserMessage("q"))
    cut = await store.append("s", AssistantMessage("Hel", stop=StopInfo(StopReason.INTERRUPTED)))
    joined = AssistantMessage("Hello")
    seq = await store.append("s", joined, replaces=cut, key="resume:0")
    await store.append("s", UserMessage("next"))
    # the replacement replayed: its row is no longer the last, but the key finds it
    assert await store.append("s", joined, replaces=cut, key="resume:0") == seq
    assert await store.load("s") == [UserMessage("q"), joined, UserMessage("next")]


def make_layout_1_database(path: Path) -> None:
    """A file as zett-agent wrote it before keys (layout 1: ``replaces``, no key)."""
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute(
            "CREATE TABLE messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
            " schema_version INTEGER NOT NULL, replaces INTEGER, created_at REAL NOT NULL,"
            " data TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID"
        )
        rows = [
            ("old", 1, 1, None, 1.0, json.dumps({"role": "user", "content": "weather?"})),
            ("old", 2, 1, None, 2.0, json.dumps({"role": "assistant", "text": "Hel"})),
            ("old", 3, 1, 2, 3.0, json.dumps({"role": "assistant", "text": "Hello"})),
        ]
        db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)", rows)
        db.execute("PRAGMA user_version = 1")


async def test_a_layout_1_file_is_upgraded_and_its_sessions_still_load(tmp_path: Path) -> None:
    path = tmp_path / "v1.sqlite3"
    make_layout_1_database(path)
    async with SQLiteSessionStore(path) as store:
        rows = await store.rows("old")
        assert [(r.seq, r.replaces, r.key) for r in rows] == [
            (1, None, None),
            (2, None, None),
            (3, 2, None),
        ]
        assert await store.load("old") == [UserMessage("weather?"), AssistantMessage("Hello")]
        assert await store.append("old", UserMessage("more"), key="k") == 4
        assert await store.append("old", UserMessage("more"), key="k") == 4
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == DB_LAYOUT_VERSION == 3
        # the key is unique per session in the file itself, not only in the code
        with pytest.raises(sqlite3.IntegrityError):
            db.execute("INSERT INTO messages VALUES ('old', 9, 1, NULL, 9.0, '{}', 'k')")


async def test_every_store_refuses_an_empty_session_id(store: SessionStore) -> None:
    with pytest.raises(SessionStoreError, match="non-empty"):
        await store.append("", UserMessage("hi"), key="k")
    assert await store.list_sessions() == []


async def test_every_store_keeps_text_utf8_cannot_hold_and_nul(store: SessionStore) -> None:
    odd = UserMessage("lone \ud800 surrogate, NUL \x00 and \u2028 line separator")
    await store.append("s", odd, key="odd")
    assert await store.load("s") == [odd]
    assert await store.append("s", odd, key="odd") == 1  # the same message: the same row


async def test_append_if_absent_tells_stored_by_me_from_already_there(
    store: SessionStore,
) -> None:
    decision = UserMessage("approve")
    first = await store.append_if_absent("s", decision, key="decision:1")
    assert first == 1
    # the same key again, the same message or another: nothing stored, None says so
    assert await store.append_if_absent("s", decision, key="decision:1") is None
    assert await store.append_if_absent("s", UserMessage("deny"), key="decision:1") is None
    # a plain keyed append of that key still finds the row
    assert await store.append("s", decision, key="decision:1") == first
    assert [(r.seq, r.key) for r in await store.rows("s")] == [(1, "decision:1")]
    # another key, or the same key in another session, is stored
    assert await store.append_if_absent("s", decision, key="decision:2") == 2
    assert await store.append_if_absent("other", decision, key="decision:1") == 1


@pytest.mark.parametrize(
    "kind", ["memory", "sqlite-file", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_of_many_concurrent_compare_and_sets_exactly_one_stores(
    kind: str, tmp_path: Path
) -> None:
    """Twenty writers with one key at once (each its own connection where the
    store has one): one gets a seq, nineteen get None, one row is stored."""
    import anyio

    from stores import open_store as opened

    async with opened(kind, tmp_path) as first:
        stores = [first]
        if isinstance(first, SQLiteSessionStore):
            stores += [SQLiteSessionStore(first.path) for _ in range(19)]
        elif kind == "postgres":
            from zett_agent.sessions.postgres import PostgresSessionStore

            assert isinstance(first, PostgresSessionStore)
            stores += [PostgresSessionStore(first._dsn, schema=first.schema) for _ in range(19)]
        else:
            stores *= 20
        await first.append("s", UserMessage("q"))
        results: list[int | None] = []

        async def decide(index: int) -> None:
            results.append(
                await stores[index].append_if_absent("s", UserMessage(f"d{index}"), key="k")
            )

        async with anyio.create_task_group() as group:
            for index in range(20):
                group.start_soon(decide, index)
        for other in stores[1:]:
            if other is not first:
                await other.aclose()
        assert sorted(r is not None for r in results) == [False] * 19 + [True]
        assert [r.seq for r in await first.rows("s")] == [1, 2]
