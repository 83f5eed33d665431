"""PostgreSQL specifics (the shared semantics run in test_sessions.py and
test_session_keys.py): many writers on one session, and a newer layout refused."""

from __future__ import annotations

import uuid

import anyio
import pytest

from stores import postgres_dsn
from zett_agent import SessionStoreError, UserMessage

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(60)]


async def test_writers_on_separate_connections_never_collide() -> None:
    from zett_agent.sessions.postgres import PostgresSessionStore

    dsn = postgres_dsn()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    stores = [PostgresSessionStore(dsn, schema=schema) for _ in range(4)]
    try:
        async with anyio.create_task_group() as group:
            for n, store in enumerate(stores):
                for i in range(10):
                    group.start_soon(store.append, "s", UserMessage(f"{n}-{i}"))
                # a replayed keyed write from every writer at once lands once
                for _ in range(3):
                    group.start_soon(lambda s=store: s.append("s", UserMessage("k"), key="k"))
        rows = await stores[0].rows("s")
        assert [r.seq for r in rows] == list(range(1, 42))
        assert sum(r.key == "k" for r in rows) == 1
    finally:
        for store in stores:
            await store.aclose()


async def test_a_newer_layout_is_a_clear_error() -> None:
    from zett_agent.sessions.postgres import PostgresSessionStore

    schema = f"t_{uuid.uuid4().hex[:12]}"
    async with PostgresSessionStore(postgres_dsn(), schema=schema) as store:
        await store.append("s", UserMessage("hi"))
        import psycopg

        async with await psycopg.AsyncConnection.connect(postgres_dsn(), autocommit=True) as raw:
            await raw.execute(f"UPDATE {schema}.layout SET version = 42")
    async with PostgresSessionStore(postgres_dsn(), schema=schema) as again:
        with pytest.raises(SessionStoreError, match="layout version 42, newer than"):
            await again.load("s")
    with pytest.raises(ValueError, match="schema must match"):
        PostgresSessionStore(postgres_dsn(), schema="x; DROP TABLE y")
