"""Approving tool calls in ``zett run`` (``--require-approval``, ``--yes``).

A run whose tools wait for approval ends with them pending (the run's
``RUN_COMPLETED`` carries an :class:`~zett_agent.approvals.ApprovalRequest`). Then:

* ``--yes``: every pending call is approved and the run goes on;
* on a terminal: each call is shown (name and arguments) and asked ``y/N``; an
  answer other than ``y``/``yes`` denies it ("denied at the terminal"); the end
  of input (Ctrl-D) answers nothing, so the calls keep waiting;
* otherwise (no terminal, no ``--yes``): the run stops with exit status
  ``approval`` (9) and the session id on stderr, so a later run can decide.

The answer is read in the event loop (:class:`~zett_agent.cli._terminal.LineReader`),
so Ctrl-C at the prompt ends the run at once (exit 130): the request is stored
already (with ``--db``) and nothing was decided.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field

from rich.console import Console
from rich.text import Text

from zett_agent._events import AgentEvent, AgentEventType
from zett_agent._messages import ToolCall
from zett_agent._terminal_text import one_line
from zett_agent.tools._approvals import (
    ApprovalPolicy,
    ApprovalRequest,
    Decision,
    approve,
    deny,
    describe_call,
)

__all__ = ["APPROVAL_EXIT", "Asker", "approval_policy", "approval_rounds"]

APPROVAL_EXIT = 9
"""Exit status of ``zett run`` when tool calls wait for approval and nobody can answer."""

DENIED_AT_TERMINAL = "denied at the terminal"


def approval_policy(names: Sequence[str]) -> ApprovalPolicy | None:
    """``--require-approval`` (tool names, or ``all``) as a policy; None for none."""
    wanted = {name.strip() for part in names for name in part.split(",") if name.strip()}
    if not wanted:
        return None
    if "all" in wanted:
        return lambda call: True
    return lambda call: call.name in wanted


@dataclass
class Asker:
    """Decides pending calls: all approved with ``yes``, else asked on a terminal.

    ``ask`` shows a prompt and reads one answer line, None at the end of input
    (default: a :class:`~zett_agent.cli._terminal.LineReader` on stdin, prompting on
    ``err``); ``interactive`` says whether anyone can answer (default: stdin is a
    TTY). ``waiting`` holds the request nobody answered.
    """

    err: Console
    yes: bool = False
    interactive: bool = field(default_factory=lambda: sys.stdin is not None and sys.stdin.isatty())
    ask: Callable[[str], Awaitable[str | None]] | None = None
    waiting: ApprovalRequest | None = None
    session_id: str | None = None  # the stored session the run belongs to, if any

    async def decide(self, request: ApprovalRequest) -> dict[str, Decision] | None:
        if self.yes:
            for call in request.calls:
                self._show(call, "approved (--yes)")
            return {call.id: approve() for call in request.calls}
        if not self.interactive:
            self.waiting = request
            return None
        if self.ask is None:
            from zett_agent.cli._terminal import LineReader

            self.ask = LineReader(echo=self.err.file).readline
        decisions: dict[str, Decision] = {}
        for call in request.calls:
            self._show(call, "")
            answer = await self.ask("   approve? [y/N] ")
            if answer is None:  # Ctrl-D: nobody answers, the calls keep waiting
                self.err.print()
                self.waiting = request
                return None
            approved = answer.strip().lower() in {"y", "yes"}
            decisions[call.id] = approve() if approved else deny(DENIED_AT_TERMINAL)
        return decisions

    def report_waiting(self, db: object = None, *, mcp: Sequence[str] = ()) -> int:
        """Say which calls wait (and the session to decide them in); the exit status.
        The command printed continues the session as it ran (it remembers its model,
        tools and approval options); ``mcp``: the servers the waiting calls need,
        carried as ``--mcp`` (an approved MCP call cannot run without its server)."""
        assert self.waiting is not None
        names = one_line(", ".join(call.name for call in self.waiting.calls))
        self.err.print(Text(f"⏸ waiting for approval: {names}", style="bold yellow"))
        if self.session_id is not None and db is not None:
            import shlex

            from zett_agent._urls import redact_url

            shown = [redact_url(spec) for spec in mcp]  # never a credential on the screen
            servers = "".join(f" --mcp {shlex.quote(spec)}" for spec in shown)
            self.err.print(f"session {self.session_id}", highlight=False)
            self.err.print(
                f"decide with: zett sessions resume {self.session_id} "
                f"--db {shlex.quote(str(db))}{servers} --yes "
                "(or on a terminal, without --yes)",
                highlight=False,
                markup=False,  # a URL's [redacted] is text, not a style
                soft_wrap=True,
            )
            if shown != list(mcp):
                self.err.print(
                    "(the credentials of the --mcp URLs are shown as [redacted]: put them back)",
                    highlight=False,
                    markup=False,
                )
        elif self.interactive:  # asked, but the input ended (Ctrl-D)
            self.err.print("not decided (the input ended): run again, or use --yes")
        else:
            self.err.print("run on a terminal to be asked, or with --yes", highlight=False)
        return APPROVAL_EXIT

    def _show(self, call: ToolCall, note: str) -> None:
        line = Text.assemble(("⏸ ", "yellow"), (one_line(describe_call(call)), "bold yellow"))
        if note:
            line.append(f"  {note}", style="dim")
        self.err.print(line, highlight=False, soft_wrap=True)


async def approval_rounds(
    events: AsyncGenerator[AgentEvent, None],
    approve_stream: Callable[[dict[str, Decision]], AsyncGenerator[AgentEvent, None]],
    asker: Asker,
) -> AsyncGenerator[AgentEvent, None]:
    """The run's events, then, each time it ends waiting for approval and the
    asker decides, the events of the run that goes on with those decisions."""
    while True:
        pending: ApprovalRequest | None = None
        async with aclosing(events):
            async for event in events:
                if event.type is AgentEventType.RUN_COMPLETED:
                    pending = event.approval
                yield event
        if pending is None:
            return
        decisions = await asker.decide(pending)
        if decisions is None:
            return
        events = approve_stream(decisions)
