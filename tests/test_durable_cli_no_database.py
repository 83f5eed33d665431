"""``zett runs ...`` and ``zett submit`` where no worker has created the runs
database yet (a fresh shell, no ``ZETT_SESSIONS``): one line naming the database
and that a worker creates it, exit status 1, and nothing created."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

COMMANDS = [
    ("runs", "list"),
    ("runs", "status", "r1"),
    ("runs", "result", "r1"),
    ("runs", "cancel", "r1"),
    ("runs", "resume", "r1"),
    ("runs", "recover", "w1"),
    ("submit", "--agent", "demo", "--new-session", "s1", "hi"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_without_a_runs_database_one_line_and_nothing_created(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ZETT_SESSIONS", "ZETT_DURABLE_DB")}
    done = subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args],
        env={**env, "COLUMNS": "80"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
    expected = tmp_path.resolve() / "sessions.dbos.sqlite3"
    assert f"no durable runs database at {expected}" in done.stderr
    assert "a worker creates it" in done.stderr
    assert list(tmp_path.iterdir()) == []  # no empty database left behind


def test_an_empty_database_file_left_by_an_older_version_is_no_database(tmp_path: Path) -> None:
    (tmp_path / "sessions.dbos.sqlite3").write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if k != "ZETT_SESSIONS"}
    done = subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", "runs", "list"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1 and "a worker creates it" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.postgres
def test_a_postgresql_database_no_worker_used_is_said_too(tmp_path: Path) -> None:
    """A fresh PostgreSQL database: the same line (credentials left out), and DBOS's
    schema is not created by a read."""
    from urllib.parse import urlsplit

    import psycopg

    from stores import fresh_postgres_database

    with fresh_postgres_database("zett_no_runs") as fresh:
        dsn, name = fresh, urlsplit(fresh).path[1:]
        done = subprocess.run(
            [sys.executable, "-m", "zett_agent.cli", "runs", "list"],
            env={**os.environ, "ZETT_SESSIONS": fresh, "COLUMNS": "80"},
            cwd=tmp_path, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        with psycopg.connect(fresh) as conn:
            schemas = {row[0] for row in conn.execute("SELECT nspname FROM pg_namespace")}
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"/{name} (schema dbos): a worker creates it" in done.stderr
    password = urlsplit(dsn).password
    assert not password or password not in done.stderr
    assert "dbos" not in schemas
