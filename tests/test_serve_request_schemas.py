"""Every body ``zett serve`` accepts is parsed by one strict schema per route: a
field of the wrong type is a 4xx naming it, before anything is stored or run.

A denial sent as ``"approved": "false"`` (or ``"no"``, ``"0"``, ``0``) never
approves; two answers of one call that disagree decide nothing; a replayed body
of bare call ids never decides a later request that reuses the ids. A real
uvicorn server and a replayed model (tests/serve_support.py); each refusal is
checked to have run nothing (no model request, the call still waiting).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import chat_body, make_agent, read_chunks, running_server, scenario_reply
from zett_agent.serve import create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, ReplayServer]]:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=lambda call: call.name == "get_weather")
        app = create_app(agent, InMemorySessionStore(), owns=True)
        with running_server(app) as url:
            yield url, replay


def ask_weather(url: str, chat_id: str) -> dict[str, Any]:
    """Start a chat whose get_weather call waits; its tool-approval-request chunk."""
    response = httpx.post(f"{url}/api/chat", json=chat_body(chat_id, "weather"), timeout=30)
    assert response.status_code == 200, response.text
    [asked] = [c for c in read_chunks(response.text) if c["type"] == "tool-approval-request"]
    return asked


def waiting_state(url: str, chat_id: str) -> str:
    messages = httpx.get(f"{url}/api/sessions/{chat_id}").json()["messages"]
    [part] = [p for p in messages[-1]["parts"] if p["type"].startswith("tool-")]
    state: str = part["state"]
    return state


def refused(response: httpx.Response, status: int, *named: str) -> None:
    assert response.status_code == status, response.text
    message = response.json()["error"]["message"]
    for name in named:
        assert name in message, message


# ---------------------------------------------------------------- the approve route


@pytest.mark.parametrize("wrong", ["false", "no", "0", "", 0, 1, None, [], {}])
def test_a_denial_that_is_not_a_json_boolean_never_approves(
    server: tuple[str, ReplayServer], wrong: Any
) -> None:
    url, replay = server
    chat = f"nb{abs(hash(repr(wrong))) % 10**8}"
    asked = ask_weather(url, chat)
    calls = len(replay.requests)
    body = {"decisions": {asked["approvalId"]: {"approved": wrong}}}
    response = httpx.post(f"{url}/api/sessions/{chat}/approve", json=body, timeout=30)
    refused(response, 422, f"decisions.{asked['approvalId']}.approved", "boolean")
    assert len(replay.requests) == calls  # nothing ran, the model was not asked
    assert waiting_state(url, chat) == "approval-requested"


APPROVE_BODIES = {  # a body (made from the waiting approval id), the field named
    "decisions": (lambda k: {"decisions": "yes"}, "decisions"),
    "no decisions": (lambda k: {"decisions": {}}, "decisions"),
    "decision": (lambda k: {"decisions": {k: "yes"}}, "decisions.K"),
    "reason": (lambda k: {"decisions": {k: {"approved": True, "reason": 5}}}, "decisions.K.reason"),
    "unknown": (
        lambda k: {"decisions": {k: {"approved": True, "always": 1}}},
        "decisions.K.always",
    ),
    "missing": (lambda k: {"decisions": {k: {}}}, "decisions.K.approved"),
    "seq text": (
        lambda k: {"decisions": {k: {"approved": True}}, "request_seq": "3"},
        "request_seq",
    ),
    "seq bool": (
        lambda k: {"decisions": {k: {"approved": True}}, "request_seq": True},
        "request_seq",
    ),
    "top": (lambda k: {"decisions": {k: {"approved": True}}, "all": True}, "all"),
    "list": (lambda k: [], "body"),
}


@pytest.mark.parametrize("case", list(APPROVE_BODIES))
def test_the_approve_route_names_each_field_of_the_wrong_type(
    server: tuple[str, ReplayServer], case: str
) -> None:
    url, replay = server
    make, named = APPROVE_BODIES[case]
    chat = f"ap-{case.replace(' ', '-')}"
    key = ask_weather(url, chat)["approvalId"]
    calls = len(replay.requests)
    response = httpx.post(f"{url}/api/sessions/{chat}/approve", json=make(key), timeout=30)
    refused(response, 422, named.replace("K", key))
    assert len(replay.requests) == calls
    assert waiting_state(url, chat) == "approval-requested"


def test_one_key_twice_in_a_body_is_refused_before_anything_is_decided(
    server: tuple[str, ReplayServer],
) -> None:
    url, replay = server
    asked = ask_weather(url, "dup1")
    calls = len(replay.requests)
    key = asked["approvalId"]
    raw = '{"decisions": {"KEY": {"approved": false, "approved": true}}}'.replace("KEY", key)
    response = httpx.post(
        f"{url}/api/sessions/dup1/approve",
        content=raw,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    refused(response, 400, "'approved' twice")
    seq = httpx.get(f"{url}/api/sessions/dup1").json()["approval_request_seq"]
    both = {  # the approval id and the bare call id, disagreeing
        "decisions": {key: {"approved": False}, "call_w1": {"approved": True}},
        "request_seq": seq,
    }
    response = httpx.post(f"{url}/api/sessions/dup1/approve", json=both, timeout=30)
    refused(response, 400, "both approved and denied")
    assert len(replay.requests) == calls
    assert waiting_state(url, "dup1") == "approval-requested"


def test_a_replayed_body_of_bare_call_ids_never_decides_a_later_request(
    server: tuple[str, ReplayServer],
) -> None:
    url, replay = server
    ask_weather(url, "rp1")
    bare = {"decisions": {"call_w1": {"approved": True}}}
    refused(httpx.post(f"{url}/api/sessions/rp1/approve", json=bare), 422, "request_seq")
    seq = httpx.get(f"{url}/api/sessions/rp1").json()["approval_request_seq"]
    first = {**bare, "request_seq": seq}
    done = httpx.post(f"{url}/api/sessions/rp1/approve", json=first, timeout=30)
    assert done.status_code == 200, done.text
    assert any(c["type"] == "tool-output-available" for c in read_chunks(done.text))

    ask_weather(url, "rp1")  # a later request: the provider numbers its call call_w1 again
    later = httpx.get(f"{url}/api/sessions/rp1").json()["approval_request_seq"]
    assert later != seq
    calls = len(replay.requests)
    refused(httpx.post(f"{url}/api/sessions/rp1/approve", json=first, timeout=30), 409, "row")
    refused(httpx.post(f"{url}/api/sessions/rp1/approve", json=bare, timeout=30), 422)
    assert len(replay.requests) == calls
    assert waiting_state(url, "rp1") == "approval-requested"


# ---------------------------------------------------------------- the AI SDK's answers


def sdk_answer(url: str, chat_id: str, approval: dict[str, Any]) -> dict[str, Any]:
    """The body the SDK sends after addToolApprovalResponse, with ``approval``
    merged into the answered part's (``None`` values drop a key)."""
    messages = httpx.get(f"{url}/api/sessions/{chat_id}").json()["messages"]
    part = next(p for p in messages[-1]["parts"] if p["type"].startswith("tool-"))
    part["state"] = "approval-responded"
    part["approval"] = {**part["approval"], "approved": True, **approval}
    return {
        "id": chat_id,
        "messages": messages,
        "trigger": "submit-message",
        "messageId": messages[-1]["id"],
    }


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"approved": "false"}, "approval.approved"),
        ({"approved": "no"}, "approval.approved"),
        ({"approved": 0}, "approval.approved"),
        ({"approved": None}, "approval.approved"),
        ({"id": 5}, "approval.id"),
        ({"reason": 5}, "approval.reason"),
    ],
)
def test_an_sdk_answer_of_the_wrong_type_is_a_400_naming_it(
    server: tuple[str, ReplayServer], change: dict[str, Any], named: str
) -> None:
    url, replay = server
    chat = f"sdk{abs(hash(repr(change))) % 10**8}"
    ask_weather(url, chat)
    calls = len(replay.requests)
    body = sdk_answer(url, chat, change)
    response = httpx.post(f"{url}/api/chat", json=body, timeout=30)
    refused(response, 400, f"messages[1].parts[1].{named}")
    assert len(replay.requests) == calls
    assert waiting_state(url, chat) == "approval-requested"


def test_an_sdk_tool_part_whose_call_id_is_not_a_string_is_refused(
    server: tuple[str, ReplayServer],
) -> None:
    url, _ = server
    ask_weather(url, "sdk-id")
    body = sdk_answer(url, "sdk-id", {})
    body["messages"][-1]["parts"][1]["toolCallId"] = 7
    refused(httpx.post(f"{url}/api/chat", json=body, timeout=30), 400, "toolCallId")


def test_approve_and_deny_of_one_call_in_one_message_decide_nothing(
    server: tuple[str, ReplayServer],
) -> None:
    url, replay = server
    ask_weather(url, "both1")
    body = sdk_answer(url, "both1", {"approved": False, "reason": "no"})
    parts = body["messages"][-1]["parts"]
    approving = copy.deepcopy(parts[1])
    approving["approval"] = {"id": approving["approval"]["id"], "approved": True}
    parts.append(approving)  # the last answer would win: it approves
    calls = len(replay.requests)
    response = httpx.post(f"{url}/api/chat", json=body, timeout=30)
    refused(response, 400, "both approved and denied")
    assert len(replay.requests) == calls
    assert waiting_state(url, "both1") == "approval-requested"


# ---------------------------------------------------------------- the chat body


@pytest.mark.parametrize(
    ("body", "status", "named"),
    [
        ({"id": 5, "messages": []}, 422, "id"),
        ({"id": "c", "messages": "x"}, 422, "messages"),
        ({"id": "c", "messages": [{"role": 5, "parts": []}]}, 422, "messages[0].role"),
        ({"id": "c", "messages": [{"role": "user", "parts": "x"}]}, 422, "messages[0].parts"),
        ({"id": "c", "messages": [{"role": "user", "id": 5}]}, 422, "messages[0].id"),
        (chat_body("c", "hi", trigger=5), 422, "trigger"),
        (chat_body("c", "hi", messageId=5), 422, "messageId"),
        (
            {"id": "c", "messages": [{"role": "user", "parts": [{"type": "text", "text": 5}]}]},
            400,
            "messages[0].parts[0].text",
        ),
        (
            {"id": "c", "messages": [{"role": "user", "parts": ["hello"]}]},
            400,
            "messages[0].parts[0]",
        ),
        (
            {
                "id": "c",
                "messages": [
                    {"role": "user", "parts": [{"type": "file", "mediaType": 5, "url": "x"}]}
                ],
            },
            400,
            "messages[0].parts[0].mediaType",
        ),
        (
            {
                "id": "c",
                "messages": [
                    {"role": "user", "parts": [{"type": "file", "mediaType": "image/png"}]}
                ],
            },
            400,
            "messages[0].parts[0].url",
        ),
        (
            {
                "id": "c",
                "messages": [
                    {
                        "role": "user",
                        "parts": [
                            {
                                "type": "file",
                                "mediaType": "image/png",
                                "url": "https://example.com/a.png",
                                "filename": 5,
                            }
                        ],
                    }
                ],
            },
            400,
            "messages[0].parts[0].filename",
        ),
    ],
)
def test_the_chat_body_names_each_field_of_the_wrong_type(
    server: tuple[str, ReplayServer], body: Any, status: int, named: str
) -> None:
    url, replay = server
    calls = len(replay.requests)
    response = httpx.post(f"{url}/api/chat", json=body, timeout=30)
    refused(response, status, named)
    assert len(replay.requests) == calls
    assert httpx.get(f"{url}/api/sessions/c").status_code == 404  # nothing stored


def test_the_chat_body_ignores_fields_a_front_end_adds(
    server: tuple[str, ReplayServer],
) -> None:
    url, _ = server
    ask_weather(url, "sdk-extra")  # ai 7's approval carries fields zett never reads
    body = sdk_answer(url, "sdk-extra", {"isAutomatic": False, "signature": "x"})
    assert httpx.post(f"{url}/api/chat", json=body, timeout=30).status_code == 200
    body = chat_body("extras", "hi", metadata={"any": "thing"}, selectedModel=3)
    body["messages"][0]["metadata"] = {"x": 1}
    body["messages"][0]["parts"].append({"type": "step-start"})
    body["messages"][0]["parts"][0]["providerMetadata"] = {}
    response = httpx.post(f"{url}/api/chat", json=body, timeout=30)
    assert response.status_code == 200, response.text


# ---------------------------------------------------------------- resume and elicitations


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"action": 5}, "action"),
        ({"action": "maybe"}, "action"),
        ({"action": "accept", "content": "x"}, "content"),
        ({"action": "accept", "content": []}, "content"),
        ({"action": "decline", "extra": 1}, "extra"),
        ("accept", "body"),
    ],
)
def test_an_elicitation_answer_of_the_wrong_type_is_a_422_naming_it(
    server: tuple[str, ReplayServer], body: Any, named: str
) -> None:
    url, _ = server
    response = httpx.post(f"{url}/api/elicitations/e1", json=body)
    refused(response, 422, named)


def test_resume_takes_no_fields(server: tuple[str, ReplayServer]) -> None:
    url, replay = server
    httpx.post(f"{url}/api/chat", json=chat_body("res1", "cut"), timeout=30)
    calls = len(replay.requests)
    response = httpx.post(f"{url}/api/sessions/res1/resume", json={"prompt": "x"}, timeout=30)
    refused(response, 422, "prompt")
    refused(
        httpx.post(
            f"{url}/api/sessions/res1/resume",
            content=b"x",
            headers={"content-type": "text/plain"},
        ),
        415,
    )
    assert len(replay.requests) == calls
    taken = httpx.post(f"{url}/api/sessions/res1/resume", json={}, timeout=30)
    assert taken.status_code == 200, taken.text  # {} (or no body) is a resume


def test_a_client_that_goes_away_mid_body_is_no_server_error(
    server: tuple[str, ReplayServer], caplog: pytest.LogCaptureFixture
) -> None:
    import socket
    import time

    url, _ = server
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            f"POST /api/chat HTTP/1.1\r\nhost: {host}:{port}\r\n"
            "content-type: application/json\r\ncontent-length: 1000000\r\n\r\n".encode()
            + b'{"id": "gone", "messages": ['
        )
    time.sleep(1)  # the server reads on until it sees the hang-up (no clock is asserted)
    assert not [r for r in caplog.records if "internal error" in r.getMessage()]
    assert httpx.get(f"{url}/api/sessions/gone").status_code == 404
