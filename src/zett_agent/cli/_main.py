"""The ``zett`` typer ``app``, the exit codes, and the consoles every command prints to.

Each command lives in its own module of this package (``_run.py``, ``_inspect.py``,
``_providers.py``, ``_sessions.py``...) and registers itself on :data:`app`; the
package's ``__init__`` imports them. This module and the command modules import
only typer at load time: the runtime (httpx, pydantic, the agent loop) is
imported inside the commands, so ``zett --help`` stays fast.

stdout holds the answer only (or ``--json`` records); notices, tool lines,
spinners and errors go to stderr. ``NO_COLOR`` turns colour off.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "DEFAULT_MODEL",
    "EXIT_CODES",
    "EXIT_TABLE",
    "REMEMBERED",
    "AttemptTimeoutOption",
    "ContinueOption",
    "MaxCostOption",
    "MaxTokensOption",
    "MaxTotalTokensOption",
    "MaxTurnsOption",
    "McpOption",
    "ModelOption",
    "NewSessionOption",
    "OneLineCommands",
    "ReasoningOption",
    "RequireApprovalOption",
    "SessionDbOption",
    "SessionOption",
    "SystemOption",
    "ToolChoiceOption",
    "ToolsOption",
    "YesOption",
    "app",
    "err_console",
    "explicit_options",
    "first_sentence",
    "out_console",
]

DEFAULT_MODEL = "llamacpp:smollm2"
"""The model ``zett run`` uses without ``--model``: local, free, no key needed."""

# Options that ``zett run``, ``zett chat``, ``zett sessions resume`` and ``zett serve``
# share, spelled once (a command lists those it takes).
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        envvar="ZETT_MODEL",
        show_default=False,
        help="provider:model-name; several joined by commas are a fallback chain, "
        "tried in order (anthropic:claude-sonnet-4-5,openai:gpt-5). Unset: a stored "
        f"session's own model, else ZETT_MODEL, else {DEFAULT_MODEL}. Given, it wins "
        "over a stored session's model (ZETT_MODEL does not: it is for new sessions).",
    ),
]
MaxTokensOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Output limit of each model call, in tokens (the local model's default: 512).",
    ),
]
MaxTurnsOption = Annotated[int | None, typer.Option(min=1, help="Model calls allowed in a run.")]
ToolsOption = Annotated[
    str,
    typer.Option(
        help="Tools to offer: demo (get_weather, get_time), none, "
        "or demo tool names joined by commas (get_weather)."
    ),
]
ToolChoiceOption = Annotated[
    str | None,
    typer.Option(
        help="auto, none, required, or an offered tool's name (an MCP tool's too) to make "
        "the first call use it (later calls are auto once a tool ran). On the local "
        "model the tools are shown to the model only with a tool choice.",
    ),
]
SystemOption = Annotated[str | None, typer.Option(help="Instructions (system prompt).")]
SessionDbOption = Annotated[
    Path | None,
    typer.Option(envvar="ZETT_DB", help="SQLite file to store the session in."),
]
SessionOption = Annotated[
    str | None,
    typer.Option(
        help="A stored session to continue: its id or a unique prefix of it (needs --db). "
        "An unknown id is refused; --new-session makes one."
    ),
]
NewSessionOption = Annotated[
    str | None,
    typer.Option(help="Start a new stored session with this id (needs --db)."),
]
ContinueOption = Annotated[
    bool,
    typer.Option(
        "--continue", "-c", help="Continue the latest session of --db (the last one written)."
    ),
]
MaxCostOption = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        help="End the run once its answers cost this many US dollars (exit 10); "
        "refused before sending when a model's price is unknown. Needs the "
        "'prices' extra.",
    ),
]
MaxTotalTokensOption = Annotated[
    int | None,
    typer.Option(min=1, help="End the run once it used this many tokens (exit 11)."),
]
ReasoningOption = Annotated[
    str | None,
    typer.Option(
        help="Reasoning effort: none, minimal, low, medium, high, xhigh, max, "
        "or a thinking budget in tokens (a number), as the provider takes it."
    ),
]
AttemptTimeoutOption = Annotated[
    float | None,
    typer.Option(
        min=0.1,
        help="Seconds each model call attempt may take, streamed or not (per call "
        "attempt, not per run: every call and every retry gets its own). Default 600.",
    ),
]
McpOption = Annotated[
    list[str] | None,
    typer.Option(
        help="An MCP server whose tools to offer: a command line ('npx -y PKG ARGS') "
        "or an http(s):// URL. Repeatable. Needs the 'mcp' extra."
    ),
]
McpAuthOption = Annotated[
    str | None,
    typer.Option(
        help="How the --mcp http(s):// servers are authorized: 'oauth' (prints the "
        "authorization URL and waits for the URL the browser was sent back to; the "
        "token is kept in a file only you can read), or 'command:CMD' (CMD prints a "
        "token; run again after a 401)."
    ),
]
RequireApprovalOption = Annotated[
    list[str] | None,
    typer.Option(
        help="Tools whose calls wait for your approval: names joined by commas, "
        "or all. Asked y/N on a terminal."
    ),
]
YesOption = Annotated[
    bool, typer.Option("--yes", "-y", help="Approve every call that waits for approval.")
]

EXIT_CODES: Mapping[str, int] = {
    "ok": 0,
    "error": 1,
    "usage": 2,
    "refusal": 3,
    "max_output": 4,
    "context_full": 5,
    "interrupted": 6,
    "max_turns": 7,
    "other": 8,
    "approval": 9,
    "max_cost": 10,
    "max_total_tokens": 11,
    "approval_conflict": 12,
    "cancelled": 130,
}
"""Exit status of ``zett run``, ``zett sessions resume`` and ``zett inspect`` by
how the answer ended. ``ok`` is a normal end (the model finished); ``other``
covers OTHER and a PAUSED turn that was not continued; ``usage`` is a bad command
line; ``approval_conflict`` a decision that lost to one stored first
(:class:`~zett_agent.approvals.ApprovalConflictError`); ``cancelled`` is Ctrl-C
or SIGTERM."""

_EXIT_MEANING = {
    "ok": "the model finished (or the run ended normally)",
    "error": "a provider, network or configuration error, or an answer that stayed "
    "invalid for --output-schema after its retry",
    "usage": "bad command line",
    "refusal": "the model or a safety system refused",
    "max_output": "the output limit cut the answer off",
    "context_full": "the context window filled (also a prompt too long for it)",
    "interrupted": "the provider or the connection ended the answer",
    "max_turns": "--max-turns model calls were used up",
    "other": "another abnormal stop (unknown reason, unfinished pause)",
    "approval": "tool calls wait for approval and nobody could answer (no terminal, no --yes)",
    "max_cost": "--max-cost was spent (the run's answers cost that many US dollars)",
    "max_total_tokens": "--max-total-tokens input plus output tokens were used",
    "approval_conflict": "the calls were decided already (another process decided "
    "first); this decision was not stored and nothing ran",
    "cancelled": "Ctrl-C or SIGTERM",
}
EXIT_TABLE = "\n\n".join(
    f"{code}  {name}: {_EXIT_MEANING[name]}"
    for name, code in sorted(EXIT_CODES.items(), key=lambda i: i[1])
)
"""The exit codes as help text (one paragraph each)."""


REMEMBERED = ("model", "tools", "mcp", "require_approval")
"""The options a stored session remembers (:mod:`zett_agent.cli._remembered`)."""


def explicit_options(ctx: typer.Context, names: tuple[str, ...]) -> frozenset[str]:
    """Which of the parameters ``names`` were given on the command line (not taken
    from an environment variable or left at their default)."""
    given = set()
    for name in names:
        source = ctx.get_parameter_source(name)  # typer's own click: compare by name
        if source is not None and source.name == "COMMANDLINE":
            given.add(name)
    return frozenset(given)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("zett-agent")
        except PackageNotFoundError:  # run from a source tree without installing
            number = "unknown (not installed)"
        typer.echo(f"zett-agent {number}")
        raise typer.Exit()


# The docs page (its path under docs/ in the repository; there is no hosted site)
# that documents each command; each command's --help ends by naming it, its
# subcommands' too. A command not listed here names DOCS_PAGE.
DOCS_PAGE = "docs/cli.md"
DOCS_PAGES = {
    "run": "docs/cli.md",
    "chat": "docs/cli.md",
    "sessions": "docs/cli.md",
    "inspect": "docs/cli.md",
    "providers": "docs/providers/index.md",
    "serve": "docs/serve.md",
    "worker": "docs/durable.md",
    "submit": "docs/durable.md",
    "runs": "docs/durable.md",
}
ROOT_EPILOG = (
    f"Documentation: docs/index.md (start here) and {DOCS_PAGE} (every command), "
    "in the zett-agent repository; each command's --help names its page."
)


def _name_docs_page(command: Any, page: str) -> None:
    """End ``command``'s help (and its subcommands') with the docs page that documents it."""
    # a nested group of OneLineCommands named pages for its own commands first
    if not command.epilog or command.epilog.startswith("Documentation: docs/"):
        command.epilog = f"Documentation: {page} (in the zett-agent repository)."
    for sub in getattr(command, "commands", {}).values():
        _name_docs_page(sub, page)


def leave_without_finalizing_temporal(code: object) -> None:
    """End a command that used Temporal's client here, with exit status ``code``,
    without finalizing the interpreter. temporalio's native core keeps threads
    that can abort a finalizing interpreter ("Fatal Python error:
    PyGILState_Release", SIGABRT, exit -6 after the command had printed its
    answer; temporalio/sdk-python#300, open), so once its bridge is loaded the
    command flushes its output and logs and leaves with ``os._exit``. Returns
    (the normal exit follows) when temporalio was not used. Only :func:`main`,
    the process's own entry, calls it (never ``app`` run in a host or a test's
    CliRunner, whose process goes on)."""
    if "temporalio.bridge.temporal_sdk_bridge" not in sys.modules:
        return
    status = 0 if code is None else code if isinstance(code, int) else 1
    if not isinstance(code, int | None):
        print(code, file=sys.stderr)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


class OneLineCommands(typer.core.TyperGroup):
    """``zett --help`` lists each command with the first sentence of its help,
    whole (wrapped when long), never cut off with "..." as click's default does.
    Each command's help names its docs page (``DOCS_PAGES``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.epilog = self.epilog or ROOT_EPILOG
        for name, command in self.commands.items():
            _name_docs_page(command, DOCS_PAGES.get(name, DOCS_PAGE))

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except _USAGE_ERRORS as error:
            _show_safe(error)
            raise

    def invoke(self, ctx: Any) -> Any:
        from zett_agent._safe_log import safe_root_logging

        try:
            with safe_root_logging():  # no logger prints raw (Python's last resort)
                return super().invoke(ctx)
        except _USAGE_ERRORS as error:
            _show_safe(error)
            raise

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.short_help and command.help:
                command.short_help = first_sentence(command.help)
        super().format_commands(ctx, formatter)


_USAGE_ERRORS: type[Exception] = next(
    kind for kind in typer.BadParameter.__mro__ if kind.__name__ == "ClickException"
)
"""The base of the errors typer prints as ``Error: ...`` (click's ``ClickException``:
typer 0.29 vendors click as ``typer._click``, older ones use click itself)."""


def _show_safe(error: Any) -> None:
    """Show the control characters of ``error``'s message escaped
    (:func:`~zett_agent._terminal_text.terminal_safe`), as typer prints it: a usage
    error repeats what the user (or an environment variable, a file name, an error
    of a library) gave, and none of that may drive the terminal. typer's click
    escapes a few of its own messages already (``\\x1b``, which stays as it is); this
    covers the rest, zett's own ``BadParameter`` texts included. Every command's
    errors pass here: :class:`OneLineCommands` parses the arguments of its
    subcommands and runs them inside ``make_context`` and ``invoke``."""
    from zett_agent._terminal_text import terminal_safe

    error.message = terminal_safe(error.message)


def first_sentence(text: str) -> str:
    """The first sentence of a help text's first paragraph, without its full stop."""
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    head, sep, _ = paragraph.partition(". ")
    return (head if sep else paragraph).rstrip(".")


app = typer.Typer(
    cls=OneLineCommands,
    name="zett",
    help="zett-agent: an agent runtime whose host always knows why the model stopped.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rendering it with rich costs ~90 ms per `zett --help`
)


@app.callback()
def _main(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """zett-agent: an agent runtime whose host always knows why the model stopped."""


def _no_color() -> bool:
    return bool(os.environ.get("NO_COLOR"))


def _safe_console(**options: Any) -> Console:
    """A rich console whose rendered text passes
    :func:`~zett_agent._terminal_text.terminal_safe`: every segment of text (not
    rich's own control segments, not the styles it writes) is shown with its control
    characters escaped, so no text zett did not write drives the terminal. Markup is
    off (a ``[link=...]`` in a server's text would be an OSC 8 link): styles are
    given as ``style=`` or ``Text`` spans. ``safe=False`` keeps the text exact (the
    answer on a stdout that is not a terminal)."""
    from rich.console import Console
    from rich.segment import Segment

    from zett_agent._terminal_text import terminal_safe

    class _Safe(Console):
        safe = True

        def render(self, renderable: Any, options: Any = None) -> Iterator[Segment]:
            for segment in super().render(renderable, options):
                if self.safe and not segment.control and segment.text:
                    text = terminal_safe(segment.text)
                    if text is not segment.text:
                        segment = Segment(text, segment.style, segment.control)
                yield segment

        def on_broken_pipe(self) -> None:
            if self.stderr:
                super().on_broken_pipe()
            else:
                raise BrokenPipeError

    return _Safe(markup=False, **options)


def out_console() -> Console:
    """The console for the answer (stdout): the text is shown safe
    (:func:`_safe_console`) on a terminal, exact when stdout is a file or a pipe. A
    closed stdout (``| head``) raises ``BrokenPipeError`` (rich would exit 1 by
    itself): the commands end quietly."""
    console = _safe_console(highlight=False, no_color=_no_color())
    console.safe = console.is_terminal  # type: ignore[attr-defined]
    return console


def err_console() -> Console:
    """The console for notices, tool lines, spinners and errors (stderr), its text
    always shown safe (:func:`_safe_console`)."""
    return _safe_console(stderr=True, highlight=False, no_color=_no_color())


def main() -> None:
    """The ``zett`` command: the console script and ``python -m zett_agent.cli``
    (``app`` with the process's exit; see :func:`leave_without_finalizing_temporal`)."""
    try:
        app()
    except SystemExit as done:
        leave_without_finalizing_temporal(done.code)
        raise
