"""``zett sessions list|show|resume``: stored sessions from the command line.

Sessions are those ``zett run --db FILE`` (or an ``AgentClient`` on the same
SQLite file) stored. ``show`` prints a conversation with each abnormal stop as
:meth:`StopInfo.describe <zett_agent.stop.StopInfo.describe>` words it;
``resume`` continues an interrupted or cut-off last answer with the notices and
exit codes of ``zett run``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from zett_agent.cli._main import (
    EXIT_CODES,
    MaxTokensOption,
    McpAuthOption,
    McpOption,
    ModelOption,
    OneLineCommands,
    RequireApprovalOption,
    ToolsOption,
    YesOption,
    app,
    err_console,
    out_console,
)

if TYPE_CHECKING:
    from zett_agent._messages import Message

__all__ = ["sessions_app"]

sessions_app = typer.Typer(
    cls=OneLineCommands,
    name="sessions",
    help="List, show and resume sessions stored with zett run --db FILE.",
    no_args_is_help=True,
)
app.add_typer(sessions_app)

DbOption = Annotated[
    Path, typer.Option(envvar="ZETT_DB", help="SQLite file the sessions are stored in.")
]


def _open_db(db: Path) -> Any:
    """The store of ``db``; a usage error (exit 2) when the file does not exist."""
    from zett_agent.sessions import SQLiteSessionStore

    if not db.is_file():
        raise typer.BadParameter(f"no such file: {db}", param_hint="--db")
    return SQLiteSessionStore(db)


def _fail(error: BaseException) -> typer.Exit:
    err_console().print(f"✖ {type(error).__name__}: {error}", style="bold red", markup=False)
    return typer.Exit(EXIT_CODES["error"])


@sessions_app.command("list")
def list_sessions(
    db: DbOption,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON line per session.")] = False,
) -> None:
    """The stored sessions, most recently written first: id (its shortest unique
    prefix, which every command taking an id accepts), messages, last write, and
    how the last answer ended ("waiting for approval: NAMES" when tool calls wait)."""
    import anyio

    from zett_agent.cli._session_ids import unique_prefixes
    from zett_agent.errors import ZettError

    store = _open_db(db)

    async def collect() -> list[tuple[Any, str | None, list[str], int]]:
        async with store:
            infos = await store.list_sessions()
            found = []
            for info in infos:
                rows = await store.rows(info.session_id)
                found.append((info, *_last_answer(rows), _messages(rows)))
            return found

    try:
        found = anyio.run(collect)
    except ZettError as error:
        raise _fail(error) from None
    if json_output:
        for info, stop, waiting, count in found:
            record = {"session_id": info.session_id, "messages": count,
                      "updated_at": info.updated_at, "last_stop": stop,
                      "waiting_for_approval": waiting}  # fmt: skip
            typer.echo(json.dumps(record, ensure_ascii=False))
        return
    if not found:
        err_console().print(f"no sessions in {db}", markup=False)
        return
    from datetime import datetime

    from rich import box
    from rich.table import Table

    shown = unique_prefixes([info.session_id for info, *_ in found])
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("session", "messages", "last written", "last answer"):
        table.add_column(column, overflow="fold")
    for info, stop, waiting, count in found:
        when = datetime.fromtimestamp(info.updated_at).strftime("%Y-%m-%d %H:%M:%S")
        last = f"waiting for approval: {', '.join(waiting)}" if waiting else stop or "ok"
        table.add_row(shown[info.session_id], str(count), when, last)
    out_console().print(table)


def _messages(rows: Any) -> int:
    """How many of ``rows`` are messages (records left out: approvals, starts, settings)."""
    from zett_agent._records import is_record

    return sum(not is_record(row.message) for row in rows)


def _last_answer(rows: list[Any]) -> tuple[str | None, list[str]]:
    """How the session's last answer ended (``describe()``, None for a normal
    end) and the names of the tool calls waiting for approval (none: empty)."""
    from zett_agent._messages import AssistantMessage
    from zett_agent.sessions._base import live_rows
    from zett_agent.tools._approvals import pending_request

    entries = [row.message for row in live_rows(rows)]
    request = pending_request(entries)
    waiting = [call.name for call in request.calls] if request is not None else []
    for message in reversed(entries):
        if isinstance(message, AssistantMessage):
            stop = message.stop
            shown = stop.describe() if stop is not None and not stop.ok else None
            return shown, waiting
    return None, waiting


def _resolve_id(db: Path, text: str) -> str:
    """The stored session ``text`` names (its id or a unique prefix); a one-line
    error and exit status 1 otherwise."""
    from zett_agent.cli._session_ids import SessionPickError, match_session, stored_session_ids
    from zett_agent.errors import ZettError

    try:
        return match_session(stored_session_ids(db), text, db)
    except (SessionPickError, ZettError) as error:
        err_console().print(
            f"✖ {error}", style="bold red", markup=False, highlight=False, soft_wrap=True
        )
        raise typer.Exit(EXIT_CODES["error"]) from None


@sessions_app.command()
def show(
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The session's id, or a unique prefix of it.")
    ],
    db: DbOption,
) -> None:
    """Print a stored conversation: each message, tool call and result, and each
    abnormal stop as "⚠ stopped: ..." in the words of StopInfo.describe()."""
    import anyio
    from rich.text import Text

    from zett_agent._messages import (
        AssistantMessage,
        SystemMessage,
        ToolResultMessage,
        UserMessage,
    )
    from zett_agent.errors import ZettError

    store = _open_db(db)
    session_id = _resolve_id(db, session_id)

    async def load() -> list[Message]:
        async with store:
            messages: list[Message] = await store.load(session_id)
            return messages

    try:
        messages = anyio.run(load)
    except ZettError as error:
        raise _fail(error) from None
    if not messages:
        err_console().print(f"no session {session_id!r} in {db}", markup=False)
        raise typer.Exit(EXIT_CODES["error"])
    out = out_console()
    for message in messages:
        match message:
            case SystemMessage(content=content):
                out.print(Text.assemble(("system: ", "bold magenta"), content))
            case UserMessage(content=content, parts=parts):
                out.print(Text.assemble(("user: ", "bold blue"), content))
                for part in parts:  # attachments: described, never printed as bytes
                    out.print(Text(f"  {part.describe()}", style="dim"))
            case AssistantMessage():
                out.print(Text.assemble(("assistant: ", "bold green"), message.text))
                for call in message.tool_calls:
                    out.print(Text(f"  🔧 {call.name}({call.arguments})", style="cyan"))
                if message.stop is not None and not message.stop.ok:  # abnormal only
                    colour = (
                        "red"
                        if message.stop.reason.value in ("refusal", "interrupted")
                        else "yellow"
                    )
                    out.print(Text(f"  ⚠ stopped: {message.stop.describe()}", style=colour))
            case ToolResultMessage(name=name, content=content, is_error=is_error):
                style = "red" if is_error else "green"
                out.print(Text(f"  ↳ {name}: {content}", style=style))


@sessions_app.command()
def resume(
    ctx: typer.Context,
    session_id: Annotated[
        str, typer.Argument(metavar="ID", help="The session's id, or a unique prefix of it.")
    ],
    db: DbOption,
    model: ModelOption = None,
    max_tokens: MaxTokensOption = None,
    tools: ToolsOption = "demo",
    json_events: Annotated[
        bool, typer.Option("--json", help="Print one JSON record per event.")
    ] = False,
    mcp: McpOption = None,
    mcp_auth: McpAuthOption = None,
    require_approval: RequireApprovalOption = None,
    yes: YesOption = False,
) -> None:
    """Continue the session's interrupted or cut-off last answer (INTERRUPTED or
    MAX_OUTPUT), printing and exiting as zett run does. The session's own model,
    tools, MCP servers and approval options are used unless given here. A session whose last
    answer ended normally, was refused, or filled the context cannot be resumed
    (exit 1, nothing sent). A session whose tool calls wait for approval:
    they are decided first (y/N on a terminal, --yes), then it goes on."""
    from zett_agent.cli._main import REMEMBERED, explicit_options
    from zett_agent.cli._run import RunOptions, model_variable, run_in_terminal
    from zett_agent.demo_tools import select_demo_tools

    try:
        offered = select_demo_tools(tools)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--tools") from None
    _open_db(db)  # exists
    session_id = _resolve_id(db, session_id)
    options = RunOptions(
        prompt=None,
        model=model,
        max_tokens=max_tokens,
        tools=offered,
        json_events=json_events,
        db=db,
        session=session_id,
        new_session=False,
        model_variable=model_variable(ctx),
        mcp=tuple(mcp or ()),
        mcp_auth=mcp_auth,
        require_approval=tuple(require_approval or ()),
        yes=yes,
        explicit=explicit_options(ctx, REMEMBERED),
    )
    raise typer.Exit(run_in_terminal(options))
