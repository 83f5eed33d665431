"""Sessions that survive: a conversation stored message by message.

A :class:`SessionStore` keeps each session as rows, one per complete message, in
the JSON form of :func:`~zett_agent._messages.message_to_dict`.
:class:`SQLiteSessionStore` is the durable default (one file, safe for several
processes); :class:`InMemorySessionStore` lasts as long as the process.
:class:`~zett_agent.AgentClient` runs prompts in named sessions on a store.
See :mod:`zett_agent.sessions._base` for rows, schema versions and how a resumed
answer is recorded.
"""

from zett_agent._records import RunSettings, SessionEntry
from zett_agent.sessions._base import (
    SCHEMA_VERSION,
    EncodedRow,
    SessionInfo,
    SessionStore,
    StoredRow,
    check_session_id,
    decode_row,
    encode_row,
    live_rows,
)
from zett_agent.sessions._journal import SessionJournal
from zett_agent.sessions._memory import InMemorySessionStore
from zett_agent.sessions._sqlite import DB_LAYOUT_VERSION, SQLiteSessionStore

__all__ = [
    "DB_LAYOUT_VERSION",
    "SCHEMA_VERSION",
    "EncodedRow",
    "InMemorySessionStore",
    "RunSettings",
    "SQLiteSessionStore",
    "SessionEntry",
    "SessionInfo",
    "SessionJournal",
    "SessionStore",
    "StoredRow",
    "check_session_id",
    "decode_row",
    "encode_row",
    "live_rows",
]
