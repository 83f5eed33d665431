"""Sessions that survive: a conversation stored message by message.

A :class:`SessionStore` keeps each session as rows, one per complete message, in
the JSON form of :func:`~zett_agent.messages.message_to_dict`.
:class:`SQLiteSessionStore` is the durable default (one file, safe for several
processes); :class:`InMemorySessionStore` lasts as long as the process.
:class:`~zett_agent.client.AgentClient` runs prompts in named sessions on a store.
See :mod:`zett_agent.sessions.base` for rows, schema versions and how a resumed
answer is recorded.
"""

from zett_agent.sessions.base import (
    SCHEMA_VERSION,
    SessionInfo,
    SessionStore,
    StoredRow,
    live_rows,
)
from zett_agent.sessions.journal import SessionJournal
from zett_agent.sessions.memory import InMemorySessionStore
from zett_agent.sessions.sqlite import DB_LAYOUT_VERSION, SQLiteSessionStore

__all__ = [
    "DB_LAYOUT_VERSION",
    "SCHEMA_VERSION",
    "InMemorySessionStore",
    "SQLiteSessionStore",
    "SessionInfo",
    "SessionJournal",
    "SessionStore",
    "StoredRow",
    "live_rows",
]
