"""The ``zett`` command line, one module per command.

``main`` holds the typer ``app`` and the ``run``, ``inspect`` and ``providers``
commands; ``run`` and ``inspect`` hold what those commands do. A new command is a
new module here that registers itself on ``app`` and is imported below.
"""

from zett_agent.cli import runs as _runs  # noqa: F401  (registers submit and runs)
from zett_agent.cli import serve as _serve  # noqa: F401  (registers ``zett serve``)
from zett_agent.cli import worker as _worker  # noqa: F401  (registers worker)
from zett_agent.cli.main import EXIT_CODES, app

__all__ = ["EXIT_CODES", "app"]
