"""``zett serve``'s AG-UI route read with the official Python package's event types.

Every recording of the corpus (tests/ag_ui_corpus.py), streamed and not, is run
through ``POST /api/ag-ui``: each event must parse as ``ag_ui.core.Event``
(``ag-ui-protocol`` 1.0.0) with no field the schema does not have, the run must end
with the terminal event of ``OUTCOMES`` for its stop, and the stop must be in
``zett.stop``, ``RUN_FINISHED.result`` and ``metadata`` alike, equal to the stored
answer's. Approvals are interrupts, resumed through the same compare-and-set as
``/api/chat``; bodies are parsed strictly.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")
pytest.importorskip("ag_ui.core", reason="the ag-ui extra is not installed")

from ag_ui.core import Event
from pydantic import BaseModel, TypeAdapter

from ag_ui_corpus import CASES, Case, corpus_app, run_input, thread_of
from serve_support import FINAL_DENIED, FINAL_WEATHER, make_agent, scenario_reply
from zett_agent.serve import AG_UI_OUTCOMES, create_ag_ui_app, create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer

EVENT: TypeAdapter[Any] = TypeAdapter(Event)


def extras(value: Any, where: str = "") -> list[str]:
    """Fields a parsed event holds that its schema does not have (the official
    models keep them: ``extra="allow"``)."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{where}.{k}" for k in value.model_extra or {}]
        for name in type(value).model_fields:
            found += extras(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found += extras(item, f"{where}[{n}]")
    return found


def parse(body: str) -> list[dict[str, Any]]:
    """The events of an AG-UI SSE body, each checked against the official types."""
    events = []
    for block in body.split("\n\n"):
        if not block.strip():
            continue
        assert block.startswith("data: "), block
        event = json.loads(block[len("data: ") :])
        typed = EVENT.validate_python(event)
        assert extras(typed) == [], (event, extras(typed))
        assert typed.model_dump(mode="json", by_alias=True) == event
        events.append(event)
    return events


def terminal(events: list[dict[str, Any]]) -> str:
    """The row of ``AG_UI_OUTCOMES`` the run's last event is."""
    last = events[-1]
    if last["type"] == "RUN_ERROR":
        return "RUN_ERROR"
    assert last["type"] == "RUN_FINISHED"
    custom = events[-3]
    assert custom["type"] == "CUSTOM" and custom["name"] == "zett.stop"
    assert events[-2]["type"] == "STATE_SNAPSHOT"
    outcome = last["outcome"]["type"]
    return f"RUN_FINISHED {outcome}" + (" + zett.stop" if custom["value"] is not None else "")


def expected(stop: dict[str, Any] | None, events: list[dict[str, Any]]) -> str:
    if events[-1]["type"] == "RUN_ERROR":
        return AG_UI_OUTCOMES["error"]
    if stop is None:
        return AG_UI_OUTCOMES["normal"]
    if stop["detail"].get("cancelled"):
        return AG_UI_OUTCOMES["cancelled"]
    return AG_UI_OUTCOMES[stop["reason"]]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def corpus() -> AsyncIterator[httpx.AsyncClient]:
    app, agents = corpus_app()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client
    for agent in agents.values():
        await agent.aclose()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_every_corpus_stop_is_valid_ag_ui_and_carries_the_stop(
    corpus: httpx.AsyncClient, case: Case
) -> None:
    thread = thread_of(case)
    response = await corpus.post(case.path, json=run_input(thread, case.name))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    events = parse(response.text)
    assert events[0]["type"] == "RUN_STARTED" and events[0]["threadId"] == thread
    assert events[0]["runId"] == f"run-{thread}"
    assert [e["type"] for e in events].count("RUN_STARTED") == 1
    last = events[-1]
    stop = None
    if last["type"] == "RUN_FINISHED":
        stop = last["result"]["stop"]
        assert events[-3]["value"] == stop == last["metadata"]["zett"]["stop"]
        assert events[-2]["snapshot"]["zett"]["stop"] == stop
        stored = await corpus.get(f"/{case.key}/api/sessions/{thread}")
        answer = stored.json()["messages"][-1]
        assert answer["role"] == "assistant"
        kept = answer["metadata"]["stop"]
        if stop is None:
            assert kept is None
        else:
            assert kept == {k: stop[k] for k in ("reason", "raw", "category", "message")}
    else:
        assert last["type"] == "RUN_ERROR" and last["message"] and last["code"]
    assert terminal(events) == expected(stop, events)


# ---------------------------------------------------------------- approvals


def waits(call: Any) -> bool:
    return call.name == "get_weather"


@pytest.fixture
async def weather() -> AsyncIterator[httpx.AsyncClient]:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=waits)
        app = create_app(agent, InMemorySessionStore(), owns=True)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            yield client
        await agent.aclose()


async def ask(client: httpx.AsyncClient, thread: str, question: str) -> list[dict[str, Any]]:
    response = await client.post("/api/ag-ui", json=run_input(thread, question))
    assert response.status_code == 200, response.text
    return parse(response.text)


def resume(thread: str, *entries: dict[str, Any]) -> dict[str, Any]:
    body = run_input(thread, "")
    body["runId"] = f"resume-{thread}"
    body["messages"] = []
    body["resume"] = list(entries)
    return body


async def test_a_call_waiting_for_approval_is_an_interrupt_resumed_with_a_decision(
    weather: httpx.AsyncClient,
) -> None:
    events = await ask(weather, "t1", "weather in Paris?")
    starts = [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert [(e["toolCallName"], e["toolCallId"]) for e in starts] == [("get_weather", "call_w1")]
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"city": "Paris"}
    last = events[-1]
    assert terminal(events) == AG_UI_OUTCOMES["normal"].replace("success", "interrupt")
    [interrupt] = last["outcome"]["interrupts"]
    assert interrupt["toolCallId"] == "call_w1" and interrupt["reason"] == "tool_approval"
    assert events[-2]["snapshot"]["zett"]["waiting"] == [interrupt["id"]]
    # a new question while the call waits: refused, nothing stored
    refused = await weather.post("/api/ag-ui", json=run_input("t1", "something else"))
    assert refused.status_code == 409
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
    response = await weather.post("/api/ag-ui", json=resume("t1", entry))
    assert response.status_code == 200, response.text
    events = parse(response.text)
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert [r["toolCallId"] for r in results] == ["call_w1"]
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == FINAL_WEATHER
    assert terminal(events) == AG_UI_OUTCOMES["normal"]
    # the same decision again: the compare-and-set says it was taken (409)
    again = await weather.post("/api/ag-ui", json=resume("t1", entry))
    assert again.status_code == 409


async def test_a_cancelled_interrupt_denies_the_call(weather: httpx.AsyncClient) -> None:
    events = await ask(weather, "t2", "weather in Paris?")
    [interrupt] = events[-1]["outcome"]["interrupts"]
    response = await weather.post(
        "/api/ag-ui", json=resume("t2", {"interruptId": interrupt["id"], "status": "cancelled"})
    )
    events = parse(response.text)
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == FINAL_DENIED


async def test_a_decision_taken_elsewhere_first_wins_over_the_ag_ui_resume(
    weather: httpx.AsyncClient,
) -> None:
    events = await ask(weather, "t3", "weather in Paris?")
    [interrupt] = events[-1]["outcome"]["interrupts"]
    decided = await weather.post(
        "/api/sessions/t3/approve",
        json={"decisions": {interrupt["id"]: {"approved": False, "reason": "no"}}},
    )
    assert decided.status_code == 200, decided.text
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
    late = await weather.post("/api/ag-ui", json=resume("t3", entry))
    assert late.status_code == 409, late.text


# ---------------------------------------------------------------- strict bodies


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"approve": True}, "approve"),
        ({"tools": [{"name": "x", "description": "y"}]}, "tools"),
        ({"context": [{"description": "x", "value": "y"}]}, "context"),
        ({"state": "not an object"}, "state"),
        ({"threadId": 7}, "threadId"),
    ],
)
async def test_a_body_that_is_not_a_strict_run_input_is_refused_naming_the_field(
    weather: httpx.AsyncClient, change: dict[str, Any], field: str
) -> None:
    response = await weather.post("/api/ag-ui", json={**run_input("t4", "hi"), **change})
    assert response.status_code == 422, response.text
    assert field in response.json()["error"]["message"]


async def test_an_approval_must_be_a_json_boolean_and_the_message_strict(
    weather: httpx.AsyncClient,
) -> None:
    events = await ask(weather, "t5", "weather in Paris?")
    [interrupt] = events[-1]["outcome"]["interrupts"]
    entry = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": "yes"}}
    response = await weather.post("/api/ag-ui", json=resume("t5", entry))
    assert response.status_code == 422
    assert "resume.0.payload.approved" in response.json()["error"]["message"]
    body = run_input("t6", "hi")
    body["messages"][0]["approved"] = True
    response = await weather.post("/api/ag-ui", json=body)
    assert response.status_code == 422
    assert "messages.0.approved" in response.json()["error"]["message"]
    unknown = {"interruptId": "nope@x", "status": "resolved", "payload": {"approved": True}}
    response = await weather.post("/api/ag-ui", json=resume("t5", unknown))
    assert response.status_code == 409
    assert "resume.0.interruptId" in response.json()["error"]["message"]


async def test_create_ag_ui_app_serves_the_route_alone() -> None:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url)
        app = create_ag_ui_app(agent)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            response = await client.post("/", json=run_input("alone", "hello"))
            assert (await client.get("/api/info")).status_code == 404
        await agent.aclose()
    events = parse(response.text)
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "You said: hello"
    assert terminal(events) == AG_UI_OUTCOMES["normal"]


def test_zett_serve_help_names_the_ag_ui_route() -> None:
    from typer.testing import CliRunner

    from zett_agent.cli import app

    result = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "POST /api/ag-ui" in result.stdout and "AG-UI 1.0" in result.stdout
    assert "zett.stop" in result.stdout


# ---------------------------------------------------------------- the encoder alone


def test_a_cancelled_run_is_the_cancelled_outcome_and_a_step_stop_its_custom_event() -> None:
    from zett_agent import AgentEvent, AgentEventType, AssistantMessage
    from zett_agent.serve import AGUIEventStream
    from zett_agent.stop import StopInfo, StopReason

    cut = StopInfo(StopReason.MAX_OUTPUT, raw="length")
    cancelled = StopInfo(StopReason.INTERRUPTED, raw="cancelled", detail={"cancelled": True})
    stream = AGUIEventStream("s1", "r1")
    events = stream.start()
    for event in [
        AgentEvent(AgentEventType.RUN_STARTED, "z1"),
        AgentEvent(AgentEventType.MODEL_STARTED, "z1", step=1),
        AgentEvent(AgentEventType.TEXT_DELTA, "z1", step=1, text="Par"),
        AgentEvent(AgentEventType.MODEL_COMPLETED, "z1", step=1, message=AssistantMessage("Par")),
        AgentEvent(AgentEventType.MODEL_STOPPED, "z1", step=1, stop=cut),
        AgentEvent(AgentEventType.MODEL_STARTED, "z1", step=2),
        AgentEvent(AgentEventType.TEXT_DELTA, "z1", step=2, text="is"),
        AgentEvent(AgentEventType.RUN_COMPLETED, "z1", stop=cancelled),
    ]:
        events += stream.feed(event)
    events += stream.finish()
    for event in events:
        assert extras(EVENT.validate_python(event)) == []
    steps = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "zett.step_stop"]
    assert [s["value"]["reason"] for s in steps] == ["max_output"]
    assert events[-1]["outcome"] == {"type": "cancelled"}
    assert events[-1]["metadata"]["zett"] == {
        "stop": cancelled.to_dict(describe=True),
        "runId": "z1",
    }
    assert terminal(events) == AG_UI_OUTCOMES["cancelled"]
    opened = [e["type"] for e in events if e["type"].endswith("_START") or "STARTED" in e["type"]]
    closed = [e["type"] for e in events if e["type"].endswith("_END") or "FINISHED" in e["type"]]
    assert len(opened) == len(closed)  # every message and step closed before RUN_FINISHED
