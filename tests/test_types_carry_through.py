"""Types that carry through: ``Agent[T]``, ``AssistantMessage[T]`` and the typed
sync API. The ``assert_type`` lines are checked by mypy (the slow test below runs
it on this file); at run time they do nothing, and the runs show that the
generic classes are the same classes as before (dataclass, stored form)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, assert_type

import pytest
from pydantic import BaseModel

from zett_agent import (
    Agent,
    AgentClient,
    AssistantMessage,
    create_agent,
    create_agent_sync,
)
from zett_agent._messages import message_from_dict, message_to_dict
from zett_agent.testing import ScriptedModel, reply


class City(BaseModel):
    name: str


class Town(BaseModel):
    name: str


CITY = '{"name": "Paris"}'


async def test_an_agent_and_its_answers_carry_the_output_type() -> None:
    text_agent = await create_agent(ScriptedModel(reply("hi")))
    assert_type(text_agent, Agent[None])
    answer = await text_agent.run("hi")
    assert_type(answer, AssistantMessage[None])
    assert answer.output is None

    city_agent = await create_agent(ScriptedModel(reply(CITY), reply(CITY)), output_type=City)
    assert_type(city_agent, Agent[City])
    city = await city_agent.run("where?")
    assert_type(city, AssistantMessage[City])
    assert_type(city.output, City | None)
    assert city.output == City(name="Paris")

    town = await city_agent.run("and?", output_type=Town)
    assert_type(town, AssistantMessage[Town])
    assert town.output == Town(name="Paris")


async def test_a_schema_dict_or_a_stored_message_is_any() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    agent = await create_agent(ScriptedModel(reply(CITY)), output_type=schema)
    assert_type(agent, Agent[Any])
    answer = await agent.run("where?")
    assert_type(answer, AssistantMessage[Any])
    assert answer.output == {"name": "Paris"}
    loaded = message_from_dict(message_to_dict(answer))
    assert isinstance(loaded, AssistantMessage)
    assert_type(loaded, AssistantMessage[Any])
    assert loaded.output == {"name": "Paris"}


async def test_a_client_carries_its_agents_output_type() -> None:
    agent = await create_agent(ScriptedModel(reply(CITY), reply(CITY)), output_type=City)
    async with AgentClient(agent) as client:
        assert_type(client, AgentClient[City])
        answer = await client.run("where?")
        assert_type(answer, AssistantMessage[City])
        assert answer.output == City(name="Paris")
        other = await client.run("and?", output_type=Town)
        assert_type(other, AssistantMessage[Town])
        assert other.output == Town(name="Paris")


def test_the_sync_api_carries_the_output_type() -> None:
    with create_agent_sync(ScriptedModel(reply(CITY), reply(CITY)), output_type=City) as agent:
        assert_type(agent, Agent[City])
        answer = agent.run_sync("where?")
        assert_type(answer, AssistantMessage[City])
        assert answer.output == City(name="Paris")
        town = agent.run_sync("and?", output_type=Town)
        assert_type(town, AssistantMessage[Town])
        assert town.output == Town(name="Paris")


def test_the_generic_classes_are_the_same_classes() -> None:
    assert dataclasses.is_dataclass(AssistantMessage)
    assert AssistantMessage[City] is not AssistantMessage  # an alias for checkers
    message = AssistantMessage[City]("x", output=City(name="Paris"))
    assert type(message) is AssistantMessage
    assert message_to_dict(message)["output"] == {"name": "Paris"}
    assert [f.name for f in dataclasses.fields(AssistantMessage)][-1] == "output"


@pytest.mark.slow
def test_mypy_agrees_with_the_assert_types() -> None:
    pytest.importorskip("mypy")
    here = Path(__file__)
    root = here.parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", str(here)],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "MYPYPATH": str(root / "src")},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
