"""A stored session remembers how it ran (model, tools, MCP servers, approval
options): the exit-9 notice's command, run word for word, continues it on its own
model; an explicit --model wins and says so; ZETT_MODEL is for new sessions; the
notice carries --mcp when a waiting call is an MCP server's. Real ``zett``
processes against a ReplayServer (OpenAI Chat)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_helpers import COUNTING, calls_in, need_mcp
from zett_agent import SQLiteSessionStore
from zett_agent._records import RunSettings, entry_from_dict, entry_to_dict
from zett_agent.cli._remembered import stored_url
from zett_agent.testing import ReplayServer, Reply

pytestmark = pytest.mark.timeout(120)


def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "c", "object": "chat.completion.chunk", "model": "gpt-x", "choices": [choice]}
    return None, body


def call(name: str, arguments: dict[str, Any]) -> Reply:
    function = {"name": name, "arguments": json.dumps(arguments)}
    tool_call = {"index": 0, "id": "call_1", "type": "function", "function": function}
    return Reply.sse(
        [chunk({"tool_calls": [tool_call]}), chunk({}, "tool_calls"), (None, "[DONE]")]
    )


def answer(text: str) -> Reply:
    return Reply.sse([chunk({"content": text}), chunk({}, "stop"), (None, "[DONE]")])


def zett(server: ReplayServer, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "COLUMNS": "300", "ZETT_OPENAI_BASE_URL": server.url,
                   "OPENAI_API_KEY": "test", **env}  # fmt: skip
    environment.pop("ZETT_MODEL", None)
    if "ZETT_MODEL" in env:
        environment["ZETT_MODEL"] = env["ZETT_MODEL"]
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args], env=environment,
        capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def notice_command(stderr: str) -> list[str]:
    found = re.search(r"decide with: (zett sessions resume .*?) \(or on a terminal", stderr)
    assert found is not None, stderr
    return shlex.split(found[1])


def waiting_session(server: ReplayServer, db: Path) -> tuple[str, list[str]]:
    done = zett(
        server, "run", "--db", str(db), "--model", "openai:gpt-x", "--tools", "get_weather",
        "--require-approval", "get_weather", "Weather in Paris?",
    )  # fmt: skip
    assert done.returncode == 9, done.stderr
    command = notice_command(done.stderr)
    return command[3], command


def test_the_notice_command_continues_the_session_on_its_own_model(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    with ReplayServer([call("get_weather", {"city": "Paris"}), answer("Rainy.")]) as server:
        session, command = waiting_session(server, db)
        assert "--model" not in command  # remembered: nothing to repeat
        done = zett(server, *command[1:])  # word for word
        sent = [r.json for r in server.requests]
    assert done.returncode == 0, done.stderr
    assert sent[1]["model"] == "gpt-x"  # the session's model, not the local default
    assert (
        sent[1]["messages"][-1]["role"] == "tool" and "Paris" in sent[1]["messages"][-1]["content"]
    )
    assert [t["function"]["name"] for t in sent[1]["tools"]] == ["get_weather"]
    assert "Rainy." in done.stdout

    async def settings() -> list[RunSettings]:
        async with SQLiteSessionStore(db) as store:
            rows = await store.rows(session)
        return [r.message for r in rows if isinstance(r.message, RunSettings)]

    import anyio

    assert anyio.run(settings) == [
        RunSettings("openai:gpt-x", ("get_weather",), (), ("get_weather",))
    ]  # written once: the resumed run ran as the session did


def test_an_explicit_model_wins_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    with ReplayServer([call("get_weather", {"city": "Paris"}), answer("Rainy.")]) as server:
        _, command = waiting_session(server, db)
        done = zett(server, *command[1:], "--model", "openai:gpt-other")
        sent = [r.json for r in server.requests]
    assert done.returncode == 0, done.stderr
    assert sent[1]["model"] == "gpt-other"
    assert "using --model openai:gpt-other (the session ran on openai:gpt-x)" in done.stderr


def test_zett_model_is_for_new_sessions_not_a_choice_for_a_stored_one(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    with ReplayServer([call("get_weather", {"city": "Paris"}), answer("Rainy.")]) as server:
        _, command = waiting_session(server, db)
        done = zett(server, *command[1:], ZETT_MODEL="openai:gpt-env")
        sent = [r.json for r in server.requests]
    assert done.returncode == 0, done.stderr
    assert sent[1]["model"] == "gpt-x"
    assert "ZETT_MODEL=openai:gpt-env is for new sessions" in done.stderr


@pytest.mark.mcp
def test_the_notice_carries_mcp_when_a_waiting_call_is_an_mcp_servers(tmp_path: Path) -> None:
    need_mcp()
    db = tmp_path / "s.sqlite3"
    log = tmp_path / "calls.jsonl"
    server_command = shlex.join(["env", f"ZETT_MCP_CALLS={log}", sys.executable, str(COUNTING)])
    with ReplayServer([call("add", {"a": 20, "b": 22}), answer("It is 42.")]) as server:
        asked = zett(
            server, "run", "--db", str(db), "--model", "openai:gpt-x", "--tools", "none",
            "--mcp", server_command, "--require-approval", "add", "Add them",
        )  # fmt: skip
        assert asked.returncode == 9, asked.stderr
        command = notice_command(asked.stderr)
        assert command[command.index("--mcp") + 1] == server_command
        assert calls_in(log) == []  # waiting: not called
        done = zett(server, *command[1:])
    assert done.returncode == 0, done.stderr
    assert calls_in(log) == [{"tool": "add", "arguments": {"a": 20, "b": 22}}]
    assert "It is 42." in done.stdout


def test_a_stored_url_keeps_no_password_and_settings_round_trip() -> None:
    assert (
        stored_url("https://me:secret@mcp.example:8443/mcp?x=1")
        == "https://mcp.example:8443/mcp?x=1"
    )
    assert stored_url("npx -y server --flag") == "npx -y server --flag"
    settings = RunSettings("openai:gpt-x", ("get_weather",), ("npx s",), ("all",))
    assert entry_from_dict(entry_to_dict(settings)) == settings
    assert entry_to_dict(settings)["role"] == "run_settings"


def test_remembered_settings_fill_only_what_the_command_line_left_out() -> None:
    import io

    from rich.console import Console

    from zett_agent.cli._remembered import with_remembered
    from zett_agent.cli._run import RunOptions
    from zett_agent.demo_tools import select_demo_tools

    out = io.StringIO()
    err = Console(file=out, width=300)
    stored = RunSettings("anthropic:claude-x", ("get_time",), ("npx srv",), ("all",))
    options = RunOptions(prompt=None, model=None, tools=select_demo_tools("demo"))
    kept = with_remembered(options, stored, frozenset(), None, "llamacpp:smollm2", err)
    assert (kept.model, [t.__name__ for t in kept.tools], kept.mcp, kept.require_approval) == (
        "anthropic:claude-x", ["get_time"], ("npx srv",), ("all",),
    )  # fmt: skip
    given = with_remembered(
        RunOptions(prompt=None, model="openai:o", mcp=()), stored,
        frozenset({"model", "mcp"}), None, "llamacpp:smollm2", err,
    )  # fmt: skip
    assert (given.model, given.mcp) == ("openai:o", ())
    fresh = with_remembered(options, None, frozenset(), None, "llamacpp:smollm2", err)
    assert fresh.model == "llamacpp:smollm2" and fresh.mcp == ()
    foreign = RunSettings("openai:o", ("send_invoice",))
    odd = with_remembered(options, foreign, frozenset(), None, "llamacpp:smollm2", err)
    assert [t.__name__ for t in odd.tools] == [t.__name__ for t in select_demo_tools("demo")]
    assert "tools zett does not have (send_invoice)" in out.getvalue()
