"""Hostile responses (shared/cases/hostile): typed outcome, bounded memory and time,
and the event loop never blocked, over a real socket.

Each case is served by a ReplayServer in this process to a model call in a fresh
subprocess (``tests/hostile/client.py``), which measures its own peak RSS above its
RSS before the call and runs a heartbeat coroutine beside the call; the call's time
and the heartbeat's longest gap are CPU time of that process, so other processes
loading the machine cannot make a case fail. The inputs are
written at test time by ``tests/hostile/bodies.py`` (the kinds and sizes of
``make.py``): 8 MB inputs and 64 MB bombs here, 300 MB and 1 GiB in the slow set
(``-m slow``), where the defaults of :class:`~zett_agent.model._limits.ReadLimits` apply.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hostile import bodies
from zett_agent.testing import ReplayServer, Reply

SRC = str(Path(__file__).parent.parent / "src")
CLIENT = str(Path(__file__).parent / "hostile" / "client.py")
MiB = 1024 * 1024

# case: (Model options, expected error type, expected limit)
CASES: dict[str, tuple[dict[str, Any], str, str | None]] = {
    # small input: a limit under the 8 MB line shows it applies (the default is 16 MiB)
    "sse_endless_line.sse": (
        {"limits": {"max_event_bytes": MiB}},
        "ResponseLimitError",
        "max_event_bytes",
    ),
    "gzip_bomb_error_body.json.gz": ({}, "ProviderHTTPError", "max_error_body_bytes"),
    "gzip_bomb_blank_lines.sse.gz": ({}, "ResponseLimitError", "max_skipped_bytes"),
    "huge_error_body.json": ({}, "ProviderHTTPError", "max_error_body_bytes"),
    "html_page.html": ({}, "UnexpectedContentError", None),
}


def never() -> Reply:
    """A retry would take this: every case must be fetched once."""
    return Reply.json({"error": {"message": "fetched again"}}, status=599)


def call(url: str, options: dict[str, Any], src: str = SRC) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, CLIENT, src, url, "openai", json.dumps({"max_retries": 2, **options})],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": src},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def check(folder: Path, name: str, options: dict[str, Any], big: bool) -> dict[str, Any]:
    _, error_type, limit = CASES[name]
    with ReplayServer([bodies.reply(folder, name), never()]) as server:
        result = call(server.url, options)
    assert result["kind"] == "error", result
    assert result["type"] == error_type and result["limit"] == limit, result
    assert result["retryable"] is False, result  # a bomb is not fetched again
    assert len(server.requests) == 1, result
    # CPU time, not wall time (client.py): a loaded machine stretches neither
    assert result["max_gap"] < 0.5, result  # no 0.5 s of computing without letting the loop run
    assert result["peak_mb"] < (100 if not big else 120), result
    assert result["seconds"] < (20 if not big else 60), result  # CPU seconds of the call
    print(name, "big" if big else "small", result)  # the figures for README's table
    return result


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    bodies.write(folder)
    return folder


@pytest.mark.parametrize("name", list(CASES))
def test_hostile_case(small: Path, name: str) -> None:
    result = check(small, name, CASES[name][0], big=False)
    if name == "html_page.html":
        assert "text/html" in result["message"] and "Sign in" in result["message"]
    if name == "huge_error_body.json":
        assert result["status"] == 500


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_hostile_case_full_size_with_the_defaults(
    tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    folder = tmp_path_factory.mktemp("hostile-big")
    bodies.write(folder, big=True)
    # 300 MB: the default 16 MiB event limit ends the endless line
    options = {} if name == "sse_endless_line.sse" else CASES[name][0]
    try:
        check(folder, name, options, big=True)
    finally:
        for path in folder.iterdir():
            path.unlink()
