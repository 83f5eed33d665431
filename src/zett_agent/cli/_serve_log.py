"""``zett serve``'s uvicorn log lines, shown safe: :func:`log_config`.

uvicorn's error log (stderr) and access log (stdout) through its own formatters
with :class:`~zett_agent._safe_log.SafeFormatter` mixed in: every value a record
repeats (a client's request line, an exception's message) has its control
characters shown escaped, the level names' colours uvicorn adds on a terminal are
the formatter's own, added after. Every other logger of the process is made safe by
:func:`~zett_agent._safe_log.safe_root_logging`, which every ``zett`` command runs
in (``cli/_main.py``).
"""

from __future__ import annotations

import copy
from typing import Any

from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter, DefaultFormatter

from zett_agent._safe_log import SafeFormatter

__all__ = ["SafeAccessFormatter", "SafeDefaultFormatter", "log_config"]


class SafeDefaultFormatter(SafeFormatter, DefaultFormatter):
    """uvicorn's ``LEVEL: message`` formatter over :func:`~zett_agent._safe_log.safe_record`."""


class SafeAccessFormatter(SafeFormatter, AccessFormatter):
    """uvicorn's access-log formatter (client, request line, status) over
    :func:`~zett_agent._safe_log.safe_record` (uvicorn quotes the path; the query
    and the method are shown as received)."""


def log_config() -> dict[str, Any]:
    """uvicorn's logging configuration (``uvicorn.config.LOGGING_CONFIG``) with
    :class:`SafeDefaultFormatter` and :class:`SafeAccessFormatter`: a dict for
    ``uvicorn.Config(log_config=...)``."""
    config = copy.deepcopy(LOGGING_CONFIG)
    formatters = config["formatters"]
    formatters["default"]["()"] = f"{__name__}.SafeDefaultFormatter"
    formatters["access"]["()"] = f"{__name__}.SafeAccessFormatter"
    return config
