"""The stop vocabulary and message storage (seed 002)."""

from __future__ import annotations

import json

import pytest

from zett_agent import (
    AgentStopError,
    AssistantMessage,
    StopInfo,
    StopReason,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from zett_agent._messages import (
    message_from_dict,
    message_to_dict,
    messages_from_json,
    messages_to_json,
)


def test_reason_values_are_lowercase_names() -> None:
    assert [r.value for r in StopReason] == [r.name.lower() for r in StopReason]
    assert {r.name for r in StopReason} == {
        "END_TURN", "TOOL_USE", "MAX_OUTPUT", "CONTEXT_FULL",
        "REFUSAL", "INTERRUPTED", "PAUSED", "OTHER",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("reason", "ok", "refused", "truncated"),
    [
        (StopReason.END_TURN, True, False, False),
        (StopReason.TOOL_USE, True, False, False),
        (StopReason.MAX_OUTPUT, False, False, True),
        (StopReason.CONTEXT_FULL, False, False, True),
        (StopReason.REFUSAL, False, True, False),
        (StopReason.INTERRUPTED, False, False, False),
        (StopReason.PAUSED, False, False, False),
        (StopReason.OTHER, False, False, False),
    ],
)
def test_properties(reason: StopReason, ok: bool, refused: bool, truncated: bool) -> None:
    info = StopInfo(reason)
    assert (info.ok, info.refused, info.truncated) == (ok, refused, truncated)


def test_describe_leaves_out_missing_parts() -> None:
    full = StopInfo(StopReason.REFUSAL, "refusal", "cyber", "This request was declined.")
    assert full.describe() == "refusal (cyber): This request was declined."
    assert StopInfo(StopReason.REFUSAL).describe() == "refusal"
    assert StopInfo(StopReason.REFUSAL, category="SAFETY").describe() == "refusal (SAFETY)"
    assert StopInfo(StopReason.MAX_OUTPUT, message="cut").describe() == "max_output: cut"


def test_stop_info_is_frozen_with_defaults() -> None:
    info = StopInfo(StopReason.OTHER)
    assert (info.raw, info.category, info.message, info.recommended_model) == (None,) * 4
    assert dict(info.detail) == {}
    with pytest.raises(AttributeError):
        info.reason = StopReason.END_TURN  # type: ignore[misc]


def test_raise_for_stop() -> None:
    ok = AssistantMessage("fine")
    assert ok.raise_for_stop() is ok
    refused = AssistantMessage("", stop=StopInfo(StopReason.REFUSAL, category="cyber"))
    with pytest.raises(AgentStopError) as caught:
        refused.raise_for_stop()
    assert caught.value.stop is refused.stop
    assert str(caught.value) == "refusal (cyber)"


def test_messages_round_trip_through_json() -> None:
    history = [
        UserMessage("hi"),
        AssistantMessage(
            "partial",
            (ToolCall("c1", "f", '{"a": 1}'),),
            StopInfo(StopReason.INTERRUPTED, "error", detail={"native_finish_reason": None}),
            provider_record={"protocol": "x", "content": [{"type": "text"}]},
        ),
        ToolResultMessage("c1", "f", "done", is_error=True),
    ]
    text = messages_to_json(history)
    json.loads(text)  # valid JSON
    assert messages_from_json(text) == history


def test_stored_message_without_stop_key_loads_with_stop_none() -> None:
    old = {"role": "assistant", "text": "written before stop existed", "tool_calls": []}
    message = message_from_dict(old)
    assert isinstance(message, AssistantMessage) and message.stop is None


def test_bad_stored_message_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="role"):
        message_from_dict({"text": "no role"})
    with pytest.raises(ValueError, match="invalid"):
        message_from_dict({"role": "assistant", "stop": {"reason": "nonsense"}})


def test_dict_form_names_role() -> None:
    assert message_to_dict(UserMessage("x")) == {"role": "user", "content": "x"}


def test_retry_after_as_seconds_milliseconds_or_http_date() -> None:
    import datetime
    import email.utils

    from zett_agent.protocols._body import retry_after_seconds

    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=30)
    waited = retry_after_seconds({"retry-after": email.utils.format_datetime(later, usegmt=True)})
    assert waited is not None and 25 <= waited <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_stop_dict_round_trip() -> None:
    stop = StopInfo(
        StopReason.REFUSAL,
        raw="refusal",
        category="cyber",
        message="declined",
        recommended_model="claude-x",
        detail={"withheld_tool_calls": ["search"]},
    )
    data = stop.to_dict()
    assert list(data) == ["reason", "raw", "category", "message", "recommended_model", "detail"]
    assert data["reason"] == "refusal"
    assert StopInfo.from_dict(data) == stop
    assert StopInfo.from_dict(json.loads(json.dumps(data))) == stop
    described = stop.to_dict(describe=True)
    assert described["describe"] == stop.describe() and list(described)[-1] == "describe"
    assert StopInfo.from_dict(described) == stop  # "describe" is ignored
    short = stop.to_dict(fields=("reason", "raw", "category"))
    assert short == {"reason": "refusal", "raw": "refusal", "category": "cyber"}
    assert StopInfo.from_dict(short) == StopInfo(StopReason.REFUSAL, "refusal", "cyber")
    for reason in StopReason:
        assert StopInfo.from_dict(StopInfo(reason).to_dict()) == StopInfo(reason)


def test_stop_dict_of_an_older_shape_loads() -> None:
    # before category, message, recommended_model and detail existed
    assert StopInfo.from_dict({"reason": "max_output", "raw": "length"}) == StopInfo(
        StopReason.MAX_OUTPUT, raw="length"
    )
    assert StopInfo.from_dict({"reason": "refusal", "detail": None}).detail == {}
    old = {"role": "assistant", "text": "cut", "stop": {"reason": "max_output", "raw": "length"}}
    message = message_from_dict(old)
    assert isinstance(message, AssistantMessage)
    assert message.stop == StopInfo(StopReason.MAX_OUTPUT, raw="length")


def test_stop_dict_with_an_unknown_reason_is_other_with_the_value_kept() -> None:
    assert StopInfo.from_dict({"reason": "overthinking"}) == StopInfo(
        StopReason.OTHER, raw="overthinking"
    )
    kept = StopInfo.from_dict({"reason": "overthinking", "raw": "OVERTHINK"})
    assert kept.reason is StopReason.OTHER and kept.raw == "OVERTHINK"
    assert kept.detail == {"stored_reason": "overthinking"}


def test_stop_dict_that_is_not_a_stop_is_a_value_error() -> None:
    for bad in ({}, {"reason": 3}, {"reason": "refusal", "raw": 5}, {"reason": "x", "detail": []}):
        with pytest.raises(ValueError, match="stored stop"):
            StopInfo.from_dict(bad)


def test_stored_message_stop_is_the_to_dict_form() -> None:
    stop = StopInfo(StopReason.PAUSED, raw="pause_turn", detail={"calls": ("a", "b")})
    stored = message_to_dict(AssistantMessage("x", stop=stop))
    assert stored["stop"] == {**stop.to_dict(), "detail": {"calls": ["a", "b"]}}
    assert list(stored)[:4] == ["role", "text", "tool_calls", "stop"]
