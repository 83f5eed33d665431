"""``A2AAgentTool``: a remote agent's task state is the subagent's stop.

Against two servers: zett's own (``create_a2a_app`` over the replayed scenarios of
tests/serve_support.py) and the ``a2a-sdk`` 1.3.0 reference server (its
``DefaultRequestHandler`` and JSON-RPC routes, with an executor that ends each task
in the state its question names), so zett's client is checked against a server
nobody here wrote. A parent agent whose model calls the remote tool reads the
subagent notice, and a refused remote answer is an error result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")
pytest.importorskip("a2a.server", reason="the a2a extra (a2a-sdk) is not installed")

from a2a.helpers.proto_helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    TaskState,
)
from starlette.applications import Starlette

from serve_support import FINAL_WEATHER, make_agent, running_server, scenario_reply
from zett_agent import Agent, AgentRunConfig, ToolCall
from zett_agent.a2a import A2AAgentTool, create_a2a_app
from zett_agent.stop import StopReason
from zett_agent.testing import ReplayServer, ScriptedModel, reply

# ---------------------------------------------------------------- zett's server


@pytest.fixture
def zett_remote() -> Iterator[str]:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=lambda call: call.name == "get_weather")
        with running_server(create_a2a_app(agent, owns=True)) as url:
            yield url


async def test_a_normal_remote_answer_is_the_subagents_text(zett_remote: str) -> None:
    remote = A2AAgentTool(zett_remote, name="helper")
    result = await remote.run("hello")
    assert result.ok and result.text == "You said: hello"
    assert result.report() == "You said: hello"


async def test_a_refused_remote_task_is_a_refusal(zett_remote: str) -> None:
    remote = A2AAgentTool(zett_remote, name="helper")
    result = await remote.run("please refuse")
    assert result.stop is not None and result.stop.reason is StopReason.REFUSAL
    assert result.stop.raw == "rejected"
    assert result.stop.detail["remote_stop"]["reason"] == "refusal"
    assert result.report().startswith('[subagent "helper" stopped: refusal')


async def test_a_cut_remote_task_is_interrupted_with_the_remotes_message(zett_remote: str) -> None:
    remote = A2AAgentTool(zett_remote, name="helper")
    result = await remote.run("cut")
    assert result.stop is not None and result.stop.reason is StopReason.INTERRUPTED
    assert result.stop.raw == "failed" and result.stop.message
    assert result.stop.detail["remote_stop"]["reason"] == "max_output"


async def test_input_required_waits_for_the_host_which_answers(zett_remote: str) -> None:
    remote = A2AAgentTool(zett_remote, name="helper")
    result = await remote.run("weather")
    assert result.stop is not None and result.stop.reason is StopReason.PAUSED
    assert result.stop.detail["waiting"] is True
    [(task_id, waiting)] = remote.waiting.items()
    [call] = waiting.data["zett"]["approvals"]
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Paris"}
    assert "the host decides" in result.report()
    done = await remote.answer(task_id, {"approvals": {call["id"]: {"approved": True}}})
    assert done.ok and done.text == FINAL_WEATHER
    assert remote.waiting == {}


async def test_an_unreachable_remote_is_an_error_result_not_an_exception() -> None:
    remote = A2AAgentTool("http://127.0.0.1:9", name="helper")
    result = await remote.run("hello")
    assert result.error is not None
    assert result.stop is not None and result.stop.reason is StopReason.INTERRUPTED


async def test_a_parent_reads_the_refused_remote_as_an_error_result(zett_remote: str) -> None:
    remote = A2AAgentTool(zett_remote, name="helper", description="Helps.")
    model = ScriptedModel(
        reply(tool_calls=[ToolCall("call_1", "helper", json.dumps({"task": "please refuse"}))]),
        reply("The helper declined."),
    )
    parent = Agent(model, AgentRunConfig("parent"), [remote.tool])
    answer = await parent.run("ask the helper")
    await parent.aclose()
    results = [m for m in parent.messages if getattr(m, "tool_call_id", None) == "call_1"]
    assert results and results[0].is_error
    assert results[0].content.startswith('[subagent "helper" stopped: refusal')
    assert answer.text == "The helper declined."


# ---------------------------------------------------------------- the reference server


class ByQuestion(AgentExecutor):
    """Ends each task in the state its question names (the SDK's own TaskUpdater)."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        question = context.get_user_input()
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:
            task = new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED)
            await event_queue.enqueue_event(task)
        await updater.start_work()

        def said(text: str) -> Any:
            return updater.new_agent_message([Part(text=text)])

        if "reject" in question:
            await updater.reject(said("I will not do that."))
        elif "fail" in question:
            await updater.failed(said("The database is down."))
        elif "cancel" in question:
            await updater.cancel(said("Stopped by the operator."))
        elif "ask" in question:
            await updater.requires_input(said("Which city?"))
        else:
            await updater.add_artifact([Part(text=f"done: {question}")])
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


@pytest.fixture(scope="module")
def reference() -> Iterator[str]:
    where: dict[str, str] = {}

    async def with_url(card: AgentCard) -> AgentCard:
        card.supported_interfaces[0].url = where["url"] + "/rpc"
        return card

    card = AgentCard(
        name="reference",
        description="the a2a-sdk reference server",
        version="1.0",
        supported_interfaces=[
            AgentInterface(url="http://x/rpc", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="any", name="any", description="ends as asked", tags=["test"])],
    )
    handler = DefaultRequestHandler(ByQuestion(), InMemoryTaskStore(), card)
    routes = [
        *create_agent_card_routes(card, card_modifier=with_url),
        *create_jsonrpc_routes(handler, "/rpc"),
    ]
    with running_server(Starlette(routes=routes)) as url:
        where["url"] = url
        yield url


@pytest.mark.parametrize(
    ("question", "reason", "raw", "message"),
    [
        ("reject this", StopReason.REFUSAL, "rejected", "I will not do that."),
        ("fail this", StopReason.INTERRUPTED, "failed", "The database is down."),
        ("cancel this", StopReason.INTERRUPTED, "canceled", "Stopped by the operator."),
        ("ask me", StopReason.PAUSED, "TASK_STATE_INPUT_REQUIRED", "Which city?"),
    ],
)
async def test_the_reference_servers_states_become_the_subagents_stop(
    reference: str, question: str, reason: StopReason, raw: str, message: str
) -> None:
    remote = A2AAgentTool(reference, name="ref")
    result = await remote.run(question)
    assert result.error is None, result.error
    assert result.stop is not None
    assert (result.stop.reason, result.stop.raw, result.stop.message) == (reason, raw, message)
    if raw == "canceled":
        assert "canceled" in result.stop.detail["canceled"]
    if reason is StopReason.PAUSED:
        assert next(iter(remote.waiting.values())).question == "Which city?"


async def test_the_reference_servers_completed_task_is_the_text(reference: str) -> None:
    result = await A2AAgentTool(reference, name="ref").run("summarize")
    assert result.ok and result.text == "done: summarize"
