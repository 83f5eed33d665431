"""Durable runs on Temporal (extra ``temporal``): the same steps as on DBOS.

A durable run is one Temporal workflow (:data:`WORKFLOW_NAME`, the same inputs as
the DBOS workflow: the durable agent's name, the session id and the prompt). The
workflow body is the one the DBOS engine runs
(:func:`zett_agent.durable._runtime.drive`): the agent's own loop, whose model
call, tool marker, tool call, hooks, session reads and appends are each a step.
On Temporal a step is a **local activity** (:func:`run_step`), run in the worker
that runs the workflow task, with ``RetryPolicy(maximum_attempts=1)``: Temporal
never retries a step. Its activity id is the step name, so a replay checks each
recorded step's name and place (a release that takes other steps fails with
Temporal's nondeterminism error, never reads one step's result as another's).
Its result is what Temporal records in the history:

- a model call's result is the whole answer (the stop included: a refusal, a
  cut, an interruption are values, never activity failures); a call that failed
  with no output is recorded as its error value too. Transport faults before any
  output are retried inside the step by the model client's own retry rules.
- a tool call is preceded by the started marker step (the ``ToolJournal`` the
  gate uses); a worker killed while the tool ran leaves the marker recorded and
  the call not, so the workflow task is run again by a live worker, which replays
  the marker without running it and answers the call with
  :data:`~zett_agent.durable.TOOL_INTERRUPTED` unless the tool is idempotent.

A local activity's result reaches the history only when the workflow task
completes, so after every step but an append (keyed: repeating it stores nothing
twice) the workflow awaits a no-op activity (:data:`RECORDED_ACTIVITY`), which
completes the task: each step is recorded before the next starts, as a DBOS step
is. (A 1 ms timer does the same, but the dev server fires timers about a second
late.)

Payloads by reference: a tool result's text over :data:`REF_LIMIT` characters is
put in the session store's blobs inside the step and stands in the workflow as
a reference (:data:`REF_PREFIX` + its SHA-256), which the steps that read it (the
model call, the append, the hooks) resolve; no payload then holds a large
result, and the session stores the real text.

A worker that stops gracefully cancels the steps it runs: a cancelled step
records no result (a model stream cut by the stop is not its answer); the
workflow task fails, not the run, and a live worker makes the step again.

The workflow runs in Temporal's sandbox with ``zett_agent`` and its dependencies
passed through (imported once, not per run). Its code does no I/O and reads no
clock or random source: every such thing is in a step, and the loop's wall clock
(:data:`zett_agent._clock.WALL_CLOCK`) is ``workflow.now()``. Each run's end logs
its history's size (:func:`history_size` reads it from a client).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import json
import logging
import re
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import FailureError

with workflow.unsafe.imports_passed_through():
    from zett_agent._messages import (
        Message,
        ToolResultMessage,
        UserMessage,
        message_from_dict,
        message_to_dict,
    )
    from zett_agent.durable._checkpoints import decode_model_call, encode_model_error
    from zett_agent.durable._runtime import DEFAULT_TASK_QUEUE, TemporalConfig
    from zett_agent.durable._steps import TEMPORAL, step
    from zett_agent.errors import ConfigError
    from zett_agent.sessions import SessionStore, live_rows
    from zett_agent.sessions._base import SCHEMA_VERSION, decode_row, encode_row, messages_of
    from zett_agent.sessions._journal import started_calls
    from zett_agent.tools._approvals import ApprovalDecision, ApprovalRequest

if TYPE_CHECKING:
    from zett_agent.durable._agent import DurableAgent

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "REF_LIMIT",
    "REF_PREFIX",
    "STEP_ACTIVITY",
    "HistorySize",
    "TemporalConfig",
    "history_size",
    "in_temporal_workflow",
    "resolve",
    "resolve_messages",
    "run_step",
    "temporal_step",
    "to_ref",
]

STEP_ACTIVITY = "zett_agent.durable.step"
"""The local activity every step runs as: persisted data (it names the history's
markers), never renamed."""

RECORDED_ACTIVITY = "zett_agent.durable.recorded"
"""The no-op activity a workflow awaits after a step, so the step is recorded in
the history before the next starts: persisted data, never renamed."""

REF_LIMIT = 16 * 1024
"""Tool result texts longer than this (characters) stand in the workflow as a
reference to a blob of the session store."""

REF_PREFIX = "\x00zett-ref:"
"""How a reference starts; 64 hex digits of SHA-256 and ``\\x00`` follow."""

_REF = re.compile("\x00zett-ref:([0-9a-f]{64})\x00")

_T = TypeVar("_T")

logger = logging.getLogger("zett_agent.durable")


# ------------------------------------------------------------------ steps

_PENDING: dict[str, Callable[[], Coroutine[Any, Any, Any]]] = {}
_FAILED: dict[str, BaseException] = {}
_ACTIVE: set[asyncio.Task[Any]] = set()
"""The tasks of the steps running in this process (a stopping worker cancels them:
Temporal's worker shutdown waits for a local activity to end on its own)."""
_STOPPING: list[bool] = [False]
"""Whether this process's worker is stopping: a step cancelled then is the
worker's stop (the workflow task fails, a live worker redoes the step), one
cancelled otherwise is the run's cancel (the run ends CANCELLED)."""
_STEP_TIMEOUT: list[float] = [24 * 3600.0]
_TASK_TIMEOUT: list[float] = [10.0]
_FLUSH = timedelta(milliseconds=1)


def in_temporal_workflow() -> bool:
    """Whether the caller runs as Temporal workflow code."""
    return workflow.in_workflow()


@activity.defn(name=STEP_ACTIVITY)
async def run_step(token: str) -> Any:
    """Run the step the workflow registered under ``token`` (in this process: a
    local activity runs in the worker that runs the workflow task). An exception
    of the step is kept for the workflow, which raises it as it is."""
    function = _PENDING.pop(token, None)
    if function is None:  # pragma: no cover - a local activity runs where it was registered
        raise RuntimeError(f"step {token!r} is not registered in this worker")
    if _STOPPING[0]:  # scheduled while the worker stops: a live worker runs it
        _FAILED[token] = asyncio.CancelledError()
        raise asyncio.CancelledError
    task = asyncio.current_task()
    if task is not None:
        _ACTIVE.add(task)
    try:
        result = await function()
        if task is not None and task.cancelling():
            # stopped while it ran (a model stream ends cut then): not this step's
            # result, which a worker makes again from the history
            raise asyncio.CancelledError
        return result
    except BaseException as error:
        _FAILED[token] = error
        raise
    finally:
        if task is not None:
            _ACTIVE.discard(task)


def _cancel_steps() -> None:
    """Cancel the steps running in this process: a step stopped so records no
    result (a model stream cut by the stop is not its answer); the workflow task
    fails and a worker makes the step again from the history, as DBOS redoes an
    unrecorded step."""
    _STOPPING[0] = True
    for step_task in list(_ACTIVE):
        step_task.cancel()


class StepCancelled(BaseException):
    """A step was cancelled because its worker is stopping: the workflow task
    fails (nothing of it is recorded) and a worker runs it again from the history.
    A BaseException, so that neither the loop nor a hook takes it for the step's
    own failure or for a cancelled run."""


def _cancelled(error: BaseException) -> bool:
    from temporalio.exceptions import CancelledError

    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, CancelledError):
            return True
        seen = seen.__cause__
    return False


@activity.defn(name=RECORDED_ACTIVITY)
async def recorded() -> None:
    """Nothing: awaiting it completes the workflow task, which records the steps
    before it in the history."""


async def temporal_step(name: str, function: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """Run ``function`` as the local activity :data:`STEP_ACTIVITY` (summary
    ``name``) with no Temporal retry; its result is recorded in the history and
    read back, without running it, when the workflow is replayed."""
    token = str(workflow.uuid4())
    _PENDING[token] = function
    try:
        result: _T = await workflow.execute_local_activity(
            run_step,
            token,
            activity_id=name,
            summary=name,
            start_to_close_timeout=timedelta(seconds=_STEP_TIMEOUT[0]),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
    except FailureError as error:  # ApplicationError (the step raised), ActivityError
        failed = _FAILED.pop(token, None)
        if isinstance(failed, asyncio.CancelledError) or _cancelled(error):
            if _STOPPING[0]:
                raise StepCancelled(name) from None
            raise asyncio.CancelledError from None  # the run was cancelled
        if failed is not None:
            raise failed from None
        raise error
    finally:
        _PENDING.pop(token, None)
    if not name.endswith(".append"):
        # Local activity results reach the history only when the workflow task
        # completes: a timer completes it, so this step is recorded before the next
        # one starts (a tool never runs before its marker is in the history).
        # Appends are keyed: one repeated after a crash stores nothing twice.
        try:
            await workflow.execute_activity(
                recorded,
                # a worker that died holding it: another runs it after the task timeout
                start_to_close_timeout=timedelta(seconds=_TASK_TIMEOUT[0]),
                retry_policy=RetryPolicy(maximum_attempts=0),  # a no-op: retried until it runs
            )
        except FailureError as error:
            if _cancelled(error):  # the run was cancelled while its step was recorded
                raise asyncio.CancelledError from None
            raise
    return result


# -------------------------------------------------------------- references


def to_ref(text: str) -> tuple[str, bytes] | None:
    """A reference for ``text`` (and the bytes to store) when it is over
    :data:`REF_LIMIT`; None when it stays inline."""
    if len(text) <= REF_LIMIT:
        return None
    data = text.encode("utf-8")
    return f"{REF_PREFIX}{hashlib.sha256(data).hexdigest()}\x00", data


async def ref_result(
    result: ToolResultMessage, store: SessionStore, session_id: str
) -> ToolResultMessage:
    """``result`` with its long text stored as a blob and replaced by a reference."""
    made = to_ref(result.content)
    if made is None:
        return result
    ref, data = made
    await store.put_blob(session_id, data)
    return replace(result, content=ref)


async def resolve(text: str, store: SessionStore, session_id: str) -> str:
    """``text`` with every reference replaced by the blob's text."""
    if REF_PREFIX not in text:
        return text
    parts: list[str] = []
    last = 0
    for found in _REF.finditer(text):
        parts.append(text[last : found.start()])
        parts.append((await store.get_blob(session_id, found[1])).decode("utf-8"))
        last = found.end()
    parts.append(text[last:])
    return "".join(parts)


async def resolve_messages(
    messages: Sequence[Message], store: SessionStore, session_id: str
) -> list[Message]:
    """``messages`` with the references in tool results resolved."""
    out: list[Message] = []
    for message in messages:
        if isinstance(message, ToolResultMessage) and REF_PREFIX in message.content:
            message = replace(message, content=await resolve(message.content, store, session_id))
        out.append(message)
    return out


def configure_steps(config: TemporalConfig) -> None:
    """Use ``config``'s step timeout for the steps of this process."""
    _STEP_TIMEOUT[0] = config.step_timeout
    _TASK_TIMEOUT[0] = config.task_timeout


async def read_session(
    durable: DurableAgent, session_id: str, prompt: str | None
) -> tuple[list[Message], frozenset[str], str | UserMessage | None]:
    """The step ``<agent>.session`` of a Temporal run: the session's history (long
    tool results as references, parts by hash), the call ids it records as
    started, and the prompt the workflow input stands for."""
    store = durable.store

    async def read() -> str:
        from zett_agent.durable._runtime import prompt_of

        rows = live_rows(await store.rows(session_id))
        blobs: dict[str, bytes | None] = {}
        history = []
        for message in messages_of(rows):
            if isinstance(message, ToolResultMessage):
                message = await ref_result(message, store, session_id)
            history.append(message_to_dict(message, blobs))
        asked = prompt_of(prompt, store, session_id)
        shown = message_to_dict(asked, blobs) if isinstance(asked, UserMessage) else asked
        for data in blobs.values():
            if data is not None:
                await store.put_blob(session_id, data)
        started = sorted(started_calls(rows))
        return json.dumps({"history": history, "started": started, "prompt": shown})

    data = json.loads(await step(f"{durable.name}.session", read))
    reader = store.blob_reader(session_id)
    messages = [message_from_dict(item, reader) for item in data["history"]]
    shown = data["prompt"]
    asked = message_from_dict(shown, reader) if isinstance(shown, dict) else shown
    assert asked is None or isinstance(asked, str | UserMessage)
    return messages, frozenset(data["started"]), asked


async def read_decided(
    durable: DurableAgent, session_id: str, request_seq: int
) -> tuple[list[Message], frozenset[str], ApprovalRequest, ApprovalDecision]:
    """The step ``<agent>.session`` of a Temporal continuation: the history up to
    the decision (long results as references), the calls it records as started,
    the request of row ``request_seq`` and its decision."""
    from zett_agent.durable._approvals import decided_cut

    store = durable.store

    async def read() -> str:
        rows = await store.rows(session_id)
        request, decision, cut = decided_cut(session_id, rows, request_seq)
        blobs: dict[str, bytes | None] = {}
        history = []
        for message in messages_of(cut):
            if isinstance(message, ToolResultMessage):
                message = await ref_result(message, store, session_id)
            history.append(message_to_dict(message, blobs))
        entries = [encode_row(session_id, entry) for entry in (request, decision)]
        for data in [*blobs.values(), *(d for e in entries for d in e.blobs.values())]:
            if data is not None:
                await store.put_blob(session_id, data)
        started = sorted(started_calls(cut))
        shown = {"history": history, "started": started, "entries": [e.text for e in entries]}
        return json.dumps(shown)

    data = json.loads(await step(f"{durable.name}.session", read))
    reader = store.blob_reader(session_id)
    messages = [message_from_dict(item, reader) for item in data["history"]]
    request, decision = (
        decode_row(session_id, 0, SCHEMA_VERSION, text, reader) for text in data["entries"]
    )
    assert isinstance(request, ApprovalRequest) and isinstance(decision, ApprovalDecision)
    return messages, frozenset(data["started"]), request, decision


# ---------------------------------------------------------------- workflow


def _log_history_size(outcome: str) -> None:
    """At a run's end (not on a replay), an INFO record of ``zett_agent.durable``
    with its history's size so far: ``zett_history_events`` (events) and
    ``zett_history_bytes`` (bytes), as of the workflow task that ends it."""
    if workflow.unsafe.is_replaying():
        return
    info = workflow.info()
    events, size = info.get_current_history_length(), info.get_current_history_size()
    logger.info(
        "run %s %s: history of %d events, %d bytes", info.workflow_id, outcome, events, size,
        extra={"zett_run_id": info.workflow_id, "zett_history_events": events,
               "zett_history_bytes": size},
    )  # fmt: skip


@workflow.defn(name="zett_agent.durable.run", sandboxed=True)
class RunWorkflow:
    """The Temporal workflow of a durable run (inputs: the durable agent's name,
    the session id, the prompt; output: the final message as stored JSON)."""

    @workflow.run
    async def run(self, inputs: list[str | None]) -> str:
        from zett_agent.durable._runtime import run_body

        agent_name, session_id, prompt = inputs
        assert agent_name is not None and session_id is not None
        try:
            output = await run_body(agent_name, session_id, prompt)
        except StepCancelled as stopped:
            raise _task_failure(stopped) from None
        except Exception as error:  # the run failed: its error as a value the caller decodes
            _log_history_size("failed")
            raise _failure(error) from None
        _log_history_size("ended")
        return output


@workflow.defn(name="zett_agent.durable.decided", sandboxed=True)
class DecidedWorkflow:
    """The Temporal workflow that carries on a decided request (inputs: the
    durable agent's name, the session id, the request's row), started once by
    its id (:func:`~zett_agent.durable.decided_run_id`)."""

    @workflow.run
    async def run(self, inputs: list[Any]) -> str:
        from zett_agent.durable._approvals import decided_body

        agent_name, session_id, request_seq = inputs
        try:
            output = await decided_body(str(agent_name), str(session_id), int(request_seq))
        except StepCancelled as stopped:
            raise _task_failure(stopped) from None
        except Exception as error:
            _log_history_size("failed")
            raise _failure(error) from None
        _log_history_size("ended")
        return output


def _task_failure(stopped: StepCancelled) -> RuntimeError:
    """What a workflow raises for a step its stopping worker cancelled: an error
    that is not a Temporal failure fails the workflow *task* (never the run), so
    nothing of that task is recorded and a live worker runs it again from the
    history (a BaseException would end the workflow's code with no command and
    leave the run waiting for nothing)."""
    return RuntimeError(f"step {stopped} was stopped with its worker; it runs again")


def _failure(error: Exception) -> BaseException:
    """The workflow failure a run's error becomes (its checkpoint as the detail)."""
    from temporalio.exceptions import ApplicationError, TemporalError

    if isinstance(error, TemporalError):
        return error
    return ApplicationError(
        str(error), encode_model_error(error), type=type(error).__name__, non_retryable=True
    )


# ------------------------------------------------------------ the process


@dataclass
class _Running:
    config: TemporalConfig
    client: Any
    worker: Any = None
    task: asyncio.Task[None] | None = None


_RUNNING: list[_Running] = []


def running() -> _Running:
    """This process's Temporal connection; ConfigError before :func:`launch_temporal`."""
    if not _RUNNING:
        raise ConfigError("durable runs need an engine: call zett_agent.durable.launch(...) first")
    return _RUNNING[0]


_PRELOADED = (
    "anyio._backends._asyncio",
    "opentelemetry.trace",
    "opentelemetry.context",
    "zett_agent.durable._runtime",
)


def _passthrough() -> tuple[str, ...]:
    return (
        "zett_agent",
        "dbos",
        "sqlalchemy",
        "psycopg",
        "opentelemetry",
        "anyio",
        "httpx",
        "httpcore",
        "pydantic",
        "pydantic_core",
        "sniffio",
    )


def workflow_runner() -> Any:
    """The sandboxed runner zett's workflows run in: zett and its dependencies
    passed through, and what a run imports lazily imported first, outside the
    sandbox (a worker's and a replayer's)."""
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    for module in _PRELOADED:  # what zett imports lazily in a run: once, outside the sandbox
        importlib.import_module(module)
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*_passthrough())
    return SandboxedWorkflowRunner(restrictions=restrictions)


async def replay_history(workflow_id: str, history_json: str) -> None:
    """Replay a recorded run's history (the JSON of ``temporal workflow show
    --output json`` or ``WorkflowHistory.to_json()``) with this process's code and
    durable agents, running no step. Raises temporalio's
    ``NondeterminismError`` (or the workflow task's error) when this code would
    take other steps than the recorded run did: check an upgrade against the
    runs in flight before deploying it."""
    from temporalio.client import WorkflowHistory
    from temporalio.worker import Replayer

    replayer = Replayer(workflows=[RunWorkflow, DecidedWorkflow], workflow_runner=workflow_runner())
    await replayer.replay_workflow(WorkflowHistory.from_json(workflow_id, history_json))


async def launch_temporal(config: TemporalConfig) -> None:
    """Connect to Temporal and, when ``config.worker``, run a worker for the
    durable agents of this process on ``config.task_queue`` (in a task of the
    running loop). Raises :class:`ConfigError` when Temporal cannot be reached."""
    from temporalio.client import Client
    from temporalio.worker import Worker

    if _RUNNING:
        raise ConfigError("a durable engine is already launched in this process (shutdown() first)")
    try:
        client = await Client.connect(config.target, namespace=config.namespace)
    except Exception as error:
        raise ConfigError(f"cannot reach Temporal at {config.target}: {error}") from error
    state = _Running(config, client)
    _STEP_TIMEOUT[0] = config.step_timeout
    _TASK_TIMEOUT[0] = config.task_timeout
    if config.worker:
        options: dict[str, Any] = {}
        if config.max_concurrent_runs is not None:
            options["max_concurrent_workflow_tasks"] = config.max_concurrent_runs
        if config.identity is not None:
            options["identity"] = config.identity
        state.worker = Worker(
            client,
            task_queue=config.task_queue,
            workflows=[RunWorkflow, DecidedWorkflow],
            activities=[run_step, recorded],
            workflow_runner=workflow_runner(),
            **options,
        )
        state.task = asyncio.create_task(state.worker.run())
    _STOPPING[0] = False
    _RUNNING[:] = [state]


async def stop_temporal() -> None:
    """Stop this process's worker (its unfinished runs are taken over by another
    worker once their workflow task times out) and forget the connection."""
    if not _RUNNING:
        return
    state = _RUNNING.pop()
    _cancel_steps()
    if state.worker is not None and state.task is not None:
        await state.worker.shutdown()
        with contextlib.suppress(Exception):  # a worker that failed has stopped
            await state.task


def cancel_temporal() -> None:
    """Stop this process's worker without waiting (the synchronous ``shutdown()``)."""
    if _RUNNING:
        state = _RUNNING.pop()
        _cancel_steps()
        if state.task is not None:
            state.task.cancel()


def _zett_error(error: BaseException) -> BaseException:
    """The zett error a failed workflow stands for (its class and fields, as
    :func:`~zett_agent.durable._checkpoints.decode_model_call` rebuilds them),
    else ``error``."""
    from temporalio.exceptions import ApplicationError

    cause = error.__cause__
    while cause is not None and not isinstance(cause, ApplicationError):
        cause = cause.__cause__
    if isinstance(cause, ApplicationError) and cause.details:
        found = decode_model_call(str(cause.details[0]))
        if isinstance(found, Exception):
            return found
    return error


async def start_run(
    inputs: list[Any], run_id: str, *, wait: bool, workflow_name: str = "zett_agent.durable.run"
) -> str | None:
    """Start run ``run_id`` (once: an existing id is not started again) on the task
    queue; with ``wait``, its output (the final message's JSON)."""
    from temporalio.client import WorkflowFailureError
    from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
    from temporalio.exceptions import WorkflowAlreadyStartedError

    state = running()
    try:
        handle = await state.client.start_workflow(
            workflow_name,
            inputs,
            id=run_id,
            task_queue=state.config.task_queue,
            task_timeout=timedelta(seconds=state.config.task_timeout),
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
        )
    except WorkflowAlreadyStartedError:
        handle = state.client.get_workflow_handle(run_id)
    if not wait:
        return None
    try:
        return str(await handle.result())
    except WorkflowFailureError as error:
        mapped = _zett_error(error)
        if mapped is error:
            raise
        raise mapped from error


async def run_result(run_id: str) -> str:
    """Wait for run ``run_id`` to end; its output."""
    from temporalio.client import WorkflowFailureError

    handle = running().client.get_workflow_handle(run_id)
    try:
        return str(await handle.result())
    except WorkflowFailureError as error:
        mapped = _zett_error(error)
        if mapped is error:
            raise
        raise mapped from error


@dataclass(frozen=True)
class HistorySize:
    """The size of a run's Temporal history (what Temporal limits: by default it
    warns at 10,240 events or 10 MiB and ends a run at 51,200 events or 50 MiB).

    Attributes:
        events: events in the history.
        bytes: the events' size, serialized (protobuf), bytes.
        largest_event: the largest event's size, bytes (a payload's limit is 2 MiB).
    """

    events: int
    bytes: int
    largest_event: int


async def history_size(run_id: str) -> HistorySize:
    """The size of run ``run_id``'s history as the Temporal server holds it now
    (a finished or a running run). Raises :class:`ConfigError` before
    :func:`launch_temporal`, and temporalio's ``RPCError`` (status ``NOT_FOUND``)
    for an unknown run id."""
    history = await running().client.get_workflow_handle(run_id).fetch_history()
    sizes = [event.ByteSize() for event in history.events]
    return HistorySize(len(sizes), sum(sizes), max(sizes, default=0))


TEMPORAL.update(
    in_workflow=in_temporal_workflow,
    now=workflow.now,
    temporal_step=temporal_step,
    resolve_messages=resolve_messages,
    ref_result=ref_result,
    read_session=read_session,
    read_decided=read_decided,
    launch_temporal=launch_temporal,
    stop_temporal=stop_temporal,
    cancel_temporal=cancel_temporal,
    start_run=start_run,
    run_result=run_result,
    history_size=history_size,
)
