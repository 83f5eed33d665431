"""The durable default: :class:`SQLiteSessionStore`, on the stdlib ``sqlite3``.

One file holds every session. The file is in WAL mode with ``synchronous=FULL``
by default, and every message is written in its own ``BEGIN IMMEDIATE``
transaction, so a message is on disk when :meth:`~SQLiteSessionStore.append`
returns, a killed process leaves every complete message behind, and several
processes can share the file (SQLite's locks, waiting up to ``timeout``).

Layout (``PRAGMA user_version`` = 3)::

    messages(session_id TEXT, seq INTEGER, schema_version INTEGER,
             replaces INTEGER NULL, created_at REAL, data TEXT,
             idempotency_key TEXT NULL,
             PRIMARY KEY (session_id, seq))
    UNIQUE INDEX messages_key ON messages(session_id, idempotency_key)
        WHERE idempotency_key IS NOT NULL
    blobs(session_id TEXT, sha256 TEXT, size INTEGER, data BLOB,
          UNIQUE (session_id, sha256))

``blobs`` holds the bytes of content parts over the threshold, once per session
(:meth:`~zett_agent.sessions.SessionStore.put_blob`), written in the transaction
of the row that refers to them; a rowid table, as SQLite advises for large values.

A file of layout 0 (the table without ``replaces`` and ``idempotency_key``), 1
(without ``idempotency_key``) or 2 (without ``blobs``) is upgraded in place when
opened, its rows kept as they are (their key is None); a newer layout raises
:class:`~zett_agent.errors.SessionStoreError`.

A file that cannot be written (read-only file, folder or mount; or
``read_only=True``) is opened read-only: loading and listing work, and every
write raises :class:`~zett_agent.errors.SessionStoreError` saying the store is
read-only. Nothing is changed in such a file (no layout upgrade, no WAL switch).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread

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

__all__ = ["DB_LAYOUT_VERSION", "SQLiteSessionStore"]

DB_LAYOUT_VERSION = 3
"""``PRAGMA user_version`` of the file layout this code writes (3: the ``blobs`` table)."""

_T = TypeVar("_T")
_SYNCHRONOUS = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})
_CREATE = """
CREATE TABLE messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    schema_version INTEGER NOT NULL,
    replaces INTEGER,
    created_at REAL NOT NULL,
    data TEXT NOT NULL,
    idempotency_key TEXT,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID
"""
_CREATE_BLOBS = """
CREATE TABLE IF NOT EXISTS blobs (
    session_id TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    data BLOB NOT NULL,
    UNIQUE (session_id, sha256)
)
"""
_CREATE_KEY_INDEX = """
CREATE UNIQUE INDEX IF NOT EXISTS messages_key ON messages (session_id, idempotency_key)
WHERE idempotency_key IS NOT NULL
"""


class SQLiteSessionStore(SessionStore):
    """Sessions in one SQLite file (``":memory:"`` for a private in-memory database).

    Args:
        path: the database file; made, with its folder, when missing.
        synchronous: SQLite's ``synchronous`` setting. ``"FULL"`` (default) also
            survives a power cut; ``"NORMAL"`` survives a crashed or killed process.
        timeout: seconds to wait for another process's write lock.
        read_only: open the file for reading only (it must exist). Without it, a
            file that cannot be written is opened read-only too; :attr:`read_only`
            says which it was once the store has been used.

    Blocking calls run in a worker thread (``anyio.to_thread``) on one connection
    guarded by a lock, opened on first use.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "FULL",
        timeout: float = 30.0,
        read_only: bool = False,
    ) -> None:
        if synchronous.upper() not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {sorted(_SYNCHRONOUS)}")
        self.path = str(path)
        if read_only and (self.path == ":memory:" or self.path.startswith("file:")):
            raise ValueError("read_only needs a database file path")
        self.synchronous = synchronous.upper()
        self.timeout = timeout
        self.read_only = read_only
        self._why_read_only = "opened with read_only=True" if read_only else ""
        self._replaces = "replaces"  # the column, or NULL in a layout-0 file read read-only
        self._key = "idempotency_key"  # the column, or NULL in a layout-0/1 file read read-only
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({self.path!r})"

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
        return await self._run(self._append, session_id, data, replaces, key, blobs)

    async def append_if_absent(
        self, session_id: str, message: SessionEntry, *, key: str
    ) -> int | None:
        data = encode_message(session_id, message)
        return await self._run(self._append_if_absent, session_id, data, key)

    async def rows(self, session_id: str) -> list[StoredRow]:
        raw = await self._run(self._rows, session_id)
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

    async def put_blob(self, session_id: str, data: bytes) -> str:
        check_session_id(session_id)
        digest = blob_hash(data)
        await self._run(self._put_blob, session_id, digest, bytes(data))
        return digest

    async def get_blob(self, session_id: str, sha256: str) -> bytes:
        found = await self._run(self._get_blob, session_id, sha256)
        if found is None:
            raise missing_blob(session_id, sha256)
        return found

    async def list_sessions(self) -> list[SessionInfo]:
        raw = await self._run(self._list)
        return [SessionInfo(sid, count, first, last) for sid, count, first, last in raw]

    async def delete(self, session_id: str) -> bool:
        return await self._run(self._delete, session_id)

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self._close)

    async def integrity_check(self) -> str:
        """``PRAGMA integrity_check`` of the file: ``"ok"`` when it is sound."""
        rows = await self._run(lambda conn: conn.execute("PRAGMA integrity_check").fetchall())
        return "\n".join(str(row[0]) for row in rows)

    # ------------------------------------------------------------ in the worker thread

    async def _run(self, function: Callable[..., _T], *args: Any) -> _T:
        return await anyio.to_thread.run_sync(partial(self._locked, function, *args))

    def _locked(self, function: Callable[..., _T], *args: Any) -> _T:
        with self._lock:
            conn = self._connection()
            try:
                return function(conn, *args)
            except sqlite3.Error as error:
                if conn.in_transaction:
                    conn.rollback()
                if self.read_only:
                    raise SessionStoreError(
                        f"{self.path}: the session store is read-only ({self._why_read_only}): "
                        f"sessions can be loaded and listed, not written ({error})"
                    ) from error
                raise SessionStoreError(f"{self.path}: {type(error).__name__}: {error}") from error
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        if self._closed:
            raise SessionStoreError(f"{self.path}: the session store is closed")
        if self.read_only:
            self._conn = self._open_read_only()
            return self._conn
        try:
            self._conn = self._open()
        except SessionStoreError as error:
            if not _cannot_write(error.__cause__) or not Path(self.path).is_file():
                raise
            self._why_read_only = f"it cannot be written: {error.__cause__}"
            self._conn = self._open_read_only()
            self.read_only = True
        return self._conn

    def _open(self) -> sqlite3.Connection:
        if self.path != ":memory:" and not self.path.startswith("file:"):
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise SessionStoreError(f"{self.path}: cannot make its folder: {error}") from error
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise SessionStoreError(f"{self.path}: cannot open: {error}") from error
        try:
            self._set_up(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_read_only(self) -> sqlite3.Connection:
        """A read-only connection (``mode=ro``); a file whose write-ahead log is
        already folded in is also read when not even its ``-shm`` can be made
        (``immutable=1``). Checks the layout; nothing is written."""
        uri = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?mode=ro"
        wal = Path(self.path + "-wal")
        tries = [uri] if wal.is_file() and wal.stat().st_size else [uri, uri + "&immutable=1"]
        failure: sqlite3.Error | None = None
        for target in tries:
            try:
                conn = sqlite3.connect(
                    target, uri=True, timeout=self.timeout, isolation_level=None,
                    check_same_thread=False,
                )  # fmt: skip
            except sqlite3.Error as error:
                failure = error
                continue
            try:
                self._layout(conn)
                columns = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
            except sqlite3.Error as error:
                conn.close()
                failure = error
                continue
            except BaseException:
                conn.close()
                raise
            if not columns:  # no session was ever written
                conn.execute("CREATE TEMP TABLE messages (session_id, seq, schema_version,"
                             " replaces, created_at, data, idempotency_key)")  # fmt: skip
            if not conn.execute("PRAGMA table_info(blobs)").fetchall():  # layout < 3
                conn.execute("CREATE TEMP TABLE blobs (session_id, sha256, size, data)")
            self._replaces = "replaces" if "replaces" in columns or not columns else "NULL"
            self._key = "idempotency_key" if "idempotency_key" in columns or not columns else "NULL"
            return conn
        raise SessionStoreError(f"{self.path}: cannot open for reading: {failure}") from failure

    def _set_up(self, conn: sqlite3.Connection) -> None:
        try:
            self._retry_locked(lambda: conn.execute("PRAGMA journal_mode=WAL"))
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            if self._layout(conn) == DB_LAYOUT_VERSION:
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                layout = self._layout(conn)  # another process may have set it up meanwhile
                if layout < DB_LAYOUT_VERSION:
                    columns = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
                    if not columns:
                        conn.execute(_CREATE)
                    if columns and "replaces" not in columns:
                        conn.execute("ALTER TABLE messages ADD COLUMN replaces INTEGER")
                    if columns and "idempotency_key" not in columns:
                        conn.execute("ALTER TABLE messages ADD COLUMN idempotency_key TEXT")
                    conn.execute(_CREATE_KEY_INDEX)
                    conn.execute(_CREATE_BLOBS)
                    conn.execute(f"PRAGMA user_version={DB_LAYOUT_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                conn.rollback()
                raise
        except sqlite3.Error as error:
            raise SessionStoreError(f"{self.path}: cannot set up: {error}") from error

    def _layout(self, conn: sqlite3.Connection) -> int:
        layout = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if layout > DB_LAYOUT_VERSION:
            raise SessionStoreError(
                f"{self.path}: the session database has layout version {layout}, newer than "
                f"this zett-agent reads (up to {DB_LAYOUT_VERSION}); upgrade zett-agent"
            )
        return layout

    def _retry_locked(self, action: Callable[[], object]) -> None:
        # Switching to WAL needs a moment alone with the file; SQLite does not
        # always wait for it with the busy timeout, so wait here.
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                action()
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _append(
        self,
        conn: sqlite3.Connection,
        session_id: str,
        data: str,
        replaces: int | None,
        key: str | None,
        blobs: Mapping[str, bytes | None],
    ) -> int:
        conn.execute("BEGIN IMMEDIATE")
        if key is not None:
            stored = conn.execute(
                "SELECT seq, data FROM messages WHERE session_id = ? AND idempotency_key = ?",
                (session_id, key),
            ).fetchone()
            if stored is not None:
                conn.execute("ROLLBACK")
                if stored[1] != data:
                    raise key_conflict(session_id, key, int(stored[0]))
                return int(stored[0])
        last = conn.execute(
            "SELECT MAX(seq) FROM messages WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        if replaces is not None and last != replaces:
            raise replace_conflict(session_id, replaces, last)
        for digest, raw in blobs.items():
            if raw is not None:
                self._put_blob(conn, session_id, digest, raw, transaction=False)
            elif (
                conn.execute(
                    "SELECT 1 FROM blobs WHERE session_id = ? AND sha256 = ?", (session_id, digest)
                ).fetchone()
                is None
            ):
                raise missing_blob(session_id, digest)
        seq = int(last or 0) + 1
        conn.execute(
            "INSERT INTO messages (session_id, seq, schema_version, replaces, created_at, data,"
            " idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, seq, SCHEMA_VERSION, replaces, time.time(), data, key),
        )
        conn.execute("COMMIT")
        return seq

    @staticmethod
    def _append_if_absent(
        conn: sqlite3.Connection, session_id: str, data: str, key: str
    ) -> int | None:
        # BEGIN IMMEDIATE takes the file's write lock first: no other process can
        # write between the look and the insert, and the unique key index backs
        # it (INSERT OR IGNORE: a row count of 0 is "already there").
        conn.execute("BEGIN IMMEDIATE")
        last = conn.execute(
            "SELECT MAX(seq) FROM messages WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
        seq = int(last or 0) + 1
        stored = conn.execute(
            "INSERT OR IGNORE INTO messages (session_id, seq, schema_version, replaces,"
            " created_at, data, idempotency_key) VALUES (?, ?, ?, NULL, ?, ?, ?)",
            (session_id, seq, SCHEMA_VERSION, time.time(), data, key),
        ).rowcount
        conn.execute("COMMIT")
        return seq if stored == 1 else None

    @staticmethod
    def _put_blob(
        conn: sqlite3.Connection,
        session_id: str,
        digest: str,
        data: bytes,
        *,
        transaction: bool = True,
    ) -> None:
        if transaction:
            conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT OR IGNORE INTO blobs (session_id, sha256, size, data) VALUES (?, ?, ?, ?)",
            (session_id, digest, len(data), data),
        )
        if transaction:
            conn.execute("COMMIT")

    @staticmethod
    def _get_blob(conn: sqlite3.Connection, session_id: str, sha256: str) -> bytes | None:
        found = conn.execute(
            "SELECT data FROM blobs WHERE session_id = ? AND sha256 = ?", (session_id, sha256)
        ).fetchone()
        return None if found is None else bytes(found[0])

    def _rows(self, conn: sqlite3.Connection, session_id: str) -> list[tuple[Any, ...]]:
        return conn.execute(
            f"SELECT seq, schema_version, {self._replaces}, created_at, data, {self._key}"
            " FROM messages WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()

    @staticmethod
    def _list(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
        return conn.execute(
            "SELECT session_id, COUNT(*), MIN(created_at), MAX(created_at) FROM messages"
            " GROUP BY session_id ORDER BY MAX(created_at) DESC, session_id"
        ).fetchall()

    @staticmethod
    def _delete(conn: sqlite3.Connection, session_id: str) -> bool:
        conn.execute("BEGIN IMMEDIATE")
        count = conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,)).rowcount
        conn.execute("DELETE FROM blobs WHERE session_id = ?", (session_id,))
        conn.execute("COMMIT")
        return count > 0

    def _close(self) -> None:
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _cannot_write(error: BaseException | None) -> bool:
    """Whether SQLite failed because the file (or its folder) cannot be written."""
    name = getattr(error, "sqlite_errorname", "") or ""
    text = str(error).lower()
    return name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM")) or (
        "readonly" in text or "read-only" in text or "unable to open" in text
    )
