"""The agent factory the worker tests start ``zett worker --agent durable_factory:make``
with. Reads: ZETT_TEST_MODEL_URL (an OpenAI-compatible ReplayServer),
ZETT_TEST_SESSIONS_DSN and ZETT_TEST_SCHEMA (the PostgreSQL session store),
ZETT_TEST_EFFECTS (the file the tool logs to), ZETT_TEST_EXECUTOR."""

from __future__ import annotations

import os
import time
from pathlib import Path

from zett_agent import Agent, AgentRunConfig, Model, Tripwire
from zett_agent.durable import DurableAgent
from zett_agent.sessions.postgres import PostgresSessionStore


def slow_note(text: str) -> str:
    """Write a note, slowly (idempotent: writing it twice is harmless).

    Args:
        text: the note.
    """
    executor = os.environ["ZETT_TEST_EXECUTOR"]
    with Path(os.environ["ZETT_TEST_EFFECTS"]).open("a") as log:
        log.write(f"{executor}:{text}:start\n")
    time.sleep(float(os.environ.get("ZETT_TEST_TOOL_SECONDS", "2")))
    with Path(os.environ["ZETT_TEST_EFFECTS"]).open("a") as log:
        log.write(f"{executor}:{text}:done\n")
    return f"noted {text}"


def make() -> DurableAgent:
    model = Model("openai", "m", base_url=os.environ["ZETT_TEST_MODEL_URL"], api_key="sk-test")
    agent = Agent(model, AgentRunConfig("noter"), tools=[slow_note])
    store = PostgresSessionStore(
        os.environ["ZETT_TEST_SESSIONS_DSN"], schema=os.environ["ZETT_TEST_SCHEMA"]
    )
    return DurableAgent(agent, store, idempotent_tools={"slow_note"})


def make_plain() -> Agent:
    """A plain agent (``noter``): the worker makes it durable on its --sessions store."""
    model = Model("openai", "m", base_url=os.environ["ZETT_TEST_MODEL_URL"], api_key="sk-test")
    return Agent(model, AgentRunConfig("noter"), tools=[slow_note])


def no_notes(message: object) -> Tripwire:
    """An input guardrail that trips on every prompt."""
    return Tripwire("no notes today")


def make_guarded() -> Agent:
    """A plain agent (``guarded``) with an input guardrail that always trips."""
    model = Model("openai", "m", base_url=os.environ["ZETT_TEST_MODEL_URL"], api_key="sk-test")
    config = AgentRunConfig("guarded", input_guardrails=[no_notes])
    return Agent(model, config, tools=[slow_note])
