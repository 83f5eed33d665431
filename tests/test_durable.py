"""Durable runs in this process, on each engine (``engine``: DBOS on a SQLite file
per test, Temporal on a dev server; tests/durable_engines.py): step names are
pinned, a run id runs once, hooks are checkpointed, checkpoints round-trip, and the
core imports without the extra. The SIGKILL crash matrix is test_durable_crash.py."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

from dbos import DBOS

from durable_engines import (
    Engine,
    engine,
    launched,
    run_record,
    step_names,
    step_output,
    temporal_server,
)
from zett_agent import (
    Agent,
    AgentRunConfig,
    AssistantMessage,
    Message,
    ModelResponse,
    ProviderError,
    StopInfo,
    StopReason,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from zett_agent.durable import TOOL_INTERRUPTED, DurableAgent, DurableConfig, launch, shutdown
from zett_agent.durable._checkpoints import (
    decode_model_call,
    encode_model_error,
    encode_model_response,
)
from zett_agent.errors import ConfigError, StreamError
from zett_agent.extensions import Extension, RetryRequest
from zett_agent.testing import ScriptedModel, reply

__all__ = ["engine", "launched", "temporal_server"]  # the fixtures this module uses

pytestmark = pytest.mark.timeout(60)

SRC = Path(__file__).resolve().parents[1] / "src"


def weather(city: str) -> str:
    """The weather of a city.

    Args:
        city: the city.
    """
    return f"sunny in {city}"


class Hooks(Extension):
    """Pending messages once, and one veto of completion."""

    def __init__(self) -> None:
        self.pending = [UserMessage("(a background task finished)")]
        self.vetoed = False

    def pending_messages(self) -> list[Message]:
        taken, self.pending = self.pending, []
        return taken

    def on_complete(self, message: AssistantMessage, messages: Sequence[Message]) -> str | None:
        if self.vetoed:
            return None
        self.vetoed = True
        return "Check once more."


class Watch(Extension):
    """Observes models and tools; answers a call to ``blocked`` itself."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def before_model(self, request: Any) -> None:
        self.seen.append("before_model")

    def after_model(self, response: Any) -> None:
        self.seen.append("after_model")

    def before_tool(self, call: ToolCall) -> ToolResultMessage | None:
        self.seen.append(f"before_tool:{call.name}")
        return None

    def after_tool(self, call: ToolCall, result: ToolResultMessage) -> ToolResultMessage:
        return ToolResultMessage(result.tool_call_id, result.name, result.content + " (seen)")


def tool_script() -> ScriptedModel:
    return ScriptedModel(
        reply("Looking.", [ToolCall("c1", "weather", '{"city": "Paris"}')]),
        reply("Sunny."),
        reply("Checked: sunny."),
    )


async def test_step_names_are_persisted_data_and_pinned(launched: Path, engine: Engine) -> None:
    watch = Watch()
    agent = Agent(tool_script(), AgentRunConfig("pinned"), [weather], [Hooks(), watch])
    async with DurableAgent(agent, launched / "s.sqlite3") as durable:
        final = await durable.run("weather?", session_id="s", run_id="r-pinned")
        assert final.text == "Checked: sunny."
        names = await step_names(engine, "r-pinned")
        if engine.name == "temporal":  # appends are steps there (no I/O in workflow code)
            assert names.count("pinned.append") == 7  # each stored message
            names = [name for name in names if name != "pinned.append"]
        # a hook an extension does not override is no step
        model = ["pinned.Watch.before_model", "pinned.model", "pinned.Watch.after_model"]
        assert names == [
            "pinned.session",
            "pinned.Hooks.pending_messages",
            *model,
            "pinned.Watch.before_tool",
            "pinned.tool.weather.started",
            "pinned.tool.weather",
            "pinned.Watch.after_tool",
            "pinned.Hooks.pending_messages",
            *model,
            "pinned.Hooks.on_complete",
            "pinned.Hooks.pending_messages",
            *model,
            "pinned.Hooks.on_complete",
        ]
        assert watch.seen.count("before_model") == 3
        assert watch.seen.count("before_tool:weather") == 1
        stored = await durable.store.load("s")
        assert stored[1] == UserMessage("(a background task finished)")
        assert ToolResultMessage("c1", "weather", "sunny in Paris (seen)") in stored
        assert UserMessage("Check once more.") in stored


async def test_a_run_id_runs_once(launched: Path) -> None:
    model = ScriptedModel(reply("Only once."))  # a second model call would fail
    async with DurableAgent(Agent(model), launched / "s.sqlite3", name="once") as durable:
        first = await durable.run("hi", session_id="s", run_id="r-once")
        again = await durable.run("hi", session_id="s", run_id="r-once")
        assert first == again == (await durable.store.load("s"))[-1]
        assert len(model.requests) == 1
        assert [r.key for r in await durable.store.rows("s")] == ["r-once:0", "r-once:1"]


async def test_a_second_run_in_the_session_sees_the_first(launched: Path) -> None:
    model = ScriptedModel(reply("One."), reply("Two."))
    async with DurableAgent(Agent(model), launched / "s.sqlite3", name="two") as durable:
        await durable.run("first", session_id="s", run_id="r-1")
        await durable.run("second", session_id="s", run_id="r-2")
        sent = model.requests[1].messages
        assert sent == [UserMessage("first"), (await durable.store.load("s"))[1], sent[2]]
        assert sent[2] == UserMessage("second")
        assert len(await durable.store.load("s")) == 4


async def test_a_failed_model_call_is_raised_with_its_fields(launched: Path) -> None:
    failing = StreamError(
        "overloaded", provider="anthropic", status=200, error_type="overloaded_error"
    )
    model = ScriptedModel(failing)
    async with DurableAgent(Agent(model), launched / "s.sqlite3", name="fails") as durable:
        with pytest.raises(StreamError) as caught:
            await durable.run("hi", session_id="s", run_id="r-fail")
        assert caught.value.error_type == "overloaded_error"
        assert caught.value.provider == "anthropic"


class SwitchModel(Extension):
    def recover(self, context: Any) -> RetryRequest:
        return RetryRequest(context.request, model=ScriptedModel(reply("other")))


async def test_a_recovery_that_switches_model_is_refused(launched: Path) -> None:
    refused = reply("No.", stop=StopReason.REFUSAL)
    agent = Agent(ScriptedModel(refused), extensions=[SwitchModel()])
    async with DurableAgent(agent, launched / "s.sqlite3", name="switch") as durable:
        with pytest.raises(ConfigError, match="cannot switch models"):
            await durable.run("hi", session_id="s", run_id="r-switch")


def test_a_model_checkpoint_is_the_whole_answer() -> None:
    response = ModelResponse(
        "It is",
        (ToolCall("c1", "weather", '{"city": "Paris"}'), ToolCall("c2", "weather", '{"ci', False)),
        StopInfo(StopReason.MAX_OUTPUT, "length", detail={"native": "x"}),
        Usage(10, 5, cached_input_tokens=2),
        reasoning="hm",
        model="m-1",
        provider_record={"content": [{"type": "text", "text": "It is"}]},
    )
    assert decode_model_call(encode_model_response(response)) == response
    back = decode_model_call(encode_model_response(response))
    assert isinstance(back, ModelResponse) and back.tool_calls[1].closed is False  # never run
    ok = ModelResponse("Done.", (), StopInfo(StopReason.END_TURN, "stop"))
    assert decode_model_call(encode_model_response(ok)) == ok
    error = ProviderError("slow down", provider="openai", status=429, code="rate", retry_after=2.0)
    back = decode_model_call(encode_model_error(error))
    assert isinstance(back, ProviderError) and type(back) is ProviderError
    assert (back.status, back.code, back.retry_after, str(back)) == (429, "rate", 2.0, str(error))
    assert isinstance(decode_model_call(encode_model_error(KeyError("x"))), Exception)


def test_the_core_imports_and_runs_without_the_durable_extra() -> None:
    code = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {"dbos", "psycopg", "sqlalchemy"}:
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
import zett_agent, zett_agent._client, zett_agent.cli, zett_agent.sessions
loaded = [m for m in sys.modules if m.startswith(("zett_agent.durable", "dbos"))]
assert not loaded, loaded
try:
    import zett_agent.durable
except ImportError as error:
    print("durable needs the extra:", error)
"""
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "durable needs the extra: blocked: dbos" in done.stdout


def test_tool_result_messages_survive_the_tool_checkpoint() -> None:
    from zett_agent.durable._checkpoints import decode_tool_result, encode_tool_result

    result = ToolResultMessage("c1", "weather", '{"deep": ["x"]}', is_error=True)
    assert decode_tool_result(encode_tool_result(result)) == result
    assert decode_tool_result(encode_tool_result(None)) is None


async def test_the_event_loop_keeps_a_thread_pool_after_shutdown(tmp_path: Path) -> None:
    import asyncio

    await launch(DurableConfig(f"sqlite:///{tmp_path / 'dbos.sqlite3'}", executor_id="test"))
    async with DurableAgent(Agent(ScriptedModel(reply("Hi."))), tmp_path / "s.sqlite3") as d:
        await d.run("hi", session_id="s", run_id="r-pool")  # DBOS takes the default executor
    shutdown()
    assert await asyncio.to_thread(lambda: 42) == 42


async def test_a_cancelled_run_stops_and_resumes_with_the_crash_rule(
    launched: Path, engine: Engine
) -> None:
    import asyncio

    if engine.name != "dbos":
        pytest.skip("cancel and resume are DBOS's operations (zett runs cancel on DBOS)")

    started, release = asyncio.Event(), asyncio.Event()

    async def wait_here() -> str:
        """Wait until released."""
        started.set()
        await release.wait()
        return "waited"

    model = ScriptedModel(reply("Waiting.", [ToolCall("c1", "wait_here", "{}")]), reply("Done."))
    agent = Agent(model, tools=[wait_here])
    async with DurableAgent(agent, launched / "s.sqlite3", name="cancel") as durable:
        task = asyncio.create_task(durable.run("go", session_id="s", run_id="r-cancel"))
        await started.wait()
        await DBOS.cancel_workflow_async("r-cancel")
        release.set()
        with pytest.raises(Exception, match="cancelled"):
            await task
        status = await DBOS.get_workflow_status_async("r-cancel")
        assert status is not None and status.status == "CANCELLED"
        assert len(await durable.store.load("s")) == 2  # the prompt and the answer, no result
        await DBOS.resume_workflow_async("r-cancel")
        handle = await DBOS.retrieve_workflow_async("r-cancel")
        await handle.get_result()
        stored = await durable.store.load("s")
        assert stored[2] == ToolResultMessage("c1", "wait_here", TOOL_INTERRUPTED, is_error=True)
        assert stored[3].text == "Done."  # type: ignore[union-attr]


async def test_a_run_before_launch_is_a_clear_error(tmp_path: Path) -> None:
    async with DurableAgent(Agent(ScriptedModel()), tmp_path / "s.sqlite3", name="early") as d:
        with pytest.raises(ConfigError, match=r"call zett_agent.durable.launch\(...\) first"):
            await d.run("hi", session_id="s")
        with pytest.raises(ConfigError, match="launch"):
            await d.submit("hi", session_id="s")


async def test_launching_twice_is_a_clear_error(launched: Path, engine: Engine) -> None:
    with pytest.raises(ConfigError, match="already launched"):
        await launch(DurableConfig(f"sqlite:///{launched / 'other.sqlite3'}"))
    with pytest.raises(ConfigError, match="already launched"):
        await launch(engine.config(launched / "other"))


async def test_a_submitted_run_is_taken_from_the_queue_by_this_process(
    launched: Path, engine: Engine
) -> None:
    model = ScriptedModel(reply("Queued and done."))
    async with DurableAgent(Agent(model), launched / "s.sqlite3", name="queued") as durable:
        run_id = await durable.submit("hi", session_id="s", run_id="r-queued")
        assert await durable.submit("hi", session_id="s", run_id="r-queued") == run_id
        assert (await durable.result(run_id)).text == "Queued and done."
        if engine.name == "dbos":
            status = await DBOS.get_workflow_status_async(run_id)
            assert status is not None and status.queue_name == "zett-runs"
        assert len(model.requests) == 1


def test_the_durable_workflow_names_are_persisted_data() -> None:
    """The workflow and queue names are stored by DBOS: never renamed (the package's
    public names are pinned with every other public path in tests/public_surface.txt)."""
    import zett_agent.durable as durable

    assert durable.WORKFLOW_NAME == "zett_agent.durable.run"  # persisted: never renamed
    assert durable.QUEUE_NAME == "zett-runs"
    assert durable.DECIDED_WORKFLOW_NAME == "zett_agent.durable.decided"  # persisted too


async def test_a_tool_timeout_is_decided_inside_the_step_and_checkpointed(
    launched: Path, engine: Engine
) -> None:
    import asyncio

    from zett_agent.tools import as_tool

    async def stuck() -> str:
        """Never finishes in time."""
        await asyncio.sleep(30)
        return "late"

    model = ScriptedModel(reply("Trying.", [ToolCall("c1", "stuck", "{}")]), reply("Gave up."))
    agent = Agent(model, tools=[as_tool(stuck, timeout=0.2)])
    async with DurableAgent(agent, launched / "s.sqlite3", name="timeout") as durable:
        assert (await durable.run("go", session_id="s", run_id="r-timeout")).text == "Gave up."
        stored = (await durable.store.load("s"))[2]
        assert isinstance(stored, ToolResultMessage) and stored.is_error
        assert "did not finish within its timeout of 0.2 seconds" in stored.content
        assert "timeout of 0.2 seconds" in await step_output(
            engine, "r-timeout", "timeout.tool.stuck"
        )


async def test_an_error_echoing_the_key_is_checkpointed_without_it(
    launched: Path, engine: Engine
) -> None:
    from zett_agent import Model
    from zett_agent.testing import ReplayServer, Reply

    secret = "sk-durable-echo-SECRET-987654321"
    echo = {"error": {"message": f"Incorrect API key provided: {secret}", "type": "auth"}}
    with ReplayServer([Reply.json(echo, status=401)]) as server:
        model = Model("openai", "m", base_url=server.url, api_key=secret, max_retries=0)
        async with DurableAgent(Agent(model), launched / "s.sqlite3", name="echo") as durable:
            with pytest.raises(ProviderError) as caught:
                await durable.run("hi", session_id="s", run_id="r-echo")
            assert secret not in str(caught.value)
            output = await step_output(engine, "r-echo", "echo.model")
            assert "Incorrect API key provided" in output
            assert secret not in await run_record(engine, "r-echo")
        await model.aclose()
    for file in launched.glob("dbos.sqlite3*"):  # the database and its WAL
        assert secret.encode() not in file.read_bytes()


async def test_a_durable_run_over_its_budget_starts_no_tool(launched: Path) -> None:
    ran: list[str] = []

    def note(text: str) -> str:
        """Write a note.

        Args:
            text: the note.
        """
        ran.append(text)
        return "noted"

    calls = [ToolCall("c1", "note", '{"text": "a"}'), ToolCall("c2", "note", '{"text": "b"}')]
    model = ScriptedModel(reply("Noting.", calls, usage=Usage(10, 5)))  # one call only
    agent = Agent(model, AgentRunConfig("budgeted", max_total_tokens=10), [note])
    async with DurableAgent(agent, launched / "s.sqlite3") as durable:
        final = await durable.run("note a and b", session_id="s", run_id="r-budget")
        stored = await durable.store.load("s")
    assert ran == []
    assert final.stop is not None and final.stop.raw == "max_total_tokens"
    assert final.stop.detail["not_run_tool_calls"] == ["note", "note"]
    results = [m for m in stored if isinstance(m, ToolResultMessage)]
    assert [r.content for r in results] == ["not run: the run's budget was reached"] * 2
