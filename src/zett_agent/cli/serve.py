"""``zett serve``: the agent behind an HTTP server, for the page and AI SDK front ends.

Needs the ``serve`` extra (Starlette + uvicorn). The runtime and the extra are
imported only when the command runs, so ``zett --help`` loads neither. The server
itself is :mod:`zett_agent.serve`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from zett_agent.cli.main import McpAuthOption, McpOption, app

__all__ = ["DEFAULT_MODEL", "serve"]

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
    mcp_auth: McpAuthOption = None,
) -> None:
    """Serve the agent over HTTP: a chat page at / and the AI SDK's UI message stream.

    The page streams answers, shows tool calls and every stop with why it happened,
    resumes cut-off answers and lists sessions. POST /api/chat speaks the Vercel AI
    SDK's UI message stream protocol (useChat), with a data-stop chunk per abnormal
    step. Only 127.0.0.1 by default; another address needs a bearer token.
    --mcp servers' tools are offered; what they ask the person is a form in the page.
    """
    try:
        import uvicorn

        from zett_agent.serve import ServeSettings, create_app
    except ImportError:
        raise typer.BadParameter(
            "zett serve needs the serve extra: pip install -e '.[serve]'", param_hint="serve"
        ) from None
    import secrets

    from rich.console import Console

    from zett_agent.agent import Agent, AgentRunConfig
    from zett_agent.demo_tools import select_demo_tools
    from zett_agent.errors import ZettError
    from zett_agent.models import resolve_model
    from zett_agent.serve.security import is_loopback
    from zett_agent.sessions import SQLiteSessionStore

    out = Console(highlight=False)
    try:
        offered = select_demo_tools(tools)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--tools") from None
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(24)
    config = AgentRunConfig("zett-serve", instructions=system)
    if max_tokens is not None:
        config.max_tokens = max_tokens
    if max_turns is not None:
        config.max_turns = max_turns
    try:
        resolved = resolve_model(model)
    except ZettError as error:
        raise typer.BadParameter(str(error), param_hint="--model") from None
    settings = ServeSettings(
        host=host,
        token=token,
        allowed_hosts=tuple(allowed_host or ()),
        cors_origins=tuple(cors_origin or ()),
    )
    toolset = None
    if mcp:
        from zett_agent.cli.mcp_tools import mcp_toolset

        try:
            toolset = mcp_toolset(mcp, auth=mcp_auth)
        except ZettError as error:
            raise typer.BadParameter(str(error), param_hint="--mcp") from None
    try:
        web = create_app(
            Agent(resolved, config, offered),
            SQLiteSessionStore(db),
            settings,
            owns=True,
            mcp=toolset,
        )
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"#token={token}" if token else "")
    names = ", ".join(tool.__name__ for tool in offered) or "none"
    out.print(f"zett serve: {url}", soft_wrap=True)
    out.print(f"  model {model}, tools: {names}, sessions in {db}", style="dim", soft_wrap=True)
    if getattr(resolved, "starts_server", False):
        out.print("  starting the local llama.cpp server first…", style="dim", soft_wrap=True)
    uvicorn.run(web, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5)
