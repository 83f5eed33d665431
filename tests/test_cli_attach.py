"""``zett run --attach FILE``: files go with the prompt (a subprocess against a
ReplayServer); a file too large is refused unread, one of an unknown type or missing
is a usage error, and the local model's error says it cannot see images, before any
server is started. ``zett sessions show`` lists a stored message's attachments."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

from zett_agent.cli import EXIT_CODES
from zett_agent.testing import ReplayServer, Reply

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
PDF = b"%PDF-1.7\n" + b"%" * 100


def zett(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args],
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def anthropic_reply(text: str) -> Reply:
    return Reply.json(
        {
            "type": "message",
            "model": "claude",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 300, "output_tokens": 5},
        }
    )


def test_attached_files_go_with_the_prompt(tmp_path: Path) -> None:
    (tmp_path / "dot.png").write_bytes(PNG)
    (tmp_path / "scan").write_bytes(PDF)  # no extension: its first bytes say PDF
    db = tmp_path / "s.db"
    with ReplayServer([anthropic_reply("A red dot and a short PDF.")]) as server:
        env = {"ZETT_ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test"}
        done = zett(
            "run", "--model", "anthropic:claude", "--tools", "none", "--db", str(db),
            "--new-session", "pics", "--attach", str(tmp_path / "dot.png"),
            "--attach", str(tmp_path / "scan"), "What are these?",
            env=env,
        )  # fmt: skip
        body = server.requests[0].json
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "A red dot and a short PDF."
    [turn] = body["messages"]
    assert [block["type"] for block in turn["content"]] == ["text", "image", "document"]
    assert turn["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": base64.b64encode(PNG).decode(),
    }
    assert turn["content"][2]["source"]["media_type"] == "application/pdf"
    assert turn["content"][2]["title"] == "scan"

    shown = zett("sessions", "show", "pics", "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert f"[image dot.png image/png, {len(PNG)} bytes]" in shown.stdout
    assert f"[document scan application/pdf, {len(PDF)} bytes]" in shown.stdout


def test_the_local_model_says_it_cannot_see_images_before_starting(tmp_path: Path) -> None:
    (tmp_path / "cat.png").write_bytes(PNG)
    done = zett("run", "--attach", str(tmp_path / "cat.png"), "What is in this picture?")
    assert done.returncode == EXIT_CODES["error"] == 1
    error = " ".join(done.stderr.split())
    assert "llamacpp cannot take part 1 of the user message, [image cat.png image/png" in error
    assert "the local model (SmolLM2-135M) reads text only: it cannot see images" in error
    assert "Starting the local llama.cpp server" not in done.stderr  # refused before


def test_a_file_over_the_limit_is_refused_unread(tmp_path: Path) -> None:
    huge = tmp_path / "huge.png"
    with huge.open("wb") as f:
        f.truncate(2 * 1024**3)  # sparse: reading it would take 2 GiB
    done = zett("run", "--attach", str(huge), "--max-attach-bytes", "1000", "hi")
    assert done.returncode == EXIT_CODES["usage"] == 2
    assert "huge.png is 2147483648 bytes, more than the limit of 1000" in done.stderr


def test_missing_and_unknown_files_are_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "mystery").write_bytes(b"no magic here")
    missing = zett("run", "--attach", str(tmp_path / "nope.png"), "hi")
    assert missing.returncode == 2 and "No such file" in missing.stderr
    unknown = zett("run", "--attach", str(tmp_path / "mystery"), "hi")
    assert unknown.returncode == 2 and "cannot tell the media type of mystery" in unknown.stderr


def test_json_events_carry_descriptions_not_bytes(tmp_path: Path) -> None:
    (tmp_path / "dot.png").write_bytes(PNG)
    with ReplayServer([anthropic_reply("ok")]) as server:
        env = {"ZETT_ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test"}
        done = zett(
            "run", "--json", "--model", "anthropic:claude", "--tools", "none",
            "--attach", str(tmp_path / "dot.png"), "What is it?", env=env,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert records and base64.b64encode(PNG).decode() not in done.stdout


def test_an_attached_file_is_sent_as_its_bytes_type(tmp_path: Path) -> None:
    jpeg = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(100))
    (tmp_path / "photo.png").write_bytes(jpeg)  # the name says PNG, the bytes JPEG
    (tmp_path / "noise.png").write_bytes(b"no picture here" * 5)
    with ReplayServer([anthropic_reply("A photo.")]) as server:
        env = {"ZETT_ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test"}
        done = zett(
            "run", "--model", "anthropic:claude", "--tools", "none",
            "--attach", str(tmp_path / "photo.png"), "What is it?", env=env,
        )  # fmt: skip
        refused = zett(
            "run", "--model", "anthropic:claude", "--tools", "none",
            "--attach", str(tmp_path / "noise.png"), "What is it?", env=env,
        )  # fmt: skip
        bodies = [r.json for r in server.requests]
    assert done.returncode == 0, done.stderr
    [body] = bodies  # the refused one sent nothing
    assert body["messages"][0]["content"][1]["source"]["media_type"] == "image/jpeg"
    assert refused.returncode == EXIT_CODES["usage"], refused.stderr
    assert "image/png are not of that type" in " ".join(refused.stderr.split())
