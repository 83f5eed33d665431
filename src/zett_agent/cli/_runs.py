"""``zett submit`` and ``zett runs``: queue durable runs and watch them from any
process (extra ``durable``); workers (``zett worker``) run them.

Where no worker has created the runs database yet, every command says so in one
line (naming the database) and exits 1, creating nothing. ``zett submit
--session ID`` goes on in a stored session and refuses an unknown id (a typo
would start a new conversation); ``--new-session ID`` starts one. ``zett submit
--wait`` and ``zett runs result`` exit with the run's own status, as ``zett run``
does (a refusal, a guardrail's tripwire among them: 3)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from zett_agent.cli._main import OneLineCommands, app
from zett_agent.cli._main import err_console as _err
from zett_agent.cli._main import out_console as _out
from zett_agent.cli._worker import (
    DbOption,
    EngineChoice,
    EngineName,
    EngineOption,
    NamespaceOption,
    SessionsOption,
    TaskQueueOption,
    TemporalAddressOption,
)

__all__ = ["runs_app", "submit"]

_T = TypeVar("_T")

runs_app = typer.Typer(
    cls=OneLineCommands,
    name="runs",
    help="List durable runs, see one's status or result, cancel one.",
    no_args_is_help=True,
)
app.add_typer(runs_app)


def _open_runs(engine: EngineChoice, db: str | None, sessions: str) -> Any:
    """The runs of ``engine`` (a :class:`~zett_agent.durable._runs.Runs`), not
    entered yet: the one place the command line picks an engine's client."""
    if engine.temporal:
        from zett_agent.durable._temporal_runs import TemporalRuns

        return TemporalRuns(
            engine.address, namespace=engine.namespace, task_queue=engine.task_queue
        )
    from zett_agent.durable._runs import DurableRuns
    from zett_agent.durable._runtime import system_database_for

    return DurableRuns(db or system_database_for(sessions))


def _with_runs(
    engine: EngineChoice, db: str | None, sessions: str, work: Callable[[Any], Awaitable[_T]]
) -> _T:
    """``work(runs)`` on the engine's runs; a ConfigError (no runs database, an
    unreachable Temporal) is one line and exit status 1, an operation the engine
    does not have one line and exit status 2."""
    try:
        import zett_agent.durable._runs  # noqa: F401

        if engine.temporal:
            import temporalio  # noqa: F401
    except ImportError as error:
        extra = "temporal" if engine.temporal else "durable"
        _err().print(f"this command needs the extra: pip install 'zett-agent[{extra}]' ({error})")
        raise typer.Exit(2) from error
    from zett_agent.durable._runs import NotOnThisEngineError, RunCancelledError, RunFailedError
    from zett_agent.errors import ConfigError

    async def main() -> _T:
        async with _open_runs(engine, db, sessions) as runs:
            return await work(runs)

    try:
        import asyncio

        return asyncio.run(main())
    except NotOnThisEngineError as error:
        _err().print(f"✖ {error}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from error
    except (ConfigError, RunCancelledError, RunFailedError) as error:
        _err().print(f"✖ {error}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(1) from error


def _no_run(run_id: str) -> None:
    """One line on stderr and exit status 1: there is no run with that id."""
    _err().print(
        f"✖ no run {run_id!r} (zett runs list shows the runs)",
        markup=False, highlight=False, soft_wrap=True,
    )  # fmt: skip
    raise typer.Exit(1)


def _record(info: Any) -> dict[str, Any]:
    return {
        "run_id": info.run_id,
        "status": info.status,
        "agent": info.agent,
        "session_id": info.session_id,
        "executor_id": info.executor_id,
        "app_version": info.app_version,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
        "error": info.error,
    }


@app.command()
def submit(
    prompt: Annotated[str, typer.Argument(help="What to ask.")],
    agent: Annotated[str, typer.Option("--agent", help="The durable agent's name.")],
    session: Annotated[
        str | None,
        typer.Option("--session", help="A stored session to go on in (an unknown id is refused)."),
    ] = None,
    new_session: Annotated[
        str | None, typer.Option("--new-session", help="Start a new session with this id.")
    ] = None,
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="Your run id (submitting it again is a no-op).")
    ] = None,
    wait: Annotated[bool, typer.Option(help="Wait for the run and print its answer.")] = False,
    sessions: SessionsOption = "sessions.sqlite3",
    db: DbOption = None,
    engine: EngineOption = EngineName.dbos,
    temporal_address: TemporalAddressOption = "localhost:7233",
    namespace: NamespaceOption = "default",
    task_queue: TaskQueueOption = "zett-runs",
) -> None:
    """Queue a durable run for the workers; print its run id."""
    if (session is None) == (new_session is None):
        raise typer.BadParameter("give --session ID (a stored one) or --new-session ID")
    sid = session if session is not None else new_session
    assert sid is not None

    async def work(runs: Any) -> Any:
        again = run_id is not None and await runs.status(run_id) is not None
        if not again:  # submitting a run id again is a no-op, whatever its session is now
            exists = await _session_exists(sessions, sid)
            where = _shown(sessions)
            if session is not None and not exists:
                _err().print(
                    f"✖ no session {sid!r} in {where} (--new-session {sid} starts one)",
                    markup=False, highlight=False, soft_wrap=True,
                )  # fmt: skip
                raise typer.Exit(1)
            if new_session is not None and exists:
                _err().print(
                    f"✖ session {sid!r} exists already in {where}: go on in it with "
                    f"--session {sid}",
                    markup=False, highlight=False, soft_wrap=True,
                )  # fmt: skip
                raise typer.Exit(1)
        seen = {info.agent for info in await runs.list_runs(limit=200)} - {None}
        submitted = await runs.submit(agent, prompt, session_id=sid, run_id=run_id)
        _out().print(submitted)
        if not again and agent not in seen:
            _err().print(
                f"⚠ no run of agent {agent!r} is known here"
                + (f" (agents of earlier runs: {', '.join(sorted(seen))})" if seen else "")
                + f": the run waits in the queue ({runs.waiting}) for a worker that has it, "
                "and a worker without it fails it (zett runs status " + submitted + ")",
                markup=False, highlight=False, soft_wrap=True,
            )  # fmt: skip
        if not wait:
            return None
        message = await runs.result(submitted)
        _out().print(message.text, soft_wrap=True)
        if message.stop is not None:
            _err().print(f"⚠ stopped: {message.stop.describe()}")
        return message

    waited = _with_runs(
        EngineChoice(engine, temporal_address, namespace, task_queue), db, sessions, work
    )
    if waited is not None:  # the run's own exit status, as `zett run` (a refusal: 3)
        raise typer.Exit(_exit_status(waited))


def _shown(sessions: str) -> str:
    """The sessions location as it may be printed: a DSN without its credentials."""
    scheme, sep, rest = sessions.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if sep else sessions


async def _session_exists(sessions: str, session_id: str) -> bool:
    """Whether the sessions location (a file or a DSN) holds ``session_id``; a
    session file that does not exist is not created."""
    from pathlib import Path

    from zett_agent.durable._runtime import store_for

    if not sessions.startswith(("postgresql://", "postgres://")) and not Path(sessions).is_file():
        return False
    async with store_for(sessions) as store:
        return bool(await store.rows(session_id))


@runs_app.command("list")
def list_runs(
    limit: Annotated[int, typer.Option(min=1, help="How many, newest first.")] = 20,
    status: Annotated[
        str | None, typer.Option(help="Only runs in this status (PENDING: running).")
    ] = None,
    executor: Annotated[
        str | None, typer.Option(help="Only runs of this worker (its --executor-id).")
    ] = None,
    sessions: SessionsOption = "sessions.sqlite3",
    db: DbOption = None,
    engine: EngineOption = EngineName.dbos,
    temporal_address: TemporalAddressOption = "localhost:7233",
    namespace: NamespaceOption = "default",
    task_queue: TaskQueueOption = "zett-runs",
) -> None:
    """One JSON record per run, newest first; "executor_id" is the worker that
    runs (or ran) it."""

    async def work(runs: Any) -> None:
        for info in await runs.list_runs(limit=limit, status=status, executor_id=executor):
            _out().print(json.dumps(_record(info)), soft_wrap=True, markup=False)

    _with_runs(EngineChoice(engine, temporal_address, namespace, task_queue), db, sessions, work)


@runs_app.command("status")
def run_status(
    run_id: str,
    sessions: SessionsOption = "sessions.sqlite3",
    db: DbOption = None,
    engine: EngineOption = EngineName.dbos,
    temporal_address: TemporalAddressOption = "localhost:7233",
    namespace: NamespaceOption = "default",
    task_queue: TaskQueueOption = "zett-runs",
) -> None:
    """The run as one JSON record; exit status 1 when there is no such run."""

    async def work(runs: Any) -> Any:
        return await runs.status(run_id)

    info = _with_runs(
        EngineChoice(engine, temporal_address, namespace, task_queue), db, sessions, work
    )
    if info is None:
        _no_run(run_id)
    _out().print(json.dumps(_record(info)), soft_wrap=True, markup=False)


@runs_app.command("result")
def run_result(
    run_id: str,
    sessions: SessionsOption = "sessions.sqlite3",
    db: DbOption = None,
    engine: EngineOption = EngineName.dbos,
    temporal_address: TemporalAddressOption = "localhost:7233",
    namespace: NamespaceOption = "default",
    task_queue: TaskQueueOption = "zett-runs",
) -> None:
    """Wait for the run and print its final answer."""

    async def work(runs: Any) -> Any:
        if await runs.status(run_id) is None:
            return None
        return await runs.result(run_id)

    message = _with_runs(
        EngineChoice(engine, temporal_address, namespace, task_queue), db, sessions, work
    )
    if message is None:
        _no_run(run_id)
    _out().print(message.text, soft_wrap=True, markup=False)
    if message.stop is not None:
        _err().print(f"⚠ stopped: {message.stop.describe()}")
    raise typer.Exit(_exit_status(message))


def _exit_status(message: Any) -> int:
    """A finished run's exit status: its stop's, as ``zett run`` (a refusal, a
    guardrail's tripwire among them, 3; max_cost 10, max_total_tokens 11)."""
    from zett_agent.cli._output import exit_code_for

    return exit_code_for(message.stop)


@runs_app.command("cancel")
def run_cancel(
    run_id: str,
    sessions: SessionsOption = "sessions.sqlite3",
    db: DbOption = None,
    engine: EngineOption = EngineName.dbos,
    temporal_address: TemporalAddressOption = "localhost:7233",
    namespace: NamespaceOption = "default",
    task_queue: TaskQueueOption = "zett-runs",
) -> None:
    """Cancel the run (it stops at its next step)."""

    async def work(runs: Any) -> bool:
        if await runs.status(run_id) is None:
            return False
        await runs.cancel(run_id)
        return True

    if not _with_runs(
        EngineChoice(engine, temporal_address, namespace, task_queue), db, sessions, work
    ):
        _no_run(run_id)
    _out().print(f"cancelled {run_id}")


@runs_app.command("resume")
def run_resume(
    run_id: str,
    sessions: SessionsOption = "sessions.sqlite3",
    db: DbOption = None,
    engine: EngineOption = EngineName.dbos,
    temporal_address: TemporalAddressOption = "localhost:7233",
    namespace: NamespaceOption = "default",
    task_queue: TaskQueueOption = "zett-runs",
) -> None:
    """Put a cancelled or failed run back on the queue; it goes on from its checkpoints."""

    async def work(runs: Any) -> bool:
        if await runs.status(run_id) is None:
            return False
        await runs.resume(run_id)
        return True

    if not _with_runs(
        EngineChoice(engine, temporal_address, namespace, task_queue), db, sessions, work
    ):
        _no_run(run_id)
    _out().print(f"resumed {run_id}")


@runs_app.command("recover")
def run_recover(
    executor_id: str,
    sessions: SessionsOption = "sessions.sqlite3",
    db: DbOption = None,
    engine: EngineOption = EngineName.dbos,
    temporal_address: TemporalAddressOption = "localhost:7233",
    namespace: NamespaceOption = "default",
    task_queue: TaskQueueOption = "zett-runs",
) -> None:
    """Requeue the unfinished runs of a dead executor for any worker: their ids on
    stdout, how many on stderr (0 is said too, with how to find the worker that
    holds a run)."""

    async def work(runs: Any) -> Any:
        return await runs.recover_executor(executor_id)

    ids = _with_runs(
        EngineChoice(engine, temporal_address, namespace, task_queue), db, sessions, work
    )
    for run_id in ids:
        _out().print(run_id)
    if ids:
        _err().print(f"requeued {len(ids)} unfinished run(s) of executor {executor_id!r}")
    else:
        _err().print(
            f"requeued 0 runs: executor {executor_id!r} has no unfinished run "
            "(zett runs status RUN_ID or zett runs list --status PENDING shows the "
            "executor_id that holds each one)",
            markup=False, highlight=False, soft_wrap=True,
        )  # fmt: skip


@runs_app.command("approve")
def run_approve(
    run_id: str,
    deny_reason: Annotated[
        str | None,
        typer.Option("--deny", help="Deny every waiting call, with this reason (else approve)."),
    ] = None,
    wait: Annotated[
        bool, typer.Option(help="Wait for the run that goes on; print its answer.")
    ] = False,
    sessions: SessionsOption = "sessions.sqlite3",
    db: DbOption = None,
    engine: EngineOption = EngineName.dbos,
    temporal_address: TemporalAddressOption = "localhost:7233",
    namespace: NamespaceOption = "default",
    task_queue: TaskQueueOption = "zett-runs",
) -> None:
    """Decide the calls a durable run waits for (all approved, or all denied with
    --deny) and hand them to the workers; prints the id of the run that goes on.
    Exit 12 when they were decided already (another process decided first:
    nothing is stored, nothing runs), 1 when the run waits for nothing."""
    from zett_agent.cli._main import EXIT_CODES
    from zett_agent.durable._runtime import store_for
    from zett_agent.errors import ResumeError
    from zett_agent.tools._approvals import ApprovalConflictError, ApprovalRequest, approve, deny

    async def work(runs: Any) -> int:
        store = store_for(sessions)
        runs.sessions = store
        try:
            try:
                found = await runs.request_of(run_id)
            except ResumeError as error:
                _err().print(f"✖ {error}", markup=False, soft_wrap=True)
                return EXIT_CODES["error"]
            if found is None:
                _err().print(f"run {run_id!r} waits for no approval", markup=False)
                return EXIT_CODES["error"]
            request = found[0].message
            assert isinstance(request, ApprovalRequest)
            decision = approve() if deny_reason is None else deny(deny_reason)
            try:
                next_run = await runs.approve(run_id, {c.id: decision for c in request.calls})
            except ApprovalConflictError as error:
                _err().print(f"✖ {error}", markup=False, soft_wrap=True)
                return EXIT_CODES["approval_conflict"]
            except ResumeError as error:
                _err().print(f"✖ {error}", markup=False, soft_wrap=True)
                return EXIT_CODES["error"]
            _out().print(next_run, markup=False)
            if wait:
                message = await runs.result(next_run)
                _out().print(message.text, soft_wrap=True, markup=False)
                if message.stop is not None:
                    _err().print(f"⚠ stopped: {message.stop.describe()}", markup=False)
            return EXIT_CODES["ok"]
        finally:
            await store.aclose()

    raise typer.Exit(
        _with_runs(
            EngineChoice(engine, temporal_address, namespace, task_queue), db, sessions, work
        )
    )
