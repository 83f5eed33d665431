"""Parts' bytes in every session store (memory, SQLite, PostgreSQL): kept once per
session, content-addressed (``put_blob`` / ``get_blob``), written with the row that
refers to them, never read when a session is loaded, deleted with the session; old
files and schemas upgrade in place (SQLite layout 2 -> 3, PostgreSQL 2 -> 3)."""

from __future__ import annotations

import hashlib
import sqlite3
import uuid
from pathlib import Path

import pytest

from stores import STORE_KINDS, blob_rows, open_store, postgres_dsn
from zett_agent import (
    ImagePart,
    SessionStore,
    SessionStoreError,
    SQLiteSessionStore,
    TextPart,
    ToolResultMessage,
    UserMessage,
)
from zett_agent._parts import BLOB_THRESHOLD, MediaPart
from zett_agent.sessions import DB_LAYOUT_VERSION
from zett_agent.sessions._base import encode_row

pytestmark = pytest.mark.timeout(60)

BIG = b"\x89PNG\r\n\x1a\n" + b"\x07" * (BLOB_THRESHOLD + 100)
SMALL = b"\x89PNG\r\n\x1a\n" + b"\x01" * 100


def big() -> ImagePart:
    return ImagePart(media_type="image/png", data=BIG, name="big.png")


@pytest.fixture(params=STORE_KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_a_row_refers_to_large_bytes_by_hash_and_keeps_small_ones_inline() -> None:
    message = UserMessage("look", (big(), ImagePart(media_type="image/png", data=SMALL)))
    text, blobs = encode_row("s", message)
    digest = hashlib.sha256(BIG).hexdigest()
    assert dict(blobs) == {digest: BIG}
    assert digest in text and len(text) < 1000  # the row holds the hash, not 16 KiB of base64


async def test_parts_survive_the_store_and_load_without_their_bytes(
    kind: str, tmp_path: Path
) -> None:
    async with open_store(kind, tmp_path) as store:
        message = UserMessage("look", (big(), TextPart("and"), ImagePart("image/png", SMALL)))
        await store.append("s", message)
        reads = _count_reads(store)
        [loaded] = await store.load("s")
        assert loaded == message
        assert isinstance(loaded, UserMessage)
        large, _, small = loaded.parts
        assert isinstance(large, MediaPart) and large.needs_loading  # lazy: not read on load
        assert isinstance(small, MediaPart) and small.data == SMALL  # inline in its row
        assert reads == []
        assert await large.read() == BIG
        assert reads == [large.sha256]


async def test_the_same_bytes_are_kept_once_per_session(kind: str, tmp_path: Path) -> None:
    async with open_store(kind, tmp_path) as store:
        await store.append("s", UserMessage("one", (big(),)))
        await store.append("s", ToolResultMessage("c1", "t", "[image]", parts=(big(),)))
        await store.append("other", UserMessage("same bytes", (big(),)))
        assert await blob_rows(store, kind, tmp_path, "s") == 1
        assert await blob_rows(store, kind, tmp_path, "other") == 1
        digest = await store.put_blob("s", BIG)  # again: nothing new
        assert digest == hashlib.sha256(BIG).hexdigest()
        assert await blob_rows(store, kind, tmp_path, "s") == 1


async def test_put_and_get_blob_are_per_session(kind: str, tmp_path: Path) -> None:
    async with open_store(kind, tmp_path) as store:
        digest = await store.put_blob("s", b"some bytes")
        assert await store.get_blob("s", digest) == b"some bytes"
        with pytest.raises(SessionStoreError, match="no part bytes"):
            await store.get_blob("other", digest)  # another session's bytes are not yours
        with pytest.raises(SessionStoreError, match="non-empty"):
            await store.put_blob("", b"x")


async def test_deleting_a_session_deletes_its_blobs(kind: str, tmp_path: Path) -> None:
    async with open_store(kind, tmp_path) as store:
        await store.append("s", UserMessage("one", (big(),)))
        await store.append("t", UserMessage("kept", (big(),)))
        assert await store.delete("s")
        with pytest.raises(SessionStoreError, match="no part bytes"):
            await store.get_blob("s", hashlib.sha256(BIG).hexdigest())
        assert await store.get_blob("t", hashlib.sha256(BIG).hexdigest()) == BIG


async def test_a_row_referring_to_bytes_the_session_lacks_is_refused(
    kind: str, tmp_path: Path
) -> None:
    async with open_store(kind, tmp_path) as store:
        await store.append("s", UserMessage("one", (big(),)))
        [loaded] = await store.load("s")  # its part refers to s's blob
        with pytest.raises(SessionStoreError, match="no part bytes"):
            await store.append("t", loaded)  # t holds no such blob
        assert await store.load("t") == []  # nothing was stored
        await store.append("s", loaded)  # s does: a loaded message can be stored again
        assert len(await store.load("s")) == 2


async def test_a_keyed_append_with_parts_is_idempotent(kind: str, tmp_path: Path) -> None:
    async with open_store(kind, tmp_path) as store:
        message = UserMessage("one", (big(),))
        assert await store.append("s", message, key="k") == 1
        assert await store.append("s", message, key="k") == 1
        assert len(await store.rows("s")) == 1


def _count_reads(store: SessionStore) -> list[str]:
    """Record every blob the store reads from now on (by patching the instance)."""
    reads: list[str] = []
    original = store.get_blob

    async def counted(session_id: str, sha256: str) -> bytes:
        reads.append(sha256)
        return await original(session_id, sha256)

    store.get_blob = counted  # type: ignore[method-assign]
    return reads


# ---------------------------------------------------------------- old layouts


def _layout_2_file(path: Path) -> None:
    """A file as zett wrote it before the blobs table (layout 2), one session."""
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
            " schema_version INTEGER NOT NULL, replaces INTEGER, created_at REAL NOT NULL,"
            " data TEXT NOT NULL, idempotency_key TEXT, PRIMARY KEY (session_id, seq))"
            " WITHOUT ROWID"
        )
        db.execute(
            "INSERT INTO messages VALUES ('old', 1, 2, NULL, 1.0,"
            ' \'{"role":"user","content":"hello from layout 2"}\', NULL)'
        )
        db.execute("PRAGMA user_version = 2")


async def test_a_layout_2_file_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    _layout_2_file(path)
    async with SQLiteSessionStore(path) as store:
        assert await store.load("old") == [UserMessage("hello from layout 2")]
        await store.append("old", UserMessage("now with a picture", (big(),)))
        assert (await store.load("old"))[1] == UserMessage("now with a picture", (big(),))
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == DB_LAYOUT_VERSION == 3
        assert db.execute("SELECT count(*) FROM blobs").fetchone()[0] == 1


async def test_a_layout_2_file_read_only_loads_and_has_no_blobs(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    _layout_2_file(path)
    async with SQLiteSessionStore(path, read_only=True) as store:
        assert await store.load("old") == [UserMessage("hello from layout 2")]
        with pytest.raises(SessionStoreError, match="no part bytes"):
            await store.get_blob("old", "0" * 64)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2  # not upgraded


@pytest.mark.postgres
async def test_a_layout_2_postgres_schema_is_upgraded_in_place() -> None:
    import psycopg

    from zett_agent.sessions.postgres import PG_LAYOUT_VERSION, PostgresSessionStore

    dsn = postgres_dsn()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as raw:
        await raw.execute(f"CREATE SCHEMA {schema}")
        await raw.execute(
            f"CREATE TABLE {schema}.messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
            " schema_version INTEGER NOT NULL, replaces INTEGER, created_at DOUBLE PRECISION"
            " NOT NULL, data TEXT NOT NULL, idempotency_key TEXT, PRIMARY KEY (session_id, seq))"
        )
        await raw.execute(f"CREATE TABLE {schema}.layout (version INTEGER)")
        await raw.execute(f"INSERT INTO {schema}.layout VALUES (2)")
        await raw.execute(
            f"INSERT INTO {schema}.messages VALUES ('old', 1, 2, NULL, 1.0,"
            ' \'{"role":"user","content":"hello from layout 2"}\', NULL)'
        )
        try:
            async with PostgresSessionStore(dsn, schema=schema) as store:
                assert await store.load("old") == [UserMessage("hello from layout 2")]
                await store.append("old", UserMessage("picture", (big(),)))
                [_, loaded] = await store.load("old")
                assert isinstance(loaded, UserMessage)
                part = loaded.parts[0]
                assert isinstance(part, MediaPart) and await part.read() == BIG
            cursor = await raw.execute(f"SELECT version FROM {schema}.layout")
            assert [row[0] for row in await cursor.fetchall()] == [PG_LAYOUT_VERSION] == [3]
        finally:
            await raw.execute(f"DROP SCHEMA {schema} CASCADE")
