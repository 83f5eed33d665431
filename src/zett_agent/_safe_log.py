"""Log records of text zett did not write, shown safe: :class:`SafeFormatter`.

A log line repeats what others sent: a client's ids and paths
(``AG-UI run <runId> of session ... failed``), a provider's or an MCP server's
error texts, the messages of exceptions in a traceback. A record formatted by
:class:`SafeFormatter` (or a formatter that mixes it in, as ``zett serve``'s
uvicorn formatters in ``cli/_serve_log.py`` do) passes
:func:`~zett_agent._terminal_text.terminal_safe` before it is laid out:

* the arguments of the message (``logger.warning("run %s failed", run_id)``) are
  one line each (:func:`~zett_agent._terminal_text.one_line`: a newline in a value
  cannot forge another log line); numbers stay numbers (an access log's status);
* the message itself, the traceback and the stack keep their lines, with every
  other control character shown escaped.

:func:`safe_root_logging` makes Python's last-resort handler (what prints a
warning when no handler is configured) one with it while a ``zett`` command runs
(Python's own prints warnings raw); logging a host configures is left as it is.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings
from collections.abc import Iterator
from typing import Any, TextIO

from zett_agent._terminal_text import one_line, terminal_safe

__all__ = ["SafeFormatter", "safe_record", "safe_root_logging"]


class _Shown:
    """An argument of a log message that is not a string or a number, shown safe
    whether the message formats it with ``%s`` or ``%r`` (``%d`` as before)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __str__(self) -> str:
        return one_line(str(self.value))

    def __repr__(self) -> str:
        return one_line(repr(self.value))

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __index__(self) -> int:
        return int(self.value.__index__())


def _argument(value: Any) -> Any:
    if isinstance(value, str):
        return one_line(value)
    if value is None or isinstance(value, int | float):
        return value
    return _Shown(value)


def safe_record(record: logging.LogRecord) -> logging.LogRecord:
    """A copy of ``record`` that shows safe (the module docstring); ``record`` itself
    is left as it is, for the other handlers. The traceback is made safe by the
    formatter (:class:`SafeFormatter`), which renders it."""
    shown = logging.makeLogRecord(record.__dict__)
    shown.msg = terminal_safe(shown.msg if isinstance(shown.msg, str) else str(shown.msg))
    if isinstance(shown.args, tuple):
        shown.args = tuple(map(_argument, shown.args))
    elif isinstance(shown.args, dict):
        shown.args = {key: _argument(value) for key, value in shown.args.items()}
    if shown.stack_info:
        shown.stack_info = terminal_safe(shown.stack_info)
    color = shown.__dict__.get("color_message")  # uvicorn's coloured message format
    if isinstance(color, str):
        shown.__dict__["color_message"] = terminal_safe(color)
    return shown


class SafeFormatter(logging.Formatter):
    """A :class:`logging.Formatter` of :func:`safe_record` copies, its traceback
    shown safe too; mixed in first, it makes another formatter safe."""

    def format(self, record: logging.LogRecord) -> str:
        shown = safe_record(record)
        if shown.exc_info and not shown.exc_text:
            shown.exc_text = self.formatException(shown.exc_info)
        if shown.exc_text:
            shown.exc_text = terminal_safe(shown.exc_text)
        return super().format(shown)


@contextlib.contextmanager
def safe_root_logging(formatter: logging.Formatter | None = None) -> Iterator[None]:
    """While it lasts, Python's last-resort handler (what prints a record, warnings
    and up, when no handler is configured anywhere: zett's, the MCP SDK's,
    httpx's) prints on stderr through ``formatter`` (default: :class:`SafeFormatter`
    of the bare message, as Python's own prints it), not raw; so do Python's
    warnings. Logging a host configures
    (``logging.basicConfig`` in an ``--agent`` module, a handler of its own) is
    untouched: its levels and handlers decide, and nothing prints twice. A Python
    warning is printed as Python prints it, escaped (:func:`warnings.showwarning`)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(formatter or SafeFormatter())
    before = logging.lastResort
    before_show = warnings.showwarning
    logging.lastResort = handler
    warnings.showwarning = _show_warning_safe
    try:
        yield
    finally:
        warnings.showwarning = before_show
        logging.lastResort = before


def _show_warning_safe(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """:func:`warnings.showwarning` as Python's own, its text shown safe."""
    out = sys.stderr if file is None else file
    if out is None:  # pythonw: nowhere to print
        return
    with contextlib.suppress(OSError):
        out.write(terminal_safe(warnings.formatwarning(message, category, filename, lineno, line)))
