"""The ``zett`` command line, one module per command.

``main`` holds the typer ``app``, the exit codes, the consoles and the options
commands share; ``run``, ``chat``, ``inspect``, ``providers``, ``doctor``, ``sessions``,
``serve``, ``worker`` and ``runs`` (``submit`` and ``runs``) each register their
commands on ``app``; ``output`` prints a run's events (for ``run`` and ``chat``).
A new command is a new module here that registers itself on ``app`` and is
imported below. Command modules import the runtime inside their
commands, so ``zett --help`` loads none of it.
"""

from zett_agent.cli import (  # noqa: F401  (each registers its commands)
    _chat,
    _doctor,
    _inspect,
    _providers,
    _run,
    _runs,
    _serve,
    _sessions,
    _worker,
)
from zett_agent.cli._main import EXIT_CODES, app, main

__all__ = ["EXIT_CODES", "app", "main"]
