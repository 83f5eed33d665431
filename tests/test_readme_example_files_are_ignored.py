"""The files the README's examples make in the checkout (``zett serve``'s
``sessions.db``, the durable demo's ``durable-demo/``, ``zett chat --db
chats.sqlite3``, ``city.json``, the worker's ``sessions.sqlite3`` and its DBOS file)
are in ``.gitignore``: ``git status`` stays clean after a walk-through."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import docs_text

ROOT = Path(__file__).resolve().parents[1]
MADE = [
    "sessions.db",
    "sessions.db-wal",
    "sessions.sqlite3",
    "sessions.dbos.sqlite3",
    "chats.sqlite3",
    "durable-demo/sessions.sqlite3",
    "city.json",
]


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout"
)
@pytest.mark.parametrize("name", MADE)
def test_a_file_the_readme_makes_is_ignored(name: str) -> None:
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", name], cwd=ROOT, timeout=30, check=False
    )
    assert done.returncode == 0, f"{name} is not in .gitignore"


def test_the_readme_still_names_them() -> None:
    readme = docs_text.text()
    for name in ("durable-demo/", "chats.sqlite3", "city.json", "sessions.sqlite3"):
        assert name in readme, name
