"""Session ids on the command line, through the real command (a subprocess) against
a ReplayServer: ``zett sessions list`` shows unique prefixes and every command takes
one; ``-c/--continue`` is the latest session; a mistyped ``--session`` is refused
(``--new-session ID`` makes one); ``sessions resume`` of an unknown id says so; a
session waiting for approval is listed as waiting."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_approvals_cli import weather_call
from test_cli import EXIT_CODES, openai_env, text_reply, zett
from zett_agent.cli._session_ids import unique_prefixes
from zett_agent.testing import ReplayServer

RUN = ("run", "-m", "openai:gpt-x", "--tools", "none")


def _new_id(stderr: str) -> str:
    found = re.search(r"^session (\S+)$", stderr, flags=re.MULTILINE)
    assert found, stderr
    return found.group(1)


def test_unique_prefixes_are_as_short_as_unique_and_at_least_8() -> None:
    ids = ["abcdef0123456789", "abcdef0199999999", "ffff0000aaaa1111", "s1", "s10"]
    shown = unique_prefixes(ids)
    assert shown["ffff0000aaaa1111"] == "ffff0000"
    assert shown["abcdef0123456789"] == "abcdef012" and shown["abcdef0199999999"] == "abcdef019"
    assert shown["s1"] == "s1" and shown["s10"] == "s10"  # shorter than 8: whole


def test_list_fits_80_columns_and_a_prefix_names_the_session(tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite3")
    with ReplayServer([text_reply("Paris."), text_reply("2 million.")]) as server:
        env = openai_env(server)
        first = zett(*RUN, "--db", db, "Capital of France?", env=env)
        sid = _new_id(first.stderr)
        listed = zett("sessions", "list", "--db", db, env={"COLUMNS": "80"})
        assert listed.returncode == 0, listed.stderr
        row = next(line for line in listed.stdout.splitlines() if sid[:8] in line)
        assert sid not in listed.stdout and len(row) <= 80  # one line, no wrapped id
        shown = row.split()[0]
        again = zett(*RUN, "--db", db, "--session", shown, "How many people?", env=env)
        assert again.returncode == 0, again.stderr
        assert server.requests[1].json["messages"][1]["content"] == "Paris."
    printed = zett("sessions", "show", shown, "--db", db)
    assert printed.returncode == 0 and "assistant: 2 million." in printed.stdout


def test_a_mistyped_session_is_refused_and_nothing_is_sent(tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite3")
    with ReplayServer([text_reply("Paris.")]) as server:
        env = openai_env(server)
        assert zett(*RUN, "--db", db, "Capital of France?", env=env).returncode == 0
        typo = zett(*RUN, "--db", db, "--session", "nosuch", "And Spain?", env=env)
        assert len(server.requests) == 1  # nothing sent
    assert typo.returncode == EXIT_CODES["error"], typo.stderr
    assert "no session 'nosuch'" in typo.stderr and "--new-session nosuch" in typo.stderr
    records = zett("sessions", "list", "--db", db, "--json").stdout.splitlines()
    assert len(records) == 1  # no session was made under the typo
    resumed = zett("sessions", "resume", "nosuch", "--db", db, "-m", "openai:gpt-x")
    assert resumed.returncode == EXIT_CODES["error"]
    assert "no session 'nosuch'" in resumed.stderr and "empty" not in resumed.stderr


def test_new_session_makes_one_under_its_id_once(tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite3")
    with ReplayServer([text_reply("One."), text_reply("Two.")]) as server:
        env = openai_env(server)
        made = zett(*RUN, "--db", db, "--new-session", "trip-1", "Hi", env=env)
        assert made.returncode == 0, made.stderr
        assert _new_id(made.stderr) == "trip-1"
        taken = zett(*RUN, "--db", db, "--new-session", "trip-1", "Hi", env=env)
        assert taken.returncode == EXIT_CODES["error"] and "exists already" in taken.stderr
        assert "--session trip-1" in taken.stderr
        other = zett(*RUN, "--db", db, "--new-session", "trip-2", "Hi", env=env)
        assert other.returncode == 0
        both = zett(*RUN, "--db", db, "--session", "trip", "Hi", env=env)  # ambiguous
        assert both.returncode == EXIT_CODES["error"]
        assert "'trip' is the start of 2 sessions" in both.stderr
        assert len(server.requests) == 2


def test_continue_takes_the_latest_session(tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite3")
    empty = zett(*RUN, "--db", db, "-c", "Hi")
    assert empty.returncode == EXIT_CODES["error"] and "no session to continue" in empty.stderr
    with ReplayServer([text_reply("A."), text_reply("B."), text_reply("C.")]) as server:
        env = openai_env(server)
        zett(*RUN, "--db", db, "--new-session", "older", "first", env=env)
        zett(*RUN, "--db", db, "--new-session", "newer", "second", env=env)
        went_on = zett(*RUN, "--db", db, "--continue", "third", env=env)
        assert went_on.returncode == 0, went_on.stderr
        sent = [m["content"] for m in server.requests[2].json["messages"]]
    assert sent == ["second", "B.", "third"]
    assert "session" not in went_on.stderr  # not a new session
    both = zett(*RUN, "--db", db, "-c", "--session", "older", "x")
    assert both.returncode == EXIT_CODES["usage"]
    no_db = zett(*RUN, "-c", "x")
    assert no_db.returncode == EXIT_CODES["usage"] and "needs --db" in no_db.stderr


def test_a_session_waiting_for_approval_is_listed_as_waiting(tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite3")
    with ReplayServer([weather_call()]) as server:
        args = ("run", "-m", "openai:gpt-x", "--db", db, "--require-approval", "get_weather")
        waiting = zett(*args, "Weather?", env=openai_env(server))
    assert waiting.returncode == EXIT_CODES["approval"], waiting.stderr
    table = zett("sessions", "list", "--db", db, env={"COLUMNS": "100"})
    assert "waiting for approval: get_weather" in table.stdout
    assert " ok" not in table.stdout
    record = json.loads(zett("sessions", "list", "--db", db, "--json").stdout)
    assert record["waiting_for_approval"] == ["get_weather"]
