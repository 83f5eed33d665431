"""``zett serve``: the agent behind an HTTP server, for the page and AI SDK front ends.

Needs the ``serve`` extra (Starlette + uvicorn). The runtime and the extra are
imported only when the command runs, so ``zett --help`` loads neither. The server
itself is :mod:`zett_agent.serve`.

The address is bound before anything is printed: a port in use is one line on
stderr and exit status 1, and the URL printed has the port actually bound
(``--port 0``: one the system picks). On the local model (provider ``llamacpp``)
offered tools are sent with ``tool_choice`` ``auto`` unless ``--tool-choice``
says otherwise: its server shows the model no tools without one.

Every line it prints is shown safe (control characters escaped,
:mod:`zett_agent._terminal_text`): its own lines through a safe console, uvicorn's
error and access logs through the formatters of :mod:`._serve_log`, every other
logger through :func:`~zett_agent._safe_log.safe_root_logging` (as in every
command); a client's ids, a provider's or an MCP server's texts never drive the
terminal.
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from zett_agent.cli._main import (
    EXIT_CODES,
    McpAuthOption,
    McpOption,
    RequireApprovalOption,
    ToolChoiceOption,
    app,
    err_console,
)

if TYPE_CHECKING:
    import logging

__all__ = ["DEFAULT_MODEL", "bind", "serve"]

DEFAULT_MODEL = "llamacpp:smollm2"
"""The model without ``--model``: the local one, as ``zett run`` (no key, no credits)."""


@app.command()
def serve(
    model: Annotated[
        str, typer.Option("--model", "-m", envvar="ZETT_MODEL", help="provider:model-name")
    ] = DEFAULT_MODEL,
    db: Annotated[Path, typer.Option(help="SQLite file for the sessions.")] = Path("sessions.db"),
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    max_tokens: Annotated[
        int | None, typer.Option(min=1, help="Output limit of each model call, in tokens.")
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option(min=1, help="Model calls allowed in one run.")
    ] = None,
    tools: Annotated[
        str,
        typer.Option(
            help="Tools to offer: demo (get_weather, get_time), none, "
            "or demo tool names joined by commas."
        ),
    ] = "demo",
    system: Annotated[str | None, typer.Option(help="Instructions (system prompt).")] = None,
    tool_choice: ToolChoiceOption = None,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="ZETT_SERVE_TOKEN",
            help="Bearer token the API requires. Required off loopback: "
            "one is made and printed when not given.",
        ),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(help="Another Host name to answer to (repeatable; '*' any, token only)."),
    ] = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(help="An origin allowed to call the API from another site (repeatable)."),
    ] = None,
    mcp: McpOption = None,
    require_approval: RequireApprovalOption = None,
    mcp_auth: McpAuthOption = None,
    resumable: Annotated[
        bool,
        typer.Option(
            help="Runs outlive their client: a page may rejoin one (useChat resume: true) "
            "and stops it with POST /api/chat/{id}/stop."
        ),
    ] = False,
    durable: Annotated[
        bool,
        typer.Option(
            help="Serve the durable runs of the zett workers on the same --db: decisions "
            "of their waiting calls go to the workers, and with --resumable a page "
            "follows their answers live (needs the durable extra)."
        ),
    ] = False,
    access_log: Annotated[
        bool,
        typer.Option(help="Print a line per request on stdout (uvicorn's access log)."),
    ] = False,
) -> None:
    """Serve the agent over HTTP: a chat page at / and the AI SDK's UI message stream.

    The page streams answers, shows tool calls and every stop with why it happened,
    resumes cut-off answers and lists sessions. POST /api/chat speaks the Vercel AI
    SDK's UI message stream protocol (useChat), with a data-stop chunk per abnormal
    step. Calls of --require-approval tools wait for Approve / Deny on the page (or
    addToolApprovalResponse in any useChat page); --mcp servers' tools are offered,
    and what they ask the person is a form in the page. POST /api/ag-ui speaks
    AG-UI 1.0 (CopilotKit, @ag-ui/client's HttpAgent) over the same sessions and
    approvals: approvals are interrupts, and why the model stopped is a zett.stop
    custom event and RUN_FINISHED metadata. Only 127.0.0.1 by default; another
    address needs a bearer token.
    """
    try:
        import uvicorn

        from zett_agent.serve import ServeSettings, create_app
    except ImportError:
        raise typer.BadParameter(
            "zett serve needs the serve extra: pip install -e '.[serve]'", param_hint="serve"
        ) from None
    import logging
    import secrets

    from zett_agent._agent import Agent, AgentRunConfig
    from zett_agent.cli._approvals import approval_policy
    from zett_agent.cli._main import out_console
    from zett_agent.cli._run import validate_tool_choice
    from zett_agent.demo_tools import select_demo_tools
    from zett_agent.errors import ZettError
    from zett_agent.model._model import resolve_model
    from zett_agent.serve._security import is_loopback
    from zett_agent.sessions import SQLiteSessionStore

    out = out_console()  # what it prints names what the user gave: shown safe
    out.safe = True  # type: ignore[attr-defined]  # a log, not an answer: on a pipe too
    try:
        offered = select_demo_tools(tools)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--tools") from None
    validate_tool_choice(tool_choice, offered, tuple(mcp or ()))
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(24)
    config = AgentRunConfig(
        "zett-serve", instructions=system, approval=approval_policy(require_approval or ())
    )
    if max_tokens is not None:
        config.max_tokens = max_tokens
    if max_turns is not None:
        config.max_turns = max_turns
    try:
        resolved = resolve_model(model)
    except ZettError as error:  # as zett run says it: a configuration error, exit status 1
        err_console().print(
            f"✖ zett serve: {type(error).__name__}: {error}",
            style="bold red", markup=False, highlight=False, soft_wrap=True,
        )  # fmt: skip
        raise typer.Exit(EXIT_CODES["error"]) from None
    if tool_choice is None and (offered or mcp) and resolved.provider == "llamacpp":
        tool_choice = "auto"  # its server shows the model no tools without a choice
    config.tool_choice = tool_choice
    settings = ServeSettings(
        host=host,
        token=token,
        allowed_hosts=tuple(allowed_host or ()),
        cors_origins=tuple(cors_origin or ()),
        resumable=resumable,
    )
    toolset = None
    if mcp:
        from zett_agent.cli._mcp_tools import mcp_toolset

        try:
            toolset = mcp_toolset(mcp, auth=mcp_auth)
        except ZettError as error:
            raise typer.BadParameter(str(error), param_hint="--mcp") from None
    store = SQLiteSessionStore(db)
    runs = _durable_runs(db, store) if durable else None
    try:
        # the MCP servers start with the app (its lifespan), in its event loop
        web = create_app(
            Agent(resolved, config, offered), store, settings, owns=True, mcp=toolset, handoff=runs
        )
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    listening = bind(host, port, send_buffer=SEND_BUFFER_BYTES)
    port = listening.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"#token={token}" if token else "")
    names = ", ".join(tool.__name__ for tool in offered) or "none"
    if mcp:
        names += f" and the tools of {len(mcp)} MCP server{'s' if len(mcp) > 1 else ''}"
    out.print(f"zett serve: {url}", soft_wrap=True)
    choice = f" (tool choice {tool_choice})" if tool_choice and (offered or mcp) else ""
    out.print(
        f"  model {model}, tools: {names}{choice}, sessions in {db}", style="dim", soft_wrap=True
    )
    if require_approval:
        waiting = ", ".join(n.strip() for v in require_approval for n in v.split(",") if n.strip())
        out.print(f"  calls of {waiting} wait for approval on the page", style="dim")
    if getattr(resolved, "starts_server", False):
        out.print("  starting the local llama.cpp server first…", style="dim", soft_wrap=True)
    from zett_agent.cli._serve_log import log_config

    server = uvicorn.Server(
        uvicorn.Config(
            web,
            log_config=log_config(),  # every line it prints shown safe
            log_level="warning",
            access_log=access_log,
            timeout_graceful_shutdown=5,
        )
    )
    if access_log:  # its lines only, not uvicorn's startup chatter
        logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    logging.getLogger("uvicorn.error").addFilter(_one_line_startup_error)  # after its config
    try:
        server.run(sockets=[listening])
    except SystemExit:  # uvicorn's own exit when the app did not start (logged above)
        pass
    finally:
        listening.close()
        if runs is not None:
            import asyncio

            asyncio.run(runs.aclose())
    if not server.started:
        if not _SAID:  # else the one line that says why was printed
            err_console().print("✖ zett serve did not start (see above)", style="bold red")
        raise typer.Exit(EXIT_CODES["error"])


def _durable_runs(db: Path, store: Any) -> Any:
    """The :class:`~zett_agent.durable.DurableRuns` of the workers whose sessions are
    ``db`` (DBOS's system database beside it, as ``zett worker`` and ``zett runs``
    find it); a missing extra is a usage error, an unreachable database exit 1."""
    try:
        from zett_agent.durable._runs import DurableRuns
        from zett_agent.durable._runtime import system_database_for
    except ImportError:
        raise typer.BadParameter(
            "--durable needs the durable extra: pip install -e '.[durable]'",
            param_hint="--durable",
        ) from None
    from zett_agent.errors import ConfigError

    try:
        return DurableRuns(system_database_for(str(db)), sessions=store)
    except ConfigError as error:
        err_console().print(
            f"✖ zett serve --durable: {error}",
            style="bold red", markup=False, highlight=False, soft_wrap=True,
        )  # fmt: skip
        raise typer.Exit(EXIT_CODES["error"]) from None


SEND_BUFFER_BYTES = 64 * 1024
"""``SO_SNDBUF`` of ``zett serve``'s connections (the kernel doubles it: 128 KiB in
flight, 2.5 MB/s at a 50 ms round trip)."""


def bind(host: str, port: int, send_buffer: int | None = None) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: a free port), not yet listening.

    ``send_buffer``: the kernel's send buffer of each connection, in bytes
    (``SO_SNDBUF``, which accepted sockets take from the listening one; the kernel
    doubles it). Without a bound the kernel takes up to 4 MiB per connection of a
    client that does not read before the app's queue sees it (loopback, Linux's
    default ``tcp_wmem``), and the run keeps its model connection meanwhile;
    ``zett serve`` gives it :data:`SEND_BUFFER_BYTES`.

    An address that cannot be bound (in use, not this machine's) is one line on
    stderr and exit status 1, before anything else is printed."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as error:
        _cannot_listen(host, port, error)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # not over a live listener
        if send_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        sock.bind(address)
    except OSError as error:
        sock.close()
        _cannot_listen(host, port, error)
    return sock


def _cannot_listen(host: str, port: int, error: OSError) -> Any:
    why = error.strerror or str(error)
    hint = " (another server listens there: pick another --port, or 0 for any)"
    if error.errno != errno.EADDRINUSE:
        hint = ""
    err_console().print(
        f"✖ zett serve cannot listen on {host}:{port}: {why}{hint}",
        style="bold red",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(EXIT_CODES["error"])


_SAID: list[str] = []
"""The one-line startup error :func:`_one_line_startup_error` printed, if any."""


def _one_line_startup_error(record: logging.LogRecord) -> bool:
    """uvicorn logs an app that could not start with the whole traceback, then
    "Application startup failed. Exiting."; when a zett error stopped it (an
    ``--mcp`` server that cannot be started), print that error as the one line
    on stderr, as ``zett run`` does, and drop uvicorn's two records."""
    text = record.getMessage()
    if text.startswith("Traceback") and "\nzett_agent.errors." in text:
        last = text.strip().splitlines()[-1]
        said = f"✖ zett serve: {last.split(': ', 1)[-1]}"
        _SAID.append(said)
        err_console().print(said, style="bold red", markup=False, highlight=False, soft_wrap=True)
        return False
    return not (_SAID and text.startswith("Application startup failed"))
