"""``zett run --attempt-timeout``: the deadline of each model call attempt."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from zett_agent.testing import ReplayServer, Reply

ZETT = [sys.executable, "-m", "zett_agent.cli"]


@pytest.mark.realclock  # a real process and socket: a wall-clock bound, wide margin
def test_attempt_timeout_ends_a_slow_stream_as_interrupted() -> None:
    def chunk(text: str) -> dict[str, object]:
        choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
        return {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}

    reply = Reply.sse([(None, chunk(f"word{i} ")) for i in range(100)], delay=0.2)
    with ReplayServer([reply]) as server:
        done = subprocess.run(
            [
                *ZETT,
                "run",
                "-m",
                "openai:gpt-x",
                "--tools",
                "none",
                "--attempt-timeout",
                "1.5",
                "x",
            ],
            env={**os.environ, "ZETT_OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test"},
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 6, done.stderr  # interrupted, the text kept
    assert "word0 word1" in done.stdout and "word99" not in done.stdout
    assert "attempt timeout" in done.stderr, done.stderr  # notices go to stderr
