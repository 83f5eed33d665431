"""``zett run --max-total-tokens N`` against a server that reports no token usage
(llama.cpp's server at a base URL streams none): the run cannot count, and zett
says on stderr that the budget was not applied, as ``--max-cost`` says of a model
with no price; with usage reported, no such notice."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from zett_agent.testing import ReplayServer, Reply


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [choice],
        **extra,
    }


def answer(usage: bool) -> Reply:
    events: list[tuple[str | None, Any]] = [
        (None, chunk({"role": "assistant", "content": "Hello."})),
        (None, chunk({}, "stop")),
    ]
    if usage:
        counts = {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
        events.append((None, {"id": "c", "object": "chat.completion.chunk", "model": "m",
                              "choices": [], "usage": counts}))  # fmt: skip
    return Reply.sse([*events, (None, "[DONE]")])


def run(server: ReplayServer) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", "run", "-m", "openai:gpt-x", "--tools", "none",
         "--max-total-tokens", "1000", "hi"],
        env={**os.environ, "ZETT_OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test",
             "COLUMNS": "200", "NO_COLOR": "1"},
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_no_usage_reported_says_the_budget_was_not_applied() -> None:
    with ReplayServer([answer(usage=False)]) as server:
        done = run(server)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello."
    said = " ".join(done.stderr.split())
    assert (
        "⚠ --max-total-tokens 1000 was not applied: openai:gpt-x reported no token usage"
    ) in said, said


def test_usage_reported_says_nothing_of_it() -> None:
    with ReplayServer([answer(usage=True)]) as server:
        done = run(server)
    assert done.returncode == 0, done.stderr
    assert "max-total-tokens" not in done.stderr
