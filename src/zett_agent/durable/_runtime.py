"""Durable runs on DBOS: the workflow, the agents it can run, and launching DBOS.

A durable run is one DBOS workflow (:data:`WORKFLOW_NAME`) whose inputs are the
durable agent's name, the session id and the prompt, nothing else (no model, no
key). The workflow body is deterministic: the model calls, tool calls and hooks
are steps (:mod:`zett_agent.durable._steps`), the session's history is read up to
the last row checkpointed when the run began, the run id is the workflow id, and
every message is appended with the key ``<run id>:<n>`` (its place in the run),
so a replay after a crash stores nothing twice. What the loop stores only because
its task is being cancelled (a cut answer, "cancelled during" tool results) is not
stored: the process is stopping, and the run carries on from its checkpoints later.

DBOS is one per process: :func:`launch` configures and starts it once, after
every :class:`~zett_agent.durable.DurableAgent` of the process exists (a
run recovered at launch needs its agent), and :func:`shutdown` stops it.
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import json
import os
from collections.abc import AsyncGenerator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import aclosing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from dbos import DBOS, DBOSConfig

from zett_agent._agent import Agent
from zett_agent._clock import WALL_CLOCK
from zett_agent._events import AgentEvent, AgentEventType
from zett_agent._messages import Message, UserMessage, message_from_dict
from zett_agent.durable._checkpoints import encode_final
from zett_agent.durable._event_stream import EventWriter
from zett_agent.durable._steps import RUN_SESSION, TEMPORAL, DurableJournal, _on_temporal, step
from zett_agent.errors import ConfigError
from zett_agent.sessions import SessionStore, SQLiteSessionStore, StoredRow, live_rows
from zett_agent.sessions._base import messages_of
from zett_agent.sessions._journal import started_calls
from zett_agent.tools._approvals import ApprovalRequest, refuse_while_pending

if TYPE_CHECKING:
    from zett_agent.durable._agent import DurableAgent

__all__ = [
    "APPROVAL_EVENT",
    "APP_NAME",
    "DEFAULT_TASK_QUEUE",
    "MESSAGE_PROMPT",
    "QUEUE_NAME",
    "WORKFLOW_NAME",
    "DurableConfig",
    "TemporalConfig",
    "ashutdown",
    "launch",
    "on_temporal_engine",
    "prompt_of",
    "register",
    "shutdown",
    "store_for",
    "system_database_for",
    "system_database_next_to",
    "unregister",
]

APP_NAME = "zett-agent"
"""DBOS's application name for every zett durable run (queues and runs belong to it)."""

WORKFLOW_NAME = "zett_agent.durable.run"
"""The DBOS workflow name of a durable run: persisted data, never renamed."""

QUEUE_NAME = "zett-runs"
"""The DBOS queue submitted runs wait on until a worker takes them."""

APPROVAL_EVENT = "zett.approval"
"""The DBOS event a run that ended waiting for approval sets: the JSON list of
its waiting calls (``id``, ``name``, ``arguments``). Persisted data: never renamed."""

_AGENTS: dict[str, DurableAgent] = {}
_LAUNCHED: list[
    DurableConfig | TemporalConfig
] = []  # the config DBOS runs with in this process, if any


def require_launched() -> None:
    """Raise :class:`ConfigError` unless :func:`launch` ran in this process."""
    if not _LAUNCHED:
        raise ConfigError("durable runs need DBOS: call zett_agent.durable.launch(...) first")


def on_temporal_engine() -> bool:
    """Whether this process launched the Temporal engine (:class:`TemporalConfig`)."""
    return bool(_LAUNCHED) and isinstance(_LAUNCHED[0], TemporalConfig)


def register(durable: DurableAgent) -> None:
    """Make ``durable`` the agent runs naming ``durable.name`` run with in this
    process. Raises :class:`ConfigError` when another agent has that name."""
    known = _AGENTS.get(durable.name)
    if known is not None and known is not durable:
        raise ConfigError(f"a durable agent named {durable.name!r} is already registered")
    _AGENTS[durable.name] = durable


def unregister(durable: DurableAgent) -> None:
    """Forget ``durable`` (runs naming it fail until another agent takes the name)."""
    if _AGENTS.get(durable.name) is durable:
        del _AGENTS[durable.name]


MESSAGE_PROMPT = "\x00zett-user-message:"
"""How a workflow's prompt input marks a user message with parts (stored JSON, its
parts' bytes in the session store's blobs, by hash) rather than plain text."""


def prompt_of(prompt: str | None, store: SessionStore, session_id: str) -> str | UserMessage | None:
    """The prompt a workflow input stands for: text, or the user message it holds."""
    if prompt is None or not prompt.startswith(MESSAGE_PROMPT):
        return prompt
    message = message_from_dict(
        json.loads(prompt[len(MESSAGE_PROMPT) :]), store.blob_reader(session_id)
    )
    assert isinstance(message, UserMessage)
    return message


@DBOS.workflow(name=WORKFLOW_NAME)
async def run_workflow(agent_name: str, session_id: str, prompt: str | None) -> str:
    """The durable run: the final assistant message as stored JSON text."""
    return await run_body(agent_name, session_id, prompt)


async def run_body(agent_name: str, session_id: str, prompt: str | None) -> str:
    """The body of a durable run on either engine (the DBOS workflow's, the
    Temporal workflow's): the final assistant message as stored JSON text."""
    durable = agent_named(agent_name)
    store = durable.store

    def start(
        agent: Agent,
        history: list[Message],
        on_message: OnMessage,
        journal: DurableJournal,
        run_id: str,
    ) -> AsyncGenerator[AgentEvent, None]:
        return agent.stream(
            asked, history=history, on_message=on_message, run_id=run_id, journal=journal
        )

    if _on_temporal():
        read_session = TEMPORAL["read_session"]

        history, started, asked = await read_session(durable, session_id, prompt)
        refuse_while_pending(session_id, history)  # calls wait: no prompt
        return await drive_messages(durable, session_id, history, started, start)

    async def last_row() -> int:
        rows = await store.rows(session_id)
        return rows[-1].seq if rows else 0

    last = await step(f"{durable.name}.session", last_row)
    rows = live_rows([r for r in await store.rows(session_id) if r.seq <= last])
    refuse_while_pending(session_id, [row.message for row in rows])  # calls wait: no prompt
    asked = prompt_of(prompt, store, session_id)
    return await drive(durable, session_id, rows, start)


def agent_named(agent_name: str) -> DurableAgent:
    """The durable agent runs of ``agent_name`` use in this process; ConfigError
    when there is none."""
    durable = _AGENTS.get(agent_name)
    if durable is None:
        raise ConfigError(
            f"no durable agent named {agent_name!r} in this process "
            f"(known: {', '.join(sorted(_AGENTS)) or 'none'}); make it before launch()"
        )
    return durable


OnMessage = Callable[[Message], Awaitable[None]]
Start = Callable[
    [Agent, list[Message], OnMessage, DurableJournal, str], AsyncGenerator[AgentEvent, None]
]


async def drive(durable: DurableAgent, session_id: str, rows: list[StoredRow], start: Start) -> str:
    """The body every durable workflow shares: the run of ``start`` (the agent's
    stream, approve stream...) on the session's ``rows`` (a deterministic cut of
    the session), each message appended with the key ``<run id>:<n>``. A run that
    ends with calls waiting for approval stores the request (key ``<run
    id>:approval``, naming the durable agent that continues it) and sets the DBOS
    event :data:`APPROVAL_EVENT` to its calls. Returns the final message as JSON."""
    return await drive_messages(durable, session_id, messages_of(rows), started_calls(rows), start)


async def drive_messages(
    durable: DurableAgent,
    session_id: str,
    history: list[Message],
    started: frozenset[str],
    start: Start,
) -> str:
    """:func:`drive` on the session's messages and the call ids it records as
    started (what a Temporal step reads, so the rows never enter the workflow)."""
    temporal = _on_temporal()
    if temporal:
        from temporalio import workflow

        run_id: str | None = workflow.info().workflow_id
    else:
        run_id = DBOS.workflow_id
    assert run_id is not None, "a durable run runs only as a workflow"
    store = durable.store
    RUN_SESSION.set((store, session_id))
    if temporal:  # the loop's wall clock: the workflow's (a replay reads the same time)
        WALL_CLOCK.set(TEMPORAL["now"])
    journal = DurableJournal(f"{durable.name}.tool", store, session_id, started)
    counter = itertools.count()

    async def put(message: Message | ApprovalRequest, key: str) -> None:
        if not temporal:
            await store.append(session_id, message, key=key)
            return
        resolve_messages = TEMPORAL["resolve_messages"]

        async def write() -> None:
            (real,) = (
                await resolve_messages([message], store, session_id)
                if not isinstance(message, ApprovalRequest)
                else [message]
            )
            await store.append(session_id, real, key=key)

        await step(f"{durable.name}.append", write)

    async def append(message: Message) -> None:
        key = f"{run_id}:{next(counter)}"
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            # The run's task is being cancelled (the process is stopping; DBOS's own
            # cancel does not cancel tasks). The run is not over: DBOS runs it again
            # from its checkpoints, and that run stores how this message really ends
            # (a cut answer or a "cancelled during" result would take its key).
            return
        await put(message, key)

    final = None
    waiting: ApprovalRequest | None = None
    events = start(durable.step_agent(), history, append, journal, run_id)
    # what another process follows (._event_stream; a DBOS stream: not on Temporal)
    followers = None if temporal else EventWriter(run_id)
    async with aclosing(events):
        async for event in events:
            if followers is not None:
                await followers.add(event)
            if event.type is AgentEventType.RUN_COMPLETED:
                final, waiting = event.message, event.approval
    assert final is not None, "a run's events end with RUN_COMPLETED"
    if waiting is not None:
        request = replace(waiting, durable_agent=durable.name)
        await put(request, f"{run_id}:approval")
        if not temporal:
            calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in request.calls]
            await DBOS.set_event_async(APPROVAL_EVENT, json.dumps(calls))
    if followers is not None:
        await followers.close()  # after the request is stored: a follower may decide it
    return encode_final(final)


@dataclass(frozen=True)
class DurableConfig:
    """How this process runs DBOS.

    Attributes:
        system_database_url: DBOS's system database: ``sqlite:///path`` (one
            machine; see :func:`system_database_next_to`) or ``postgresql://...``
            (many workers).
        executor_id: this process's stable name. DBOS recovers, at launch, the
            runs left unfinished by a process of the same executor id; give each
            worker its own and restart it under the same one.
        application_version: runs are recovered only by a process of the same
            version. Default ``zett-agent-<version>``; change it when a new
            release of your tools or agent would take different steps.
        worker_concurrency: most submitted runs this process runs at once
            (None: no limit); ``global_concurrency`` limits all workers together.
        polling_interval: seconds between two looks at the queue.
    """

    system_database_url: str
    executor_id: str | None = None
    application_version: str | None = None
    worker_concurrency: int | None = None
    global_concurrency: int | None = None
    polling_interval: float = 0.25


DEFAULT_TASK_QUEUE = "zett-runs"
"""The Temporal task queue runs are started on and workers poll (the DBOS queue's name)."""


@dataclass(frozen=True)
class TemporalConfig:
    """How this process runs durable runs on Temporal.

    Attributes:
        address: the Temporal frontend, ``HOST:PORT`` (default
            ``$ZETT_TEMPORAL_ADDRESS`` or ``localhost:7233``).
        namespace: the Temporal namespace.
        task_queue: the queue runs are started on and this worker polls.
        worker: whether this process runs a worker (runs its agents' runs);
            False for a process that only submits and watches.
        max_concurrent_runs: most workflow tasks (runs) this worker works on
            at once (None: the SDK's default).
        task_timeout: Temporal's workflow task timeout: how soon another worker
            takes a run over when this one died mid-step (seconds).
        step_timeout: longest a step (a model call, a tool call) may take (seconds).
        identity: this worker's name in Temporal (what a run's history and
            ``zett runs status`` show as the worker that took it; None: the SDK's
            ``pid@host``); ``zett worker --executor-id`` sets it.
    """

    address: str | None = None
    namespace: str = "default"
    task_queue: str = DEFAULT_TASK_QUEUE
    worker: bool = True
    max_concurrent_runs: int | None = None
    task_timeout: float = 10.0
    step_timeout: float = 24 * 3600.0
    identity: str | None = None

    @property
    def target(self) -> str:
        """The address connected to."""
        return self.address or os.environ.get("ZETT_TEMPORAL_ADDRESS") or "localhost:7233"


def system_database_next_to(store_path: str | os.PathLike[str]) -> str:
    """The SQLite URL of DBOS's system database beside a session file:
    ``sessions.sqlite3`` -> ``sqlite:///.../sessions.dbos.sqlite3``."""
    path = Path(store_path).resolve()
    return f"sqlite:///{path.with_name(path.stem + '.dbos' + (path.suffix or '.sqlite3'))}"


def system_database_for(sessions: str) -> str:
    """DBOS's system database for a sessions location: the same PostgreSQL
    database for a ``postgresql://`` DSN (DBOS keeps to its schema ``dbos``), else
    a SQLite file next to the session file."""
    if sessions.startswith(("postgresql://", "postgres://")):
        return sessions
    return system_database_next_to(sessions)


def store_for(sessions: str) -> SessionStore:
    """The session store for a sessions location: a ``postgresql://`` DSN or a path."""
    if sessions.startswith(("postgresql://", "postgres://")):
        from zett_agent.sessions._postgres import PostgresSessionStore

        return PostgresSessionStore(sessions)
    return SQLiteSessionStore(sessions)


def _default_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{APP_NAME}-{version('zett-agent')}"
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return f"{APP_NAME}-dev"


async def launch(config: DurableConfig | TemporalConfig) -> None:
    """Configure and start DBOS in this process, recover this executor's unfinished
    runs, and listen to the run queue. Call it once, after making every
    :class:`DurableAgent`, from the event loop the runs should use (DBOS runs
    recovered and dequeued runs on the loop that called it).

    Raises :class:`ConfigError` when DBOS cannot start, or is already launched
    in this process.
    """
    if _LAUNCHED:
        raise ConfigError("DBOS is already launched in this process (shutdown() first)")
    if isinstance(config, TemporalConfig):
        importlib.import_module("zett_agent.durable._temporal")  # plugs itself in: TEMPORAL
        launch_temporal = TEMPORAL["launch_temporal"]

        await launch_temporal(config)
        _LAUNCHED[:] = [config]
        return
    dbos_config: DBOSConfig = {
        "name": APP_NAME,
        "system_database_url": config.system_database_url,
        "application_version": config.application_version or _default_version(),
        "executor_id": config.executor_id or "local",
        "log_level": os.environ.get("ZETT_DBOS_LOG_LEVEL", "WARNING"),
    }
    if config.system_database_url.startswith("sqlite:///"):
        Path(config.system_database_url.removeprefix("sqlite:///")).parent.mkdir(
            parents=True, exist_ok=True
        )
    try:
        DBOS(config=dbos_config)
        DBOS.launch()
    except Exception as error:
        raise ConfigError(f"cannot start DBOS: {error}") from error
    _LAUNCHED[:] = [config]
    await DBOS.register_queue_async(
        QUEUE_NAME,
        worker_concurrency=config.worker_concurrency,
        global_concurrency=config.global_concurrency,
        polling_interval_sec=config.polling_interval,
        on_conflict="always_update",
    )


async def ashutdown() -> None:
    """:func:`shutdown`, waiting for a Temporal worker to stop."""
    if on_temporal_engine():
        stop_temporal = TEMPORAL["stop_temporal"]

        _LAUNCHED.clear()
        await stop_temporal()
        return
    shutdown()


def shutdown() -> None:
    """Stop DBOS in this process (unfinished runs stay pending for recovery).

    DBOS made its thread pool the running event loop's default executor; that pool
    is shut down with DBOS, so the loop gets a fresh one (``asyncio.to_thread``
    keeps working in the host after shutdown). On Temporal the worker is told to
    stop without waiting for it (:func:`ashutdown` waits)."""
    if on_temporal_engine():
        cancel_temporal = TEMPORAL["cancel_temporal"]

        _LAUNCHED.clear()
        cancel_temporal()
        return
    _LAUNCHED.clear()
    DBOS.destroy(destroy_registry=False)
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    loop.set_default_executor(ThreadPoolExecutor())
