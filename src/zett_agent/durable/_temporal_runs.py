"""TemporalRuns: submit, list, watch, cancel and decide durable runs on Temporal
from any process (extra ``temporal``), as :class:`~zett_agent.durable.DurableRuns`
does on DBOS; ``zett submit`` and ``zett runs --engine temporal`` use it.

It is a Temporal client only: no agent, no model, no worker. A worker
(``zett worker --engine temporal``, or a process that launched
:class:`~zett_agent.durable.TemporalConfig` with its agents) polls the task queue
and runs the workflows. ``temporalio`` is imported when a :class:`TemporalRuns`
connects, never at import.

Statuses are said in DBOS's words, the ones ``zett runs`` prints on both engines
(Temporal's ``WorkflowExecutionStatus``, left, as :attr:`RunInfo.status`, right):

=================================  ============================================
Temporal                           zett
=================================  ============================================
``RUNNING``                        ``PENDING`` (waiting for a worker or running)
``COMPLETED``                      ``SUCCESS``
``FAILED``                         ``ERROR``
``TERMINATED``                     ``ERROR`` (ended by an operator)
``TIMED_OUT``                      ``ERROR``
``CANCELED``                       ``CANCELLED``
``CONTINUED_AS_NEW``               ``PENDING`` (zett's workflows never do it)
=================================  ============================================

Temporal has no queue state apart from running, so a run no worker took yet is
``PENDING`` too (never ``ENQUEUED``), and ``list_runs(status="ENQUEUED")`` or
``"MAX_RECOVERY_ATTEMPTS_EXCEEDED"`` is empty. A run's ``executor_id`` is the
identity of the last worker that took one of its workflow tasks
(``TemporalConfig.identity``, which ``zett worker --executor-id`` sets; else the
SDK's ``pid@host``), and its prompt is read from its history: both are known in
:meth:`TemporalRuns.status`, None in lists.

A run's agent and session are in the workflow's memo (``agent``,
``session_id``) when this class started it, else read from its first history
event. A dead worker's runs need no recovery on Temporal (another worker takes
the run's task after its timeout), and a cancelled or failed run is not resumed:
:meth:`resume` and :meth:`recover_executor` raise
:class:`~zett_agent.durable._runs.NotOnThisEngineError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from zett_agent._messages import AssistantMessage
from zett_agent.durable._agent import final_of, new_run_id
from zett_agent.durable._approvals import DECIDED_WORKFLOW_NAME, decided_run_id
from zett_agent.durable._runs import (
    DecidingRuns,
    NotOnThisEngineError,
    RunCancelledError,
    RunFailedError,
    RunInfo,
)
from zett_agent.durable._runtime import DEFAULT_TASK_QUEUE, WORKFLOW_NAME, TemporalConfig
from zett_agent.errors import ConfigError
from zett_agent.sessions import SessionStore
from zett_agent.tools._approvals import ApprovalRequest

__all__ = ["STATUSES", "TemporalRuns"]

STATUSES = {
    "RUNNING": "PENDING",
    "COMPLETED": "SUCCESS",
    "FAILED": "ERROR",
    "TERMINATED": "ERROR",
    "TIMED_OUT": "ERROR",
    "CANCELED": "CANCELLED",
    "CONTINUED_AS_NEW": "PENDING",
}
"""Temporal's workflow status (``WorkflowExecutionStatus`` names) -> the zett status."""

_QUERY_STATUS = {
    "PENDING": ["Running", "ContinuedAsNew"],
    "SUCCESS": ["Completed"],
    "ERROR": ["Failed", "Terminated", "TimedOut"],
    "CANCELLED": ["Canceled"],
}
"""A zett status -> Temporal's ``ExecutionStatus`` values in a visibility query."""


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class TemporalRuns(DecidingRuns):
    """Durable runs on one Temporal namespace and task queue.

    Args:
        address: the Temporal frontend, ``HOST:PORT`` (default
            ``$ZETT_TEMPORAL_ADDRESS`` or ``localhost:7233``).
        namespace: the namespace the workers run in.
        task_queue: the queue runs are started on (the workers' ``task_queue``).
        task_timeout: the workflow task timeout runs are started with (seconds;
            how soon another worker takes over a run whose worker died).
        sessions: the session store the runs write to, needed to see and decide
            the calls a run waits for (:meth:`pending_approval`, :meth:`approve`).

    Use it as ``async with TemporalRuns(...) as runs``; entering connects and
    raises :class:`~zett_agent.errors.ConfigError` (one line) when Temporal or
    the namespace cannot be reached. Every method raises ConfigError when the
    server fails to answer.
    """

    _engine_class = "TemporalRuns(address, sessions=store)"
    waiting = "PENDING"  # Temporal has no queue state of its own

    def __init__(
        self,
        address: str | None = None,
        *,
        namespace: str = "default",
        task_queue: str = DEFAULT_TASK_QUEUE,
        task_timeout: float = 10.0,
        sessions: SessionStore | None = None,
    ) -> None:
        self.sessions = sessions
        self.config = TemporalConfig(
            address, namespace=namespace, task_queue=task_queue, worker=False,
            task_timeout=task_timeout,
        )  # fmt: skip
        self._client: Any = None

    @property
    def where(self) -> str:
        """Where the runs are, as messages name it."""
        return f"Temporal at {self.config.target} (namespace {self.config.namespace!r})"

    async def connect(self) -> None:
        """Connect, and check the namespace exists; ConfigError when not."""
        from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
        from temporalio.client import Client
        from temporalio.service import RPCError, RPCStatusCode

        target = self.config.target
        try:
            client = await Client.connect(target, namespace=self.config.namespace)
        except Exception as error:
            raise ConfigError(
                f"cannot reach Temporal at {target}: {_one_line(error)} "
                "(--temporal-address HOST:PORT or ZETT_TEMPORAL_ADDRESS)"
            ) from None
        try:
            await client.workflow_service.describe_namespace(
                DescribeNamespaceRequest(namespace=self.config.namespace)
            )
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise ConfigError(
                    f"no namespace {self.config.namespace!r} on Temporal at {target} "
                    "(--namespace N or ZETT_TEMPORAL_NAMESPACE)"
                ) from None
            raise ConfigError(f"{self.where}: {_one_line(error)}") from None
        self._client = client

    async def aclose(self) -> None:
        self._client = None  # the SDK's client holds no resource to release

    async def __aenter__(self) -> TemporalRuns:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @asynccontextmanager
    async def _answered(self) -> AsyncIterator[Any]:
        """The client; a server error as a one-line ConfigError."""
        from temporalio.service import RPCError

        if self._client is None:
            await self.connect()
        try:
            yield self._client
        except RPCError as error:
            raise ConfigError(f"{self.where}: {_one_line(error)}") from None

    async def _start(
        self, workflow: str, inputs: list[Any], run_id: str, memo: dict[str, Any]
    ) -> str:
        from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
        from temporalio.exceptions import WorkflowAlreadyStartedError

        # an id that ended already: submitting it again is a no-op
        async with self._answered() as client:
            with suppress(WorkflowAlreadyStartedError):
                await client.start_workflow(
                    workflow,
                    inputs,
                    id=run_id,
                    task_queue=self.config.task_queue,
                    task_timeout=timedelta(seconds=self.config.task_timeout),
                    id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                    id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                    memo=memo,
                )
        return run_id

    async def submit(
        self, agent: str, prompt: str | None, *, session_id: str, run_id: str | None = None
    ) -> str:
        """Start a run of the durable agent named ``agent`` on the task queue (a
        worker that has it runs it); its run id. An id that exists (running or
        ended) is not started again: it is returned."""
        memo = {"agent": agent, "session_id": session_id}
        inputs = [agent, session_id, prompt]
        return await self._start(WORKFLOW_NAME, inputs, run_id or new_run_id(), memo)

    async def continue_decided(
        self, session_id: str, request_seq: int, request: ApprovalRequest
    ) -> str:
        """Start (once: its id is the request's, :func:`decided_run_id`) the run
        that carries on the decided ``request`` (row ``request_seq``); its id."""
        memo = {"agent": request.durable_agent, "session_id": session_id}
        inputs = [request.durable_agent, session_id, request_seq]
        return await self._start(
            DECIDED_WORKFLOW_NAME, inputs, decided_run_id(request.run_id), memo
        )

    async def status(self, run_id: str) -> RunInfo | None:
        """The run, or None when there is none with that id in the namespace."""
        from temporalio.api.enums.v1 import EventType
        from temporalio.service import RPCError, RPCStatusCode

        async with self._answered() as client:
            handle = client.get_workflow_handle(run_id)
            try:
                described = await handle.describe()
            except RPCError as error:
                if error.status == RPCStatusCode.NOT_FOUND:
                    return None
                raise
            executor = None
            async for event in handle.fetch_history_events():
                if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
                    executor = event.workflow_task_started_event_attributes.identity or None
            return await self._info(described, executor, whole=True)

    async def list_runs(
        self, *, limit: int = 50, status: str | None = None, executor_id: str | None = None
    ) -> list[RunInfo]:
        """The newest runs of the task queue first (``status``: only those, in
        zett's words, e.g. ``"PENDING"``). ``executor_id`` is not a filter
        Temporal's visibility has: NotOnThisEngineError."""
        if executor_id is not None:
            raise NotOnThisEngineError(
                "runs of one worker cannot be listed on Temporal "
                "(zett runs status RUN_ID names the worker that last took a run)"
            )
        types = ", ".join(_quoted(n) for n in (WORKFLOW_NAME, DECIDED_WORKFLOW_NAME))
        query = f"WorkflowType IN ({types}) AND TaskQueue = {_quoted(self.config.task_queue)}"
        if status is not None:
            wanted = _QUERY_STATUS.get(status)
            if wanted is None:
                return []  # ENQUEUED and the like: no Temporal run is in it
            query += f" AND ExecutionStatus IN ({', '.join(_quoted(s) for s in wanted)})"
        async with self._answered() as client:
            found = [execution async for execution in client.list_workflows(query, limit=limit)]
            found.sort(key=lambda execution: execution.start_time, reverse=True)
            return [await self._info(execution, None, whole=False) for execution in found]

    async def _info(self, execution: Any, executor: str | None, *, whole: bool) -> RunInfo:
        """``execution`` as a RunInfo; its prompt (read from the history) when
        ``whole``, or when the memo does not name its agent."""
        memo = await execution.memo()
        agent, session_id, prompt = memo.get("agent"), memo.get("session_id"), None
        inputs = await self._inputs(execution.id, execution.run_id) if whole or not agent else None
        if inputs:
            agent, session_id = inputs[0], inputs[1]
            if execution.workflow_type == WORKFLOW_NAME:
                prompt = inputs[2]
        status = execution.status.name if execution.status is not None else "RUNNING"
        ended = execution.close_time or execution.start_time
        error = None
        if status in ("FAILED", "TERMINATED", "TIMED_OUT"):
            error = f"{status}" if status != "FAILED" else await self._failure(execution.id)
        return RunInfo(
            run_id=execution.id,
            status=STATUSES.get(status, status),
            agent=agent if isinstance(agent, str) else None,
            session_id=session_id if isinstance(session_id, str) else None,
            prompt=prompt if isinstance(prompt, str) else None,
            created_at=execution.start_time.timestamp(),
            updated_at=ended.timestamp() if ended is not None else None,
            executor_id=executor,
            app_version=None,
            error=error,
        )

    async def _inputs(self, run_id: str, temporal_run: str) -> list[Any] | None:
        """The workflow's input (``[agent, session, prompt or request row]``)."""
        handle = self._client.get_workflow_handle(run_id, run_id=temporal_run)
        async for event in handle.fetch_history_events(page_size=1):
            started = event.workflow_execution_started_event_attributes
            payloads = started.input.payloads
            if not payloads:
                return None
            converter = self._client.data_converter.payload_converter
            value = converter.from_payloads(list(payloads))[0]
            return list(value) if isinstance(value, list) and len(value) == 3 else None
        return None

    async def _failure(self, run_id: str) -> str:
        """A failed run's error as ``Class: message`` (zett's class when it was one)."""
        from temporalio.client import WorkflowFailureError

        try:
            await self._client.get_workflow_handle(run_id).result()
        except WorkflowFailureError as error:
            cause = error.cause
            kind = getattr(cause, "type", None) or type(cause).__name__
            return f"{kind}: {getattr(cause, 'message', cause)}"
        return "ERROR"

    async def result(self, run_id: str) -> AssistantMessage:
        """Wait for the run to end and return its final message; raises the run's
        error (zett's class and fields when it was a zett error),
        :class:`RunCancelledError` for a cancelled run, :class:`RunFailedError` for
        one terminated or timed out."""
        from temporalio.client import WorkflowFailureError
        from temporalio.exceptions import CancelledError

        from zett_agent.durable._temporal import _zett_error

        async with self._answered() as client:
            try:
                output = await client.get_workflow_handle(run_id).result()
            except WorkflowFailureError as error:
                if isinstance(error.cause, CancelledError):
                    raise RunCancelledError(f"run {run_id!r} was cancelled") from None
                mapped = _zett_error(error)
                if mapped is error:  # terminated, timed out: no zett error inside
                    cause = error.cause
                    why = f"{type(cause).__name__}: {cause}" if cause is not None else str(error)
                    raise RunFailedError(f"run {run_id!r} ended with no answer ({why})") from error
                raise mapped from error
        return final_of(str(output))

    async def cancel(self, run_id: str) -> None:
        """Ask Temporal to cancel the run: the workflow is cancelled at its next
        await, a step it waits for is cancelled too."""
        async with self._answered() as client:
            await client.get_workflow_handle(run_id).cancel()

    async def resume(self, run_id: str) -> None:
        """Not on Temporal: a cancelled or failed workflow is not run again."""
        raise NotOnThisEngineError(
            f"resume has no meaning on Temporal: a cancelled or failed run is "
            f"not taken up again (submit a new run in its session); run {run_id!r} is as it was"
        )

    async def recover_executor(self, executor_id: str) -> list[str]:
        """Not on Temporal: a dead worker's runs are taken by another worker of
        the task queue after their workflow task timeout, without a recover."""
        raise NotOnThisEngineError(
            "recover has no meaning on Temporal: another worker of the task queue "
            "takes a dead worker's runs by itself after their workflow task timeout"
        )


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


if TYPE_CHECKING:  # both engines' runs are what the command line uses (checked by mypy)
    from zett_agent.durable._runs import DurableRuns, Runs

    def _both_are_runs(dbos: DurableRuns, temporal: TemporalRuns) -> tuple[Runs, Runs]:
        return dbos, temporal
