"""What the MCP tests share: recorded-shape Anthropic replies that call tools, the
counting server (tests/mcp_servers/counting_server.py) and the call log it writes,
and the skip (or, with ZETT_MCP_REQUIRED=1 as in CI, failure) when the ``mcp``
extra or a test server is missing."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from zett_agent.testing import Reply

SERVERS = Path(__file__).parent / "mcp_servers"
COUNTING = SERVERS / "counting_server.py"
FAULTY = SERVERS / "faulty_server.py"
NODE_BIN = SERVERS / "node_modules" / ".bin"


def need(condition: bool, reason: str) -> None:
    """Skip with ``reason`` unless ``condition``; fail instead under ZETT_MCP_REQUIRED=1."""
    if condition:
        return
    if os.environ.get("ZETT_MCP_REQUIRED") == "1":
        pytest.fail(f"ZETT_MCP_REQUIRED=1 but {reason}")
    pytest.skip(reason)


def need_mcp() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        need(False, "the 'mcp' extra is not installed (pip install -e '.[mcp]')")


def need_node_server(name: str) -> Path:
    """The launcher of an npm test server (installed by `npm ci` in tests/mcp_servers)."""
    path = NODE_BIN / name
    need(shutil.which("node") is not None, "node is not installed")
    need(path.exists(), f"{name} is not installed (cd tests/mcp_servers && npm ci)")
    return path


def counting_command() -> tuple[str, ...]:
    return (sys.executable, str(COUNTING))


def counting_server(tmp_path: Path) -> tuple[Any, Path]:
    """The counting stdio server (``need_mcp()`` first): its calls logged to
    ``tmp_path/calls.jsonl`` (the path returned), its stderr to ``server.log``."""
    from zett_agent.mcp import MCPServer

    log = tmp_path / "calls.jsonl"
    server = MCPServer.stdio(
        *counting_command(),
        env={"ZETT_MCP_CALLS": str(log)},
        log=open(tmp_path / "server.log", "w"),  # noqa: SIM115
    )
    return server, log


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[Any], seconds: float = 20) -> None:
    """Until something listens on 127.0.0.1:``port`` (fails when ``process`` exits)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail(f"the test server on port {port} did not start")
            time.sleep(0.05)


@contextmanager
def http_server(
    args: Sequence[str], *, port: int | None = None, log: Path | None = None, env: Any = None
) -> Iterator[tuple[str, subprocess.Popen[Any]]]:
    """``python ARGS... PORT``-style test server (the port is put where ``{port}``
    stands in ``args``); yields its ``/mcp`` URL and the process, stopped after."""
    port = port or free_port()
    command = [sys.executable, *(a.replace("{port}", str(port)) for a in args)]
    errors = open(log, "a") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=errors, env={**os.environ, **(env or {})}
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.kill()
        process.wait(10)
        if log is not None:
            errors.close()  # type: ignore[union-attr]


def calls_in(log: Path) -> list[dict[str, Any]]:
    """The entries the counting server wrote (empty when none)."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _start(message_id: str) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }


def _text_blocks(text: str) -> list[dict[str, Any]]:
    block = {"type": "text", "text": ""}
    delta = {"type": "text_delta", "text": text}
    return [
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
    ]


def tool_reply(
    *calls: tuple[str, str, str],
    stop_reason: str = "tool_use",
    text: str = "",
    stop_details: dict[str, Any] | None = None,
    drop_after_calls: bool = False,
) -> Reply:
    """An Anthropic stream whose answer holds ``calls`` (id, name, argument JSON
    text, sent as written: it may be cut off) and ends with ``stop_reason``.
    ``drop_after_calls``: the connection drops after the calls, before the stop."""
    events: list[dict[str, Any]] = [_start("msg_tools")]
    index = 0
    if text:
        events += _text_blocks(text)
        index = 1
    for call_id, name, arguments in calls:
        events += [
            {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": call_id, "name": name, "input": {}}},
            {"type": "content_block_delta", "index": index, "delta": {
                "type": "input_json_delta", "partial_json": arguments}},
        ]  # fmt: skip
        if not (stop_reason == "max_tokens" and call_id == calls[-1][0]):  # the last is cut
            events.append({"type": "content_block_stop", "index": index})
        index += 1
    delta: dict[str, Any] = {"stop_reason": stop_reason, "stop_sequence": None}
    if stop_details is not None:
        delta["stop_details"] = stop_details
    reply = Reply.sse(
        (event["type"], event)
        for event in [
            *events,
            {"type": "message_delta", "delta": delta, "usage": {"output_tokens": 20}},
            {"type": "message_stop"},
        ]
    )
    if drop_after_calls:
        reply.drop_after = len(events)
    return reply


def text_reply(text: str) -> Reply:
    """An Anthropic stream that answers ``text`` and ends normally."""
    return Reply.sse(
        (event["type"], event)
        for event in [
            _start("msg_text"),
            *_text_blocks(text),
            {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {"output_tokens": 5}},
            {"type": "message_stop"},
        ]
    )  # fmt: skip


def sent_tool_results(request_json: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the last user turn of an Anthropic request."""
    last = request_json["messages"][-1]
    content = last["content"] if isinstance(last["content"], list) else []
    return [block for block in content if block.get("type") == "tool_result"]
