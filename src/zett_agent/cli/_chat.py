"""``zett chat``: a conversation in the terminal, one session kept across turns.

It takes the options of ``zett run`` (spelled once in :mod:`zett_agent.cli._main`)
and prints each answer as ``zett run`` does (:class:`~zett_agent.cli._output.Printer`):
the text on stdout, tool calls, results and "⚠ stopped: ..." notices (with the
calls withheld) on stderr, where the prompt ``> `` goes too. Tool calls that wait
for approval are asked inline, ``y/N`` (``--yes`` approves them all).

The turns form one session: in memory, or stored with ``--db FILE`` (a new one
named on stderr; ``--session ID`` / ``-c`` / ``--new-session ID`` as for ``zett
run``), so ``zett chat -c --db FILE`` goes on where the last chat stopped.

Keys:

* Ctrl-C while an answer streams cancels that answer; what came is kept (stored
  as INTERRUPTED, ``detail["cancelled"]``, as any cancelled run) and the chat goes on;
* Ctrl-C at the prompt or at an approval question leaves the chat: exit status
  130 (a stored session keeps the calls waiting, for ``zett sessions resume``);
* Ctrl-D at the prompt leaves it: exit status 0 (at an approval question: the
  calls keep waiting, exit status 9).

An error in one turn (the provider, the network) is reported and the chat goes on.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer

from zett_agent.cli._main import (
    EXIT_CODES,
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
    import anyio
    from rich.console import Console

    from zett_agent._client import AgentClient
    from zett_agent.approvals import Decision
    from zett_agent.cli._approvals import Asker
    from zett_agent.cli._run import RunOptions
    from zett_agent.cli._terminal import LineReader

__all__ = ["PROMPT", "chat", "chat_agent"]

PROMPT = "> "
"""What the chat shows (on stderr) when it waits for your next message."""

_CHAT_HELP = f"""Chat with an agent in the terminal: one session across turns.

Takes the options of zett run. Answers stream to stdout; tool calls, results,
"⚠ stopped: ..." notices and the "{PROMPT.strip()}" prompt go to stderr. Tool calls
that wait for approval (--require-approval) are asked inline, y/N.

The session lives in memory, or with --db FILE in that file (--session ID
or -c goes on in a stored one, --new-session ID starts one under your id).

Ctrl-C during an answer cancels it (what came is kept) and the chat goes on;
Ctrl-C at the prompt or an approval question leaves (exit status 130);
Ctrl-D at the prompt leaves (exit status 0).
"""


@app.command(help=_CHAT_HELP)
def chat(
    ctx: typer.Context,
    model: ModelOption = None,
    max_tokens: MaxTokensOption = None,
    max_turns: MaxTurnsOption = None,
    tools: ToolsOption = "demo",
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
) -> None:
    from zett_agent.cli._run import (
        RunOptions,
        model_variable,
        offered_tools,
        pick_session_or_exit,
    )

    offered = offered_tools(tools, tool_choice, mcp)
    sid, is_new = pick_session_or_exit(db, session, new_session, latest)
    options = RunOptions(
        prompt=None,
        model=model,
        max_tokens=max_tokens,
        max_turns=max_turns,
        tools=offered,
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
        explicit=explicit_options(ctx, REMEMBERED),
    )
    raise typer.Exit(_chat_in_terminal(options))


def _chat_in_terminal(options: RunOptions) -> int:
    import anyio

    try:
        code: int = anyio.run(chat_agent, options, out_console(), err_console())
    except KeyboardInterrupt:  # before the chat began (the model starting)
        err_console().print("cancelled", style="red")
        code = EXIT_CODES["cancelled"]
    except BrokenPipeError:
        from zett_agent.cli._run import _quiet_closed_stdout

        _quiet_closed_stdout()
        code = EXIT_CODES["ok"]
    return code


@dataclass
class _Keys:
    """Where Ctrl-C goes: the answer streaming (cancel it) or the chat (leave)."""

    chat: anyio.CancelScope
    answer: anyio.CancelScope | None = None
    left: bool = False

    def interrupt(self) -> None:
        if self.answer is not None:
            self.answer.cancel()
        else:
            self.leave()

    def leave(self) -> None:
        self.left = True
        self.chat.cancel()


async def chat_agent(options: RunOptions, out: Console, err: Console) -> int:
    """Chat with the agent of ``options`` until Ctrl-D or Ctrl-C; the exit status."""
    import anyio

    from zett_agent._client import AgentClient
    from zett_agent.cli._approvals import Asker
    from zett_agent.cli._mcp_tools import mcp_tools
    from zett_agent.cli._output import Printer
    from zett_agent.cli._run import (
        open_agent,
        remember_settings,
        remembered_options,
        report_failure,
        unoffered_tool_choice,
    )
    from zett_agent.cli._terminal import LineReader

    printer = Printer(out, err, json_events=False)
    try:
        options = await remembered_options(options, err)
        agent = await open_agent(options, printer, name="zett-chat")
    except Exception as error:
        return report_failure(error, printer)
    reader = LineReader(echo=err.file)
    code = EXIT_CODES["ok"]
    try:
        async with (
            AgentClient(agent, options.db, session_id=options.session) as client,
            mcp_tools(options.mcp, agent, auth=options.mcp_auth),
        ):
            unoffered = unoffered_tool_choice(options.tool_choice, list(agent.tools))
            if unoffered is not None:
                err.print(f"✖ {unoffered}", style="bold red", markup=False, soft_wrap=True)
                return EXIT_CODES["usage"]
            if options.db is not None:
                await remember_settings(client, options)
            _greet(options, client, err)
            with anyio.CancelScope() as scope:
                keys = _Keys(scope)

                async def ask(question: str) -> str | None:  # Ctrl-C here leaves the chat
                    answer, keys.answer = keys.answer, None
                    try:
                        return await reader.readline(question)
                    finally:
                        keys.answer = answer

                asker = Asker(err, yes=options.yes, interactive=True, ask=ask)
                asker.session_id = client.session_id
                async with anyio.create_task_group() as group:
                    group.start_soon(_watch_keys, keys)
                    code = await _turns(client, options, reader, asker, keys, out, err)
                    group.cancel_scope.cancel()
            if keys.left:
                printer.end_text()
                err.print("left the chat", style="red")
                code = EXIT_CODES["cancelled"]
    except Exception as error:  # starting the MCP servers
        code = report_failure(error, printer)
    finally:
        printer.stop_waiting()
        with anyio.CancelScope(shield=True):
            await agent.aclose()
    return code


def _greet(options: RunOptions, client: AgentClient, err: Console) -> None:
    where = f", session {client.session_id} in {options.db}" if options.db else ""
    if options.db is not None and not options.new_session:
        where = f", going on in session {client.session_id}"
    err.print(
        f"chat with {options.model}{where}. Ctrl-D leaves; Ctrl-C cancels an answer.",
        style="dim",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


async def _watch_keys(keys: _Keys) -> None:
    import anyio

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if signum == signal.SIGTERM:
                keys.leave()
            else:
                keys.interrupt()


async def _turns(
    client: AgentClient,
    options: RunOptions,
    reader: LineReader,
    asker: Asker,
    keys: _Keys,
    out: Console,
    err: Console,
) -> int:
    """The chat's turns until the end of input; the exit status."""
    sid = client.session_id
    waits = await client.pending_approval(sid) is not None  # a stored session: decide first
    if waits and not await _answer(client, sid, None, asker, keys, out, err):
        return asker.report_waiting(options.db)
    while True:
        line = await reader.readline(PROMPT)
        if line is None:  # Ctrl-D
            err.print()
            return EXIT_CODES["ok"]
        if not line.strip():
            continue
        if not await _answer(client, sid, line, asker, keys, out, err):
            return asker.report_waiting(options.db)


async def _answer(
    client: AgentClient,
    sid: str,
    prompt: str | None,
    asker: Asker,
    keys: _Keys,
    out: Console,
    err: Console,
) -> bool:
    """One answer to ``prompt`` (None: decide the calls the session waits on),
    printed as ``zett run`` prints it; False when tool calls were left waiting
    (nobody answered the approval question)."""
    from contextlib import aclosing

    import anyio

    from zett_agent.approvals import PendingApprovalError
    from zett_agent.cli._approvals import approval_rounds
    from zett_agent.cli._output import Printer
    from zett_agent.cli._run import report_failure

    printer = Printer(out, err, json_events=False)  # per turn: each turn's notices are shown
    printer.url = getattr(client.agent.model, "base_url", None)
    asker.waiting = None
    try:
        with anyio.CancelScope() as scope:
            keys.answer = scope
            try:
                waiting = await client.pending_approval(sid) if prompt is None else None
                if waiting is not None:
                    decisions = await asker.decide(waiting)
                    if decisions is None:
                        return False
                    events = client.approve_stream(sid, decisions)
                else:
                    events = client.stream(prompt)

                def approve(decisions: dict[str, Decision]) -> Any:
                    return client.approve_stream(sid, decisions)

                rounds = approval_rounds(events, approve, asker)
                async with aclosing(rounds):
                    async for event in rounds:
                        printer.handle(event)
            finally:
                keys.answer = None
        if scope.cancelled_caught:
            await _show_cancelled(client, sid, printer)
    except PendingApprovalError as error:
        printer.stop_waiting()
        err.print(f"✖ {error}", style="bold red", markup=False, soft_wrap=True)
    except Exception as error:  # one turn failed: say why, the chat goes on
        report_failure(error, printer)
    finally:
        printer.stop_waiting()
        printer.end_text()
    return asker.waiting is None


async def _show_cancelled(client: AgentClient, sid: str, printer: Printer) -> None:
    """The notice of an answer cancelled with Ctrl-C, as it was stored."""
    from zett_agent._messages import AssistantMessage

    printer.stop_waiting()
    printer.end_text()
    messages = await client.store.load(sid)
    last = messages[-1] if messages else None
    if isinstance(last, AssistantMessage) and last.stop is not None:
        printer.notice(last.stop)
    else:
        printer.line("⚠ cancelled")


if TYPE_CHECKING:
    from zett_agent.cli._output import Printer
