"""``zett run --require-approval``: --yes, a y/N answer on a terminal (a pty), and
the own exit status when nobody can answer. A real process against a ReplayServer."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from typing import Any

from zett_agent.testing import ReplayServer, Reply


def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "c", "object": "chat.completion.chunk", "model": "gpt-x", "choices": [choice]}
    return None, body


def weather_call() -> Reply:
    arguments = json.dumps({"city": "Paris"})
    function = {"name": "get_weather", "arguments": arguments}
    call = {"index": 0, "id": "call_1", "type": "function", "function": function}
    return Reply.sse([chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), (None, "[DONE]")])


def answer(text: str) -> Reply:
    return Reply.sse([chunk({"content": text}), chunk({}, "stop"), (None, "[DONE]")])


def zett(server: ReplayServer, *args: str, stdin: Any = subprocess.DEVNULL) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", "run", "--model", "openai:gpt-x", *args],
        env={**os.environ, "COLUMNS": "200", "ZETT_OPENAI_BASE_URL": server.url,
             "OPENAI_API_KEY": "test"},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=stdin,
    )  # fmt: skip


def tool_result(server: ReplayServer) -> dict[str, Any]:
    message: dict[str, Any] = server.requests[1].json["messages"][-1]
    assert message["role"] == "tool"
    return message


def test_yes_approves_and_the_run_goes_on() -> None:
    with ReplayServer([weather_call(), answer("Rainy.")]) as server:
        done = zett(server, "--require-approval", "get_weather", "--yes", "Weather?")
    assert done.returncode == 0, done.stderr
    assert "approved (--yes)" in done.stderr
    assert "Paris" in tool_result(server)["content"] and "Rainy." in done.stdout


def test_without_a_terminal_or_yes_the_run_exits_with_its_own_status() -> None:
    with ReplayServer([weather_call(), answer("never sent")]) as server:
        done = zett(server, "--require-approval", "all", "Weather?")
        assert len(server.requests) == 1  # nothing went on
    assert done.returncode == 9, done.stderr
    assert "waiting for approval: get_weather" in done.stderr


def at_a_terminal(server: ReplayServer, typed: bytes) -> Any:
    """``zett run --require-approval get_weather`` on a terminal where ``typed`` was typed."""
    master, slave = pty.openpty()
    os.write(master, typed)
    try:
        return zett(server, "--require-approval", "get_weather", "Weather?", stdin=slave)
    finally:
        os.close(slave)
        os.close(master)


def test_on_a_terminal_a_no_denies_the_call() -> None:
    with ReplayServer([weather_call(), answer("Fine, no weather.")]) as server:
        done = at_a_terminal(server, b"n\n")
    assert done.returncode == 0, done.stderr
    result = tool_result(server)
    assert "denied at the terminal" in result["content"]
    assert "get_weather" in done.stderr and "Fine, no weather." in done.stdout


def test_on_a_terminal_a_yes_runs_the_call() -> None:
    with ReplayServer([weather_call(), answer("Rainy.")]) as server:
        done = at_a_terminal(server, b"y\n")
    assert done.returncode == 0, done.stderr
    assert "Paris" in tool_result(server)["content"]


def test_approval_across_processes_through_the_session_store(tmp_path: Any) -> None:
    """Run 1 ends waiting (no terminal, no --yes: exit 9, the session named); run 2,
    another process, approves with --yes through the stored session."""
    db = tmp_path / "s.sqlite3"
    with ReplayServer([weather_call(), answer("Rainy.")]) as server:
        first = zett(server, "--db", str(db), "--require-approval", "get_weather", "Weather?")
        assert first.returncode == 9, first.stderr
        assert len(server.requests) == 1
        session = next(
            line.split()[1] for line in first.stderr.splitlines() if line.startswith("session ")
        )
        assert f"zett sessions resume {session}" in first.stderr
        second = subprocess.run(
            [sys.executable, "-m", "zett_agent.cli", "sessions", "resume", session,
             "--db", str(db), "--model", "openai:gpt-x", "--yes"],
            env={**os.environ, "COLUMNS": "200", "ZETT_OPENAI_BASE_URL": server.url,
                 "OPENAI_API_KEY": "test"},
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert "Paris" in tool_result(server)["content"] and "Rainy." in second.stdout
