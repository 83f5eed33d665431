"""Ctrl-C on a real terminal (a pty): at ``zett run``'s approval prompt it ends the
run at once with exit status 130, and nothing is lost (the stored request waits
to be decided); Ctrl-D there leaves the calls waiting (exit 9).

Also when this suite ignores SIGINT (run as a background job, ``pytest &``): the
child is spawned with the default SIGINT disposition (``helpers.default_sigint``),
else a Python started with SIGINT ignored never sees Ctrl-C and the test would wait
for its timeout."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from terminal import finish, spawn_zett
from test_approvals_cli import answer, weather_call
from test_cli import EXIT_CODES, openai_env, zett
from zett_agent.testing import ReplayServer


@pytest.fixture(params=["sigint-default", "sigint-ignored"])
def parent_sigint(request: pytest.FixtureRequest) -> Iterator[None]:
    """The suite as run from a terminal, then as a background job (SIGINT ignored)."""
    if request.param == "sigint-default":
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.realclock  # a real terminal and process: "at once" is wall time (5 s margin)
@pytest.mark.usefixtures("parent_sigint")
def test_ctrl_c_at_the_approval_prompt_exits_130_at_once_and_loses_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.sqlite3"
    with ReplayServer([weather_call(), answer("Rainy.")]) as server:
        env = openai_env(server)
        args = ("-m", "openai:gpt-x", "--db", str(db), "--require-approval", "get_weather")
        child = spawn_zett("run", *args, "Weather in Paris?", env=env)
        child.expect_exact("approve? [y/N]")
        started = time.monotonic()
        child.sendintr()
        status = finish(child, timeout=90)
        took = time.monotonic() - started
        output = child.before or ""
        assert status == EXIT_CODES["cancelled"] == 130, output
        assert took < 30, f"Ctrl-C took {took:.1f} s to end the run"  # a margin no load reaches
        assert "Traceback" not in output and "cancelled" in output
        assert len(server.requests) == 1  # nothing was decided, nothing went on
        listed = zett("sessions", "list", "--db", str(db), "--json")
        record = json.loads(listed.stdout)
        assert record["waiting_for_approval"] == ["get_weather"]  # the request is kept
        resumed = zett("sessions", "resume", record["session_id"][:8], "--db", str(db),
                       "-m", "openai:gpt-x", "--yes", env=env)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert "Rainy." in resumed.stdout


def test_ctrl_d_at_the_approval_prompt_leaves_the_calls_waiting() -> None:
    with ReplayServer([weather_call(), answer("never sent")]) as server:
        child = spawn_zett("run", "-m", "openai:gpt-x", "--require-approval", "get_weather",
                           "Weather in Paris?", env=openai_env(server))  # fmt: skip
        child.expect_exact("approve? [y/N]")
        child.sendeof()
        status = finish(child)
        assert len(server.requests) == 1
    assert status == EXIT_CODES["approval"], child.before
    assert "waiting for approval: get_weather" in (child.before or "")
