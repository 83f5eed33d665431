"""``zett serve`` with tool calls that wait for approval, answered the way the AI SDK
answers them: the message list ending with the assistant message whose tool parts
are ``approval-responded`` (``addToolApprovalResponse`` + ``sendAutomaticallyWhen``).

A real uvicorn server and a replayed model (tests/serve_support.py). The SDK's own
reader builds the same messages in test_serve_aisdk.py; a stock ``useChat`` page
clicks the buttons in test_serve_stock_page.py.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import (
    FINAL_DENIED,
    FINAL_WEATHER,
    chat_body,
    make_agent,
    read_chunks,
    running_server,
    scenario_reply,
)
from zett_agent.serve import create_app
from zett_agent.sessions import InMemorySessionStore, SQLiteSessionStore, StoredRow
from zett_agent.testing import ReplayServer


def waits(call: Any) -> bool:
    return call.name == "get_weather"


@pytest.fixture
def server() -> Iterator[tuple[str, ReplayServer]]:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=waits)
        app = create_app(agent, InMemorySessionStore(), owns=True)
        with running_server(app) as url:
            yield url, replay


def chunks_of(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return read_chunks(response.text)


def of_type(chunks: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [c for c in chunks if c["type"] == kind]


def session(url: str, chat_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{url}/api/sessions/{chat_id}")
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()["messages"]
    return messages


def tool_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in message["parts"] if p["type"].startswith("tool-")]


def answered(
    messages: list[dict[str, Any]], approved: bool | dict[str, bool], reason: str | None = None
) -> list[dict[str, Any]]:
    """What ``addToolApprovalResponse`` leaves in the last assistant message: each
    ``approval-requested`` part ``approval-responded``, with the answer."""
    messages = copy.deepcopy(messages)
    for part in tool_parts(messages[-1]):
        if part["state"] == "approval-requested":
            ok = approved if isinstance(approved, bool) else approved[part["toolCallId"]]
            part["state"] = "approval-responded"
            part["approval"] = {"id": part["approval"]["id"], "approved": ok}
            if reason is not None:
                part["approval"]["reason"] = reason
    return messages


def send(url: str, chat_id: str, messages: list[dict[str, Any]]) -> httpx.Response:
    """POST /api/chat as the SDK's automatic send does (the whole list, the
    assistant message's id as ``messageId``)."""
    body = {
        "id": chat_id,
        "messages": messages,
        "trigger": "submit-message",
        "messageId": messages[-1]["id"],
    }
    return httpx.post(f"{url}/api/chat", json=body, timeout=30)


def ask(url: str, chat_id: str, text: str) -> list[dict[str, Any]]:
    return chunks_of(httpx.post(f"{url}/api/chat", json=chat_body(chat_id, text), timeout=30))


def test_a_waiting_call_is_announced_restored_on_reload_and_approved_as_the_sdk_sends_it(
    server: tuple[str, ReplayServer],
) -> None:
    url, replay = server
    first = ask(url, "a1", "weather")
    [asked] = of_type(first, "tool-approval-request")
    [shown] = of_type(first, "tool-input-available")
    assert asked["toolCallId"] == shown["toolCallId"] == "call_w1"
    assert asked["approvalId"].startswith("call_w1@")  # the call and the run that asked
    assert not any(c["type"].startswith("tool-output") for c in first)  # it did not run
    assert first[-1]["finishReason"] == "tool-calls"

    # a reload: the stored session shows the call waiting, with the ids streamed
    user, assistant = session(url, "a1")
    assert assistant["id"] == first[0]["messageId"] == "a1"
    [part] = tool_parts(assistant)
    assert part["state"] == "approval-requested"
    assert part["approval"] == {"id": asked["approvalId"]}
    assert assistant["metadata"]["finishReason"] == "tool-calls"

    refused = httpx.post(f"{url}/api/chat", json=chat_body("a1", "again"), timeout=30)
    assert refused.status_code == 409 and "approve or deny" in refused.text

    calls_before = len(replay.requests)
    second = chunks_of(send(url, "a1", answered([user, assistant], True)))
    assert second[0]["messageId"] == "a1"  # the same message goes on
    assert of_type(second, "tool-approval-response") == [
        {"type": "tool-approval-response", "approvalId": asked["approvalId"], "approved": True}
    ]
    [output] = of_type(second, "tool-output-available")
    assert output["toolCallId"] == "call_w1" and "Paris" in output["output"]
    text = "".join(c["delta"] for c in second if c["type"] == "text-delta")
    assert text == FINAL_WEATHER
    assert len(replay.requests) == calls_before + 1
    assert second[-1]["messageMetadata"]["finishReason"] == "stop"

    [_, restored] = session(url, "a1")
    [part] = tool_parts(restored)
    assert part["state"] == "output-available"
    assert part["approval"] == {"id": asked["approvalId"], "approved": True}
    assert restored["metadata"]["finishReason"] == "stop"

    # the same answer again: nothing waits any more
    again = send(url, "a1", answered([user, assistant], True))
    assert again.status_code == 409 and "no tool calls wait" in again.text
    assert len(replay.requests) == calls_before + 1


def test_a_denial_is_tool_output_denied_and_restores_as_output_denied(
    server: tuple[str, ReplayServer],
) -> None:
    url, replay = server
    ask(url, "d1", "weather")
    history = session(url, "d1")
    second = chunks_of(send(url, "d1", answered(history, False, reason="not today")))
    [response] = of_type(second, "tool-approval-response")
    assert (response["approved"], response["reason"]) == (False, "not today")
    assert of_type(second, "tool-output-denied") == [
        {"type": "tool-output-denied", "toolCallId": "call_w1"}
    ]
    assert of_type(second, "tool-output-error") == []
    text = "".join(c["delta"] for c in second if c["type"] == "text-delta")
    assert text == FINAL_DENIED
    tool_message = replay.requests[-1].json["messages"][-1]
    assert tool_message["role"] == "tool" and "not today" in tool_message["content"]

    [_, restored] = session(url, "d1")
    [part] = tool_parts(restored)
    assert part["state"] == "output-denied"
    assert part["approval"] == {
        "id": history[1]["parts"][1]["approval"]["id"],
        "approved": False,
        "reason": "not today",
    }
    assert "errorText" not in part and "output" not in part


def test_answers_the_server_never_asked_for_are_refused_and_nothing_runs(
    server: tuple[str, ReplayServer],
) -> None:
    url, replay = server
    ask(url, "f1", "weather")
    history = session(url, "f1")
    calls = len(replay.requests)

    invented = answered(history, True)
    tool_parts(invented[-1])[0]["approval"]["id"] = "call_w1@000000000000"
    assert send(url, "f1", invented).status_code == 409

    other_call = answered(history, True)
    tool_parts(other_call[-1])[0]["toolCallId"] = "call_other"
    assert send(url, "f1", other_call).status_code == 409

    other_message = answered(history, True)
    other_message[-1]["id"] = "a99"
    response = send(url, "f1", other_message)
    assert response.status_code == 409 and "a99" in response.text

    unanswered = copy.deepcopy(history)  # the assistant message, nothing answered
    response = send(url, "f1", unanswered)
    assert response.status_code == 400 and "approval-responded" in response.text

    malformed = answered(history, True)
    tool_parts(malformed[-1])[0]["approval"]["approved"] = "yes"
    assert send(url, "f1", malformed).status_code == 400

    assert len(replay.requests) == calls  # nothing ran, nothing was asked
    [part] = tool_parts(session(url, "f1")[1])
    assert part["state"] == "approval-requested"  # still waiting, still answerable
    assert send(url, "f1", answered(history, True)).status_code == 200


def test_the_stored_call_runs_never_the_arguments_the_client_sends(
    server: tuple[str, ReplayServer],
) -> None:
    url, _ = server
    ask(url, "g1", "weather")
    forged = answered(session(url, "g1"), True)
    tool_parts(forged[-1])[0]["input"] = {"city": "Atlantis"}
    second = chunks_of(send(url, "g1", forged))
    [output] = of_type(second, "tool-output-available")
    assert "Paris" in output["output"] and "Atlantis" not in output["output"]


def test_two_waiting_calls_need_both_answers_and_each_gets_its_own_outcome(
    server: tuple[str, ReplayServer],
) -> None:
    url, replay = server
    first = ask(url, "b1", "both")
    assert [c["toolCallId"] for c in of_type(first, "tool-approval-request")] == [
        "call_p",
        "call_o",
    ]
    history = session(url, "b1")
    one = copy.deepcopy(history)  # only the first call answered
    first_part = tool_parts(one[-1])[0]
    first_part.update(state="approval-responded")
    first_part["approval"]["approved"] = True
    response = send(url, "b1", one)
    assert response.status_code == 422 and "no answer" in response.text

    calls = len(replay.requests)
    second = chunks_of(send(url, "b1", answered(history, {"call_p": True, "call_o": False})))
    assert [c["toolCallId"] for c in of_type(second, "tool-output-available")] == ["call_p"]
    assert [c["toolCallId"] for c in of_type(second, "tool-output-denied")] == ["call_o"]
    assert len(replay.requests) == calls + 1
    results = [m for m in replay.requests[-1].json["messages"] if m["role"] == "tool"]
    assert "Paris" in results[0]["content"] and "denied" in results[1]["content"]
    states = [p["state"] for p in tool_parts(session(url, "b1")[1])]
    assert states == ["output-available", "output-denied"]


def test_the_json_approve_route_takes_approval_ids_or_call_ids_beside_the_request_seq(
    server: tuple[str, ReplayServer],
) -> None:
    url, _ = server
    first = ask(url, "j1", "weather")
    [asked] = of_type(first, "tool-approval-request")
    wrong = {"decisions": {"nope": {"approved": True}}}
    assert httpx.post(f"{url}/api/sessions/j1/approve", json=wrong).status_code == 422
    assert httpx.post(f"{url}/api/sessions/j1/approve", json={"x": 1}).status_code == 422
    deny = {"decisions": {asked["approvalId"]: {"approved": False, "reason": "not today"}}}
    second = chunks_of(httpx.post(f"{url}/api/sessions/j1/approve", json=deny, timeout=30))
    assert second[0]["messageId"] == "a1"
    assert [c["toolCallId"] for c in of_type(second, "tool-output-denied")] == ["call_w1"]

    ask(url, "j2", "weather")
    bare = {"decisions": {"call_w1": {"approved": True}}}
    refused = httpx.post(f"{url}/api/sessions/j2/approve", json=bare)
    assert refused.status_code == 422 and "decisions.call_w1" in refused.text
    seq = httpx.get(f"{url}/api/sessions/j2").json()["approval_request_seq"]
    by_call = {**bare, "request_seq": seq}
    second = chunks_of(httpx.post(f"{url}/api/sessions/j2/approve", json=by_call, timeout=30))
    assert len(of_type(second, "tool-output-available")) == 1
    assert httpx.post(f"{url}/api/sessions/j2/approve", json=by_call).status_code == 409


def test_two_answers_at_once_on_one_server_run_the_call_once(
    server: tuple[str, ReplayServer],
) -> None:
    url, replay = server
    ask(url, "r1", "weather")
    body = answered(session(url, "r1"), True)
    calls = len(replay.requests)
    results: list[httpx.Response] = []
    barrier = threading.Barrier(2)

    def tab() -> None:
        barrier.wait()
        results.append(send(url, "r1", body))

    threads = [threading.Thread(target=tab) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(r.status_code for r in results) == [200, 409]
    assert len(replay.requests) == calls + 1
    [part] = tool_parts(session(url, "r1")[1])
    assert part["state"] == "output-available"


class OverlappingReads(SQLiteSessionStore):
    """A SQLite store whose reads, once ``overlap`` is set, return what they read
    only after ``overlap`` seconds: two servers (replicas behind one load balancer)
    reading the same session a moment apart both see the calls still waiting, as
    two processes racing on a decision do."""

    overlap = 0.0

    async def rows(self, session_id: str) -> list[StoredRow]:
        found = await super().rows(session_id)
        if self.overlap:
            await anyio.sleep(self.overlap)
        return found


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[list[str], list[OverlappingReads], ReplayServer]]:
    """Two ``zett serve`` apps over one SQLite file."""
    db = tmp_path / "sessions.db"
    with ReplayServer(route=scenario_reply) as replay:
        stores = [OverlappingReads(db), OverlappingReads(db)]
        apps = [create_app(make_agent(replay.url, approval=waits), s, owns=True) for s in stores]
        with running_server(apps[0]) as one, running_server(apps[1]) as two:
            yield [one, two], stores, replay


def test_two_servers_answering_the_same_call_at_once_run_it_once(
    replicas: tuple[list[str], list[OverlappingReads], ReplayServer],
) -> None:
    urls, stores, replay = replicas
    for n in range(3):
        chat_id = f"race{n}"
        ask(urls[0], chat_id, "weather")
        body = answered(session(urls[0], chat_id), True)
        calls = len(replay.requests)
        for store in stores:
            store.overlap = 0.3
        results: dict[int, httpx.Response] = {}
        barrier = threading.Barrier(2)

        def tab(
            index: int,
            chat_id: str = chat_id,
            body: list[Any] = body,
            barrier: threading.Barrier = barrier,
            results: dict[int, httpx.Response] = results,
        ) -> None:
            barrier.wait()
            results[index] = send(urls[index], chat_id, body)

        threads = [threading.Thread(target=tab, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        for store in stores:
            store.overlap = 0.0
        assert sorted(r.status_code for r in results.values()) == [200, 409], [
            r.text[:200] for r in results.values()
        ]
        assert len(replay.requests) == calls + 1  # the tool ran once: one model call after it
        [loser] = [r for r in results.values() if r.status_code == 409]
        assert "decided already" in loser.text
        for url in urls:  # either server shows the winner's outcome
            [part] = tool_parts(session(url, chat_id)[1])
            assert part["state"] == "output-available"


def test_a_call_id_used_again_in_the_same_message_gets_its_own_part_and_approval() -> None:
    """Providers that number their calls (``call_0`` in every answer) reuse an id in
    the run that goes on after an approval: the new call gets its own part, its own
    approval id, and an answer to the first request cannot decide it."""
    from zett_agent import Agent, AgentRunConfig, ToolCall
    from zett_agent.demo_tools import get_weather
    from zett_agent.testing import ScriptedModel, reply

    model = ScriptedModel(
        reply(tool_calls=[ToolCall("call_0", "get_weather", '{"city": "Oslo"}')]),
        reply(tool_calls=[ToolCall("call_0", "get_weather", '{"city": "Rome"}')]),
        reply("Oslo and Rome, checked."),
    )
    agent = Agent(model, AgentRunConfig("t", approval=waits), [get_weather])
    with running_server(create_app(agent, owns=True)) as url:
        first = ask(url, "n1", "go")
        [asked] = of_type(first, "tool-approval-request")
        history = session(url, "n1")
        second = chunks_of(send(url, "n1", answered(history, True)))
        [output] = of_type(second, "tool-output-available")
        assert output["toolCallId"] == "call_0" and "Oslo" in output["output"]
        [again] = of_type(second, "tool-approval-request")
        assert again["toolCallId"] == "call_0-2"  # a part of its own in the same message
        assert (
            again["approvalId"].startswith("call_0@") and again["approvalId"] != asked["approvalId"]
        )
        assert second[0]["messageId"] == first[0]["messageId"]

        stale = send(url, "n1", answered(history, True))  # the first request's answer again
        assert stale.status_code == 409
        restored = session(url, "n1")
        parts = tool_parts(restored[1])
        assert [(p["toolCallId"], p["state"]) for p in parts] == [
            ("call_0", "output-available"),
            ("call_0-2", "approval-requested"),
        ]
        assert parts[1]["approval"] == {"id": again["approvalId"]}
        third = chunks_of(send(url, "n1", answered(restored, False)))
        assert [c["toolCallId"] for c in of_type(third, "tool-output-denied")] == ["call_0-2"]
        assert "".join(c["delta"] for c in third if c["type"] == "text-delta") == (
            "Oslo and Rome, checked."
        )
        states = [p["state"] for p in tool_parts(session(url, "n1")[1])]
        assert states == ["output-available", "output-denied"]


class BeatenStore(InMemorySessionStore):
    """A store where another decider stores its decision just before each of ours
    (it won the compare-and-set between our look at the session and our write)."""

    async def append_if_absent(self, session_id: str, message: Any, *, key: str) -> int | None:
        await super().append_if_absent(session_id, message, key=key)  # the other one
        return await super().append_if_absent(session_id, message, key=key)


def test_a_decision_that_lost_the_compare_and_set_is_a_409_and_runs_nothing() -> None:
    from zett_agent import ToolResultMessage

    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=lambda call: call.name == "get_weather")
        store = BeatenStore()
        with running_server(create_app(agent, store, owns=True)) as url:
            first = chunks_of(
                httpx.post(f"{url}/api/chat", json=chat_body("c1", "weather"), timeout=30)
            )
            [asked] = [c for c in first if c["type"] == "tool-approval-request"]
            calls_before = len(replay.requests)
            decisions = {"decisions": {asked["approvalId"]: {"approved": True}}}
            lost = httpx.post(f"{url}/api/sessions/c1/approve", json=decisions, timeout=30)
            assert lost.status_code == 409, lost.text
            assert "decided already" in lost.json()["error"]["message"]
            assert len(replay.requests) == calls_before  # the model was not asked again
            again = httpx.post(f"{url}/api/chat", json=chat_body("c1", "next"), timeout=30)
            assert again.status_code == 200  # the session is free: nothing holds it

    import anyio

    async def results() -> list[Any]:
        return [m for m in await store.load("c1") if isinstance(m, ToolResultMessage)]

    assert anyio.run(results) == []  # the tool never ran here


def test_an_sdk_answer_that_lost_the_compare_and_set_is_a_409_and_runs_nothing() -> None:
    """The AI SDK's own path (the answer inside POST /api/chat) loses as the JSON
    route does: 409 before any stream byte, no model call, no tool result."""
    from zett_agent import ToolResultMessage

    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=waits)
        store = BeatenStore()
        with running_server(create_app(agent, store, owns=True)) as url:
            ask(url, "c2", "weather")
            calls_before = len(replay.requests)
            lost = send(url, "c2", answered(session(url, "c2"), True))
            assert lost.status_code == 409, lost.text
            assert "decided already" in lost.json()["error"]["message"]
            assert len(replay.requests) == calls_before

    import anyio

    async def results() -> list[Any]:
        return [m for m in await store.load("c2") if isinstance(m, ToolResultMessage)]

    assert anyio.run(results) == []


def test_after_an_approval_the_session_is_free_whether_the_client_read_or_left(
    server: tuple[str, ReplayServer],
) -> None:
    """The approve path reads its run's first event in the request's task (the
    session's lock is taken there): the run ends with ``finish``, not an error,
    and the next message of the session is answered, after a client that read
    to the end and after one that left at the first chunk."""
    url, _ = server
    ask(url, "f1", "weather")
    whole = chunks_of(send(url, "f1", answered(session(url, "f1"), True)))
    assert whole[-1]["type"] == "finish" and not of_type(whole, "error")
    assert ask(url, "f1", "next")[-1]["type"] == "finish"

    ask(url, "f2", "weather")
    body = {"id": "f2", "messages": answered(session(url, "f2"), True)}
    body["trigger"], body["messageId"] = "submit-message", body["messages"][-1]["id"]
    with httpx.stream("POST", f"{url}/api/chat", json=body, timeout=30) as response:
        assert response.status_code == 200
        next(response.iter_raw())  # the first chunk, then the client leaves
    deadline = time.monotonic() + 20
    while True:
        again = httpx.post(f"{url}/api/chat", json=chat_body("f2", "next"), timeout=30)
        if again.status_code != 409 or time.monotonic() > deadline:
            break
        time.sleep(0.1)  # the server has not seen the disconnect yet
    assert again.status_code == 200, again.text
    assert read_chunks(again.text)[-1]["type"] == "finish"
