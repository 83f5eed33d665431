"""``zett worker``: run durable runs from the queue (extra ``durable``).

The agents come from ``--agent module:factory`` (any number): ``factory`` is
called with no arguments (awaited when async) and returns an ``Agent``, a
``DurableAgent`` or a list of them, before DBOS launches, so a run recovered at
launch finds its agent with its tools. An ``Agent`` is made durable on the
``--sessions`` store under its ``config.name``.

Recovery of a dead worker's runs: each worker has a stable ``--executor-id``
(default: the host name); started again under the same id, it carries on the runs
it left. ``--recover ID`` also puts the unfinished runs of another executor back on
the queue at start, for a worker that will not come back (never for a live one).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from zett_agent.cli._main import app
from zett_agent.cli._main import err_console as _err
from zett_agent.cli._main import out_console as _out

__all__ = ["load_factory", "worker"]


def load_factory(spec: str) -> Any:
    """The object ``module:attribute`` names (the current folder is importable).
    Raises ``typer.BadParameter`` with what was wrong."""
    import importlib

    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise typer.BadParameter(f"{spec!r}: expected module:factory")
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise typer.BadParameter(f"{spec!r}: cannot import {module_name}: {error}") from error
    found: Any = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise typer.BadParameter(f"{spec!r}: {module_name} has no {attribute}")
        found = getattr(found, part)
    return found


async def _agents(specs: Sequence[str], sessions: str) -> list[Any]:
    import inspect

    from zett_agent._agent import Agent
    from zett_agent.durable import DurableAgent
    from zett_agent.durable._runtime import store_for

    store: Any = None
    made: list[Any] = []
    for spec in specs:
        factory = load_factory(spec)
        value = factory() if callable(factory) else factory
        if inspect.isawaitable(value):
            value = await value
        for item in value if isinstance(value, list | tuple) else [value]:
            if isinstance(item, DurableAgent):
                made.append(item)
            elif isinstance(item, Agent):
                store = store or store_for(sessions)
                made.append(DurableAgent(item, store))
            else:
                raise typer.BadParameter(f"{spec!r} made {type(item).__name__}, not an Agent")
    return made


async def _serve(
    specs: Sequence[str],
    sessions: str,
    db: str | None,
    executor_id: str,
    concurrency: int | None,
    app_version: str | None,
    recover: Sequence[str],
) -> None:
    from zett_agent.durable import DurableConfig, launch, shutdown
    from zett_agent.durable._runs import DurableRuns
    from zett_agent.durable._runtime import system_database_for

    agents = await _agents(specs, sessions)
    url = db or system_database_for(sessions)
    await launch(
        DurableConfig(
            url,
            executor_id=executor_id,
            application_version=app_version,
            worker_concurrency=concurrency,
        )
    )
    import asyncio

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        names = ", ".join(a.name for a in agents)
        _out().print(f"worker {executor_id} ready (agents: {names})", soft_wrap=True)
        if recover:
            async with DurableRuns(url) as runs:
                for dead in recover:
                    ids = await runs.recover_executor(dead)
                    _err().print(f"recovered {len(ids)} run(s) of executor {dead}")
        await stop.wait()
    finally:
        shutdown()
        for agent in agents:
            await agent.aclose()


def _sessions_given(ctx: typer.Context, param: typer.CallbackParam, value: str) -> str:
    """``--sessions`` as given; an empty one (``--sessions ""``, or ``ZETT_SESSIONS``
    set but empty, as a failed ``DSN=$(...)`` leaves it) is a usage error, never a
    silent fall-back to ``sessions.sqlite3`` in the current folder."""
    import os

    source = ctx.get_parameter_source(param.name or "")
    defaulted = source is None or source.name == "DEFAULT"
    if not value.strip() or (defaulted and os.environ.get("ZETT_SESSIONS", None) == ""):
        raise typer.BadParameter(
            "it is empty (ZETT_SESSIONS set to ''?): give a session file or a "
            "postgresql:// DSN; did the command that printed the DSN fail?",
            param_hint="--sessions / ZETT_SESSIONS",
        )
    return value


SessionsOption = Annotated[
    str,
    typer.Option(
        "--sessions",
        envvar="ZETT_SESSIONS",
        help="Session file, or a postgresql:// DSN.",
        callback=_sessions_given,
        is_eager=True,  # before --agent imports anything
    ),
]
DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="ZETT_DURABLE_DB",
        help="DBOS system database URL (default: beside the session file, or the sessions DSN).",
    ),
]


@app.command()
def worker(
    agent: Annotated[
        list[str], typer.Option("--agent", help="module:factory making the agent(s).")
    ],
    sessions: SessionsOption = "sessions.sqlite3",
    db: DbOption = None,
    executor_id: Annotated[
        str | None,
        typer.Option("--executor-id", help="This worker's stable name (default: host name)."),
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(min=1, help="Most runs at once in this worker.")
    ] = None,
    app_version: Annotated[
        str | None, typer.Option(help="Application version (default zett-agent-<version>).")
    ] = None,
    recover: Annotated[
        list[str] | None,
        typer.Option(help="At start, requeue the unfinished runs of this dead executor."),
    ] = None,
) -> None:
    """Run durable runs from the queue until Ctrl-C or SIGTERM (extra 'durable')."""
    try:
        import zett_agent.durable  # noqa: F401
    except ImportError as error:
        _err().print(
            f"zett worker needs the durable extra: pip install 'zett-agent[durable]' ({error})"
        )
        raise typer.Exit(2) from error
    import asyncio
    import socket

    name = executor_id or socket.gethostname()
    asyncio.run(_serve(agent, sessions, db, name, concurrency, app_version, recover or []))
