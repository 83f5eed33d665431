"""Text zett did not write reaches a terminal only with its control characters
escaped (``cat -v`` style): a hostile MCP server process (tests/mcp_servers/
hostile_server.py: progress, a log line, a result, an elicitation message and its
own stderr, each carrying OSC 52, clear-screen, erase-line and a C1 CSI) and a
replayed model answer with the same payload, shown by ``zett run`` on a
pseudo-terminal with approval prompts; ``--json`` stays exact."""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from typing import Any

import pytest

from mcp_helpers import SERVERS, need_mcp
from terminal import finish, spawn_zett
from zett_agent._terminal_text import one_line, terminal_safe
from zett_agent.testing import ReplayServer, Reply

pytestmark = pytest.mark.mcp

HOSTILE = SERVERS / "hostile_server.py"
ESC = "\x1b"
PAYLOAD = (
    f"{ESC}]52;c;aGFja2Vk{ESC}\\{ESC}[2J{ESC}[H{ESC}[1A{ESC}[2K\x9b31m\r   ↳ nothing happened\x07"
)


def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return None, {"id": "c", "object": "chat.completion.chunk", "model": "gpt-x",
                  "choices": [choice]}  # fmt: skip


def call(name: str, arguments: dict[str, Any], call_id: str) -> Reply:
    item = {"index": 0, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}  # fmt: skip
    return Reply.sse([chunk({"tool_calls": [item]}), chunk({}, "tool_calls"), (None, "[DONE]")])


def answer(text: str) -> Reply:
    return Reply.sse([chunk({"content": text}), chunk({}, "stop"), (None, "[DONE]")])


def replies() -> list[Reply]:
    return [
        call("paint", {"note": f"args {PAYLOAD}"}, "call_1"),
        call("ask_paint", {}, "call_2"),
        answer(f"answer {PAYLOAD} end"),
    ]


def env_for(server: ReplayServer) -> dict[str, str]:
    return {"ZETT_OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test", "TERM": "dumb"}


def test_the_sanitizer_escapes_every_control_character_as_cat_v_does() -> None:
    assert terminal_safe(PAYLOAD) == (
        "^[]52;c;aGFja2Vk^[\\^[[2J^[[H^[[1A^[[2KM-^[31m^M   ↳ nothing happened^G"
    )
    assert terminal_safe("a\r\nb\tc\x7f\u202e") == "a\nb\tc^?<U+202E>"
    assert one_line("a\nb\tc") == "a^Jb^Ic"
    plain = "ünïcode ✓ 日本"
    assert terminal_safe(plain) is plain  # nothing to do: the same string
    every = "".join(map(chr, range(0x00, 0xA0))) + "\u2066\u2069"
    shown = terminal_safe(every)
    assert not any(ch in shown for ch in every if ch not in "\n\t" and not ch.isprintable())
    assert terminal_safe(shown) == shown  # idempotent


def test_a_hostile_mcp_server_and_model_cannot_drive_the_terminal() -> None:
    need_mcp()
    command = shlex.join([sys.executable, str(HOSTILE)])
    with ReplayServer(replies()) as server:
        child = spawn_zett(
            "run", "--model", "openai:gpt-x", "--tools", "none", "--mcp", command,
            "--require-approval", "all", "paint it", env=env_for(server),
        )  # fmt: skip
        child.logfile_read = seen = io.StringIO()  # every character the terminal got
        child.expect_exact("approve? [y/N] ")
        child.sendline("y")
        child.expect_exact("approve? [y/N] ")
        child.sendline("y")
        child.expect_exact("Answer it? [y/N] ")
        child.sendline("n")
        status = finish(child, timeout=60)
    shown_all = seen.getvalue()
    assert status == 0, shown_all
    assert ESC not in shown_all, repr(shown_all)  # TERM=dumb: rich writes none of its own
    assert "\x9b" not in shown_all and "\x07" not in shown_all
    shown = "^[]52;c;aGFja2Vk"
    for where in ("stderr", "progress", "log", "result", "question", "answer"):
        assert f"{where} {shown}" in shown_all, where  # each reached the terminal, escaped
    assert "M-^[31m^M   ↳ nothing happened^G end" in shown_all  # the answer: CR, BEL too
    assert "result ^[]52" in shown_all and "M-^[31m^M" in shown_all.split("result ^[]52")[1]
    assert (
        "args" in shown_all and "\\u001b]52" in shown_all
    )  # the approval prompt shows JSON escapes


def test_json_events_stay_exact() -> None:
    need_mcp()
    command = shlex.join([sys.executable, str(HOSTILE)])
    with ReplayServer(replies()) as server:
        done = subprocess.run(
            [sys.executable, "-m", "zett_agent.cli", "run", "--model", "openai:gpt-x",
             "--tools", "none", "--mcp", command, "--yes", "--json", "paint it"],
            env={**os.environ, **env_for(server)}, capture_output=True, text=True, timeout=90,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = [e for e in events if e["type"] == "tool_call_completed"]
    assert results and results[0]["tool_result"]["content"] == f"result {PAYLOAD}"
    texts = "".join(e.get("text") or "" for e in events if e["type"] == "text_delta")
    assert texts == f"answer {PAYLOAD} end"


def test_a_file_name_in_an_error_is_shown_escaped(tmp_path: Any) -> None:
    name = str(tmp_path / f"photo{ESC}]52;c;aGFja2Vk{ESC}\\{ESC}[2J.png")  # does not exist
    child = spawn_zett("run", "--model", "openai:gpt-x", "--attach", name, "hi",
                       env={"OPENAI_API_KEY": "test", "TERM": "dumb"})  # fmt: skip
    child.logfile_read = seen = io.StringIO()
    status = finish(child, timeout=60)
    shown = seen.getvalue()
    assert status == 2, shown
    assert ESC not in shown, repr(shown)
    assert "photo^[]52;c;aGFja2Vk" in shown.replace("\r\n", "").replace("│", "").replace(" ", "")


def test_a_hostile_answer_in_a_chat_is_shown_escaped() -> None:
    with ReplayServer([answer(f"answer {PAYLOAD} end")]) as server:
        child = spawn_zett("chat", "-m", "openai:gpt-x", "--tools", "none", env=env_for(server))
        child.logfile_read = seen = io.StringIO()
        child.expect_exact("> ")
        child.sendline("hi")
        child.expect_exact("end")
        child.expect_exact("> ")
        child.sendeof()
        finish(child, timeout=60)
    shown = seen.getvalue()
    assert ESC not in shown and "\x9b" not in shown, repr(shown)
    assert "answer ^[]52;c;aGFja2Vk" in shown
