"""What a newcomer reads first: ``zett --help`` (and its groups) lists each command
with its whole first sentence, never cut off with "..."; ``run --help`` says each
exit status once ("error: an error:" no more); a model named without its provider
(``gpt-4o``) gets "did you mean 'openai:gpt-4o'?", and that mistake (any model that
cannot be resolved) exits 1 in ``zett run`` and ``zett serve`` alike; ``zett serve
--mcp <a command that does not exist>`` says so in one line on stderr."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from zett_agent.cli import EXIT_CODES


def zett(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args],
        env={**os.environ, "COLUMNS": "80", "NO_COLOR": "1", **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("group", [(), ("runs",), ("sessions",)], ids=["zett", "runs", "sessions"])
def test_help_lists_whole_one_liners(group: tuple[str, ...]) -> None:
    done = zett(*group, "--help")
    assert done.returncode == 0, done.stderr
    commands = done.stdout.split("Commands:", 1)[1]
    cut = [line for line in commands.splitlines() if line.rstrip().endswith(("...", "…"))]
    assert cut == [], commands
    if not group:
        assert "List the providers: wire protocol, key variables, whether a key" in commands


def test_run_help_names_the_error_status_once() -> None:
    text = " ".join(zett("run", "--help").stdout.split())
    assert "error: an error" not in text
    assert "1 error: a provider, network or configuration error" in text


@pytest.mark.parametrize(
    ("name", "guess"),
    [("gpt-4o", "openai:gpt-4o"), ("claude-sonnet-4-5", "anthropic:claude-sonnet-4-5")],
)
def test_a_model_without_its_provider_gets_a_guess(name: str, guess: str) -> None:
    from zett_agent.errors import ConfigError
    from zett_agent.model import resolve_model

    with pytest.raises(ConfigError, match=f"did you mean '{guess}'"):
        resolve_model(name)


@pytest.mark.parametrize("command", ["run", "serve"])
def test_the_same_model_mistake_exits_1_in_run_and_serve(command: str) -> None:
    args = ("hi",) if command == "run" else ("--port", "0")
    done = zett(command, "-m", "gpt-4o", *args)
    assert done.returncode == EXIT_CODES["error"] == 1, done.stderr
    said = " ".join(done.stderr.split())
    assert (
        "model must be 'provider:model-name', got 'gpt-4o': did you mean 'openai:gpt-4o'?" in said
    )
    assert len(done.stderr.strip().splitlines()) <= 2  # one message (wrapped at 80 columns)


def test_an_mcp_command_that_does_not_exist_is_one_line(tmp_path: object) -> None:
    pytest.importorskip("mcp", reason="MCP tools need the 'mcp' extra")
    pytest.importorskip("uvicorn", reason="zett serve needs the 'serve' extra")
    done = zett(
        "serve", "-m", "openai:gpt-x", "--mcp", "no-such-mcp-command-here", "--port", "0",
        "--db", f"{tmp_path}/s.db", OPENAI_API_KEY="test", COLUMNS="300",
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "✖ zett serve: MCP server no-such-mcp-command-here could not be started: "
        "FileNotFoundError: No such file or directory"
    ]
