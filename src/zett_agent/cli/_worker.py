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
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, NoReturn

import typer

from zett_agent.cli._main import app
from zett_agent.cli._main import err_console as _err
from zett_agent.cli._main import out_console as _out

__all__ = [
    "EngineChoice",
    "EngineName",
    "load_factory",
    "not_on_temporal",
    "worker",
]


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
    engine: EngineChoice,
    db: str | None,
    executor_id: str,
    concurrency: int | None,
    app_version: str | None,
    recover: Sequence[str],
) -> None:
    from zett_agent.durable import DurableConfig, TemporalConfig, ashutdown, launch
    from zett_agent.durable._runs import DurableRuns
    from zett_agent.durable._runtime import system_database_for
    from zett_agent.errors import ConfigError

    agents = await _agents(specs, sessions)
    url = db or system_database_for(sessions)
    config: DurableConfig | TemporalConfig = (
        TemporalConfig(
            engine.address,
            namespace=engine.namespace,
            task_queue=engine.task_queue,
            max_concurrent_runs=concurrency,
            identity=executor_id,
        )
        if engine.temporal
        else DurableConfig(
            url,
            executor_id=executor_id,
            application_version=app_version,
            worker_concurrency=concurrency,
        )
    )
    try:
        if engine.temporal:  # a namespace that does not exist: said before the worker starts
            from zett_agent.durable._temporal_runs import TemporalRuns

            await TemporalRuns(
                engine.address, namespace=engine.namespace, task_queue=engine.task_queue
            ).connect()
        await launch(config)
    except ConfigError as error:
        for agent in agents:
            await agent.aclose()
        _err().print(f"✖ {error}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
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
        await _until_stopped(stop, engine)
    finally:
        await ashutdown()
        for agent in agents:
            await agent.aclose()


async def _until_stopped(stop: Any, engine: EngineChoice) -> None:
    """Until ``stop`` is set; on Temporal also until the worker fails (one line on
    stderr, exit status 1), rather than a worker that says it is ready and polls nothing."""
    import asyncio

    if not engine.temporal:
        await stop.wait()
        return
    from zett_agent.durable._temporal import running

    polling = running().task
    assert polling is not None
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait([stopped, polling], return_when=asyncio.FIRST_COMPLETED)
    if stopped.done():
        return
    stopped.cancel()
    failure = None if polling.cancelled() else polling.exception()
    _err().print(
        f"✖ the Temporal worker stopped: {failure or 'cancelled'}", markup=False,
        highlight=False, soft_wrap=True,
    )  # fmt: skip
    raise typer.Exit(1)


class EngineName(StrEnum):
    """The durable engines ``--engine`` names."""

    dbos = "dbos"
    temporal = "temporal"


@dataclass(frozen=True)
class EngineChoice:
    """The engine options of a durable command: ``--engine`` and, on Temporal,
    where its runs are."""

    name: EngineName = EngineName.dbos
    address: str = "localhost:7233"
    namespace: str = "default"
    task_queue: str = "zett-runs"

    @property
    def temporal(self) -> bool:
        return EngineName(self.name) is EngineName.temporal  # a plain 'temporal' too


def not_on_temporal(what: str, why: str) -> NoReturn:
    """One line saying ``what`` has no meaning on Temporal, and exit status 2."""
    _err().print(
        f"✖ {what} has no meaning on Temporal: {why}", markup=False, highlight=False,
        soft_wrap=True,
    )  # fmt: skip
    raise typer.Exit(2)


EngineOption = Annotated[
    EngineName,
    typer.Option(
        "--engine",
        envvar="ZETT_ENGINE",
        case_sensitive=False,
        help="The durable engine: dbos, or temporal (a Temporal cluster).",
    ),
]
TemporalAddressOption = Annotated[
    str,
    typer.Option(
        "--temporal-address",
        envvar="ZETT_TEMPORAL_ADDRESS",
        metavar="HOST:PORT",
        help="Temporal's frontend (--engine temporal).",
    ),
]
NamespaceOption = Annotated[
    str,
    typer.Option(
        "--namespace",
        envvar="ZETT_TEMPORAL_NAMESPACE",
        help="Temporal namespace (--engine temporal).",
    ),
]
TaskQueueOption = Annotated[
    str,
    typer.Option(
        "--task-queue",
        envvar="ZETT_TEMPORAL_TASK_QUEUE",
        help="Temporal task queue of the runs (--engine temporal).",
    ),
]


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
        typer.Option(help="At start, requeue the unfinished runs of this dead executor (DBOS)."),
    ] = None,
    engine: EngineOption = EngineName.dbos,
    temporal_address: TemporalAddressOption = "localhost:7233",
    namespace: NamespaceOption = "default",
    task_queue: TaskQueueOption = "zett-runs",
) -> None:
    """Run durable runs from the queue until Ctrl-C or SIGTERM (extra 'durable'; on
    Temporal, extra 'temporal')."""
    chosen = EngineChoice(engine, temporal_address, namespace, task_queue)
    if chosen.temporal and recover:
        not_on_temporal(
            "--recover", "another worker of the task queue takes a dead worker's runs by itself"
        )
    if chosen.temporal and app_version is not None:
        not_on_temporal("--app-version", "use Temporal's worker versioning (docs/durable.md)")
    try:
        import zett_agent.durable  # noqa: F401

        if chosen.temporal:
            import temporalio  # noqa: F401
    except ImportError as error:
        extra = "temporal" if chosen.temporal else "durable"
        _err().print(
            f"zett worker needs the {extra} extra: pip install 'zett-agent[{extra}]' ({error})"
        )
        raise typer.Exit(2) from error
    import asyncio
    import socket

    name = executor_id or socket.gethostname()
    asyncio.run(_serve(agent, sessions, chosen, db, name, concurrency, app_version, recover or []))
