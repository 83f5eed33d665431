"""A durable run's hook checkpoints are JSON text, never pickles of zett classes.

DBOS stores what a step returns. A step that returned a ``ModelRequest`` or a
``RetryRequest`` was pickled with its class's module path, so a worker whose zett
had moved that module could not load a checkpointed run any more. The
``before_model`` and ``recover`` hooks now checkpoint JSON (``durable/_checkpoints``),
read back to equal values.
"""

from __future__ import annotations

import json
import pickletools
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")

from zett_agent import (
    Agent,
    AgentRunConfig,
    AssistantMessage,
    ModelRequest,
    StopInfo,
    StopReason,
    ToolCall,
    UserMessage,
)
from zett_agent.durable._checkpoints import (
    decode_recovery,
    decode_request,
    encode_recovery,
    encode_request,
)
from zett_agent.extensions import ContinueWith, EndRun, Extension, RecoveryContext, RetryRequest
from zett_agent.model import OutputFormat, ToolSpec
from zett_agent.testing import ScriptedModel, reply
from zett_agent.vendors import ServerTool


def full_request() -> ModelRequest:
    return ModelRequest(
        model="claude-x",
        messages=[
            UserMessage("What is the weather in Paris?"),
            AssistantMessage(
                text="Looking.",
                tool_calls=(ToolCall("call_1", "get_weather", '{"city": "Paris"}'),),
            ),
        ],
        tools=[ToolSpec("get_weather", "The weather.", {"type": "object", "properties": {}})],
        max_tokens=256,
        temperature=0.2,
        stop_sequences=["END"],
        tool_choice="auto",
        stream=False,
        extra_body={"metadata": {"user": "u1"}},
        reasoning=1024,
        server_tools=(ServerTool.web_search(max_uses=2),),
        prompt_cache=True,
        prompt_cache_key="k1",
        output=OutputFormat("City", {"type": "object"}, "a city"),
    )


def test_a_changed_request_is_checkpointed_as_json_and_read_back_equal() -> None:
    request = full_request()
    text = encode_request(request)
    assert json.loads(text)["request"]["model"] == "claude-x"
    assert decode_request(text) == request
    assert decode_request(encode_request(None)) is None


@pytest.mark.parametrize(
    "recovery",
    [
        RetryRequest(full_request(), note={"why": "shorter"}),
        ContinueWith([UserMessage("continue")], join=True, max_tokens=512, note={"n": 1}),
        EndRun(StopInfo(StopReason.REFUSAL, "refusal", message="no"), note={"by": "guard"}),
        None,
    ],
)
def test_every_recovery_is_checkpointed_as_json_and_read_back_equal(recovery: object) -> None:
    text = encode_recovery(recovery)  # type: ignore[arg-type]
    json.loads(text)
    assert decode_recovery(text) == recovery


def test_a_checkpoint_names_no_python_module() -> None:
    """What DBOS pickles is a str: its pickle holds no global (no module path)."""
    import pickle

    for text in (encode_request(full_request()), encode_recovery(RetryRequest(full_request()))):
        opcodes = {op.name for op, _, _ in pickletools.genops(pickle.dumps(text))}
        assert not opcodes & {"GLOBAL", "STACK_GLOBAL", "INST", "OBJ", "REDUCE"}
        assert "zett_agent" not in text


class Rewrite(Extension):
    """Changes every request (a lower temperature) and ends a refused answer itself."""

    def before_model(self, request: ModelRequest) -> ModelRequest:
        return replace(request, temperature=0.0)

    def recover(self, context: RecoveryContext) -> EndRun | None:
        if context.stop.reason is StopReason.REFUSAL:
            return EndRun(context.stop, note={"ended_by": "Rewrite"})
        return None


async def test_a_durable_runs_hook_steps_hold_json_text(tmp_path: Path) -> None:
    from dbos import DBOS

    from zett_agent.durable import DurableAgent, DurableConfig, launch, shutdown

    model = ScriptedModel(reply("No.", stop=StopInfo(StopReason.REFUSAL, "refusal")))
    agent = Agent(model, AgentRunConfig("json"), [], [Rewrite()])
    await launch(DurableConfig(f"sqlite:///{tmp_path / 'dbos.sqlite3'}", executor_id="test"))
    try:
        async with DurableAgent(agent, tmp_path / "s.sqlite3") as durable:
            final = await durable.run("hello", session_id="s", run_id="r-json")
            assert final.stop is not None and final.stop.reason is StopReason.REFUSAL
            steps = await DBOS.list_workflow_steps_async("r-json")
    finally:
        shutdown()
    hooks = {s["function_name"]: s["output"] for s in steps if ".Rewrite." in s["function_name"]}
    assert set(hooks) == {"json.Rewrite.before_model", "json.Rewrite.recover"}
    for name, output in hooks.items():
        assert isinstance(output, str), (name, type(output))  # a pickle would name a class
    assert decode_request(hooks["json.Rewrite.before_model"]).temperature == 0.0  # type: ignore[union-attr]
    assert decode_recovery(hooks["json.Rewrite.recover"]) == EndRun(
        StopInfo(StopReason.REFUSAL, "refusal"), note={"ended_by": "Rewrite"}
    )
    assert model.requests[0].temperature == 0.0  # the changed request was the one sent
