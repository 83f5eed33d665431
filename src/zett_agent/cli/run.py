"""``zett run``: run an agent in a terminal and tell how it ended.

Text is printed as it streams, each tool call and its result on a line of its
own, and an abnormal stop as a marked notice (``⚠ stopped: max_output: ...``).
With ``--json`` every event is one JSON line on stdout instead. The exit status
says how the run ended (:data:`EXIT_CODES`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.status import Status
from rich.text import Text

from zett_agent.cli.approvals import Asker, approval_policy, approval_rounds
from zett_agent.cli.mcp_tools import mcp_tools
from zett_agent.errors import ZettError
from zett_agent.events import AgentEvent, AgentEventType
from zett_agent.models import Model, resolve_model
from zett_agent.stop import StopInfo, StopReason

__all__ = ["DEFAULT_MODEL", "EXIT_CODES", "RunOptions", "exit_code_for", "run_agent"]

DEFAULT_MODEL = "llamacpp:smollm2"
"""The model ``zett run`` uses without ``--model``: local, free, no key needed."""

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
    "cancelled": 130,
}
"""Exit status of ``zett run`` by how the run ended. ``ok`` is a normal end (the
model finished); ``other`` covers OTHER and a PAUSED turn that was not continued;
``usage`` is a bad command line; ``cancelled`` is Ctrl-C."""

_BY_REASON: Mapping[StopReason, str] = {
    StopReason.END_TURN: "ok",
    StopReason.TOOL_USE: "ok",
    StopReason.REFUSAL: "refusal",
    StopReason.MAX_OUTPUT: "max_output",
    StopReason.CONTEXT_FULL: "context_full",
    StopReason.INTERRUPTED: "interrupted",
    StopReason.PAUSED: "other",
    StopReason.OTHER: "other",
}
_RED = frozenset({StopReason.REFUSAL, StopReason.INTERRUPTED})


def exit_code_for(stop: StopInfo | None) -> int:
    """The exit status for a run whose final message has ``stop``."""
    if stop is None:
        return EXIT_CODES["ok"]
    if stop.reason is StopReason.OTHER and stop.raw == "max_turns":
        return EXIT_CODES["max_turns"]
    return EXIT_CODES[_BY_REASON[stop.reason]]


@dataclass(frozen=True)
class RunOptions:
    """What ``zett run`` was asked for."""

    prompt: str
    model: str = DEFAULT_MODEL
    max_tokens: int | None = None
    max_turns: int | None = None
    tools: Sequence[Callable[..., Any]] = ()
    json_events: bool = False
    system: str | None = None
    tool_choice: str | None = None
    mcp: Sequence[str] = ()  # --mcp: MCP server command lines or URLs
    require_approval: Sequence[str] = ()  # --require-approval: tool names or "all"
    yes: bool = False  # --yes: approve every call that waits
    attempt_timeout: float | None = None


class _Printer:
    """Turns events into terminal output; remembers how the run ended."""

    def __init__(self, out: Console, err: Console, json_events: bool) -> None:
        self.out = out
        self.err = err
        self.json_events = json_events
        self.status: Status | None = None
        self.exit_code = EXIT_CODES["ok"]
        self.at_line_start = True
        self.noticed: set[str] = set()
        self.failed = False
        self.streamed = False  # text of the current model call arrived as deltas

    # -- spinner (stderr, so piped stdout stays clean)
    def wait(self, message: str) -> None:
        if self.json_events:
            return
        self.stop_waiting()
        self.status = self.err.status(message, spinner="dots")
        self.status.start()

    def stop_waiting(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    # -- output
    def write(self, text: str, style: str | None = None) -> None:
        self.stop_waiting()
        self.out.print(text, end="", style=style, markup=False, highlight=False, soft_wrap=True)
        self.at_line_start = text.endswith("\n")

    def line(self, text: Text | str) -> None:
        self.stop_waiting()
        if not self.at_line_start:
            self.out.print()
        self.out.print(text, highlight=False, soft_wrap=True)
        self.at_line_start = True

    def notice(self, stop: StopInfo) -> None:
        key = stop.describe()
        if key in self.noticed:
            return
        self.noticed.add(key)
        colour = "red" if stop.reason in _RED else "yellow"
        self.stop_waiting()
        if not self.at_line_start:
            self.out.print()
        self.out.print(
            Panel(
                Text(f"⚠ stopped: {key}", style=f"bold {colour}"), border_style=colour, expand=False
            )
        )
        self.at_line_start = True

    def handle(self, event: AgentEvent) -> None:
        if self.json_events:
            self.out.file.write(json.dumps(event.to_dict(), ensure_ascii=False, default=str) + "\n")
            self.out.file.flush()
        else:
            self.show(event)
        if event.type is AgentEventType.RUN_COMPLETED:
            stop = event.stop or (event.message.stop if event.message is not None else None)
            self.exit_code = exit_code_for(stop)
            if stop is not None and not self.json_events:
                self.notice(stop)
        elif event.type is AgentEventType.RUN_FAILED:
            self.exit_code = EXIT_CODES["error"]
            self.failed = True

    def show(self, event: AgentEvent) -> None:
        kind = event.type
        if kind is AgentEventType.MODEL_STARTED:
            self.wait("Waiting for the model…")
        elif kind is AgentEventType.TEXT_DELTA and event.text:
            self.streamed = True
            self.write(event.text)
        elif kind is AgentEventType.REASONING_DELTA and event.text:
            self.streamed = True
            self.write(event.text, style="dim italic")
        elif kind is AgentEventType.MODEL_COMPLETED:
            self.stop_waiting()
            message = event.message
            if message is not None and not self.streamed:  # a non-streamed answer
                if message.reasoning:
                    self.write(message.reasoning + "\n", style="dim italic")
                if message.text:
                    self.write(message.text)
            self.streamed = False
        elif kind is AgentEventType.TOOL_CALL_STARTED and event.tool_call is not None:
            call = event.tool_call
            self.line(
                Text.assemble(
                    ("🔧 ", ""), (call.name, "bold cyan"), (f"({call.arguments})", "cyan")
                )
            )
        elif kind is AgentEventType.TOOL_CALL_COMPLETED and event.tool_result is not None:
            result = event.tool_result
            content = result.content if len(result.content) <= 500 else result.content[:500] + "…"
            style = "red" if result.is_error else "green"
            self.line(Text.assemble(("   ↳ ", style), (content, style)))
            self.wait("Waiting for the model…")
        elif kind in (AgentEventType.MODEL_STOPPED, AgentEventType.MAX_TURNS_REACHED):
            if event.stop is not None:
                self.notice(event.stop)
        elif kind is AgentEventType.RUN_COMPLETED:
            self.stop_waiting()
            if not self.at_line_start:
                self.out.print()
                self.at_line_start = True
        elif kind is AgentEventType.RUN_FAILED:
            self.stop_waiting()
            if not self.at_line_start:
                self.out.print()
                self.at_line_start = True
            self.err.print(Text(f"✖ run failed: {_error_text(event.error)}", style="bold red"))


def _error_text(error: BaseException | None) -> str:
    return f"{type(error).__name__}: {error}" if error is not None else "unknown error"


async def run_agent(options: RunOptions, out: Console, err: Console) -> int:
    """Run ``options.prompt`` and print it; returns the exit status."""
    from zett_agent.agent import AgentRunConfig, create_agent

    printer = _Printer(out, err, options.json_events)
    model: Model | None = None
    agent: Any = None
    try:
        timing = (
            {} if options.attempt_timeout is None else {"attempt_timeout": options.attempt_timeout}
        )
        model = resolve_model(options.model, **timing)
        if getattr(model, "starts_server", False):
            printer.wait(f"Starting the local llama.cpp server ({model.name})…")
        await model.ensure_ready()
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
        agent = await create_agent(
            model, config=AgentRunConfig("zett-run", **config), tools=list(options.tools)
        )
        asker = Asker(err, yes=options.yes)
        async with mcp_tools(options.mcp, agent):
            events = approval_rounds(agent.stream(options.prompt), agent.approve_stream, asker)
            async for event in events:
                printer.handle(event)
        if asker.waiting is not None:
            return asker.report_waiting()
    except ZettError as error:
        printer.stop_waiting()
        if printer.failed:  # RUN_FAILED already said it
            return EXIT_CODES["error"]
        if options.json_events:
            record = {"type": "error", "error": _error_text(error)}
            out.file.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            err.print(Text(f"✖ {_error_text(error)}", style="bold red"))
        return EXIT_CODES["error"]
    except Exception as error:  # a bug, not a provider's answer: say so briefly
        printer.stop_waiting()
        if os.environ.get("ZETT_DEBUG"):
            raise
        if not printer.failed:
            err.print(Text(f"✖ internal error: {_error_text(error)}", style="bold red"))
        err.print(Text("(set ZETT_DEBUG=1 for the traceback)", style="dim"))
        return EXIT_CODES["error"]
    finally:
        printer.stop_waiting()
        if agent is not None:
            await agent.aclose()
        elif model is not None:
            await model.aclose()
    return printer.exit_code


def stdin_prompt() -> str | None:
    """The prompt piped on stdin, or None when stdin is a terminal."""
    if sys.stdin is None or sys.stdin.isatty():
        return None
    return sys.stdin.read().strip() or None
