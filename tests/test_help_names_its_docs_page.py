"""``zett --help`` and every command's ``--help`` (subcommands too) end by naming the
docs page that documents the command, as a path under docs/ that exists and speaks
of that command."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from zett_agent.cli import app

ROOT = Path(__file__).parent.parent


def _paths(command: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    for name, sub in getattr(command, "commands", {}).items():
        found += _paths(sub, (*prefix, name))
    return found


PATHS = _paths(typer.main.get_command(app))


def _named_page(args: tuple[str, ...]) -> str:
    done = CliRunner().invoke(app, [*args, "--help"])
    assert done.exit_code == 0, done.output
    pages = re.findall(r"Documentation: (docs/\S+\.md)", " ".join(done.output.split()))
    assert pages, f"zett {' '.join(args)} --help names no docs page:\n{done.output}"
    return pages[0]


def test_every_command_is_listed() -> None:
    assert {path[0] for path in PATHS if path} >= {"run", "chat", "sessions", "serve"}


@pytest.mark.parametrize("args", PATHS, ids=lambda p: " ".join(("zett", *p)))
def test_the_help_names_a_page_that_documents_the_command(args: tuple[str, ...]) -> None:
    page = _named_page(args)
    text = (ROOT / page).read_text()
    if args:
        assert f"zett {args[0]}" in text, f"{page} does not speak of zett {args[0]}"
