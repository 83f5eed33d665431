"""DurableRuns: submit, list, watch and cancel durable runs from any process.

It talks to DBOS's system database only (through ``dbos.DBOSClient``), so a host
or ``zett submit`` needs no agent and no model: a worker (``zett worker``, or any
process that made the agent and called :func:`~zett_agent.durable.launch`) takes
the run from the queue :data:`~zett_agent.durable.QUEUE_NAME` and runs it.

Run ids are the caller's: submitting an id that exists changes nothing and
returns it (idempotent submit). A run's status is DBOS's: ``ENQUEUED`` (waiting
for a worker), ``PENDING`` (running, or left by a dead worker until it is
recovered), ``SUCCESS``, ``ERROR``, ``CANCELLED``, ``MAX_RECOVERY_ATTEMPTS_EXCEEDED``.

The system database is a worker's to create (:func:`~zett_agent.durable.launch`):
where none is yet, :class:`DurableRuns` raises :class:`ConfigError` saying so and
creates nothing (no empty SQLite file is left behind).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dbos import DBOSClient, EnqueueOptions, WorkflowHandleAsync
from dbos import error as dbos_errors

from zett_agent._events import AgentEvent
from zett_agent._messages import AssistantMessage
from zett_agent.durable._agent import final_of, new_run_id
from zett_agent.durable._approvals import DECIDED_WORKFLOW_NAME, decided_run_id
from zett_agent.durable._event_stream import follow_events
from zett_agent.durable._runtime import APP_NAME, QUEUE_NAME, WORKFLOW_NAME
from zett_agent.errors import ConfigError, ResumeError, ZettError
from zett_agent.sessions import SessionStore, StoredRow, live_rows
from zett_agent.sessions._decisions import decision_row, take_decision, waiting_request
from zett_agent.tools._approvals import ApprovalConflictError, ApprovalRequest, Decision

RUN_WORKFLOWS = [WORKFLOW_NAME, DECIDED_WORKFLOW_NAME]
"""The workflows a durable run is one of: a run, or a continuation after a decision."""

__all__ = [
    "DecidingRuns",
    "DurableRuns",
    "NotOnThisEngineError",
    "RunCancelledError",
    "RunInfo",
    "Runs",
    "no_runs_database",
]

_TABLE = "workflow_status"  # DBOS's table of runs


def no_runs_database(where: str) -> str:
    """The message for a system database no worker has created yet."""
    return (
        f"no durable runs database at {where}: a worker creates it "
        "(zett worker --agent module:factory, with the same --sessions or ZETT_SESSIONS); "
        "nothing was created"
    )


def _sqlite_created(url: str) -> bool:
    """Whether the SQLite system database of ``url`` exists and holds DBOS's runs
    table (read only: a missing file is not created)."""
    path = Path(url.removeprefix("sqlite:///"))
    if not path.is_file():
        return False
    try:
        with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
            found = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_TABLE,)
            ).fetchone()
    except sqlite3.Error:
        return False
    return found is not None


def _where(url: str) -> str:
    """The database of ``url`` named without credentials."""
    if url.startswith("sqlite:///"):
        return url.removeprefix("sqlite:///")
    host = url.split("@", 1)[-1] if "@" in url else url.split("://", 1)[-1]
    return f"postgresql://{host} (schema dbos)"


@dataclass(frozen=True)
class RunInfo:
    """One durable run as DBOS records it. Times are Unix seconds."""

    run_id: str
    status: str
    agent: str | None
    session_id: str | None
    prompt: str | None
    created_at: float | None
    updated_at: float | None
    executor_id: str | None
    app_version: str | None
    error: str | None


def _info(status: Any) -> RunInfo:
    args = tuple((status.input or {}).get("args", ())) if status.input else ()
    agent, session, prompt = (*args, None, None, None)[:3]
    if status.name == DECIDED_WORKFLOW_NAME:  # (agent, session, request row): no prompt
        prompt = None
    return RunInfo(
        run_id=status.workflow_id,
        status=str(status.status),
        agent=agent,
        session_id=session,
        prompt=prompt,
        created_at=status.created_at / 1000 if status.created_at else None,
        updated_at=status.updated_at / 1000 if status.updated_at else None,
        executor_id=status.executor_id,
        app_version=status.app_version,
        error=None if status.error is None else f"{type(status.error).__name__}: {status.error}",
    )


class Runs(Protocol):
    """What ``zett submit`` and ``zett runs`` use of an engine's runs, from any
    process: :class:`DurableRuns` (DBOS) and
    :class:`~zett_agent.durable._temporal_runs.TemporalRuns` (Temporal) both are
    one. Statuses are DBOS's words on both (``ENQUEUED``, ``PENDING``,
    ``SUCCESS``, ``ERROR``, ``CANCELLED``...); an operation an engine does not
    have raises :class:`NotOnThisEngineError`."""

    sessions: SessionStore | None
    waiting: str
    """The status of a run no worker has taken yet."""

    async def aclose(self) -> None: ...

    async def submit(
        self, agent: str, prompt: str | None, *, session_id: str, run_id: str | None = None
    ) -> str: ...

    async def status(self, run_id: str) -> RunInfo | None: ...

    async def list_runs(
        self, *, limit: int = 50, status: str | None = None, executor_id: str | None = None
    ) -> list[RunInfo]: ...

    async def result(self, run_id: str) -> AssistantMessage: ...

    async def cancel(self, run_id: str) -> None: ...

    async def resume(self, run_id: str) -> None: ...

    async def recover_executor(self, executor_id: str) -> list[str]: ...

    async def request_of(self, run_id: str) -> tuple[StoredRow, bool] | None: ...

    async def pending_approval(self, run_id: str) -> ApprovalRequest | None: ...

    async def approve(self, run_id: str, decisions: Mapping[str, Decision]) -> str: ...


class RunCancelledError(ZettError):
    """The awaited run was cancelled (``zett runs cancel``): it has no final message."""


class RunFailedError(ZettError):
    """The awaited run ended with no final message and no zett error to re-raise:
    on Temporal a workflow terminated (``temporal workflow terminate``) or timed
    out; the message names which, with the engine's reason."""


class NotOnThisEngineError(ConfigError):
    """An operation the engine of these runs does not have (on Temporal:
    ``resume``, ``recover_executor``); nothing was done."""


class DecidingRuns:
    """The approval half every engine's runs share: the calls a run waits for are
    found in its session (:attr:`sessions`), decided with the store's one
    compare-and-set, and handed to the workers by :meth:`continue_decided`, which
    each engine implements (with :meth:`status`)."""

    sessions: SessionStore | None
    _engine_class = "DurableRuns(url, sessions=store)"

    async def status(self, run_id: str) -> RunInfo | None:
        raise NotImplementedError

    async def continue_decided(
        self, session_id: str, request_seq: int, request: ApprovalRequest
    ) -> str:
        raise NotImplementedError

    async def request_of(self, run_id: str) -> tuple[StoredRow, bool] | None:
        """The approval request run ``run_id`` ended with (its session row) and
        whether it was decided; None when the run made none (or is unknown)."""
        store, session_id = await self._session_of(run_id)
        rows = live_rows(await store.rows(session_id))
        for row in rows:
            if isinstance(row.message, ApprovalRequest) and row.message.run_id == run_id:
                return row, decision_row(rows, row.seq) is not None
        return None

    async def pending_approval(self, run_id: str) -> ApprovalRequest | None:
        """The calls run ``run_id`` waits for (it ended with them), or None when it
        waits for nothing (or they were decided)."""
        found = await self.request_of(run_id)
        if found is None or found[1]:
            return None
        request = found[0].message
        assert isinstance(request, ApprovalRequest)
        return request

    async def approve(self, run_id: str, decisions: Mapping[str, Decision]) -> str:
        """Decide the calls run ``run_id`` waits for (one
        :class:`~zett_agent.approvals.Decision` per call id) and hand them to the
        workers: the run that carries on (:func:`~zett_agent.durable.decided_run_id`)
        is queued, and its id returned (:meth:`result` waits for it). The tools
        run on a worker, never here.

        Raises :class:`~zett_agent.approvals.ApprovalConflictError` when the calls
        were decided already (by anyone, even the same way: nothing is stored),
        :class:`~zett_agent.errors.ResumeError` when the run waits for nothing,
        ``ValueError`` when the decisions do not answer exactly its calls."""
        store, session_id = await self._session_of(run_id)
        rows = live_rows(await store.rows(session_id))
        row = waiting_request(session_id, rows, decisions)
        request = row.message
        assert isinstance(request, ApprovalRequest)
        if request.run_id != run_id or not request.durable_agent:
            raise ResumeError(
                f"run {run_id!r} waits for no decision (session {session_id!r} waits in "
                f"{'run ' + repr(request.run_id) if request.durable_agent else 'a plain run'})"
            )
        try:
            await take_decision(store, session_id, row, decisions)
        except ApprovalConflictError:
            # the winner may have died before queueing the continuation: queueing
            # it again is a no-op when it did not (the id is the request's)
            await self.continue_decided(session_id, row.seq, request)
            raise
        return await self.continue_decided(session_id, row.seq, request)

    async def _session_of(self, run_id: str) -> tuple[SessionStore, str]:
        if self.sessions is None:
            raise ConfigError(
                f"deciding durable runs' tool calls needs their session store: {self._engine_class}"
            )
        info = await self.status(run_id)
        if info is None or not isinstance(info.session_id, str):
            raise ResumeError(f"no durable run {run_id!r}")
        return self.sessions, info.session_id


class DurableRuns(DecidingRuns):
    """Durable runs in one DBOS system database (``sqlite:///...`` or
    ``postgresql://...``), which a worker must have created already.

    ``sessions`` is the session store the runs write to: needed to see and decide
    the calls a run waits for (:meth:`pending_approval`, :meth:`approve`). With it,
    this object is also an :class:`~zett_agent.tools._approvals.ApprovalHandoff`
    (``AgentClient(agent, store, handoff=runs)``).

    Raises :class:`ConfigError` when the database cannot be reached.
    """

    waiting = "ENQUEUED"

    def __init__(self, system_database_url: str, *, sessions: SessionStore | None = None) -> None:
        self.sessions = sessions
        self._where = _where(system_database_url)
        if system_database_url.startswith("sqlite:///") and not _sqlite_created(
            system_database_url
        ):
            raise ConfigError(no_runs_database(self._where))
        try:
            self._client = DBOSClient(
                system_database_url=system_database_url,
                application_name=APP_NAME,
                retry_connection_errors=False,
            )
        except Exception as error:
            raise ConfigError(f"cannot reach the durable runs database: {error}") from error

    async def aclose(self) -> None:
        await asyncio.to_thread(self._client.destroy)

    async def __aenter__(self) -> DurableRuns:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @asynccontextmanager
    async def _created(self) -> AsyncIterator[None]:
        """A missing runs table (a PostgreSQL database no worker has used) as the
        :class:`ConfigError` a missing SQLite file gives."""
        try:
            yield
        except Exception as error:
            text = str(error).lower()
            if _TABLE in text and ("does not exist" in text or "no such table" in text):
                raise ConfigError(no_runs_database(self._where)) from None
            raise

    async def submit(
        self,
        agent: str,
        prompt: str | None,
        *,
        session_id: str,
        run_id: str | None = None,
        app_version: str | None = None,
    ) -> str:
        """Queue a run of the durable agent named ``agent``; return its run id.

        ``app_version`` None: the run is taken by workers of the newest
        application version registered."""
        options: EnqueueOptions = {
            "workflow_name": WORKFLOW_NAME,
            "queue_name": QUEUE_NAME,
            "workflow_id": run_id or new_run_id(),
            "workflow_id_reuse_policy": "return-existing",
        }
        if app_version is not None:
            options["app_version"] = app_version
        async with self._created():
            handle: WorkflowHandleAsync[str] = await self._client.enqueue_async(
                options, agent, session_id, prompt
            )
        return handle.get_workflow_id()

    async def status(self, run_id: str) -> RunInfo | None:
        """The run, or None when there is none with that id."""
        async with self._created():
            found = await self._client.list_workflows_async(
                workflow_ids=[run_id], load_output=False
            )
        return _info(found[0]) if found else None

    async def list_runs(
        self, *, limit: int = 50, status: str | None = None, executor_id: str | None = None
    ) -> list[RunInfo]:
        """The newest runs first (``status``: only those, e.g. ``"PENDING"``;
        ``executor_id``: only those of that worker)."""
        async with self._created():
            found = await self._client.list_workflows_async(
                name=RUN_WORKFLOWS,
                status=status,
                executor_id=executor_id,
                limit=limit,
                sort_desc=True,
                load_output=False,
            )
        return [_info(s) for s in found]

    async def running_in(self, session_id: str) -> str | None:
        """The id of the run (a prompt's run, not a continuation after a decision)
        waiting for a worker or running in session ``session_id``, or None; the
        newest when there are several."""
        async with self._created():
            found = await self._client.list_workflows_async(
                name=WORKFLOW_NAME,
                status=["PENDING", "ENQUEUED"],
                limit=50,
                sort_desc=True,
                load_output=False,
            )
        for status in found:
            if _info(status).session_id == session_id:
                return str(status.workflow_id)
        return None

    def follow(self, run_id: str) -> AsyncIterator[AgentEvent]:
        """The events of run ``run_id`` from its first, then live until it ends
        (:mod:`zett_agent.durable._event_stream`); nothing for a run that wrote none."""
        return follow_events(self._client, run_id)

    async def result(self, run_id: str, *, poll: float = 0.2) -> AssistantMessage:
        """Wait for the run to end and return its final message; raises the run's
        error, or :class:`RunCancelledError` for a cancelled run (from DBOS's
        ``DBOSAwaitedWorkflowCancelledError``)."""
        async with self._created():
            handle: WorkflowHandleAsync[str] = await self._client.retrieve_workflow_async(run_id)
        try:
            output = await handle.get_result(polling_interval_sec=poll)
        except dbos_errors.DBOSAwaitedWorkflowCancelledError as error:
            raise RunCancelledError(f"run {run_id!r} was cancelled") from error
        return final_of(output)

    async def cancel(self, run_id: str) -> None:
        """Cancel the run: it stops at its next step (a running step finishes)."""
        async with self._created():
            await self._client.cancel_workflow_async(run_id)

    async def resume(self, run_id: str) -> None:
        """Put a cancelled (or failed) run back on the queue; it carries on from its
        checkpoints, a tool cut by the cancel answered as after a crash."""
        async with self._created():
            await self._client.resume_workflow_async(run_id, queue_name=QUEUE_NAME)

    async def recover_executor(self, executor_id: str) -> list[str]:
        """Put the unfinished runs of ``executor_id`` back on the queue for any
        worker; return their ids. Only for an executor known to be dead (a live
        one would go on running them too): see docs/durable.md."""
        async with self._created():
            pending = await self._client.list_workflows_async(
                name=RUN_WORKFLOWS, status="PENDING", executor_id=executor_id, load_output=False
            )
        ids = [s.workflow_id for s in pending]
        for run_id in ids:
            await self._client.resume_workflow_async(run_id, queue_name=QUEUE_NAME)
        return ids

    async def continue_decided(
        self, session_id: str, request_seq: int, request: ApprovalRequest
    ) -> str:
        """Queue (once) the run that carries on ``request`` (row ``request_seq`` of
        the session) with its stored decision; its run id. No application version
        is set: the workers of the newest version take it."""
        options: EnqueueOptions = {
            "workflow_name": DECIDED_WORKFLOW_NAME,
            "queue_name": QUEUE_NAME,
            "workflow_id": decided_run_id(request.run_id),
            "workflow_id_reuse_policy": "return-existing",
        }
        handle: WorkflowHandleAsync[str] = await self._client.enqueue_async(
            options, request.durable_agent, session_id, request_seq
        )
        return handle.get_workflow_id()
