"""Durable runs on DBOS (extra ``durable``): a crash loses no stop and re-runs no tool.

::

    from zett_agent.durable import DurableAgent, DurableConfig, launch, system_database_next_to

    agent = await create_agent("anthropic:claude-sonnet-4-5", tools=[...])
    durable = DurableAgent(agent, "sessions.sqlite3")
    await launch(DurableConfig(system_database_next_to("sessions.sqlite3")))
    message = await durable.run("Summarize this repository", session_id="s1", run_id="r1")

After ``kill -9`` the same program started again carries run ``r1`` on by itself
(DBOS recovers it at :func:`launch`): a model call or a tool call whose step
finished is not made again, a tool that was running is run again only if it is
in ``idempotent_tools`` (otherwise it is answered with an error result saying it
may or may not have taken effect), and the session ends as it would have without
the crash. Workers on PostgreSQL: ``zett worker`` and :class:`DurableRuns`; on
Temporal: :class:`TemporalConfig`, ``zett worker --engine temporal`` and
:class:`TemporalRuns`.

This package imports the core and is never imported by it.
"""

from zett_agent.durable._agent import DurableAgent, new_run_id
from zett_agent.durable._approvals import DECIDED_WORKFLOW_NAME, decided_run_id
from zett_agent.durable._runs import DurableRuns, RunCancelledError, RunFailedError, RunInfo
from zett_agent.durable._runtime import (
    APP_NAME,
    QUEUE_NAME,
    WORKFLOW_NAME,
    DurableConfig,
    TemporalConfig,
    ashutdown,
    launch,
    shutdown,
    system_database_next_to,
)
from zett_agent.durable._steps import TOOL_INTERRUPTED, idempotent
from zett_agent.durable._temporal_runs import TemporalRuns

__all__ = [
    "APP_NAME",
    "DECIDED_WORKFLOW_NAME",
    "QUEUE_NAME",
    "TOOL_INTERRUPTED",
    "WORKFLOW_NAME",
    "DurableAgent",
    "DurableConfig",
    "DurableRuns",
    "RunCancelledError",
    "RunFailedError",
    "RunInfo",
    "TemporalConfig",
    "TemporalRuns",
    "ashutdown",
    "decided_run_id",
    "idempotent",
    "launch",
    "new_run_id",
    "shutdown",
    "system_database_next_to",
]
