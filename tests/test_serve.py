"""``zett serve``: the UI message stream, sessions, cancel on disconnect, safe defaults.

Everything goes through a real uvicorn server on 127.0.0.1 and a replayed model
(``tests/serve_support.py``); the AI SDK's own reader is in test_serve_aisdk.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from serve_support import (
    FINAL_WEATHER,
    chat_body,
    make_agent,
    read_chunks,
    running_server,
    scenario_reply,
)
from zett_agent.cli import app as cli_app
from zett_agent.serve import FINISH_REASONS, ServeSettings, create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.stop import StopReason
from zett_agent.testing import ReplayServer
from zett_agent.tools import CUT_OFF_ARGUMENTS


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer(route=scenario_reply) as server:
        yield server


@pytest.fixture
def server(replay: ReplayServer) -> Iterator[str]:
    app = create_app(make_agent(replay.url), InMemorySessionStore(), owns=True)
    with running_server(app) as url:
        yield url


def chat(url: str, chat_id: str, text: str, **extra: Any) -> list[dict[str, Any]]:
    response = httpx.post(f"{url}/api/chat", json=chat_body(chat_id, text, **extra), timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.headers["content-type"].startswith("text/event-stream")
    return read_chunks(response.text)


def types(chunks: list[dict[str, Any]]) -> list[str]:
    return [c["type"] for c in chunks]


def stops(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c["data"] for c in chunks if c["type"] == "data-stop"]


# ---------------------------------------------------------------- the stream


def test_refusal_streams_text_then_one_data_stop_and_content_filter(server: str) -> None:
    chunks = chat(server, "r1", "please refuse")
    assert types(chunks)[:3] == ["start", "start-step", "text-start"]
    assert chunks[0]["messageId"] == "a1"
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert text == "I'm sorry, I can't assist with that request."
    [stop] = stops(chunks)
    assert stop["reason"] == "refusal"
    assert stop["describe"].startswith("refusal")
    assert set(stop) >= {"reason", "raw", "category", "message", "recommended_model", "detail"}
    assert chunks[-1]["finishReason"] == "content-filter"
    # the same facts are the message's metadata, cleared at start and set at finish
    assert chunks[0]["messageMetadata"] == {"finishReason": None, "stop": None}
    assert chunks[-1]["messageMetadata"] == {
        "finishReason": "content-filter",
        "stop": {
            "reason": "refusal",
            "raw": stop["raw"],
            "category": stop["category"],
            "message": "I'm sorry, I can't assist with that request.",
        },
    }
    # every part is closed before the step ends
    assert types(chunks)[-4:] == ["text-end", "data-stop", "finish-step", "finish"]


def test_cut_off_is_length_with_max_output_stop(server: str) -> None:
    chunks = chat(server, "c1", "cut")
    [stop] = stops(chunks)
    assert (stop["reason"], stop["raw"]) == ("max_output", "length")
    assert chunks[-1]["finishReason"] == "length"


def test_interrupted_step_never_shows_its_withheld_call(server: str) -> None:
    chunks = chat(server, "i1", "interrupt")
    assert not [c for c in chunks if c["type"].startswith("tool-")]
    [stop] = stops(chunks)
    assert stop["reason"] == "interrupted"
    assert stop["detail"]["withheld_tool_calls"] == ["get_weather"]
    assert chunks[-1]["finishReason"] == "interrupted"


def test_tool_run_sends_inputs_at_step_end_then_output_then_next_step(server: str) -> None:
    chunks = chat(server, "w1", "weather in Paris?")
    kinds = types(chunks)
    start = kinds.index("tool-input-start")
    assert kinds[start : start + 5] == [
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-output-available",
        "finish-step",
    ]
    assert chunks[start + 2]["input"] == {"city": "Paris"}
    assert "light rain" in chunks[start + 3]["output"]
    assert kinds.count("start-step") == 2 and kinds.count("finish-step") == 2
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    assert text == FINAL_WEATHER
    assert stops(chunks) == []
    assert chunks[-1]["finishReason"] == "stop"


def test_cut_call_gets_tool_input_error_and_abnormal_step_then_normal_finish(server: str) -> None:
    chunks = chat(server, "k1", "cut-call")
    [error] = [c for c in chunks if c["type"] == "tool-input-error"]
    assert error["errorText"] == CUT_OFF_ARGUMENTS
    assert error["input"] == '{"city": "Pa'
    assert "tool-input-available" not in types(chunks)
    assert "tool-output-error" not in types(chunks)  # the part already shows the error
    [stop] = stops(chunks)
    assert stop["reason"] == "max_output"
    assert chunks[-1]["finishReason"] == "stop"  # per run: the run ended normally


def test_a_failed_run_says_what_kind_of_failure_without_the_provider_text(server: str) -> None:
    chunks = chat(server, "e1", "fail")
    # no part, so no start: the SDK adds no empty assistant message
    assert types(chunks) == ["error", "finish"]
    assert chunks[0]["errorText"] == (
        "Authentication failed: the model provider (openai) did not accept the credentials "
        "(HTTP 401, invalid_request_error). Check the API key the server uses."
    )
    assert "secret" not in json.dumps(chunks)  # a 401's message may echo the key it got
    assert chunks[-1]["finishReason"] == "error"
    # the session keeps the question; it can be answered again by resuming
    stored = httpx.get(f"{server}/api/sessions/e1").json()["messages"]
    assert [m["role"] for m in stored] == ["user"]


def test_finish_reason_table_covers_every_stop_with_sdk_values() -> None:
    sdk = {"stop", "length", "content-filter", "tool-calls", "error", "interrupted", "other"}
    assert set(FINISH_REASONS) == {None, *StopReason}
    assert set(FINISH_REASONS.values()) <= sdk


# ---------------------------------------------------------------- sessions


def test_session_restores_as_ui_messages_with_streamed_ids_and_stops(server: str) -> None:
    chunks = chat(server, "s1", "cut-call")
    stored = httpx.get(f"{server}/api/sessions/s1").json()
    user, assistant = stored["messages"]
    assert user["role"] == "user" and user["parts"] == [{"type": "text", "text": "cut-call"}]
    assert assistant["id"] == chunks[0]["messageId"]
    assert [p["type"] for p in assistant["parts"]] == [
        "step-start",
        "text",
        "tool-get_weather",
        "data-stop",
        "step-start",
        "text",
    ]
    assert assistant["parts"][2]["state"] == "output-error"
    assert assistant["parts"][3]["data"] == stops(chunks)[0]

    listed = httpx.get(f"{server}/api/sessions").json()["sessions"]
    assert [(s["id"], s["title"], s["rows"]) for s in listed] == [("s1", "cut-call", 4)]
    assert httpx.delete(f"{server}/api/sessions/s1").json() == {"id": "s1", "deleted": True}
    assert httpx.get(f"{server}/api/sessions/s1").status_code == 404
    assert httpx.delete(f"{server}/api/sessions/s1").status_code == 404


def test_second_turn_with_history_and_extra_fields_is_accepted(server: str) -> None:
    chat(server, "t1", "weather?")
    body = chat_body("t1", "and again?", clientExtra={"x": 1}, messageId=None)
    body["messages"].insert(
        0,
        {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "x"}], "metadata": {}},
    )
    response = httpx.post(f"{server}/api/chat", json=body, timeout=30)
    assert response.status_code == 200, response.text
    assert read_chunks(response.text)[0]["messageId"] == "a6"  # after the 6th stored row
    messages = httpx.get(f"{server}/api/sessions/t1").json()["messages"]
    assert [m["id"] for m in messages] == ["u1", "a1", "u6", "a6"]  # row 3 marks the tool started


def test_regenerate_asks_the_last_user_message_again(server: str) -> None:
    chat(server, "g1", "hello")
    chat(server, "g1", "hello", trigger="regenerate-message", messageId="a1")
    messages = httpx.get(f"{server}/api/sessions/g1").json()["messages"]
    texts = [p["text"] for m in messages for p in m["parts"] if p["type"] == "text"]
    assert texts == ["hello", "You said: hello", "hello", "You said: hello"]


def test_resume_continues_the_cut_answer_into_the_same_ui_message(server: str) -> None:
    chat(server, "m1", "cut")
    response = httpx.post(f"{server}/api/sessions/m1/resume", timeout=30)
    assert response.status_code == 200, response.text
    chunks = read_chunks(response.text)
    assert chunks[0]["messageId"] == "a1"
    assert chunks[-1]["finishReason"] == "stop"
    messages = httpx.get(f"{server}/api/sessions/m1").json()["messages"]
    # the continuation turn is part of the answer it continues
    assert [m["id"] for m in messages] == ["u1", "a1"]
    parts = messages[1]["parts"]
    assert [p["type"] for p in parts] == ["step-start", "text", "data-stop", "step-start", "text"]
    assert parts[-1]["text"].startswith("You said: Continue")


def test_resume_after_refusal_is_refused_with_409(server: str) -> None:
    chat(server, "n1", "refuse")
    response = httpx.post(f"{server}/api/sessions/n1/resume")
    assert response.status_code == 409
    assert "refusal" in response.json()["error"]["message"]
    assert httpx.post(f"{server}/api/sessions/nobody/resume").status_code == 404


def test_client_disconnect_cancels_and_stores_the_partial_answer(server: str) -> None:
    seen: list[dict[str, Any]] = []
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", f"{server}/api/chat", json=chat_body("d1", "slow")) as response,
    ):
        for line in response.iter_lines():
            if line.startswith("data: {"):
                seen.append(json.loads(line[6:]))
            if sum(c["type"] == "text-delta" for c in seen) >= 3:
                break
    stored: dict[str, Any] = {}
    for _ in range(100):
        stored = httpx.get(f"{server}/api/sessions/d1").json()
        if not stored["running"]:
            break
        time.sleep(0.05)
    assert not stored["running"]
    answer = stored["messages"][-1]
    [stop] = [p["data"] for p in answer["parts"] if p["type"] == "data-stop"]
    assert stop["reason"] == "interrupted" and stop["detail"]["cancelled"] is True
    text = next(p["text"] for p in answer["parts"] if p["type"] == "text")
    assert text.startswith("word0 word1 word2") and "word39" not in text
    # the cut answer can be resumed
    assert httpx.post(f"{server}/api/sessions/d1/resume", timeout=30).status_code == 200


def test_a_running_session_refuses_a_second_run(server: str) -> None:
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", f"{server}/api/chat", json=chat_body("b1", "slow")) as response,
    ):
        lines = response.iter_lines()  # kept: a dropped iterator closes the response
        next(lines)
        second = httpx.post(f"{server}/api/chat", json=chat_body("b1", "again"))
        assert second.status_code == 409
        assert httpx.delete(f"{server}/api/sessions/b1").status_code == 409


# ---------------------------------------------------------------- safe defaults


def test_host_origin_token_and_size_checks(replay: ReplayServer) -> None:
    settings = ServeSettings(token="s3cret", max_body_bytes=4096, max_chat_body_bytes=8192)
    with running_server(create_app(make_agent(replay.url), settings=settings)) as url:
        port = url.rsplit(":", 1)[1]
        auth = {"authorization": "Bearer s3cret"}
        assert httpx.get(f"{url}/api/sessions").status_code == 401
        assert (
            httpx.get(f"{url}/api/sessions", headers={"authorization": "Bearer no"}).status_code
            == 401
        )
        assert httpx.get(f"{url}/api/sessions", headers=auth).status_code == 200
        assert httpx.get(f"{url}/").status_code == 200  # the page is public; the API is not
        # DNS rebinding: a page under another name reaches 127.0.0.1
        rebound = httpx.get(f"{url}/api/sessions", headers={**auth, "host": f"evil.test:{port}"})
        assert rebound.status_code == 421
        assert rebound.json()["error"]["status"] == 421
        # a cross-site POST is refused even with a valid token
        cross = httpx.post(
            f"{url}/api/chat",
            json=chat_body("x1", "hi"),
            headers={**auth, "origin": "https://evil.test"},
        )
        assert cross.status_code == 403
        same = httpx.post(
            f"{url}/api/chat",
            json=chat_body("x1", "hi"),
            headers={**auth, "origin": f"http://127.0.0.1:{port}"},
        )
        assert same.status_code == 200
        assert "access-control-allow-origin" not in same.headers  # no CORS by default
        big = httpx.post(f"{url}/api/chat", json=chat_body("x2", "y" * 9000), headers=auth)
        assert big.status_code == 413
        assert "8192 bytes" in big.json()["error"]["message"]  # the chat body's own limit
        other = httpx.post(
            f"{url}/api/sessions/x2/approve", json={"decisions": {"a": "y" * 5000}}, headers=auth
        )
        assert other.status_code == 413  # every other body: max_body_bytes
        assert "4096 bytes" in other.json()["error"]["message"]


def test_allowed_hosts_and_ipv6_loopback_names() -> None:
    from zett_agent.serve._security import Guard, host_name

    guard = Guard(
        None,  # type: ignore[arg-type]
        bind_host="127.0.0.1",
        token=None,
        allowed_hosts=["Box.Local:8000"],
        max_body_bytes=10,
    )
    assert {"box.local", "localhost", "127.0.0.1", "::1"} <= guard.hosts
    assert host_name("[::1]:8000") == "::1"
    assert host_name("LOCALHOST:80") == "localhost"
    assert host_name("evil.test") == "evil.test"


def test_cors_only_for_configured_origins(replay: ReplayServer) -> None:
    settings = ServeSettings(cors_origins=("http://app.test",))
    with running_server(create_app(make_agent(replay.url), settings=settings)) as url:
        ok = httpx.options(
            f"{url}/api/chat",
            headers={"origin": "http://app.test", "access-control-request-method": "POST"},
        )
        assert ok.headers["access-control-allow-origin"] == "http://app.test"
        other = httpx.get(f"{url}/api/sessions", headers={"origin": "http://other.test"})
        assert other.status_code == 403


def test_a_dev_server_proxy_that_keeps_the_browsers_host_passes_host_and_origin(
    server: str,
) -> None:
    """A page on a dev server (http://localhost:5173) whose proxy sends /api on with
    the browser's own Host header: Host is loopback, Origin is that same origin."""
    proxied = {"host": "localhost:5173", "origin": "http://localhost:5173"}
    response = httpx.post(
        f"{server}/api/chat", json=chat_body("p1", "hello"), headers=proxied, timeout=30
    )
    assert response.status_code == 200, response.text
    elsewhere = {"host": "localhost:5173", "origin": "http://localhost:3000"}
    assert httpx.get(f"{server}/api/sessions", headers=elsewhere).status_code == 403


def test_listening_off_loopback_needs_a_token(replay: ReplayServer) -> None:
    with pytest.raises(ValueError, match="token"):
        create_app(make_agent(replay.url), settings=ServeSettings(host="0.0.0.0"))
    with pytest.raises(ValueError, match="token"):
        create_app(make_agent(replay.url), settings=ServeSettings(allowed_hosts=("*",)))


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [
        (b"{not json", "application/json", 400),
        (b'{"id": "a"}', "text/plain", 415),
        (b'{"id": "a"}', "application/json", 422),
        (b'{"id": "a", "messages": []}', "application/json", 422),
        (b'{"id": "a/../b", "messages": [{"role": "user", "parts": []}]}', "application/json", 400),
        (b'{"id": "a", "messages": [{"role": "assistant", "parts": []}]}', "application/json", 400),
        (
            b'{"id": "a", "messages": [{"role": "user", "parts": [{"type": "text", "text": "q"}]},'
            b' {"role": "assistant", "parts": [{"type": "tool-x", "state": "output-available"}]}]}',
            "application/json",
            400,
        ),
        (
            b'{"id": "a", "messages": [{"role": "user", "parts": [{"type": "file"}]}]}',
            "application/json",
            400,
        ),
        (b"[" * 100_000, "application/json", 400),
        (b'{"id": 5, "messages": "x"}', "application/json", 422),
    ],
)
def test_malformed_chat_requests_get_4xx_json(
    server: str, body: bytes, content_type: str, status: int
) -> None:
    response = httpx.post(
        f"{server}/api/chat", content=body, headers={"content-type": content_type}
    )
    assert response.status_code == status, response.text
    assert response.json()["error"]["status"] == status


def test_the_page_cannot_be_framed_and_loads_only_its_own_files(server: str) -> None:
    page = httpx.get(f"{server}/")
    assert page.status_code == 200 and "/static/app.js" in page.text
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    assert httpx.get(f"{server}/static/app.js").status_code == 200
    assert httpx.get(f"{server}/static/../app.py").status_code == 404


@pytest.mark.parametrize("path", ["/api/sessions/%00", "/api/sessions/a%20b", "/api/sessions/..x"])
def test_bad_session_ids_get_400_json(server: str, path: str) -> None:
    for method in ("GET", "DELETE"):
        response = httpx.request(method, f"{server}{path}")
        assert (response.status_code, response.json()["error"]["status"]) == (400, 400)
    assert httpx.post(f"{server}{path}/resume").status_code == 400


def test_unknown_routes_and_methods_get_json(server: str) -> None:
    missing = httpx.get(f"{server}/api/nothing")
    assert (missing.status_code, missing.json()["error"]["status"]) == (404, 404)
    wrong = httpx.get(f"{server}/api/chat")
    assert (wrong.status_code, wrong.json()["error"]["status"]) == (405, 405)
    assert httpx.get(f"{server}/api/chat/abc/stream").status_code == 204


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.fixed_dictionaries(
        {},
        optional={
            "id": st.sampled_from(["f1", "", "..", 7]) | json_values,
            "messages": st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "role": st.sampled_from(["user", "assistant", "system"]) | json_values,
                        "parts": st.lists(json_values, max_size=3) | json_values,
                    },
                ),
                max_size=3,
            )
            | json_values,
            "trigger": json_values,
        },
    )
)
def test_fuzzed_chat_bodies_never_get_a_500(server: str, body: dict[str, Any]) -> None:
    response = httpx.post(f"{server}/api/chat", json=body, timeout=30)
    assert response.status_code < 500, response.text
    if response.status_code != 200:
        assert response.json()["error"]["status"] == response.status_code


# ---------------------------------------------------------------- the command


def test_the_core_and_the_cli_do_not_import_the_serve_extra() -> None:
    code = (
        "import sys, zett_agent, zett_agent.cli, zett_agent._agent; "
        "assert not [m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn')]; "
        "assert 'zett_agent.serve' not in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_zett_serve_defaults_to_the_local_model() -> None:
    from zett_agent.cli import _serve as serve_command
    from zett_agent.model._local import DEFAULT_LOCAL_MODEL

    assert f"llamacpp:{DEFAULT_LOCAL_MODEL}" == serve_command.DEFAULT_MODEL


def test_zett_serve_command_off_loopback_makes_and_prints_a_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import uvicorn

    seen: dict[str, Any] = {}

    def run(server: Any, sockets: Any = None) -> None:  # what zett serve hands uvicorn
        seen.update(app=server.config.app, bound=[sock.getsockname()[:2] for sock in sockets])
        server.started = True

    monkeypatch.setattr(uvicorn.Server, "run", run)
    result = CliRunner().invoke(
        cli_app,
        ["serve", "--model", "openai:gpt-test", "--host", "0.0.0.0", "--port", "0",
         "--db", ":memory:"],
        env={"OPENAI_API_KEY": "test", "ZETT_SERVE_TOKEN": ""},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    ((host, port),) = seen["bound"]
    assert host == "0.0.0.0" and port != 0  # bound before the URL is printed
    assert f"http://0.0.0.0:{port}/#token=" in result.output
    assert "tools: get_weather, get_time" in result.output
