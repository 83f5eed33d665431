"""``zett run --mcp``: a real process, a replayed model (OpenAI Chat over a
ReplayServer) and the counting MCP server over stdio."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_helpers import COUNTING, calls_in, need_mcp
from zett_agent.testing import ReplayServer, Reply

pytestmark = pytest.mark.mcp


def zett(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args],
        env={**os.environ, "COLUMNS": "100", **env},
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )


def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return None, {
        "id": "c",
        "object": "chat.completion.chunk",
        "model": "gpt-x",
        "choices": [choice],
    }


def call_reply(name: str, arguments: dict[str, Any]) -> Reply:
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}  # fmt: skip
    return Reply.sse([chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), (None, "[DONE]")])


def answer(text: str) -> Reply:
    return Reply.sse([chunk({"content": text}), chunk({}, "stop"), (None, "[DONE]")])


def test_run_with_mcp_calls_the_servers_tool(tmp_path: Path) -> None:
    need_mcp()
    log = tmp_path / "calls.jsonl"
    # a stdio server gets only the mcp SDK's default environment: pass the log with env
    command = shlex.join(["env", f"ZETT_MCP_CALLS={log}", sys.executable, str(COUNTING)])
    with ReplayServer([call_reply("add", {"a": 20, "b": 22}), answer("It is 42.")]) as server:
        done = zett(
            "run", "--model", "openai:gpt-x", "--tools", "none", "--mcp", command, "Add them",
            env={"ZETT_OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test"},
        )  # fmt: skip
        sent = [r.json for r in server.requests]
    assert done.returncode == 0, done.stderr
    assert calls_in(log) == [{"tool": "add", "arguments": {"a": 20, "b": 22}}]
    assert "add" in {t["function"]["name"] for t in sent[0]["tools"]}
    assert sent[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    assert "It is 42." in done.stdout


def test_run_with_an_mcp_server_that_cannot_start_names_it() -> None:
    need_mcp()
    done = zett(
        "run", "--model", "openai:gpt-x", "--mcp", "/nonexistent/mcp-server --port 1", "hi",
        env={"ZETT_OPENAI_BASE_URL": "http://127.0.0.1:9", "OPENAI_API_KEY": "test"},
    )  # fmt: skip
    assert done.returncode == 1
    assert "/nonexistent/mcp-server --port 1" in done.stderr


def test_run_with_mcp_auth_command_takes_a_token_from_the_command(tmp_path: Path) -> None:
    need_mcp()
    from mcp_helpers import FAULTY, http_server

    replies = [call_reply("echo", {"text": "hi"}), answer("echoed")]
    args = [str(FAULTY), "initialize", "http401", "--http", "{port}"]  # the first greeting: 401
    with http_server(args) as (url, _), ReplayServer(replies) as replay:
        done = zett(
            "run", "--model", "openai:gpt-x", "--tools", "none", "--mcp", url,
            "--mcp-auth", f"command:{sys.executable} -c 'print(\"tok-from-command\")'", "go",
            env={"OPENAI_API_KEY": "k", "ZETT_OPENAI_BASE_URL": replay.url},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "echoed"
    assert "tok-from-command" not in done.stderr


def test_an_unknown_mcp_auth_is_a_config_error() -> None:
    need_mcp()
    done = zett(
        "run", "--model", "openai:gpt-x", "--mcp", "http://127.0.0.1:9/mcp",
        "--mcp-auth", "magic", "go", env={"OPENAI_API_KEY": "k"},
    )  # fmt: skip
    assert done.returncode == 1
    assert "--mcp-auth must be 'oauth' or 'command:CMD'" in done.stderr
