"""Delta events built by DeltaEvents are the same AgentEvent values the constructor
builds: a host cannot tell them apart (type, fields, equality, hash, repr, vars,
frozen, replace, pickling), and a streamed run carries them in order."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from zett_agent import AgentEvent, AgentEventType, ToolCall, create_agent
from zett_agent._events import DeltaEvents
from zett_agent.model import ReasoningDelta, TextDelta, ToolCallDelta
from zett_agent.testing import ScriptedModel, reply

_E = AgentEventType


def _same(fast: AgentEvent, slow: AgentEvent) -> None:
    assert type(fast) is AgentEvent
    assert fast == slow and hash(fast) == hash(slow)
    assert repr(fast) == repr(slow)
    # only the fields a delta sets are on the instance; the rest are the defaults
    assert vars(fast) == {k: v for k, v in vars(slow).items() if k in vars(fast)}
    assert {k for k, v in vars(slow).items() if v is not None} <= set(vars(fast))
    assert dataclasses.asdict(fast) == dataclasses.asdict(slow)
    assert fast.to_dict() == slow.to_dict()
    assert pickle.loads(pickle.dumps(fast)) == slow
    assert copy.copy(fast) == slow
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.text = "changed"  # type: ignore[misc]
    assert dataclasses.replace(fast, step=9) == dataclasses.replace(slow, step=9)


def test_text_reasoning_and_tool_call_deltas_equal_the_constructors() -> None:
    deltas = DeltaEvents("run1", 3)
    _same(deltas.text("hi"), AgentEvent(_E.TEXT_DELTA, "run1", 3, text="hi"))
    _same(deltas.of(TextDelta("a")), AgentEvent(_E.TEXT_DELTA, "run1", 3, text="a"))
    _same(
        deltas.of(ReasoningDelta("think")),
        AgentEvent(_E.REASONING_DELTA, "run1", 3, text="think"),
    )
    _same(
        deltas.of(ToolCallDelta(0, "c1", "f", '{"a"')),
        AgentEvent(
            _E.TOOL_CALL_DELTA, "run1", 3, text='{"a"', tool_call=ToolCall("c1", "f", '{"a"')
        ),
    )
    _same(
        deltas.of(ToolCallDelta(0, None, None, "1}")),
        AgentEvent(_E.TOOL_CALL_DELTA, "run1", 3, text="1}", tool_call=ToolCall("", "", "1}")),
    )


def test_events_do_not_share_state() -> None:
    deltas = DeltaEvents("r", 1)
    first, second = deltas.text("a"), deltas.text("b")
    assert (first.text, second.text) == ("a", "b")
    assert vars(first) is not vars(second)


async def test_a_streamed_run_yields_deltas_with_its_run_id_and_step() -> None:
    model = ScriptedModel(reply("Hello", chunk=3))
    agent = await create_agent(model)
    events = [event async for event in agent.stream("hi")]
    run_id = events[0].run_id
    deltas = [e for e in events if e.type is _E.TEXT_DELTA]
    assert [e.text for e in deltas] == ["Hel", "lo"]
    assert deltas == [AgentEvent(_E.TEXT_DELTA, run_id, 1, text=t) for t in ("Hel", "lo")]
    assert events[-1].type is _E.RUN_COMPLETED
    assert events[-1].message is not None and events[-1].message.text == "Hello"


def write_note(text: str) -> str:
    """Write a note.

    Args:
        text: the note.
    """
    return text


async def test_tools_are_built_once_per_function_and_errors_still_raise() -> None:
    first = await create_agent(ScriptedModel(), tools=[write_note])
    second = await create_agent(ScriptedModel(), tools=[write_note])
    assert first.tools["write_note"] is second.tools["write_note"]
    assert first.tools["write_note"].description == "Write a note."

    def variadic(*args: str) -> str:
        return ""

    with pytest.raises(TypeError, match=r"\*args"):
        await create_agent(ScriptedModel(), tools=[variadic])
