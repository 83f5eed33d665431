"""``zett run "Summarize this file" < notes.txt``: the piped file is sent with the
prompt (before it, a blank line apart, as ``cat notes.txt | llm "summarize"``
does), on a real terminal for stdout and stderr (a pseudo-terminal) with stdin
redirected from the file, as a person types it in a shell."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect

from helpers import default_sigint
from terminal import finish
from zett_agent.testing import ReplayServer, Reply

ZETT = [sys.executable, "-m", "zett_agent.cli"]
NOTES = "Meeting notes\nThe launch moves to 'Friday' <after> the review.\n"


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {"id": "c", "object": "chat.completion.chunk", "model": "gpt-x", "choices": [choice]}


def answer(text: str) -> Reply:
    return Reply.sse(
        [
            (None, chunk({"role": "assistant", "content": text})),
            (None, chunk({}, "stop")),
            (None, "[DONE]"),
        ]
    )


def env(server: ReplayServer) -> dict[str, str]:
    return {
        **os.environ,
        "ZETT_OPENAI_BASE_URL": server.url,
        "OPENAI_API_KEY": "test",
        "COLUMNS": "200",
        "NO_COLOR": "1",
    }


def user_text(server: ReplayServer) -> str:
    messages = server.requests[0].json["messages"]
    (user,) = [m for m in messages if m["role"] == "user"]
    content = user["content"]
    return content if isinstance(content, str) else json.dumps(content)


def test_a_file_piped_with_a_prompt_reaches_the_model_before_the_prompt(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES)
    command = (
        f"{shlex.quote(sys.executable)} -m zett_agent.cli run -m openai:gpt-x --tools none "
        f'"Summarize this file" < {shlex.quote(str(notes))}'
    )
    with ReplayServer([answer("The launch moved to Friday.")]) as server:
        child = pexpect.spawn(
            "bash",
            ["-c", command],
            env=env(server),
            encoding="utf-8",
            timeout=60,
            dimensions=(40, 200),
            preexec_fn=default_sigint,
        )
        status = finish(child, timeout=60)
        output = child.before or ""
        sent = user_text(server)
    assert status == 0, output
    assert "The launch moved to Friday." in output
    assert sent == NOTES.strip() + "\n\nSummarize this file"


def test_a_prompt_alone_on_a_terminal_reads_no_stdin() -> None:
    """stdin is the terminal: nothing is waited for, the prompt goes alone."""
    with ReplayServer([answer("Hi.")]) as server:
        child = pexpect.spawn(
            sys.executable,
            ["-m", "zett_agent.cli", "run", "-m", "openai:gpt-x", "--tools", "none", "Hello"],
            env=env(server),
            encoding="utf-8",
            timeout=60,
            dimensions=(40, 200),
            preexec_fn=default_sigint,
        )
        status = finish(child, timeout=60)
        sent = user_text(server)
    assert status == 0, child.before
    assert sent == "Hello"


def test_stdin_alone_is_still_the_prompt(tmp_path: Path) -> None:
    with ReplayServer([answer("Hi.")]) as server:
        done = subprocess.run(
            [*ZETT, "run", "-m", "openai:gpt-x", "--tools", "none"],
            env=env(server),
            input="Say hello\n",
            capture_output=True,
            text=True,
            timeout=60,
        )
        sent = user_text(server)
    assert done.returncode == 0, done.stderr
    assert sent == "Say hello"


def test_run_help_says_piped_text_is_sent_with_the_prompt() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", "run", "--help"],
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    text = " ".join(done.stdout.split())
    assert 'zett run "Summarize this file" < notes.txt sends the file' in text, done.stdout
