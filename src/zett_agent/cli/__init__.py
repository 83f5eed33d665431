"""The ``zett`` command line, one module per command.

``main`` holds the typer ``app``, the exit codes and the consoles; ``run``,
``inspect``, ``providers``, ``sessions``, ``serve``, ``worker`` and ``runs``
(``submit`` and ``runs``) each register their commands on ``app``; ``output``
prints a run's events. A new command is a new module here that registers itself
on ``app`` and is imported below. Command modules import the runtime inside their
commands, so ``zett --help`` loads none of it.
"""

from zett_agent.cli import inspect, providers, run, runs, serve, sessions, worker
from zett_agent.cli.main import EXIT_CODES, app

__all__ = [
    "EXIT_CODES",
    "app",
    "inspect",
    "providers",
    "run",
    "runs",
    "serve",
    "sessions",
    "worker",
]
