"""``zett run``: run an agent in a terminal and tell how it ended.

Text is printed to stdout as it streams; each tool call and its result, and an
abnormal stop as a marked notice (``⚠ stopped: max_output: ...``), go to stderr
(:mod:`zett_agent.cli._output`). With ``--json`` every event is one JSON line on
stdout instead. The exit status says how the run ended
(:data:`~zett_agent.cli.EXIT_CODES`). With ``--db`` the run is stored as a
session (``--session ID`` continues one; see ``zett sessions``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from zett_agent.cli._main import (
    DEFAULT_MODEL,
    EXIT_CODES,
    EXIT_TABLE,
    REMEMBERED,
    AttemptTimeoutOption,
    ContinueOption,
    MaxCostOption,
    MaxTokensOption,
    MaxTotalTokensOption,
    MaxTurnsOption,
    McpAuthOption,
    McpOption,
    ModelOption,
    NewSessionOption,
    ReasoningOption,
    RequireApprovalOption,
    SessionDbOption,
    SessionOption,
    SystemOption,
    ToolChoiceOption,
    ToolsOption,
    YesOption,
    app,
    err_console,
    explicit_options,
    out_console,
)

if TYPE_CHECKING:
    from rich.console import Console

    from zett_agent._agent import Agent
    from zett_agent._events import AgentEvent
    from zett_agent._messages import UserMessage
    from zett_agent._parts import MediaPart
    from zett_agent.cli._approvals import Asker
    from zett_agent.cli._output import Printer

__all__ = [
    "DEFAULT_MAX_ATTACH_BYTES",
    "KEYWORD_CHOICES",
    "RunOptions",
    "exit_code_for",
    "pick_session_or_exit",
    "read_attachments",
    "run_agent",
    "run_events",
    "stdin_prompt",
    "validate_tool_choice",
]

KEYWORD_CHOICES = ("auto", "none", "required")
"""The ``--tool-choice`` values that are not a tool's name."""

DEFAULT_MAX_ATTACH_BYTES = 20 * 1024 * 1024
"""``--max-attach-bytes`` by default (:data:`zett_agent._parts.DEFAULT_MAX_PART_BYTES`,
spelled here so ``zett --help`` does not import the parts module)."""

_RUN_HELP = f"""Run an agent on PROMPT and on what is piped to stdin; stream its answer.

Piped text is sent with the prompt, before it and a blank line apart (as llm
does): zett run "Summarize this file" < notes.txt sends the file, then the
instruction. With no PROMPT, stdin alone is the prompt.

The answer goes to stdout; tool calls, their results, and a "⚠ stopped: ..."
notice saying why a run did not end normally go to stderr.

Without --model (or ZETT_MODEL) the local model {DEFAULT_MODEL} is used, even
when a provider key is set: zett never spends credits unless you name a model.
A stored session (--session) continues on its own model, tools, MCP servers and
approval options unless they are given here (ZETT_MODEL is for new sessions).
It needs: pip install -e '.[local]'. On it the tools are shown to the model
only with --tool-choice (llama.cpp's server ignores tools sent without one).

With --db FILE each message is stored as it completes, in a new session named
on stderr; --session ID continues a stored one (a unique prefix of its id will
do; an unknown id is refused), -c the one written last, and --new-session ID
starts one under your own id. zett sessions lists, shows and resumes them.

--attach FILE (repeatable) sends an image, a PDF or audio with the prompt, its
media type from the file name or its first bytes; a file over --max-attach-bytes
is refused unread, and a provider that cannot take it (the local model reads
text only) is an error before anything is sent.

Exit status:

{EXIT_TABLE}
"""


def exit_code_for(stop: Any) -> int:
    """The exit status for a run whose final message has ``stop`` (a StopInfo or None)."""
    from zett_agent.cli._output import exit_code_for as for_stop

    return for_stop(stop)


@dataclass(frozen=True)
class RunOptions:
    """What ``zett run`` (or ``zett sessions resume``) was asked for.

    ``prompt`` None resumes the session's cut-off last answer instead.
    """

    prompt: str | None
    model: str | None = None
    """``--model`` (or ``ZETT_MODEL``); None: unset (:mod:`zett_agent.cli._remembered`)."""
    parts: Sequence[MediaPart] = ()
    """``--attach``: the files sent with the prompt, read."""
    max_tokens: int | None = None
    max_turns: int | None = None
    tools: Sequence[Callable[..., Any]] = ()
    json_events: bool = False
    system: str | None = None
    tool_choice: str | None = None
    db: Path | None = None
    session: str | None = None
    """The stored session to run in (None: a new one with a fresh id)."""
    new_session: bool = True
    """The session is new: its id is named on stderr."""
    model_variable: str | None = None
    """The environment variable ``model`` came from (named in its errors), if any."""
    mcp: Sequence[str] = ()
    """``--mcp``: MCP server command lines or URLs whose tools are offered."""
    mcp_auth: str | None = None
    """``--mcp-auth``: ``oauth`` or ``command:CMD`` for the HTTP servers of ``--mcp``."""
    require_approval: Sequence[str] = ()
    """``--require-approval``: tool names (or ``all``) whose calls wait for approval."""
    yes: bool = False
    """``--yes``: approve every call that waits."""
    attempt_timeout: float | None = None
    max_cost: float | None = None
    """``--max-cost``: US dollars the run may spend (needs the 'prices' extra)."""
    max_total_tokens: int | None = None
    """``--max-total-tokens``: input plus output tokens the run may use."""
    reasoning: str | None = None
    """``--reasoning``: an effort level, or a thinking budget in tokens."""
    output_schema: Mapping[str, Any] | None = None
    """``--output-schema``: the JSON schema the answer must match (its validated
    JSON is printed on stdout; validation failures past the retries exit 1)."""
    explicit: frozenset[str] = frozenset()
    """The remembered options (model, tools, mcp, require_approval) given on the
    command line: the others come from a stored session's settings."""

    @property
    def message(self) -> str | UserMessage | None:
        """What is asked: the prompt, with the attachments as parts when there are."""
        if self.prompt is None or not self.parts:
            return self.prompt
        from zett_agent._messages import UserMessage

        return UserMessage(self.prompt, tuple(self.parts))


def validate_tool_choice(
    choice: str | None, tools: Sequence[Callable[..., Any]], mcp: Sequence[str] = ()
) -> None:
    """Raise ``typer.BadParameter`` (exit 2) for a ``--tool-choice`` that cannot work;
    warn on stderr when it is given with no tools offered. With ``mcp`` servers
    a name that is no demo tool may be one of theirs: :func:`unoffered_tool_choice`
    checks it once they are started."""
    if choice is None:
        return
    names = [tool.__name__ for tool in tools]
    if not tools and not mcp:
        if choice != "none":
            err_console().print(f"warning: --tool-choice {choice} has no effect with --tools none")
        return
    if choice in KEYWORD_CHOICES or choice in names or mcp:
        return
    allowed = ", ".join([*KEYWORD_CHOICES, *names])
    raise typer.BadParameter(
        f"{choice!r} is not offered; use one of: {allowed}", param_hint="--tool-choice"
    )


def unoffered_tool_choice(choice: str | None, offered: Sequence[str]) -> str | None:
    """The error text for a ``--tool-choice`` naming no tool of ``offered`` (the
    run's tools, MCP servers' included), else None."""
    if choice is None or choice in KEYWORD_CHOICES or choice in offered:
        return None
    allowed = ", ".join([*KEYWORD_CHOICES, *offered])
    return f"--tool-choice {choice!r} is not offered; use one of: {allowed}"


def pick_session_or_exit(
    db: Path | None, session: str | None, new_session: str | None, latest: bool
) -> tuple[str | None, bool]:
    """:func:`~zett_agent.cli._session_ids.pick_session`, a refusal printed on one
    line and exit status 1."""
    from zett_agent.cli._session_ids import SessionPickError, pick_session

    try:
        return pick_session(db, session, new_session, latest)
    except SessionPickError as error:
        err_console().print(
            f"✖ {error}", style="bold red", markup=False, highlight=False, soft_wrap=True
        )
        raise typer.Exit(EXIT_CODES["error"]) from None


@app.command(help=_RUN_HELP)
def run(
    ctx: typer.Context,
    prompt: Annotated[
        str | None,
        typer.Argument(help="What to ask; text piped on stdin is sent before it."),
    ] = None,
    model: ModelOption = None,
    max_tokens: MaxTokensOption = None,
    max_turns: MaxTurnsOption = None,
    tools: ToolsOption = "demo",
    json_events: Annotated[
        bool, typer.Option("--json/--no-json", help="Print one JSON record per event.")
    ] = False,
    system: SystemOption = None,
    tool_choice: ToolChoiceOption = None,
    db: SessionDbOption = None,
    session: SessionOption = None,
    new_session: NewSessionOption = None,
    latest: ContinueOption = False,
    attempt_timeout: AttemptTimeoutOption = None,
    mcp: McpOption = None,
    mcp_auth: McpAuthOption = None,
    require_approval: RequireApprovalOption = None,
    yes: YesOption = False,
    max_cost: MaxCostOption = None,
    max_total_tokens: MaxTotalTokensOption = None,
    reasoning: ReasoningOption = None,
    attach: Annotated[
        list[Path] | None,
        typer.Option(
            help="A file to send with the prompt: an image, a PDF or audio (repeatable; "
            "media type from the file).",
        ),
    ] = None,
    max_attach_bytes: Annotated[
        int,
        typer.Option(min=1, help="Largest file --attach reads, in bytes (refused unread)."),
    ] = DEFAULT_MAX_ATTACH_BYTES,
    output_schema: Annotated[
        Path | None,
        typer.Option(
            help="A JSON schema file: the answer must match it (native structured output, "
            "or a forced tool); stdout gets the validated JSON. Exit 1 when it stays "
            "invalid after a retry.",
        ),
    ] = None,
) -> None:
    offered = offered_tools(tools, tool_choice, mcp)
    schema = _read_schema(output_schema) if output_schema is not None else None
    text = with_stdin(prompt, stdin_prompt())
    if not text or not text.strip():
        raise typer.BadParameter("give a PROMPT or pipe one on stdin", param_hint="PROMPT")
    sid, is_new = pick_session_or_exit(db, session, new_session, latest)
    options = RunOptions(
        prompt=text,
        parts=read_attachments(attach or (), max_attach_bytes),
        model=model,
        max_tokens=max_tokens,
        max_turns=max_turns,
        tools=offered,
        json_events=json_events,
        system=system,
        tool_choice=tool_choice,
        db=db,
        session=sid,
        new_session=is_new,
        model_variable=model_variable(ctx),
        mcp=tuple(mcp or ()),
        mcp_auth=mcp_auth,
        require_approval=tuple(require_approval or ()),
        yes=yes,
        attempt_timeout=attempt_timeout,
        max_cost=max_cost,
        max_total_tokens=max_total_tokens,
        reasoning=reasoning,
        output_schema=schema,
        explicit=explicit_options(ctx, REMEMBERED),
    )
    raise typer.Exit(run_in_terminal(options))


def offered_tools(
    tools: str, tool_choice: str | None, mcp: Sequence[str] | None
) -> tuple[Callable[..., Any], ...]:
    """The demo tools ``--tools`` names, with ``--tool-choice`` checked against
    them (``typer.BadParameter``, exit 2, for either)."""
    from zett_agent.demo_tools import select_demo_tools

    try:
        offered = select_demo_tools(tools)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--tools") from None
    validate_tool_choice(tool_choice, offered, tuple(mcp or ()))
    return offered


def read_attachments(paths: Sequence[Path], max_bytes: int) -> tuple[MediaPart, ...]:
    """The ``--attach`` files as parts; a file that is missing, unreadable, of an
    unknown media type or over ``max_bytes`` (judged from its size, unread) is a
    ``typer.BadParameter`` (exit 2) naming it."""
    from zett_agent._parts import part_from_file
    from zett_agent._terminal_text import one_line

    parts = []
    for path in paths:
        try:
            parts.append(part_from_file(path, max_bytes=max_bytes))
        except OSError as error:  # typer prints it: a file name shown escaped
            raise typer.BadParameter(
                one_line(f"{path}: {error.strerror or error}"), param_hint="--attach"
            ) from None
        except ValueError as error:  # PartTooLargeError too
            raise typer.BadParameter(one_line(f"{path}: {error}"), param_hint="--attach") from None
    return tuple(parts)


def _read_schema(path: Path) -> dict[str, Any]:
    """The JSON schema object in ``path``; a bad file is a usage error (exit 2)."""
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise typer.BadParameter(f"{path}: {error}", param_hint="--output-schema") from None
    if not isinstance(schema, dict):
        raise typer.BadParameter(f"{path}: not a JSON object", param_hint="--output-schema")
    return schema


def model_variable(ctx: typer.Context) -> str | None:
    """``"ZETT_MODEL"`` when ``--model`` was read from it, else None."""
    source = ctx.get_parameter_source("model")  # typer's own click: compare by name
    return "ZETT_MODEL" if source is not None and source.name == "ENVIRONMENT" else None


def run_in_terminal(options: RunOptions) -> int:
    """Run ``options`` with the terminal's consoles; Ctrl-C, SIGTERM and a closed
    stdout (``| head``) end it quietly. Returns the exit status."""
    import anyio

    previous = signal.signal(signal.SIGTERM, _interrupt)  # clean up (a local server) on kill
    try:
        code: int = anyio.run(run_agent, options, out_console(), err_console())
    except KeyboardInterrupt:
        err_console().print("cancelled", style="red")
        code = EXIT_CODES["cancelled"]
    except BrokenPipeError:
        _quiet_closed_stdout()
        code = EXIT_CODES["ok"]
    finally:
        signal.signal(signal.SIGTERM, previous)
    return code


def _quiet_closed_stdout() -> None:
    """stdout's reader went away (``| head``): stop writing, and keep Python from
    complaining when it flushes stdout at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (tests)
        pass
    finally:
        os.close(devnull)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


async def run_events(
    agent: Agent, options: RunOptions, err: Console, asker: Asker | None = None
) -> AsyncGenerator[AgentEvent, None]:
    """The run's events: a plain run, or a stored session's run or resume; calls
    that wait for approval are decided by ``asker`` (``cli/_approvals.py``)."""
    from zett_agent.cli._approvals import Asker, approval_rounds

    asker = asker or Asker(err)
    if options.db is None:
        plain = approval_rounds(agent.stream(options.message), agent.approve_stream, asker)
        async with aclosing(plain):
            async for event in plain:
                yield event
        return
    from zett_agent._client import AgentClient

    async with AgentClient(agent, options.db, session_id=options.session) as client:
        sid = client.session_id
        asker.session_id = sid
        await remember_settings(client, options)
        if options.new_session and not options.json_events:
            err.print(f"session {sid}", style="dim", highlight=False)
        prompt = options.message
        waiting = await client.pending_approval(sid) if prompt is None else None
        if waiting is not None:  # resume a session that waits for approval: decide first
            decisions = await asker.decide(waiting)
            if decisions is None:
                return
            events = client.approve_stream(sid, decisions)
        else:
            events = client.resume_stream() if prompt is None else client.stream(prompt)

        def approve(decisions: dict[str, Any]) -> AsyncGenerator[AgentEvent, None]:
            return client.approve_stream(sid, decisions)

        rounds = approval_rounds(events, approve, asker)
        async with aclosing(rounds):
            async for event in rounds:
                yield event


async def open_agent(options: RunOptions, printer: Printer, name: str = "zett-run") -> Agent:
    """The agent of ``options``, its model ready (a spinner on stderr while the
    local model's server starts). Raises what resolving or starting the model
    raises, the model closed."""
    from zett_agent._agent import AgentRunConfig, create_agent
    from zett_agent.cli._approvals import approval_policy

    model = _resolve(options)
    try:
        check_attachments(options, model)  # before a local server is started for nothing
        base_url = getattr(model, "base_url", None)
        printer.url = base_url if not getattr(model, "starts_server", False) else None
        if getattr(model, "starts_server", False):
            printer.wait(f"Starting the local llama.cpp server ({model.name})…")
        if hasattr(model, "ensure_ready"):
            await model.ensure_ready()
        printer.url = getattr(model, "base_url", None)
        printer.stop_waiting()
        config: dict[str, Any] = {
            "instructions": options.system,
            "tool_choice": options.tool_choice,
            "approval": approval_policy(options.require_approval),
        }
        if options.max_tokens is not None:
            config["max_tokens"] = options.max_tokens
        if options.max_turns is not None:
            config["max_turns"] = options.max_turns
        config["max_cost"] = options.max_cost
        config["max_total_tokens"] = options.max_total_tokens
        config["cost"] = options.json_events  # --json records carry each answer's cost
        if options.reasoning is not None:
            level = options.reasoning
            config["reasoning"] = int(level) if level.isdigit() else level
        return await create_agent(
            model,
            config=AgentRunConfig(name, **config),
            tools=list(options.tools),
            output_type=options.output_schema,
        )
    except BaseException:
        printer.stop_waiting()
        await model.aclose()
        raise


def report_failure(error: Exception, printer: Printer) -> int:
    """Say why a run could not go on; its exit status. A :class:`ZettError` is
    reported as ``zett run`` reports errors; anything else is a bug, said briefly
    (``ZETT_DEBUG=1`` raises it)."""
    from rich.text import Text

    from zett_agent.cli._output import error_text
    from zett_agent.errors import ContextOverflowError, ZettError

    printer.stop_waiting()
    if isinstance(error, ZettError):
        if printer.failed:  # RUN_FAILED already said it
            return printer.exit_code
        printer.report_error(error)
        if isinstance(error, ContextOverflowError):
            return EXIT_CODES["context_full"]
        from zett_agent.tools._approvals import ApprovalConflictError

        if isinstance(error, ApprovalConflictError):
            return EXIT_CODES["approval_conflict"]
        return EXIT_CODES["error"]
    if os.environ.get("ZETT_DEBUG"):
        raise error
    if not printer.failed:
        printer.err.print(Text(f"✖ internal error: {error_text(error)}", style="bold red"))
    printer.err.print(Text("(set ZETT_DEBUG=1 for the traceback)", style="dim"))
    return EXIT_CODES["error"]


async def run_agent(options: RunOptions, out: Console, err: Console) -> int:
    """Run ``options`` and print it; returns the exit status."""
    from rich.text import Text

    from zett_agent._events import AgentEventType
    from zett_agent.cli._approvals import Asker
    from zett_agent.cli._mcp_tools import mcp_tools
    from zett_agent.cli._output import Printer

    printer = Printer(out, err, options.json_events)
    printer.structured = options.output_schema is not None
    agent: Agent | None = None
    try:
        options = await remembered_options(options, err)
        agent = await open_agent(options, printer)
        asker = Asker(err, yes=options.yes)
        async with mcp_tools(options.mcp, agent, auth=options.mcp_auth):
            unoffered = unoffered_tool_choice(options.tool_choice, list(agent.tools))
            if unoffered is not None:
                err.print(Text(f"✖ {unoffered}", style="bold red"), soft_wrap=True)
                return EXIT_CODES["usage"]
            events = run_events(agent, options, err, asker)
            usage = None
            async with aclosing(events):
                async for event in events:
                    printer.handle(event)
                    if event.type is AgentEventType.RUN_COMPLETED:
                        usage = event.usage
            said = unknown_usage(options.max_total_tokens, usage, options.model)
            if said is not None:
                err.print(Text(said, style="yellow"), soft_wrap=True)
        if asker.waiting is not None:
            offered = {getattr(tool, "__name__", "") for tool in options.tools}
            mcp_calls = any(call.name not in offered for call in asker.waiting.calls)
            return asker.report_waiting(options.db, mcp=options.mcp if mcp_calls else ())
    except BrokenPipeError:
        raise
    except Exception as error:
        return report_failure(error, printer)
    finally:
        printer.stop_waiting()
        if agent is not None:
            await agent.aclose()
    return printer.exit_code


def unknown_usage(budget: int | None, usage: Any, model: str | None) -> str | None:
    """The notice for a ``--max-total-tokens`` budget that could not count: the
    run's model calls reported no token usage (a server that sends none), so the
    budget was not applied, as ``--max-cost`` says of a model with no price."""
    if budget is None or usage is None:
        return None
    if usage.input_tokens is not None or usage.output_tokens is not None:
        return None
    return (
        f"⚠ --max-total-tokens {budget} was not applied: {model or 'the model'} reported "
        "no token usage, so the run's tokens are unknown"
    )


async def remember_settings(client: Any, options: RunOptions) -> None:
    """Store how ``options`` runs in the client's session when it differs from the
    session's last settings (:mod:`zett_agent.cli._remembered`)."""
    from zett_agent.cli._remembered import last_settings, settings_of

    current = settings_of(options)
    if last_settings(await client.store.rows(client.session_id)) != current:
        await client.store.append(client.session_id, current)


async def remembered_options(options: RunOptions, err: Console) -> RunOptions:
    """``options`` with what a stored session remembers filled in
    (:mod:`zett_agent.cli._remembered`), the model resolved: call it before
    :func:`open_agent`."""
    from zett_agent.cli._remembered import last_settings, with_remembered

    stored = None
    session = None if options.new_session else options.session
    if options.db is not None and session is not None and options.db.is_file():
        from zett_agent.sessions import SQLiteSessionStore

        async with SQLiteSessionStore(options.db) as store:
            stored = last_settings(await store.rows(session))
    environment = options.model if options.model_variable is not None else None
    return with_remembered(options, stored, options.explicit, environment, DEFAULT_MODEL, err)


def check_attachments(options: RunOptions, model: Any) -> None:
    """Raise the ConfigError the request would raise when the model's provider
    cannot take an attachment (a chain is checked by each model as it is tried)."""
    vendor = getattr(model, "vendor", None)
    if not options.parts or vendor is None:
        return
    from zett_agent._messages import UserMessage
    from zett_agent.protocols._body import user_parts

    user_parts(UserMessage(options.prompt or "", tuple(options.parts)), vendor)


def _resolve(options: RunOptions) -> Any:
    """The model of ``options``; a bad model string from an environment variable
    is a ConfigError that names the variable."""
    from zett_agent.errors import ConfigError
    from zett_agent.model._model import resolve_model

    assert options.model is not None, "the model is resolved by remembered_options first"
    timing: dict[str, Any] = {}
    if options.attempt_timeout is not None:
        timing["attempt_timeout"] = options.attempt_timeout
    try:
        if "," in options.model:  # a fallback chain, tried in order
            from zett_agent.model._fallback import FallbackModel

            parts = [part.strip() for part in options.model.split(",") if part.strip()]
            return FallbackModel(parts, **timing)
        return resolve_model(options.model, **timing)
    except ConfigError as error:
        if options.model_variable is None:
            raise
        raise ConfigError(f"{options.model_variable}={options.model!r}: {error}") from None


def stdin_prompt() -> str | None:
    """The text piped on stdin, or None when stdin is a terminal or empty."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return sys.stdin.read().strip() or None


def with_stdin(prompt: str | None, piped: str | None) -> str | None:
    """The prompt as sent: the piped text, a blank line, then PROMPT (``llm``'s order,
    ``cat notes.txt | llm "summarize"``); either alone when the other is missing."""
    if prompt is None or not prompt.strip():
        return piped if piped is not None else prompt
    if piped is None:
        return prompt
    return f"{piped}\n\n{prompt}"
