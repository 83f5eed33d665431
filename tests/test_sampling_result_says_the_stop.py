"""A sampling result (``sampling/createMessage``) says why zett's model stopped for
every ending, normal ones included: ``stopReason`` comes from the answer's stop
info (``stopSequence`` when a stop sequence ended it) and ``_meta["zett-agent/stop"]``
keeps the provider's raw value for ``endTurn`` and ``stopSequence`` too."""

from __future__ import annotations

import pytest

from mcp_helpers import need_mcp
from zett_agent import StopInfo, StopReason
from zett_agent.testing import ScriptedModel, reply

pytestmark = [pytest.mark.mcp, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        (StopInfo(StopReason.END_TURN, raw="stop_sequence"), "stopSequence"),
        (
            StopInfo(StopReason.END_TURN, raw="stop", detail={"stop_sequence": "##"}),
            "stopSequence",
        ),
        (StopInfo(StopReason.END_TURN, raw="end_turn"), "endTurn"),
    ],
)
async def test_a_normal_ending_keeps_its_stop_info(stop: StopInfo, expected: str) -> None:
    need_mcp()
    import mcp_types

    from zett_agent.mcp._sampling import STOP_META, sample

    params = mcp_types.CreateMessageRequestParams(
        messages=[
            mcp_types.SamplingMessage(
                role="user", content=mcp_types.TextContent(type="text", text="count")
            )
        ],
        max_tokens=50,
        stop_sequences=["##"],
    )
    result = await sample(
        ScriptedModel(reply("1 2 3", stop=stop)),
        params,
        max_tokens=99,
        protocol_version=None,
    )
    assert result.stop_reason == expected
    assert result.meta is not None
    assert result.meta[STOP_META] == {"reason": "end_turn", "raw": stop.raw, "category": None}
