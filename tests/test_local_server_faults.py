"""What zett does about llama-cpp-python's server, without the model: over a
ReplayServer speaking its wire, and with a stand-in server process for how the
started server's port is found. (The real server: tests/test_local_model.py.)"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from zett_agent import UserMessage
from zett_agent._exchange import ModelRequest, ToolSpec
from zett_agent.demo_tools import get_weather
from zett_agent.model import LocalLlamaModel
from zett_agent.testing import ReplayServer, Reply
from zett_agent.tools import as_tool

WEATHER: ToolSpec = as_tool(get_weather).spec


def _chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _text(text: str) -> Reply:
    return Reply.sse([
        (None, _chunk({"role": "assistant", "content": text})),
        (None, _chunk({}, "stop")),
        (None, "[DONE]"),
    ])  # fmt: skip


def ask(text: str, **fields: object) -> ModelRequest:
    return ModelRequest(model="smollm2", messages=[UserMessage(text)], **fields)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the tools reach the model


@pytest.mark.parametrize("choice", ["auto", "get_weather"])
def test_a_tool_choice_without_a_system_message_gets_an_empty_one(choice: str) -> None:
    """The chat format lists the tools only in a system message."""
    model = LocalLlamaModel("smollm2", base_url="http://127.0.0.1:9/v1")
    body = model.protocol.encode_request(
        ask("x", tools=[WEATHER], tool_choice=choice), model.vendor
    )
    assert body.body["messages"][0] == {"role": "system", "content": ""}
    assert body.body["messages"][1]["role"] == "user"


def test_no_system_message_is_added_without_tools_shown_or_when_there_is_one() -> None:
    model = LocalLlamaModel("smollm2", base_url="http://127.0.0.1:9/v1")
    for request in (
        ask("x", tools=[WEATHER]),  # no choice: the server shows no tools
        ask("x", tools=[WEATHER], tool_choice="none"),
        ask("x", tool_choice="auto"),
    ):
        roles = [
            m["role"] for m in model.protocol.encode_request(request, model.vendor).body["messages"]
        ]
        assert roles == ["user"]
    from zett_agent import SystemMessage

    own = ModelRequest(model="smollm2", messages=[SystemMessage("Be brief."), UserMessage("x")],
                       tools=[WEATHER], tool_choice="auto")  # fmt: skip
    messages = model.protocol.encode_request(own, model.vendor).body["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == "Be brief."


async def test_an_empty_answer_under_auto_is_asked_again_for_its_text() -> None:
    """Under ``auto`` the server's follow-up grammar leaves a text answer empty; zett
    asks again with ``none`` and the text arrives."""
    with ReplayServer([_text(""), _text("Hello there."), _text("")]) as fake:
        model = LocalLlamaModel("smollm2", base_url=fake.url)
        try:
            response = await model.complete(ask("Hi", tools=[WEATHER], tool_choice="auto"))
            plain = await model.complete(ask("Hi"))  # an empty answer without tools: as it is
        finally:
            await model.aclose()
        choices = [r.json.get("tool_choice") for r in fake.requests]
    assert choices == ["auto", "none", None]
    assert response.text == "Hello there." and response.stop is None
    assert plain.text == ""


# ---------------------------------------------------------------- the started server's port

FAKE_SERVER = textwrap.dedent(
    """
    # Stands in for `python -m llama_cpp.server`: binds --port (PORT wins, as in
    # llama_cpp.server), reports the port as uvicorn does, answers GET /v1/models.
    import http.server, json, os, sys
    port = int(os.getenv("PORT", sys.argv[sys.argv.index("--port") + 1]))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"data": [{"id": "smollm2"}], "pid": os.getpid()}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", port), Handler)
    bound = server.server_address[1]
    print(f"INFO:     Uvicorn running on http://127.0.0.1:{bound} (Press CTRL+C to quit)",
          file=sys.stderr, flush=True)
    server.serve_forever()
    """
)


class _StandIn(LocalLlamaModel):
    script: Path

    def command(self, port: int) -> list[str]:
        return [sys.executable, str(self.script), "--port", str(port)]


async def test_the_server_binds_a_port_itself_and_zett_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No port is chosen and handed over (another process could take it between):
    the server binds port 0 and zett reads the port from its start-up line. Two
    servers started at once each get their own; PORT in the environment (which
    llama_cpp.server prefers to --port) is not passed on."""
    import httpx

    monkeypatch.setattr("zett_agent.model._local._check_server_installed", lambda: None)
    monkeypatch.setenv("PORT", "1")
    gguf = tmp_path / "stand-in.gguf"
    gguf.write_bytes(b"")
    _StandIn.script = tmp_path / "server.py"
    _StandIn.script.write_text(FAKE_SERVER)
    models = [_StandIn("smollm2", model_path=gguf, startup_timeout=20) for _ in range(2)]
    try:
        async with anyio.create_task_group() as group:
            for model in models:
                assert model.command(0)[-1] == "0"
                group.start_soon(model.ensure_ready)
        ports = {model.base_url for model in models}
        assert len(ports) == 2 and not any(url.endswith(":0/v1") for url in ports)
        async with httpx.AsyncClient() as client:
            for model in models:
                answer = (await client.get(model.base_url + "/models")).json()
                assert model._process is not None and answer["pid"] == model._process.pid
                # its own session: Ctrl-C at zett's terminal does not reach it
                assert os.getsid(model._process.pid) == model._process.pid != os.getsid(0)
    finally:
        for model in models:
            await model.aclose()
    assert all(not model.server_running for model in models)


def _weather_call() -> Reply:
    call = {"index": 0, "id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}  # fmt: skip
    return Reply.sse([(None, _chunk({"tool_calls": [call]})), (None, _chunk({}, "tool_calls")),
                      (None, "[DONE]")])  # fmt: skip


@pytest.mark.parametrize("one_round", [True, False])
async def test_under_auto_one_round_of_tools_then_the_answer(one_round: bool) -> None:
    """Shown tools after their results, SmolLM2 calls them again on nearly every
    turn: after one round the local model is asked for text (``none``) unless told
    to keep ``auto``."""
    from zett_agent import AgentRunConfig, create_agent

    replies = [_weather_call(), _text("Rainy.")] if one_round else [_weather_call()] * 3
    with ReplayServer(replies) as fake:
        model = LocalLlamaModel("smollm2", base_url=fake.url, one_tool_round=one_round)
        config = AgentRunConfig("t", tool_choice="auto", max_turns=3)
        agent = await create_agent(model, config=config, tools=[get_weather])
        try:
            message = await agent.run("Weather in Paris?")
        finally:
            await agent.aclose()
        choices = [r.json.get("tool_choice") for r in fake.requests]
    if one_round:
        assert choices == ["auto", "none"] and message.text == "Rainy."
    else:
        assert choices == ["auto", "auto", "auto"]  # to max_turns
        assert message.stop is not None and message.stop.raw == "max_turns"


ORPHAN_PARENT = textwrap.dedent(
    """
    # Starts the stand-in server through LocalLlamaModel, says its pid, and waits to
    # be killed with SIGKILL (no cleanup of its own can run).
    import sys, time, anyio
    import zett_agent.model._local as local

    local._check_server_installed = lambda: None

    class StandIn(local.LocalLlamaModel):
        def command(self, port):
            return [sys.executable, sys.argv[1], "--port", str(port)]

    model = StandIn("smollm2", model_path=sys.argv[2], startup_timeout=20)
    anyio.run(model.ensure_ready)
    print(model._process.pid, flush=True)
    time.sleep(600)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_zett_leaves_no_server_behind(tmp_path: Path) -> None:
    """The server has its own session (Ctrl-C is zett's), so nothing of the
    terminal stops it: when zett is killed with SIGKILL the kernel stops it."""
    import signal
    import subprocess
    import time

    gguf = tmp_path / "stand-in.gguf"
    gguf.write_bytes(b"")
    script = tmp_path / "server.py"
    script.write_text(FAKE_SERVER)
    parent = subprocess.Popen(
        [sys.executable, "-c", ORPHAN_PARENT, str(script), str(gguf)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert parent.stdout is not None
    server_pid = int(parent.stdout.readline())
    os.kill(server_pid, 0)  # running
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            return  # stopped (and reaped by init)
        time.sleep(0.1)
    os.kill(server_pid, signal.SIGKILL)
    pytest.fail("the server outlived the zett process that started it")
