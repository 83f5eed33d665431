"""``zett serve --mcp ... --require-approval ...``: a real ``zett serve`` process whose
MCP tool waits for approval until the page answers, then runs once.

The model is replayed (OpenAI Chat over a ReplayServer), the tool is the counting
MCP server over stdio (tests/mcp_servers/counting_server.py), and the approval is
sent as the AI SDK sends it (test_serve_approvals.py).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from helpers import default_sigint
from mcp_helpers import COUNTING, calls_in, free_port, need_mcp
from serve_support import chat_body, read_chunks
from test_mcp_cli import answer, call_reply
from test_serve_approvals import answered, send, session
from zett_agent.testing import ReplayServer

pytestmark = pytest.mark.mcp


def zett_serve(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "zett_agent.cli", "serve", *args],
        env={**os.environ, "COLUMNS": "200", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        preexec_fn=default_sigint,  # it is stopped with SIGINT: even from a background job
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, ReplayServer, subprocess.Popen[str]]]:
    need_mcp()
    log = tmp_path / "calls.jsonl"
    # a stdio server gets only the mcp SDK's default environment: pass the log with env
    command = shlex.join(["env", f"ZETT_MCP_CALLS={log}", sys.executable, str(COUNTING)])
    port = free_port()
    with ReplayServer([call_reply("add", {"a": 20, "b": 22}), answer("It is 42.")]) as replay:
        process = zett_serve(
            "--model", "openai:gpt-x", "--tools", "none", "--mcp", command,
            "--require-approval", "add", "--db", str(tmp_path / "sessions.db"),
            "--port", str(port),
            env={"ZETT_OPENAI_BASE_URL": replay.url, "OPENAI_API_KEY": "test"},
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                assert process.poll() is None, process.communicate()
                try:
                    if httpx.get(f"{url}/api/info", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "zett serve did not start"
                time.sleep(0.1)
            yield url, log, replay, process
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def test_an_mcp_tool_waits_for_approval_on_the_page_and_runs_once_approved(
    served: tuple[str, Path, ReplayServer, subprocess.Popen[str]],
) -> None:
    url, log, replay, _ = served
    assert "add" in httpx.get(f"{url}/api/info").json()["tools"]
    first = httpx.post(f"{url}/api/chat", json=chat_body("m1", "Add them"), timeout=30)
    chunks: list[dict[str, Any]] = read_chunks(first.text)
    [asked] = [c for c in chunks if c["type"] == "tool-approval-request"]
    assert asked["toolCallId"] == "call_1"
    assert calls_in(log) == []  # it waits: the MCP server was not called
    second = send(url, "m1", answered(session(url, "m1"), True))
    assert second.status_code == 200, second.text
    outputs = [c for c in read_chunks(second.text) if c["type"] == "tool-output-available"]
    assert [c["output"] for c in outputs] == ["42"]
    assert calls_in(log) == [{"tool": "add", "arguments": {"a": 20, "b": 22}}]
    assert len(replay.requests) == 2
    [_, message] = session(url, "m1")
    assert message["parts"][-1]["text"] == "It is 42."


def test_an_mcp_server_that_cannot_start_stops_zett_serve_naming_it(tmp_path: Path) -> None:
    need_mcp()
    process = zett_serve(
        "--model", "openai:gpt-x", "--mcp", "/nonexistent/mcp-server --port 1",
        "--db", str(tmp_path / "s.db"), "--port", str(free_port()),
        env={"ZETT_OPENAI_BASE_URL": "http://127.0.0.1:9", "OPENAI_API_KEY": "test"},
    )  # fmt: skip
    try:
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0
    assert "✖ zett serve: MCP server /nonexistent/mcp-server --port 1 could not be started" in err
    assert "Traceback" not in err  # one line, as zett run says it
