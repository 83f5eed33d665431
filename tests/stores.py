"""The session stores every store test runs against (``STORE_KINDS``), made by
:func:`open_store`. ``postgres`` needs a server: set ``ZETT_TEST_POSTGRES_DSN``
(``.ci/run`` starts a throwaway cluster and sets it); without it those cases skip.

The store suite (every kind): ``test_sessions.py`` (rows, schema versions,
concurrency), ``test_session_keys.py`` (keyed appends), ``test_session_ids_and_read_only.py``,
``test_session_blobs.py`` (parts' bytes: ``put_blob`` / ``get_blob``, kept once, lazy,
deleted with the session; :func:`blob_rows` counts what a store keeps)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from zett_agent import InMemorySessionStore, SessionStore, SQLiteSessionStore

POSTGRES_DSN_VARIABLE = "ZETT_TEST_POSTGRES_DSN"

STORE_KINDS = [
    "memory",
    "sqlite-memory",
    "sqlite-file",
    pytest.param("postgres", marks=pytest.mark.postgres),
]


def postgres_dsn() -> str:
    """The test server's DSN, or skip the test saying how to get one."""
    dsn = os.environ.get(POSTGRES_DSN_VARIABLE)
    if not dsn:
        pytest.skip(
            f"no PostgreSQL server: set {POSTGRES_DSN_VARIABLE} (e.g. "
            "postgresql://postgres@127.0.0.1:5432/postgres); .ci/run starts one"
        )
    return dsn


@contextmanager
def fresh_postgres_database(prefix: str = "t") -> Iterator[str]:
    """A new, empty database on the test server (its DSN), dropped after; skips
    like :func:`postgres_dsn` without a server."""
    import psycopg

    base = postgres_dsn()
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield urlunsplit(urlsplit(base)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@asynccontextmanager
async def open_store(kind: str, tmp_path: Path) -> AsyncIterator[SessionStore]:
    """A fresh, empty store of ``kind``; PostgreSQL gets a table prefix of its own."""
    made: SessionStore
    if kind == "memory":
        made = InMemorySessionStore()
    elif kind == "sqlite-memory":
        made = SQLiteSessionStore(":memory:")
    elif kind == "sqlite-file":
        made = SQLiteSessionStore(tmp_path / "deep" / "sessions.sqlite3")
    elif kind == "postgres":
        dsn = postgres_dsn()
        from zett_agent.sessions.postgres import PostgresSessionStore

        made = PostgresSessionStore(dsn, schema=f"t_{uuid.uuid4().hex[:12]}")
    else:
        raise ValueError(kind)
    async with made:
        yield made


async def blob_rows(store: SessionStore, kind: str, tmp_path: Path, session_id: str) -> int:
    """How many blobs ``store`` (of ``kind``) keeps for ``session_id``, read from its
    own storage (the interface has no way to list them)."""
    if kind == "memory":
        blobs: dict[str, dict[str, bytes]] = store._blobs  # type: ignore[attr-defined]
        return len(blobs.get(session_id, {}))
    if kind.startswith("sqlite"):

        def count(conn: Any) -> int:
            sql = "SELECT count(*) FROM blobs WHERE session_id = ?"
            return int(conn.execute(sql, (session_id,)).fetchone()[0])

        return int(await store._run(count))  # type: ignore[attr-defined]

    async def fetch(conn: Any) -> int:
        cursor = await conn.execute(
            store._q("SELECT count(*) FROM {schema}.blobs WHERE session_id = %s"),  # type: ignore[attr-defined]
            (session_id,),
        )
        return int((await cursor.fetchone())[0])

    return int(await store._run(fetch))  # type: ignore[attr-defined]
