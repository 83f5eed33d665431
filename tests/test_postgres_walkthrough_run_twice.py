"""The README's PostgreSQL walk-through run twice on the same folder: ``.ci/postgres
start DIR`` prints the running cluster's DSN again (it gave an empty string and
exit 1 with nothing said), and a ``ZETT_SESSIONS`` left empty by a failed
``DSN=$(...)`` is a usage error of ``zett worker``, ``zett submit`` and ``zett
runs``, never a silent fall-back to ``sessions.sqlite3`` in the current folder."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "postgres"


@pytest.mark.slow
@pytest.mark.skipif(
    not glob.glob("/usr/lib/postgresql/*/bin/initdb"),
    reason="needs Debian's postgresql package (.ci/run installs it)",
)
def test_starting_the_cluster_twice_prints_its_dsn_again() -> None:
    parent = Path(tempfile.mkdtemp(prefix="zett-pg-"))  # the user postgres must reach it
    parent.chmod(0o755)
    folder = parent / "pg"
    first = subprocess.run(
        ["bash", str(SCRIPT), "start", str(folder)], capture_output=True, text=True, timeout=120
    )
    try:
        assert first.returncode == 0, first.stderr
        again = subprocess.run(
            ["bash", str(SCRIPT), "start", str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert again.returncode == 0, again.stderr
        assert first.stdout.strip().startswith("postgresql://postgres@127.0.0.1:")
        assert again.stdout.strip() == first.stdout.strip()
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], timeout=120, check=False)
        shutil.rmtree(parent, ignore_errors=True)


@pytest.mark.parametrize(
    "args",
    [
        ("worker", "--agent", "examples.durable_run:make"),
        ("submit", "--agent", "demo", "--new-session", "s1", "hi"),
        ("runs", "list"),
    ],
    ids=lambda a: a[0],
)
def test_an_empty_zett_sessions_is_a_usage_error(tmp_path: Path, args: tuple[str, ...]) -> None:
    pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")
    done = subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args],
        env={**os.environ, "ZETT_SESSIONS": "", "COLUMNS": "200", "NO_COLOR": "1"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stderr
    assert "it is empty (ZETT_SESSIONS set to ''?)" in said, said
    assert list(tmp_path.iterdir()) == []  # no sessions.sqlite3 here
