"""A :class:`SessionStore` in the process's memory: gone when the process ends."""

from __future__ import annotations

import time

from zett_agent._records import SessionEntry
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

__all__ = ["InMemorySessionStore"]

# seq, schema version, replaces, created_at, json, key
_Row = tuple[int, int, int | None, float, str, str | None]


class InMemorySessionStore(SessionStore):
    """Sessions kept in a dict, for tests and short-lived hosts.

    Rows are kept as the same JSON a durable store writes, so what loads here
    loads the same from :class:`~zett_agent.sessions.SQLiteSessionStore`; parts'
    bytes over the threshold are kept once per session, by hash, as there.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, list[_Row]] = {}
        self._blobs: dict[str, dict[str, bytes]] = {}

    async def append(
        self,
        session_id: str,
        message: SessionEntry,
        *,
        replaces: int | None = None,
        key: str | None = None,
    ) -> int:
        data, blobs = encode_row(session_id, message)
        rows = self._sessions.setdefault(session_id, [])
        if key is not None:
            for seq, _, _, _, stored, stored_key in rows:
                if stored_key == key:
                    if stored != data:
                        raise key_conflict(session_id, key, seq)
                    return seq
        last = rows[-1][0] if rows else None
        if replaces is not None and last != replaces:
            raise replace_conflict(session_id, replaces, last)
        kept = self._blobs.get(session_id, {})
        for digest, raw in blobs.items():
            if raw is None and digest not in kept:
                raise missing_blob(session_id, digest)
        seq = (last or 0) + 1
        for digest, raw in blobs.items():
            if raw is not None:
                self._blobs.setdefault(session_id, {}).setdefault(digest, raw)
        rows.append((seq, SCHEMA_VERSION, replaces, time.time(), data, key))
        return seq

    async def append_if_absent(
        self, session_id: str, message: SessionEntry, *, key: str
    ) -> int | None:
        data = encode_message(session_id, message)
        rows = self._sessions.setdefault(session_id, [])
        # no await between the check and the insert: atomic in the event loop
        if any(stored_key == key for *_, stored_key in rows):
            return None
        seq = (rows[-1][0] if rows else 0) + 1
        rows.append((seq, SCHEMA_VERSION, None, time.time(), data, key))
        return seq

    async def rows(self, session_id: str) -> list[StoredRow]:
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
            for seq, version, rep, at, data, key in self._sessions.get(session_id, ())
        ]

    async def put_blob(self, session_id: str, data: bytes) -> str:
        check_session_id(session_id)
        digest = blob_hash(data)
        self._blobs.setdefault(session_id, {}).setdefault(digest, bytes(data))
        return digest

    async def get_blob(self, session_id: str, sha256: str) -> bytes:
        found = self._blobs.get(session_id, {}).get(sha256)
        if found is None:
            raise missing_blob(session_id, sha256)
        return found

    async def list_sessions(self) -> list[SessionInfo]:
        infos = [
            SessionInfo(sid, len(rows), rows[0][3], rows[-1][3])
            for sid, rows in self._sessions.items()
            if rows
        ]
        return sorted(infos, key=lambda info: info.updated_at, reverse=True)

    async def delete(self, session_id: str) -> bool:
        self._blobs.pop(session_id, None)
        return bool(self._sessions.pop(session_id, None))
