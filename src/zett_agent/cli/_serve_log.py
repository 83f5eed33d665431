"""``zett serve``'s log lines, shown safe: :func:`log_config` for uvicorn.

What a serve process logs repeats what others sent: a client's ids and paths
(``AG-UI run <runId> of session ... failed``), a provider's or an MCP server's
error texts, the messages of exceptions in a traceback. Every record printed passes
:func:`~zett_agent._terminal_text.terminal_safe` before its formatter lays it out:

* the arguments of the message (``logger.warning("run %s failed", run_id)``) are
  one line each (:func:`~zett_agent._terminal_text.one_line`: a newline in a value
  cannot forge another log line); numbers stay numbers (the access log's status);
* the message itself, the traceback and the stack keep their lines, with every
  other control character shown escaped.

The level names' colours uvicorn adds on a terminal are the formatter's own, added
after. :func:`log_config` is uvicorn's logging configuration with these formatters,
for its error log (stderr) and its access log (stdout); :func:`other_loggers_safe`
gives every other logger of the process (zett's, the MCP SDK's, httpx's: warnings
and up) a stderr handler with the same formatter while ``zett serve`` runs.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import sys
from collections.abc import Iterator
from typing import Any

from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter, DefaultFormatter

from zett_agent._terminal_text import one_line, terminal_safe

__all__ = [
    "SafeAccessFormatter",
    "SafeDefaultFormatter",
    "log_config",
    "other_loggers_safe",
    "safe_record",
]


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
    formatter (:class:`SafeDefaultFormatter`), which renders it."""
    shown = logging.makeLogRecord(record.__dict__)
    if isinstance(shown.msg, str):
        shown.msg = terminal_safe(shown.msg)
    else:
        shown.msg = terminal_safe(str(shown.msg))
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


class _SafeFormat(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        shown = safe_record(record)
        if shown.exc_info and not shown.exc_text:
            shown.exc_text = self.formatException(shown.exc_info)
        if shown.exc_text:
            shown.exc_text = terminal_safe(shown.exc_text)
        return super().format(shown)


class SafeDefaultFormatter(_SafeFormat, DefaultFormatter):
    """uvicorn's ``LEVEL: message`` formatter over :func:`safe_record`."""


class SafeAccessFormatter(_SafeFormat, AccessFormatter):
    """uvicorn's access-log formatter (client, request line, status) over
    :func:`safe_record` (uvicorn quotes the path; the query and the method are
    shown as received)."""


def log_config() -> dict[str, Any]:
    """uvicorn's logging configuration (``uvicorn.config.LOGGING_CONFIG``) with
    :class:`SafeDefaultFormatter` and :class:`SafeAccessFormatter`: a dict for
    ``uvicorn.Config(log_config=...)``."""
    config = copy.deepcopy(LOGGING_CONFIG)
    formatters = config["formatters"]
    formatters["default"]["()"] = f"{__name__}.SafeDefaultFormatter"
    formatters["access"]["()"] = f"{__name__}.SafeAccessFormatter"
    return config


@contextlib.contextmanager
def other_loggers_safe() -> Iterator[None]:
    """While it lasts, the records of every logger uvicorn does not configure
    (zett's, the MCP SDK's, httpx's), warnings and up, and Python's warnings
    (:func:`logging.captureWarnings`), are printed on stderr through
    :class:`SafeDefaultFormatter`, not raw by Python's last-resort handler. A
    root logger that has handlers already (a host's) is left as it is."""
    handler: logging.Handler | None = None
    if not logging.root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setLevel(logging.WARNING)
        handler.setFormatter(SafeDefaultFormatter("%(levelprefix)s %(message)s"))
        logging.root.addHandler(handler)
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)
        if handler is not None:
            logging.root.removeHandler(handler)
