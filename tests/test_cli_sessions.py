"""``zett run --db FILE --session ID`` and ``zett sessions list|show|resume``,
through the real command (a subprocess) against a ReplayServer."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_cli import EXIT_CODES, openai_env, text_reply, tool_call_reply, zett
from zett_agent.testing import ReplayServer, Reply


def _session_id(stderr: str) -> str:
    found = re.search(r"session ([0-9a-f]{32})", stderr)
    assert found, stderr
    return found.group(1)


def test_run_stores_a_session_and_continues_it(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    with ReplayServer([text_reply("Paris."), text_reply("About 2 million.")]) as server:
        env = openai_env(server)
        first = zett("run", "-m", "openai:gpt-x", "--db", str(db), "Capital of France?", env=env)
        assert first.returncode == 0, first.stderr
        sid = _session_id(first.stderr)
        second = zett("run", "-m", "openai:gpt-x", "--db", str(db), "--session", sid,
                      "How many people live there?", env=env)  # fmt: skip
        assert second.returncode == 0, second.stderr
        sent = server.requests[1].json["messages"]
    assert first.stdout == "Paris.\n"
    assert second.stdout == "About 2 million.\n"
    assert "session" not in second.stderr  # a continued session is not announced again
    assert [(m["role"], m.get("content")) for m in sent] == [
        ("user", "Capital of France?"),
        ("assistant", "Paris."),
        ("user", "How many people live there?"),
    ]
    listed = zett("sessions", "list", "--db", str(db), "--json")
    assert listed.returncode == 0, listed.stderr
    records = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["session_id"], r["messages"], r["last_stop"]) for r in records] == [(sid, 4, None)]
    table = zett("sessions", "list", "--db", str(db))
    assert sid[:8] in table.stdout and sid not in table.stdout  # a unique prefix
    assert "ok" in table.stdout


def test_show_prints_each_stop_as_describe_words_it(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    refusal = Reply.file(Path(__file__).parent / "recordings/openai_chat__stream_refusal_delta.sse")
    with ReplayServer([tool_call_reply(), refusal]) as server:
        done = zett(
            "run", "-m", "openai:gpt-x", "--db", str(db), "Weather?", env=openai_env(server)
        )
    assert done.returncode == EXIT_CODES["refusal"], done.stderr
    sid = _session_id(done.stderr)
    shown = zett("sessions", "show", sid, "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "user: Weather?"
    assert any("🔧 get_weather" in line for line in lines)
    assert any(line.strip().startswith("↳ get_weather: Paris") for line in lines)
    stop_lines = [line.strip() for line in lines if "⚠ stopped:" in line]
    assert len(stop_lines) == 1
    from zett_agent import AssistantMessage
    from zett_agent.sessions import SQLiteSessionStore

    async def last_stop() -> str:
        async with SQLiteSessionStore(db) as store:
            messages = await store.load(sid)
        last = messages[-1]
        assert isinstance(last, AssistantMessage) and last.stop is not None
        return last.stop.describe()

    import anyio

    assert stop_lines[-1] == f"⚠ stopped: {anyio.run(last_stop)}"
    missing = zett("sessions", "show", "nope", "--db", str(db))
    assert missing.returncode == EXIT_CODES["error"]
    assert "no session 'nope'" in missing.stderr


def test_resume_an_interrupted_session(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    cut = text_reply("Half of an answer that never ends", drop_after=4)
    with ReplayServer([cut, text_reply(" and here is the rest.")]) as server:
        env = openai_env(server)
        done = zett("run", "-m", "openai:gpt-x", "--tools", "none", "--db", str(db), "x", env=env)
        assert done.returncode == EXIT_CODES["interrupted"], done.stderr
        sid = _session_id(done.stderr)
        listed = zett("sessions", "list", "--db", str(db), "--json")
        assert json.loads(listed.stdout)["last_stop"].startswith("interrupted")
        resumed = zett("sessions", "resume", sid, "--db", str(db), "-m", "openai:gpt-x",
                       "--tools", "none", env=env)  # fmt: skip
        sent = server.requests[1].json["messages"]
    assert resumed.returncode == EXIT_CODES["ok"], resumed.stderr
    assert resumed.stdout == " and here is the rest.\n"
    assert sent[1]["role"] == "assistant" and sent[1]["content"].startswith("Half of an")
    # A session that ended normally cannot be resumed: exit 1, nothing sent.
    with ReplayServer([]) as server:
        again = zett("sessions", "resume", sid, "--db", str(db), "-m", "openai:gpt-x",
                     env=openai_env(server))  # fmt: skip
        assert not server.requests
    assert again.returncode == EXIT_CODES["error"]
    assert "ResumeError" in again.stderr


def test_session_usage_errors(tmp_path: Path) -> None:
    assert zett("run", "--session", "abc", "x").returncode == EXIT_CODES["usage"]
    no_db = zett("sessions", "list", "--db", str(tmp_path / "none.sqlite3"))
    assert no_db.returncode == EXIT_CODES["usage"]
    assert "no such file" in no_db.stderr
    assert not (tmp_path / "none.sqlite3").exists()  # never made by a read
