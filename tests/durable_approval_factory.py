"""The agent the durable approval worker tests start ``zett worker --agent
durable_approval_factory:make`` with: ``biller``, whose ``send_invoice`` waits for
approval and is not idempotent. Reads ZETT_TEST_MODEL_URL (an OpenAI-compatible
ReplayServer), ZETT_TEST_SESSIONS (a SQLite file or a postgresql:// DSN, the
default schema, as ``zett runs`` opens it), ZETT_TEST_EFFECTS (the tool logs
``<executor>:start`` and ``<executor>:done`` there) and ZETT_TEST_EXECUTOR. The
first call blocks after ``start`` until the process is killed (while
ZETT_TEST_EFFECTS has no start yet)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from zett_agent import Agent, AgentRunConfig, Model, SessionStore, SQLiteSessionStore
from zett_agent.approvals import requires_approval
from zett_agent.durable import DurableAgent


def send_invoice(customer: str) -> str:
    """Send an invoice (every call sends one more).

    Args:
        customer: who gets it.
    """
    effects = Path(os.environ["ZETT_TEST_EFFECTS"])
    first = not effects.exists()
    executor = os.environ["ZETT_TEST_EXECUTOR"]
    with effects.open("a") as log:
        log.write(f"{executor}:start\n")
    if first:
        time.sleep(120)  # killed here by the test
    with effects.open("a") as log:
        log.write(f"{executor}:done\n")
    return f"invoice sent to {customer}"


def make() -> DurableAgent:
    model = Model("openai", "m", base_url=os.environ["ZETT_TEST_MODEL_URL"], api_key="sk-test")
    agent = Agent(model, AgentRunConfig("biller"), tools=[requires_approval(send_invoice)])
    sessions = os.environ["ZETT_TEST_SESSIONS"]
    store: SessionStore
    if sessions.startswith("postgresql://"):
        from zett_agent.sessions.postgres import PostgresSessionStore

        store = PostgresSessionStore(sessions)
    else:
        store = SQLiteSessionStore(sessions)
    return DurableAgent(agent, store)
