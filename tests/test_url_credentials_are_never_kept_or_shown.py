"""A credential in an ``--mcp`` URL (``?api_key=``, ``?token=``, ``user:password@``)
is never stored (the session's ``run_settings`` row) nor shown (errors, the
approval notice's command, log lines): it is ``[redacted]`` wherever zett keeps or
prints a URL. Real ``zett`` processes against a hand-written MCP server over HTTP
(tests/mcp_servers/faulty_server.py) and a ReplayServer model."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_helpers import FAULTY, http_server, need_mcp
from zett_agent._records import RunSettings, entry_to_dict
from zett_agent._urls import redact_url, redact_urls_in, url_secrets
from zett_agent.cli._remembered import stored_url
from zett_agent.testing import ReplayServer, Reply

pytestmark = pytest.mark.timeout(120)

KEY = "sk-live-0123456789abcdef"
SHORT = "k9"  # too short for the text redactor: only the URL rule catches it


def with_key(url: str) -> str:
    return f"{url}?api_key={KEY}&region=eu&token={SHORT}"


def zett(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args],
        env={**os.environ, "COLUMNS": "300", **env},
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


def tool_call(name: str, arguments: dict[str, Any]) -> Reply:
    function = {"name": name, "arguments": json.dumps(arguments)}
    call = {"index": 0, "id": "call_1", "type": "function", "function": function}
    choice = {"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}
    end = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
    body = {"id": "c", "object": "chat.completion.chunk", "model": "gpt-x"}
    return Reply.sse(
        [
            (None, {**body, "choices": [choice]}),
            (None, {**body, "choices": [end]}),
            (None, "[DONE]"),
        ]
    )


def assert_nowhere(secret: str, *texts: str | bytes) -> None:
    for text in texts:
        data = text.encode() if isinstance(text, str) else text
        assert secret.encode() not in data, data.decode(errors="replace")[-2000:]


def test_redact_url_takes_out_query_credentials_and_the_password() -> None:
    url = f"https://me:pw-12345678@mcp.example:8443/mcp?api_key={KEY}&x=1&Access_Token=a%20b#f"
    assert redact_url(url) == (
        "https://mcp.example:8443/mcp?api_key=[redacted]&x=1&Access_Token=[redacted]#f"
    )
    assert url_secrets(url) == {"pw-12345678", KEY, "a%20b", "a b"}
    assert redact_url("https://mcp.example/mcp?x=1") == "https://mcp.example/mcp?x=1"
    assert redact_url("npx -y server --key abc") == "npx -y server --key abc"  # a command
    assert stored_url(with_key("https://h/mcp")) == (
        "https://h/mcp?api_key=[redacted]&region=eu&token=[redacted]"
    )
    quoted = f"Client error '401 Unauthorized' for url '{with_key('https://h/mcp')}'"
    assert_nowhere(KEY, redact_urls_in(quoted))
    assert_nowhere(f"token={SHORT}", redact_urls_in(quoted))


def test_a_run_settings_row_never_stores_a_url_credential() -> None:
    """Even one a host built itself: the row is redacted as it is written."""
    settings = RunSettings("openai:gpt-x", (), (with_key("https://me:pw@h/mcp"),), ())
    stored = json.dumps(entry_to_dict(settings))
    assert_nowhere(KEY, stored)
    assert_nowhere("me:pw", stored)
    assert "api_key=[redacted]" in stored


@pytest.mark.mcp
def test_a_failing_mcp_server_is_named_without_its_key(tmp_path: Path) -> None:
    need_mcp()
    db = tmp_path / "s.sqlite3"
    args = [str(FAULTY), "initialize", "http500", "--http", "{port}"]
    with http_server(args) as (url, _), ReplayServer([]) as replay:
        done = zett(
            "run", "--db", str(db), "--model", "openai:gpt-x", "--tools", "none",
            "--mcp", with_key(url), "go",
            env={"OPENAI_API_KEY": "k", "ZETT_OPENAI_BASE_URL": replay.url},
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "api_key=[redacted]" in done.stderr  # the server is named, its key is not
    assert_nowhere(KEY, done.stdout, done.stderr)
    assert_nowhere(f"token={SHORT}", done.stdout, done.stderr)
    if db.exists():
        assert_nowhere(KEY, db.read_bytes())


@pytest.mark.mcp
def test_the_approval_notice_and_the_stored_session_hold_no_key(tmp_path: Path) -> None:
    need_mcp()
    db = tmp_path / "s.sqlite3"
    args = [str(FAULTY), "tools/call", "error", "--http", "{port}"]
    replies = [tool_call("echo", {"text": "hi"})]
    with http_server(args) as (url, _), ReplayServer(replies) as replay:
        asked = zett(
            "run", "--db", str(db), "--model", "openai:gpt-x", "--tools", "none",
            "--mcp", with_key(url), "--require-approval", "echo", "Echo hi",
            env={"OPENAI_API_KEY": "k", "ZETT_OPENAI_BASE_URL": replay.url},
        )  # fmt: skip
    assert asked.returncode == 9, asked.stderr
    assert "decide with: zett sessions resume" in asked.stderr
    assert "api_key=[redacted]" in asked.stderr and "put them back" in asked.stderr
    assert_nowhere(KEY, asked.stdout, asked.stderr)
    for path in tmp_path.glob("s.sqlite3*"):  # the database and its WAL
        assert_nowhere(KEY, path.read_bytes())
    import anyio

    from zett_agent import SQLiteSessionStore

    async def stored() -> list[RunSettings]:
        async with SQLiteSessionStore(db) as store:
            [info] = await store.list_sessions()
            rows = await store.rows(info.session_id)
        return [r.message for r in rows if isinstance(r.message, RunSettings)]

    [settings] = anyio.run(stored)
    assert settings.mcp == (redact_url(with_key(url)),)


def test_mcp_log_lines_and_errors_name_the_server_without_its_key() -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from zett_agent.mcp import MCPServer
    from zett_agent.mcp._connection import Connection

    server = MCPServer.http(with_key("https://me:pw-12345678@mcp.example/mcp"))
    assert server.label == "https://mcp.example/mcp?api_key=[redacted]&region=eu&token=[redacted]"
    connection = Connection.__new__(Connection)
    connection.server = server
    line = f"HTTP Request: POST {server.url} 'HTTP/1.1 401'; retrying {KEY[:12]}... {KEY}"
    clean = connection.redact(line)
    assert_nowhere(KEY, clean)
    assert_nowhere("pw-12345678", clean)
    assert_nowhere(f"token={SHORT}", clean)
    assert server.label in clean
    logging.getLogger(__name__).debug(clean)
