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

:func:`safe_root_logging` gives every logger a stderr handler with it while a
``zett`` command runs (without one, Python's last-resort handler prints warnings
raw), unless the root logger has handlers already (a host's, pytest's).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Any

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
    """While it lasts, the records of every logger without a handler of its own
    (zett's, the MCP SDK's, httpx's), warnings and up, and Python's warnings
    (:func:`logging.captureWarnings`), are printed on stderr through ``formatter``
    (default: :class:`SafeFormatter` of the bare message, as Python's last-resort
    handler prints it), not raw. A root logger that has handlers already is left
    as it is."""
    if logging.root.handlers:
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(formatter or SafeFormatter())
    logging.root.addHandler(handler)
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)
        logging.root.removeHandler(handler)
