"""zett's A2A 1.0 server read by the official ``a2a-sdk`` 1.3.0 Python client.

Every recording of the corpus (tests/ag_ui_corpus.py), streamed and not, is sent
with the SDK's client (``create_client`` from the card, ``SendMessage`` and
``SendStreamingMessage``): the task's state must be the one ``SERVER_STATES`` gives
its stop, with the stop in the status message's metadata equal to the stored
answer's. Then approvals (``input-required``, answered on the same task through
the same compare-and-set as every decider), ``GetTask``, ``CancelTask``, contexts
as sessions, strict params and the v0.3 method names.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")
pytest.importorskip("a2a.client", reason="the a2a extra (a2a-sdk) is not installed")

from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
)
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Value
from starlette.applications import Starlette
from starlette.routing import Mount

from ag_ui_corpus import CASES, Case, case_agents, thread_of
from serve_support import FINAL_DENIED, FINAL_WEATHER, make_agent, running_server, scenario_reply
from zett_agent import UserMessage
from zett_agent.a2a import SERVER_STATES, create_a2a_app, task_state
from zett_agent.sessions import InMemorySessionStore
from zett_agent.stop import StopInfo
from zett_agent.testing import ReplayServer

STATE_NAMES = {
    "completed": "TASK_STATE_COMPLETED",
    "rejected": "TASK_STATE_REJECTED",
    "failed": "TASK_STATE_FAILED",
    "canceled": "TASK_STATE_CANCELED",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
}


def ask(text: str, **fields: Any) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id="m", role=Role.ROLE_USER, parts=[Part(text=text)], **fields)
    )


async def final_task(url: str, request: SendMessageRequest, *, streaming: bool) -> dict[str, Any]:
    """The task as the SDK's client last reported it (a stream's last status
    update merged into its task)."""
    client = await create_client(url, ClientConfig(streaming=streaming))
    task: dict[str, Any] = {}
    try:
        async for response in client.send_message(request):
            data = MessageToDict(response)
            if "task" in data:
                task = data["task"]
            elif "statusUpdate" in data:
                task["status"] = data["statusUpdate"]["status"]
                task["id"] = data["statusUpdate"]["taskId"]
                task["contextId"] = data["statusUpdate"]["contextId"]
    finally:
        await client.close()
    return task


def expected_state(stop: dict[str, Any] | None) -> str:
    """The README's table, written out here (not read from the module)."""
    if stop is None:
        return STATE_NAMES["completed"]
    reason = stop["reason"]
    if reason == "refusal":
        return STATE_NAMES["rejected"]
    if reason == "other":
        limit = stop["raw"] == "max_turns" or stop["detail"].get("marker")
        return STATE_NAMES["failed" if limit else "completed"]
    if reason == "interrupted" and stop["detail"].get("cancelled"):
        return STATE_NAMES["canceled"]
    assert SERVER_STATES[reason] == STATE_NAMES["failed"]
    return STATE_NAMES["failed"]


def stop_of(task: dict[str, Any]) -> dict[str, Any] | None:
    stop: dict[str, Any] | None = task["status"]["message"]["metadata"]["zett"]["stop"]
    return stop


# ---------------------------------------------------------------- the corpus


@pytest.fixture(scope="module")
def corpus() -> Iterator[tuple[str, dict[str, InMemorySessionStore]]]:
    agents = case_agents("a2a-corpus")
    stores = {key: InMemorySessionStore() for key in agents}
    mounts = [
        Mount(f"/{key}", app=create_a2a_app(agent, stores[key])) for key, agent in agents.items()
    ]
    with running_server(Starlette(routes=mounts)) as url:
        yield url, stores


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_every_corpus_stop_is_the_task_state_of_its_table_with_the_stop(
    corpus: tuple[str, dict[str, InMemorySessionStore]], case: Case, streaming: bool
) -> None:
    url, stores = corpus
    context = f"{thread_of(case)}-{'s' if streaming else 'b'}"[:128]
    task = await final_task(
        f"{url}/{case.key}", ask(case.name, context_id=context), streaming=streaming
    )
    assert task["contextId"] == context
    state = task["status"]["state"]
    stop = stop_of(task)
    rows = await stores[case.key].rows(context)
    answer = rows[-1].message
    if isinstance(answer, UserMessage):  # an error before any answer: failed, its sentence
        assert state == STATE_NAMES["failed"] and stop is None
        assert task["status"]["message"]["parts"][0]["text"]
        return
    kept = answer.stop.to_dict(describe=True) if answer.stop is not None else None
    assert stop == kept
    assert state == expected_state(stop)
    assert state == task_state(StopInfo.from_dict(stop) if stop else None)


# ---------------------------------------------------------------- one agent


@pytest.fixture
def weather() -> Iterator[tuple[str, InMemorySessionStore]]:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=lambda call: call.name == "get_weather")
        store = InMemorySessionStore()
        with running_server(create_a2a_app(agent, store, owns=True)) as url:
            yield url, store


def answer(task: dict[str, Any], approved: bool) -> SendMessageRequest:
    [call] = task["status"]["message"]["parts"][1]["data"]["zett"]["approvals"]
    data = Value()
    ParseDict({"approvals": {call["id"]: {"approved": approved}}}, data)
    part = Part(data=data, media_type="application/json")
    message = Message(
        message_id="a", role=Role.ROLE_USER, parts=[part],
        task_id=task["id"], context_id=task["contextId"],
    )  # fmt: skip
    return SendMessageRequest(message=message)


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize(("approved", "final"), [(True, FINAL_WEATHER), (False, FINAL_DENIED)])
async def test_a_waiting_approval_is_input_required_and_the_answer_goes_on_in_the_task(
    weather: tuple[str, InMemorySessionStore], streaming: bool, approved: bool, final: str
) -> None:
    url, _ = weather
    task = await final_task(url, ask("weather in Paris?"), streaming=streaming)
    assert task["status"]["state"] == STATE_NAMES["input-required"]
    again = await final_task(url, answer(task, approved), streaming=streaming)
    assert again["id"] == task["id"]
    assert again["status"]["state"] == STATE_NAMES["completed"]
    assert again["status"]["message"]["parts"][0]["text"] == final
    # deciding the same task again: it takes no more input
    with pytest.raises(Exception, match="takes no more input"):
        await final_task(url, answer(task, approved), streaming=False)


async def test_get_task_cancel_task_and_contexts_are_sessions(
    weather: tuple[str, InMemorySessionStore],
) -> None:
    url, store = weather
    done = await final_task(url, ask("hello", context_id="ctx-1"), streaming=False)
    later = await final_task(url, ask("again", context_id="ctx-1"), streaming=False)
    rows = [r.message for r in await store.rows("ctx-1")]
    assert [getattr(m, "text", getattr(m, "content", None)) for m in rows] == [
        "hello", "You said: hello", "again", "You said: again",
    ]  # fmt: skip
    client = await create_client(url, ClientConfig(streaming=False))
    try:
        got = MessageToDict(await client.get_task(GetTaskRequest(id=done["id"])))
        assert got["status"]["state"] == STATE_NAMES["completed"]
        assert got["artifacts"][0]["parts"][0]["text"] == "You said: hello"
        with pytest.raises(Exception, match="TASK_STATE_COMPLETED"):
            await client.cancel_task(CancelTaskRequest(id=later["id"]))
        waiting = await final_task(url, ask("weather", context_id="ctx-2"), streaming=False)
        canceled = MessageToDict(await client.cancel_task(CancelTaskRequest(id=waiting["id"])))
        assert canceled["status"]["state"] == STATE_NAMES["canceled"]
        with pytest.raises(Exception, match="no task"):
            await client.get_task(GetTaskRequest(id="nope"))
    finally:
        await client.close()
    # the canceled task's calls were denied: the context takes questions again
    fresh = await final_task(url, ask("hello", context_id="ctx-2"), streaming=False)
    assert fresh["status"]["state"] == STATE_NAMES["completed"]


@pytest.mark.parametrize(
    ("body", "code", "said"),
    [
        ({"method": "message/send", "params": {}}, -32601, "SendMessage"),
        (
            {"method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER",
             "parts": [{"text": "hi"}]}, "configuration": {"taskPushNotificationConfig": {
             "url": "http://127.0.0.1:9/hook"}}}},
            -32003, "push notifications",
        ),
        ({"method": "Nope", "params": {}}, -32601, "Nope"),
        (
            {"method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER",
             "parts": [{"text": "hi"}]}, "approve": True}},
            -32602, "params.approve",
        ),
        (
            {"method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER",
             "parts": [{"text": "hi", "kind": "text"}]}}},
            -32602, "params.message.parts.0.kind",
        ),
    ],
)  # fmt: skip
def test_requests_are_parsed_strictly_and_v03_names_refused(
    weather: tuple[str, InMemorySessionStore], body: dict[str, Any], code: int, said: str
) -> None:
    url, _ = weather
    response = httpx.post(f"{url}/api/a2a", json={"jsonrpc": "2.0", "id": 1, **body})
    error = response.json()["error"]
    assert error["code"] == code and said in error["message"]


def test_the_agent_card_names_the_jsonrpc_interface(
    weather: tuple[str, InMemorySessionStore],
) -> None:
    url, _ = weather
    card = httpx.get(f"{url}/.well-known/agent-card.json").json()
    [interface] = card["supportedInterfaces"]
    assert interface == {"url": f"{url}/api/a2a", "protocolBinding": "JSONRPC",
                         "protocolVersion": "1.0"}  # fmt: skip
    assert card["capabilities"]["streaming"] is True


async def test_cancel_task_cancels_a_running_task_whose_answer_so_far_is_kept(
    weather: tuple[str, InMemorySessionStore],
) -> None:
    url, store = weather
    streaming = await create_client(url, ClientConfig(streaming=True))
    other = await create_client(url, ClientConfig(streaming=False))
    states = []
    try:
        async for response in streaming.send_message(ask("slow", context_id="ctx-slow")):
            data = MessageToDict(response)
            if "artifactUpdate" in data and not states:
                task_id = data["artifactUpdate"]["taskId"]
                canceled = MessageToDict(await other.cancel_task(CancelTaskRequest(id=task_id)))
                states.append(canceled["status"]["state"])
            if "statusUpdate" in data:
                states.append(data["statusUpdate"]["status"]["state"])
    finally:
        await streaming.close()
        await other.close()
    assert states == [STATE_NAMES["canceled"], STATE_NAMES["canceled"]]
    answer = (await store.rows("ctx-slow"))[-1].message
    assert answer.stop is not None and answer.stop.detail.get("cancelled")
    assert answer.text.startswith("word0")


def test_only_the_last_tasks_are_kept(
    weather: tuple[str, InMemorySessionStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    from zett_agent.a2a import _server

    monkeypatch.setattr(_server, "MAX_TASKS", 3)
    url, _ = weather

    def rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        answer: dict[str, Any] = httpx.post(f"{url}/api/a2a", json=body, timeout=30).json()
        return answer

    ids = []
    for n in range(5):
        message = {"messageId": f"m{n}", "role": "ROLE_USER", "parts": [{"text": f"hi {n}"}]}
        ids.append(rpc("SendMessage", {"message": message})["result"]["task"]["id"])
    assert rpc("GetTask", {"id": ids[0]})["error"]["code"] == -32001
    assert rpc("GetTask", {"id": ids[-1]})["result"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_every_corpus_stop_read_by_zetts_own_client_is_the_subagent_stop_of_its_table(
    corpus: tuple[str, dict[str, InMemorySessionStore]], case: Case
) -> None:
    from zett_agent.a2a import A2AAgentTool
    from zett_agent.stop import StopReason

    url, stores = corpus
    context = f"{thread_of(case)}-z"[:128]
    remote = A2AAgentTool(f"{url}/{case.key}", name="remote")
    result = await remote.run(case.name, context_id=context)
    assert result.error is None, result.error
    answer = (await stores[case.key].rows(context))[-1].message
    kept = getattr(answer, "stop", None)
    if isinstance(answer, UserMessage) or (
        kept is not None
        and kept.reason is not StopReason.REFUSAL
        and expected_state(kept.to_dict()) != "TASK_STATE_COMPLETED"
    ):
        assert result.stop is not None and result.stop.reason is StopReason.INTERRUPTED
        assert result.stop.raw == "failed" and result.stop.message
    elif kept is not None and kept.reason is StopReason.REFUSAL:
        assert result.stop is not None and result.stop.reason is StopReason.REFUSAL
        assert result.report().startswith('[subagent "remote" stopped: refusal')
    elif kept is None:
        assert result.stop is None and result.ok
    else:  # completed with a stop zett carries on after (OTHER): the remote's own stop
        assert result.stop is not None and result.stop.reason is kept.reason
        assert result.stop.raw == kept.raw
