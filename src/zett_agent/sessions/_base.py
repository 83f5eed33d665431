"""The :class:`SessionStore` interface, its rows, and the row codec every store shares.

A session is an append-only list of rows, one per complete message, numbered
``seq`` = 1, 2, 3... in the order they were written. A row holds the JSON of
:func:`~zett_agent._messages.message_to_dict` and the schema version of that JSON:

====  ===================================================================
0     written before ``AssistantMessage.stop`` existed: no ``stop`` key,
      loads with ``stop is None``
1     messages with ``stop``
2     rows may also hold an approval request or decision
      (``role`` ``"approval_request"`` / ``"approval_decision"``, see
      :mod:`zett_agent.approvals`); :meth:`SessionStore.load` leaves them out
3     the current form (one version for every row kind and field added in
      this release): ``tool_started`` records, written just before a tool
      call is entered (:mod:`zett_agent.tools._outcomes`); ``run_settings``
      records (how the session's runs were asked for: model, tools, MCP
      servers, approval options, :class:`~zett_agent._records.RunSettings`); an
      approval request's ``durable_agent``; decisions stored under the key
      ``decision:<request seq>`` (:meth:`SessionStore.append_if_absent`); an assistant
      message may also hold ``attempts`` (a fallback chain's
      :class:`~zett_agent.ModelAttempt` list), ``cost`` (``{"usd",
      "unknown"}``), ``usage.cache_write_tokens``, a provider record's
      ``origin`` (``{"provider", "model"}``), and ``output`` (the JSON form of
      a structured run's typed value, :mod:`zett_agent._structured`); a user
      message or a tool result may hold ``parts`` (a list of ``{"type":
      "text", "text"}`` or ``{"type": "image"|"document"|"audio",
      "media_type", "name"?}`` with ``"data"`` (base64), ``"url"``, or
      ``"blob"`` (the SHA-256 of bytes kept in the store's blobs,
      :meth:`SessionStore.put_blob`) and ``"size"``); rows without them load
      with the defaults (empty, None)
====  ===================================================================

Parts' bytes over :data:`~zett_agent._parts.BLOB_THRESHOLD` are kept once per
session, content-addressed (:meth:`SessionStore.put_blob` /
:meth:`SessionStore.get_blob`), written in the same transaction as the row that
refers to them; loading a session does not read them (a loaded part reads its
bytes when a request is sent). Deleting a session deletes its blobs. A store that
keeps no blobs (one that does not override the two methods) stores every part
inline in its row.

Records (rows that are not messages, :mod:`zett_agent._records`) are never sent to
a model; a record of a role newer than its row's schema version is refused.

Rows are never rewritten. A resumed answer that is joined to the answer it
continues (Anthropic prefill) is appended with ``replaces`` = that answer's
``seq``: :meth:`SessionStore.load` shows the joined answer in its place, while
:meth:`SessionStore.rows` keeps both, so the cut-off text is never lost. Only the
last message of a session can be replaced.

An append may carry a ``key`` (a str the caller chooses, unique within the
session): appending again with a key the session already holds stores nothing and
returns the ``seq`` of the row stored under it, so a run that is replayed after a
crash (:mod:`zett_agent.durable`) writes each message once. The same key with a
different message raises :class:`~zett_agent.errors.SessionStoreError`. Rows
appended without a key (everything stored before keys existed) have ``key`` None.

:meth:`SessionStore.append_if_absent` is the compare-and-set a decision is
written with (an approval decision, :mod:`zett_agent.tools._approvals`): it stores
the row only when no row of the session holds its key, atomically against every
other writer of the store (other processes included), and says which happened:
the new row's ``seq`` ("stored by me") or None ("already there", whatever that row
holds). A keyed :meth:`~SessionStore.append` cannot tell the two apart.

A row that cannot be read, or one with a newer schema version, makes loading its
session fail with :class:`~zett_agent.errors.SessionStoreError` naming the session
and the row: nothing is skipped silently. Messages hold no API keys or request
headers, so rows hold none either.
"""

from __future__ import annotations

import hashlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from zett_agent._history import results_in_call_order
from zett_agent._messages import Message
from zett_agent._parts import BlobReader
from zett_agent._records import (
    RECORD_TYPES,
    SessionEntry,
    entry_from_dict,
    entry_to_dict,
    record_schema,
)
from zett_agent.errors import SessionStoreError

__all__ = [
    "SCHEMA_VERSION",
    "EncodedRow",
    "SessionInfo",
    "SessionStore",
    "StoredRow",
    "blob_hash",
    "check_session_id",
    "decode_row",
    "encode_message",
    "encode_row",
    "key_conflict",
    "live_rows",
    "messages_of",
    "missing_blob",
    "replace_conflict",
]

SCHEMA_VERSION = 3
"""The schema version of rows this code writes (see the module docstring)."""


@dataclass(frozen=True)
class StoredRow:
    """One stored row: a complete message (or an approval request or decision) and
    where it sits in its session.

    ``replaces`` is the ``seq`` of the row this one takes the place of in the
    loaded history (a joined resumed answer), else None. ``created_at`` is a Unix
    time in seconds. ``key`` is the idempotency key it was appended with, if any.
    """

    session_id: str
    seq: int
    message: SessionEntry
    schema_version: int = SCHEMA_VERSION
    replaces: int | None = None
    created_at: float = 0.0
    key: str | None = None


@dataclass(frozen=True)
class SessionInfo:
    """A stored session: its id, how many rows it has, and when it was written."""

    session_id: str
    rows: int
    created_at: float
    updated_at: float


class SessionStore(ABC):
    """Where sessions live. All methods are async and safe to call concurrently.

    Implement :meth:`append`, :meth:`rows`, :meth:`list_sessions` and
    :meth:`delete`, and :meth:`append_if_absent` for a store that takes decisions
    (approvals); :meth:`load` is derived from :meth:`rows`.
    """

    @abstractmethod
    async def append(
        self,
        session_id: str,
        message: SessionEntry,
        *,
        replaces: int | None = None,
        key: str | None = None,
    ) -> int:
        """Store ``message`` durably as the next row of ``session_id``; return its ``seq``.

        With ``replaces``, the row takes the place of row ``replaces``, which must
        be the last row of the session (else :class:`SessionStoreError`: the
        session changed meanwhile). The replaced row stays in :meth:`rows`.

        With ``key``, the append is idempotent: when the session already holds a
        row with that key, nothing is stored and that row's ``seq`` is returned
        (checked before ``replaces``); when that row holds a different message,
        :class:`SessionStoreError` is raised.
        """

    async def append_if_absent(
        self, session_id: str, message: SessionEntry, *, key: str
    ) -> int | None:
        """Store ``message`` as the next row of ``session_id`` under ``key`` unless
        the session holds a row with that key already: the compare-and-set of a
        decision. Returns the new row's ``seq`` when this call stored it, None when
        the key was there (nothing is stored, whatever message that row holds).
        Atomic against every writer of the store; of any number of concurrent
        calls with one key, exactly one gets a ``seq``.

        Raises :class:`SessionStoreError` as :meth:`append` does; a store that
        cannot compare and set (one written before this method existed) raises
        it too."""
        raise SessionStoreError(
            f"{type(self).__name__} cannot store a row only if its key is absent "
            "(append_if_absent): decisions need a store that can",
            session_id=session_id,
        )

    @abstractmethod
    async def rows(self, session_id: str) -> list[StoredRow]:
        """Every row of the session in ``seq`` order, replaced ones included.

        An unknown session has none. Raises :class:`SessionStoreError` for a row
        that cannot be read.
        """

    async def load(self, session_id: str) -> list[Message]:
        """The session's conversation: its messages, a joined answer in place of
        the answer it replaced; records (approvals, tool starts) are left out. An
        unknown session is
        empty."""
        return messages_of(live_rows(await self.rows(session_id)))

    @abstractmethod
    async def list_sessions(self) -> list[SessionInfo]:
        """The stored sessions, most recently written first."""

    @abstractmethod
    async def delete(self, session_id: str) -> bool:
        """Remove the session and all its rows; False when there was none."""

    async def put_blob(self, session_id: str, data: bytes) -> str:
        """Keep ``data`` (the bytes of a part) once for ``session_id``, content-addressed;
        return its SHA-256 (hex). Storing the same bytes again stores nothing.
        For what is written outside a message row (a durable run's checkpoint of a
        tool result refers to its parts by hash); :meth:`append` keeps a message's
        own parts itself. The base class keeps none: it raises
        :class:`SessionStoreError`."""
        raise SessionStoreError(f"{type(self).__name__} keeps no part bytes (blobs)")

    async def get_blob(self, session_id: str, sha256: str) -> bytes:
        """The bytes kept under ``sha256`` for ``session_id``. Raises
        :class:`SessionStoreError` when there are none (another session's do not count)."""
        raise SessionStoreError(f"{type(self).__name__} keeps no part bytes (blobs)")

    def blob_reader(self, session_id: str) -> BlobReader:
        """Reads ``session_id``'s blobs by hash (what a loaded part reads its bytes with)."""

        async def read(sha256: str) -> bytes:
            return await self.get_blob(session_id, sha256)

        return read

    async def aclose(self) -> None:
        """Release what the store holds open (a database connection)."""
        return None

    async def __aenter__(self) -> SessionStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def messages_of(rows: Sequence[StoredRow]) -> list[Message]:
    """The messages of ``rows`` (records left out: approvals, tool starts), each
    answer's tool results in the order of its calls (they are stored as the calls
    end: :func:`~zett_agent._history.results_in_call_order`)."""
    messages: list[Message] = []
    for row in rows:
        entry = row.message
        if not isinstance(entry, RECORD_TYPES):
            messages.append(entry)
    return results_in_call_order(messages)


def live_rows(rows: Sequence[StoredRow]) -> list[StoredRow]:
    """The rows a loaded history is made of: each replacing row in the place of
    the row it replaces. Raises :class:`SessionStoreError` when a row replaces one
    that is not the last message before it."""
    live: list[StoredRow] = []
    for row in rows:
        if row.replaces is None:
            live.append(row)
        elif live and live[-1].seq == row.replaces:
            live[-1] = row
        else:
            raise SessionStoreError(
                f"session {row.session_id!r}, row {row.seq}: it replaces row {row.replaces}, "
                "which is not the message right before it",
                session_id=row.session_id,
                row=row.seq,
            )
    return live


class EncodedRow(NamedTuple):
    """A row to store: its JSON ``text`` and the ``blobs`` it refers to (bytes by
    SHA-256; None: bytes the store must already hold, from a part loaded without
    them)."""

    text: str
    blobs: Mapping[str, bytes | None]


def encode_row(session_id: str, message: SessionEntry) -> EncodedRow:
    """The row stored for ``message`` by a store that keeps blobs: parts' bytes over
    :data:`~zett_agent._parts.BLOB_THRESHOLD` go to ``blobs``, the row refers to
    them by hash. Raises as :func:`encode_message`."""
    blobs: dict[str, bytes | None] = {}
    return EncodedRow(_encode(session_id, message, blobs), blobs)


def blob_hash(data: bytes) -> str:
    """The SHA-256 (hex) a blob is kept under."""
    return hashlib.sha256(data).hexdigest()


def encode_message(session_id: str, message: SessionEntry) -> str:
    """The JSON text stored for ``message`` (schema :data:`SCHEMA_VERSION`), every
    part's bytes inline (for a store that keeps no blobs; see :func:`encode_row`).

    Text that UTF-8 cannot hold (a lone surrogate: JSON's ``"\\ud800"`` decodes to
    one) is stored escaped, so it loads back the same. Raises
    :class:`SessionStoreError` for an empty ``session_id`` and for a message that
    JSON cannot encode (a part loaded without its bytes included).
    """
    return _encode(session_id, message, None)


def _encode(session_id: str, message: SessionEntry, blobs: dict[str, bytes | None] | None) -> str:
    check_session_id(session_id)
    try:
        data = entry_to_dict(message, blobs)
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        if not text.isascii() and _SURROGATE.search(text):  # scanned, not copied
            text = json.dumps(data, separators=(",", ":"), allow_nan=False)
        return text
    except (TypeError, ValueError, KeyError, RecursionError) as error:
        raise SessionStoreError(
            f"session {session_id!r}: the message cannot be stored as JSON: {error}",
            session_id=session_id,
        ) from error


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_session_id(session_id: object) -> str:
    """``session_id`` if it names a session: a non-empty string. Else raises
    :class:`SessionStoreError` (an empty id is not "the default session")."""
    if not isinstance(session_id, str) or not session_id:
        raise SessionStoreError(
            f"a session id must be a non-empty string, not {session_id!r}",
            session_id=session_id if isinstance(session_id, str) else None,
        )
    return session_id


def decode_row(
    session_id: str,
    seq: int,
    schema_version: Any,
    data: Any,
    reader: BlobReader | None = None,
) -> SessionEntry:
    """Load the message of one stored row; ``reader`` (the store's
    :meth:`SessionStore.blob_reader`) is what its parts kept as blobs read their
    bytes with, when a request is sent.

    Raises :class:`SessionStoreError` naming the session and row when the schema
    version is unknown or newer than :data:`SCHEMA_VERSION`, or the data is not a
    stored message.
    """

    def fail(why: str) -> SessionStoreError:
        return SessionStoreError(
            f"session {session_id!r}, row {seq}: {why}", session_id=session_id, row=seq
        )

    if (
        not isinstance(schema_version, int)
        or isinstance(schema_version, bool)
        or schema_version < 0
    ):
        raise fail(f"unknown schema version {schema_version!r}")
    if schema_version > SCHEMA_VERSION:
        raise fail(
            f"schema version {schema_version} is newer than this zett-agent reads "
            f"(up to {SCHEMA_VERSION}); upgrade zett-agent to load this session"
        )
    try:
        payload = json.loads(data)
    except (TypeError, ValueError, RecursionError) as error:
        raise fail(f"the stored data is not JSON ({error})") from error
    if not isinstance(payload, dict):
        raise fail(f"the stored data is not a JSON object (got {type(payload).__name__})")
    if schema_version == 0:
        payload.pop("stop", None)  # version 0 predates stop: such a key meant something else
    since = record_schema(payload.get("role"))
    if since is not None and schema_version < since:
        raise fail(f"a {payload.get('role')} row needs schema version {since}")
    try:
        return entry_from_dict(payload, reader)
    except ValueError as error:
        raise fail(f"the stored data is not a message: {error}") from error


def key_conflict(session_id: str, key: str, seq: int) -> SessionStoreError:
    """The error for a keyed append whose key is stored with a different message."""
    return SessionStoreError(
        f"session {session_id!r}: key {key!r} is already stored (row {seq}) "
        "with a different message",
        session_id=session_id,
        row=seq,
    )


def missing_blob(session_id: str, sha256: str) -> SessionStoreError:
    """The error for bytes a session does not hold."""
    return SessionStoreError(
        f"session {session_id!r}: no part bytes (blob) {sha256[:16]}… are stored",
        session_id=session_id,
    )


def replace_conflict(session_id: str, replaces: int, last: int | None) -> SessionStoreError:
    """The error for a replacement of a row that is no longer the session's last."""
    return SessionStoreError(
        f"session {session_id!r}: cannot replace row {replaces}, the last row is {last}; "
        "the session changed while the answer was being resumed",
        session_id=session_id,
        row=replaces,
    )
