"""A :class:`SessionStore` on PostgreSQL (psycopg 3, async), for hosts that share
sessions across machines. Needs ``psycopg`` (extra ``durable`` or ``postgres``);
this module is never imported by the rest of the core.

The semantics are :class:`~zett_agent.sessions.SQLiteSessionStore`'s, checked by
the same tests (``tests/stores.py``): one row per complete message, ``replaces``,
keyed idempotent appends, rows never rewritten. Appends to one session are
serialized with a transaction-scoped advisory lock, so any number of processes
may write. Layout, in ``schema`` (default ``zett``)::

    messages(session_id TEXT, seq INTEGER, schema_version INTEGER,
             replaces INTEGER NULL, created_at DOUBLE PRECISION, data TEXT,
             idempotency_key TEXT NULL, PRIMARY KEY (session_id, seq))
    UNIQUE INDEX ON messages(session_id, idempotency_key) WHERE idempotency_key IS NOT NULL
    blobs(session_id TEXT, sha256 TEXT, size BIGINT, data BYTEA,
          PRIMARY KEY (session_id, sha256))
    layout(version INTEGER)  -- 3, as DB_LAYOUT_VERSION of the SQLite file

``blobs`` (layout 3) holds the bytes of content parts over the threshold, once per
session, written in the transaction of the row that refers to them; a schema of
layout 2 is upgraded in place (the table is made, the version raised).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

import anyio
import psycopg
from psycopg import sql

from zett_agent._records import SessionEntry
from zett_agent.errors import SessionStoreError
from zett_agent.sessions._base import (
    SCHEMA_VERSION,
    SessionInfo,
    SessionStore,
    StoredRow,
    blob_hash,
    check_session_id,
    decode_row,
    encode_message,
    encode_row,
    key_conflict,
    missing_blob,
    replace_conflict,
)

__all__ = ["PG_LAYOUT_VERSION", "PostgresSessionStore"]

PG_LAYOUT_VERSION = 3
"""The layout version this code writes (the ``layout`` table)."""

_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class PostgresSessionStore(SessionStore):
    """Sessions in a PostgreSQL database.

    Args:
        dsn: a libpq connection string or ``postgresql://`` URL (it may hold a
            password: it is never logged or stored by zett).
        schema: the schema the tables live in, made when missing (lowercase
            letters, digits, ``_``).

    One connection, opened on first use and guarded by a lock; every append is
    its own transaction, committed before :meth:`append` returns.
    """

    def __init__(self, dsn: str, *, schema: str = "zett") -> None:
        if not _NAME.match(schema):
            raise ValueError(f"schema must match {_NAME.pattern}, got {schema!r}")
        self._dsn = dsn
        self.schema = schema
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = anyio.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresSessionStore(schema={self.schema!r})"

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(schema=sql.Identifier(self.schema))

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        if self._closed:
            raise SessionStoreError("the PostgreSQL session store is closed")
        conn = await psycopg.AsyncConnection.connect(self._dsn, autocommit=False)
        try:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(hashtext('zett-layout'))")
                await conn.execute(self._q("CREATE SCHEMA IF NOT EXISTS {schema}"))
                await conn.execute(
                    self._q(
                        "CREATE TABLE IF NOT EXISTS {schema}.messages ("
                        " session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
                        " schema_version INTEGER NOT NULL, replaces INTEGER,"
                        " created_at DOUBLE PRECISION NOT NULL, data TEXT NOT NULL,"
                        " idempotency_key TEXT, PRIMARY KEY (session_id, seq))"
                    )
                )
                await conn.execute(
                    self._q(
                        "CREATE UNIQUE INDEX IF NOT EXISTS messages_key ON {schema}.messages"
                        " (session_id, idempotency_key) WHERE idempotency_key IS NOT NULL"
                    )
                )
                await conn.execute(
                    self._q(
                        "CREATE TABLE IF NOT EXISTS {schema}.blobs ("
                        " session_id TEXT NOT NULL, sha256 TEXT NOT NULL,"
                        " size BIGINT NOT NULL, data BYTEA NOT NULL,"
                        " PRIMARY KEY (session_id, sha256))"
                    )
                )
                await conn.execute(
                    self._q("CREATE TABLE IF NOT EXISTS {schema}.layout (version INTEGER)")
                )
                cursor = await conn.execute(self._q("SELECT max(version) FROM {schema}.layout"))
                found = (await cursor.fetchone() or (None,))[0]
                if found is None:
                    await conn.execute(
                        self._q("INSERT INTO {schema}.layout VALUES (%s)"), (PG_LAYOUT_VERSION,)
                    )
                elif found < PG_LAYOUT_VERSION:  # the tables above upgraded it
                    await conn.execute(
                        self._q("UPDATE {schema}.layout SET version = %s"), (PG_LAYOUT_VERSION,)
                    )
                elif found > PG_LAYOUT_VERSION:
                    raise SessionStoreError(
                        f"the session schema {self.schema!r} has layout version {found}, "
                        f"newer than this zett-agent reads (up to {PG_LAYOUT_VERSION}); "
                        "upgrade zett-agent"
                    )
        except BaseException:
            await conn.close()
            raise
        self._conn = conn
        return conn

    async def _run(self, work: Any, *args: Any) -> Any:
        async with self._lock:
            try:
                conn = await self._connection()
                async with conn.transaction():
                    return await work(conn, *args)
            except psycopg.Error as error:
                raise SessionStoreError(f"PostgreSQL: {type(error).__name__}: {error}") from error

    # ------------------------------------------------------------ the interface

    async def append(
        self,
        session_id: str,
        message: SessionEntry,
        *,
        replaces: int | None = None,
        key: str | None = None,
    ) -> int:
        data, blobs = encode_row(session_id, message)
        seq: int = await self._run(self._append, session_id, data, replaces, key, blobs)
        return seq

    async def _append(
        self,
        conn: psycopg.AsyncConnection[Any],
        session_id: str,
        data: str,
        replaces: int | None,
        key: str | None,
        blobs: Mapping[str, bytes | None],
    ) -> int:
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (session_id,))
        if key is not None:
            cursor = await conn.execute(
                self._q(
                    "SELECT seq, data FROM {schema}.messages"
                    " WHERE session_id = %s AND idempotency_key = %s"
                ),
                (session_id, key),
            )
            stored = await cursor.fetchone()
            if stored is not None:
                if stored[1] != data:
                    raise key_conflict(session_id, key, int(stored[0]))
                return int(stored[0])
        cursor = await conn.execute(
            self._q("SELECT max(seq) FROM {schema}.messages WHERE session_id = %s"),
            (session_id,),
        )
        last = (await cursor.fetchone() or (None,))[0]
        if replaces is not None and last != replaces:
            raise replace_conflict(session_id, replaces, last)
        for digest, raw in blobs.items():
            if raw is not None:
                await self._put_blob(conn, session_id, digest, raw)
                continue
            cursor = await conn.execute(
                self._q("SELECT 1 FROM {schema}.blobs WHERE session_id = %s AND sha256 = %s"),
                (session_id, digest),
            )
            if await cursor.fetchone() is None:
                raise missing_blob(session_id, digest)
        seq = int(last or 0) + 1
        await conn.execute(
            self._q(
                "INSERT INTO {schema}.messages (session_id, seq, schema_version, replaces,"
                " created_at, data, idempotency_key) VALUES (%s, %s, %s, %s, %s, %s, %s)"
            ),
            (session_id, seq, SCHEMA_VERSION, replaces, time.time(), data, key),
        )
        return seq

    async def append_if_absent(
        self, session_id: str, message: SessionEntry, *, key: str
    ) -> int | None:
        data = encode_message(session_id, message)
        seq: int | None = await self._run(self._append_if_absent, session_id, data, key)
        return seq

    async def _append_if_absent(
        self, conn: psycopg.AsyncConnection[Any], session_id: str, data: str, key: str
    ) -> int | None:
        # the session's advisory lock orders the writers; the unique key index
        # decides: ON CONFLICT DO NOTHING inserts no row when the key is there
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (session_id,))
        cursor = await conn.execute(
            self._q(
                "INSERT INTO {schema}.messages (session_id, seq, schema_version, replaces,"
                " created_at, data, idempotency_key)"
                " SELECT %s, coalesce(max(seq), 0) + 1, %s, NULL, %s, %s, %s"
                " FROM {schema}.messages WHERE session_id = %s"
                " ON CONFLICT (session_id, idempotency_key)"
                " WHERE idempotency_key IS NOT NULL DO NOTHING RETURNING seq"
            ),
            (session_id, SCHEMA_VERSION, time.time(), data, key, session_id),
        )
        stored = await cursor.fetchone()
        return int(stored[0]) if stored is not None else None

    async def _put_blob(
        self, conn: psycopg.AsyncConnection[Any], session_id: str, digest: str, data: bytes
    ) -> None:
        await conn.execute(
            self._q(
                "INSERT INTO {schema}.blobs (session_id, sha256, size, data)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"
            ),
            (session_id, digest, len(data), data),
        )

    async def put_blob(self, session_id: str, data: bytes) -> str:
        check_session_id(session_id)
        digest = blob_hash(data)
        await self._run(self._put_blob, session_id, digest, bytes(data))
        return digest

    async def get_blob(self, session_id: str, sha256: str) -> bytes:
        async def fetch(conn: psycopg.AsyncConnection[Any]) -> bytes | None:
            cursor = await conn.execute(
                self._q("SELECT data FROM {schema}.blobs WHERE session_id = %s AND sha256 = %s"),
                (session_id, sha256),
            )
            found = await cursor.fetchone()
            return None if found is None else bytes(found[0])

        data: bytes | None = await self._run(fetch)
        if data is None:
            raise missing_blob(session_id, sha256)
        return data

    async def rows(self, session_id: str) -> list[StoredRow]:
        async def fetch(conn: psycopg.AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cursor = await conn.execute(
                self._q(
                    "SELECT seq, schema_version, replaces, created_at, data, idempotency_key"
                    " FROM {schema}.messages WHERE session_id = %s ORDER BY seq"
                ),
                (session_id,),
            )
            return await cursor.fetchall()

        raw = await self._run(fetch)
        reader = self.blob_reader(session_id)
        return [
            StoredRow(
                session_id,
                seq,
                decode_row(session_id, seq, version, data, reader),
                version,
                rep,
                at,
                key,
            )
            for seq, version, rep, at, data, key in raw
        ]

    async def list_sessions(self) -> list[SessionInfo]:
        async def fetch(conn: psycopg.AsyncConnection[Any]) -> list[tuple[Any, ...]]:
            cursor = await conn.execute(
                self._q(
                    "SELECT session_id, count(*), min(created_at), max(created_at)"
                    " FROM {schema}.messages GROUP BY session_id"
                    " ORDER BY max(created_at) DESC, session_id"
                )
            )
            return await cursor.fetchall()

        return [
            SessionInfo(sid, int(n), first, last) for sid, n, first, last in await self._run(fetch)
        ]

    async def delete(self, session_id: str) -> bool:
        async def remove(conn: psycopg.AsyncConnection[Any]) -> bool:
            cursor = await conn.execute(
                self._q("DELETE FROM {schema}.messages WHERE session_id = %s"), (session_id,)
            )
            await conn.execute(
                self._q("DELETE FROM {schema}.blobs WHERE session_id = %s"), (session_id,)
            )
            return cursor.rowcount > 0

        deleted: bool = await self._run(remove)
        return deleted

    async def aclose(self) -> None:
        async with self._lock:
            self._closed = True
            if self._conn is not None:
                await self._conn.close()
                self._conn = None
