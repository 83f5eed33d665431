"""How ``zett run`` and ``zett sessions resume`` print a run's events.

stdout gets the answer's text only, as it streams (or whole, when the model
answered without streaming). Everything else goes to stderr: the spinner, each
tool call and its result, reasoning, the "⚠ stopped: ..." notice of an abnormal
stop (with the tool calls that were withheld), and errors. ``zett run ... >
out.txt`` so leaves only the text in the file. With ``--json`` each event is one
JSON line on stdout and nothing is drawn.

Text zett did not write (the answer, reasoning, tool names, arguments and results,
MCP progress and log lines, provider messages) is shown with its control characters
escaped (:mod:`zett_agent._terminal_text`): the consoles of ``cli/_main.py`` do it
for every segment, and a line that must stay one line (a tool's name, a log line) is
made one here. ``--json`` records stay exact.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, assert_never

from pydantic_core import to_jsonable_python
from rich.console import Console
from rich.panel import Panel
from rich.status import Status
from rich.text import Text

from zett_agent._events import AgentEvent, AgentEventType
from zett_agent._exchange import names_in
from zett_agent._terminal_text import one_line, terminal_safe
from zett_agent.cli._main import EXIT_CODES
from zett_agent.errors import ContextOverflowError, TransportError
from zett_agent.stop import StopInfo, StopReason

__all__ = ["Printer", "error_text", "exit_code_for"]

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
_RUN_LIMITS = frozenset({"max_turns", "max_cost", "max_total_tokens"})
"""``stop.raw`` of a run that ended at its limit (an exit status each)."""


def exit_code_for(stop: StopInfo | None) -> int:
    """The exit status for an answer whose stop is ``stop`` (None: a normal end)."""
    if stop is None:
        return EXIT_CODES["ok"]
    if stop.reason is StopReason.OTHER and stop.raw in (
        "max_turns",
        "max_cost",
        "max_total_tokens",
    ):
        return EXIT_CODES[stop.raw]
    return EXIT_CODES[_BY_REASON[stop.reason]]


def sampling_report(data: Mapping[str, Any]) -> str:
    """``sampling by m: 10 in, 5 out, $0.000105`` for a SAMPLING_COMPLETED event
    (the model's name is shown with its non-printable characters as ``?``)."""
    model = "".join(c if c.isprintable() else "?" for c in str(data.get("model")))[:100]
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    cost = data.get("cost_usd")
    price = f"${cost:.6f}" if isinstance(cost, int | float) else "cost unknown"
    return (
        f"sampling by {model}: {usage.get('input_tokens')} in, "
        f"{usage.get('output_tokens')} out, {price}"
    )


def fallback_line(message: Any) -> str:
    """``answered by p:m (a:x failed: ...; b:y skipped: ...)`` for a chain's answer."""
    others = "; ".join(
        f"{a.provider}:{a.model} {a.outcome}: {a.error or a.stop}"
        for a in message.attempts
        if a.outcome != "answered"
    )
    return f"answered by {message.provider}:{message.model} ({others})"


def error_text(error: BaseException | None) -> str:
    """``"TypeName: message"`` for an error."""
    return f"{type(error).__name__}: {error}" if error is not None else "unknown error"


def overflow_stop(error: ContextOverflowError) -> StopInfo:
    """The CONTEXT_FULL stop ``zett`` reports for a prompt that does not fit (as
    :func:`zett_agent._recovery.error_stop` words it)."""
    from zett_agent._recovery import error_stop

    return error_stop(error)


class Printer:
    """Turns events into terminal output; remembers the exit status.

    ``out`` is the answer's console (stdout), ``err`` everyone else's (stderr).
    """

    def __init__(self, out: Console, err: Console, json_events: bool) -> None:
        self.out = out
        self.err = err
        self.json_events = json_events
        self.status: Status | None = None
        self.exit_code = EXIT_CODES["ok"]
        self.at_line_start = True  # of the text on stdout
        self.noticed: set[str] = set()
        self.failed = False
        self.streamed = False  # text of the current model call arrived as deltas
        self.url: str | None = None  # the model's base URL, named in connection errors
        self.structured = False  # --output-schema: stdout gets the validated JSON only

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
    def write(self, text: str) -> None:
        """Answer text, to stdout (to stderr, dimmed, when the answer is a structured
        one: stdout then gets only the validated JSON)."""
        self.stop_waiting()
        if self.structured:
            self.err.print(terminal_safe(text), end="", style="dim", markup=False, soft_wrap=True)
            return
        shown = terminal_safe(text) if getattr(self.out, "safe", False) else text
        self.out.print(shown, end="", markup=False, highlight=False, soft_wrap=True)
        self.out.file.flush()
        self.at_line_start = text.endswith("\n")

    def end_text(self) -> None:
        """End the answer's current line, so stderr lines start on their own."""
        if not self.at_line_start:
            self.out.print()
            self.out.file.flush()
            self.at_line_start = True

    def line(self, text: Text | str) -> None:
        """A line on stderr (tool calls, reasoning, notices)."""
        self.stop_waiting()
        self.end_text()
        self.err.print(text, highlight=False, soft_wrap=True)

    def notice(self, stop: StopInfo) -> None:
        key = stop.describe()
        if key in self.noticed:
            return
        self.noticed.add(key)
        colour = "red" if stop.reason in _RED else "yellow"
        body = Text(f"⚠ stopped: {terminal_safe(key)}", style=f"bold {colour}")
        withheld = names_in(stop.detail, "withheld_tool_calls")
        if withheld:
            names = one_line(", ".join(withheld))
            body.append(f"\nwithheld tool calls (not run): {names}", style=colour)
        self.stop_waiting()
        self.end_text()
        self.err.print(Panel(body, border_style=colour, expand=False))

    def emit_json(self, record: Mapping[str, Any]) -> None:
        self.out.file.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self.out.file.flush()

    def handle(self, event: AgentEvent) -> None:
        if self.json_events:
            self.emit_json(event.to_dict())
        else:
            self.show(event)
        if event.type is AgentEventType.RUN_COMPLETED:
            stop = event.stop or (event.message.stop if event.message is not None else None)
            self.exit_code = exit_code_for(stop)
            if stop is not None and not self.json_events:
                self.notice(stop)
        elif event.type is AgentEventType.RUN_FAILED:
            self.failed = True
            if isinstance(event.error, ContextOverflowError):
                self.exit_code = EXIT_CODES["context_full"]
            else:
                self.exit_code = EXIT_CODES["error"]

    def show(self, event: AgentEvent) -> None:
        kind = event.type
        match kind:
            case AgentEventType.MODEL_STARTED:
                self.wait("Waiting for the model…")
            case AgentEventType.TEXT_DELTA:
                if event.text:
                    self.streamed = True
                    self.write(event.text)
            case AgentEventType.REASONING_DELTA:
                if event.text:
                    self.streamed = True
                    self.stop_waiting()
                    self.err.print(
                        terminal_safe(event.text),
                        end="",
                        style="dim italic",
                        markup=False,
                        soft_wrap=True,
                    )
            case AgentEventType.MODEL_COMPLETED:
                self.stop_waiting()
                message = event.message
                if message is not None and len(message.attempts) > 1:  # a fallback moved on
                    self.line(Text(fallback_line(message), style="dim"))
                if message is not None and not self.streamed:  # a non-streamed answer
                    if message.reasoning:
                        self.line(Text(terminal_safe(message.reasoning), style="dim italic"))
                    if message.text:
                        self.write(message.text)
                self.streamed = False
            case AgentEventType.TOOL_CALL_STARTED:
                if event.tool_call is not None:
                    call = event.tool_call
                    self.line(
                        Text.assemble(
                            ("🔧 ", ""),
                            (one_line(call.name), "bold cyan"),
                            (f"({one_line(call.arguments)})", "cyan"),
                        )
                    )
            case AgentEventType.TOOL_CALL_COMPLETED:
                if event.tool_result is not None:
                    result = event.tool_result
                    content = result.content
                    if len(content) > 500:
                        content = content[:500] + "…"
                    content = terminal_safe(content).replace("\n", "\n     ")  # under the ↳
                    style = "red" if result.is_error else "green"
                    self.line(Text.assemble(("   ↳ ", style), (content, style)))
                    self.wait("Waiting for the model…")
            case AgentEventType.TOOL_PROGRESS | AgentEventType.TOOL_LOG:
                if event.data:
                    self.line(Text(f"   · {one_line(tool_report(event.data))}", style="dim"))
            case AgentEventType.SAMPLING_COMPLETED:
                if event.data:
                    self.line(Text(f"   · {one_line(sampling_report(event.data))}", style="dim"))
            case (
                AgentEventType.MODEL_STOPPED
                | AgentEventType.MAX_TURNS_REACHED
                | AgentEventType.BUDGET_REACHED
            ):
                if event.stop is not None:
                    self.notice(event.stop)
            case AgentEventType.OUTPUT_INVALID:
                self.line(
                    Text(
                        f"✖ the answer did not validate; asking again:\n"
                        f"{terminal_safe(event.text or '')}",
                        "yellow",
                    )
                )
            case AgentEventType.RUN_COMPLETED:
                self.stop_waiting()
                self.end_text()
                if self.structured and event.output is not None:
                    self.err.print()
                    self.emit_json(to_jsonable_python(event.output))
            case AgentEventType.RUN_FAILED:
                self.stop_waiting()
                self.end_text()
                self.report_error(event.error)
            case (
                AgentEventType.RUN_STARTED
                | AgentEventType.TOOL_CALL_DELTA
                | AgentEventType.PARTIAL_OUTPUT
                | AgentEventType.TOOL_APPROVAL_REQUESTED
                | AgentEventType.TOOL_OUTCOME_UNKNOWN
                | AgentEventType.TOOL_INPUT_REQUESTED
                | AgentEventType.SAMPLING_REQUESTED
                | AgentEventType.GUARDRAIL_TRIPPED  # its stop was shown (MODEL_STOPPED)
            ):
                pass  # nothing to show (an approval is asked by the caller)
            case _:
                assert_never(kind)

    def report_error(self, error: BaseException | None) -> None:
        """Say on stderr (or as a JSON record) why the run failed.

        A prompt too long for the context window is reported as the CONTEXT_FULL
        stop it stands for, not as a failure.
        """
        self.stop_waiting()
        if isinstance(error, ContextOverflowError):
            stop = overflow_stop(error)
            if self.json_events:
                self.emit_json(
                    {"type": "error", "error": error_text(error), "stop": "context_full"}
                )
            else:
                self.notice(stop)
            return
        text = error_text(error)
        if isinstance(error, TransportError) and self.url:
            from zett_agent._urls import redact_url

            text += f" (calling {redact_url(self.url)})"
        if self.json_events:
            self.emit_json({"type": "error", "error": text})
        else:
            self.end_text()
            self.err.print(Text(f"✖ run failed: {terminal_safe(text)}", style="bold red"))


def tool_report(data: Mapping[str, Any]) -> str:
    """One line for a running tool's progress or log message (TOOL_PROGRESS,
    TOOL_LOG): ``2/3 step 2``, ``info: halfway there``."""
    if "progress" in data:
        total = data.get("total")
        done = f"{data['progress']:g}" + (f"/{total:g}" if isinstance(total, int | float) else "")
        return " ".join(x for x in (done, str(data.get("message") or "")) if x)
    text = data.get("data")
    shown = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    return f"{data.get('level', 'log')}: {shown}"[:500]
