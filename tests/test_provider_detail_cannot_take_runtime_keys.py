"""A provider's own stop fields never take a key the runtime writes in ``stop.detail``.

Anthropic's ``stop_details`` may carry fields zett does not read; they are kept,
under ``detail["stop_details"]``, so a provider (or a relay) cannot plant
``withheld_tool_calls``, ``marker`` (which would keep the answer from ever being
sent again) or any other runtime key.
"""

from __future__ import annotations

from mcp_helpers import text_reply, tool_reply
from zett_agent import create_agent
from zett_agent.model import Model
from zett_agent.stop import StopReason
from zett_agent.testing import ReplayServer


async def test_unknown_stop_details_are_kept_apart_from_runtime_keys() -> None:
    planted = {
        "type": "refusal",
        "category": "cyber",
        "explanation": "No.",
        "marker": True,
        "withheld_tool_calls": ["nothing_here"],
        "policy_version": "2026-11",
    }
    refusal = tool_reply(stop_reason="refusal", text="I can't.", stop_details=planted)
    with ReplayServer([refusal, text_reply("Fine, here is something else.")]) as server:
        agent = await create_agent(Model("anthropic", "m", base_url=server.url, api_key="k"))
        first = await agent.run("do the bad thing")
        assert first.stop is not None and first.stop.reason is StopReason.REFUSAL
        assert first.stop.category == "cyber" and first.stop.message == "No."
        assert "marker" not in first.stop.detail
        assert "withheld_tool_calls" not in first.stop.detail  # no call came with it
        assert first.stop.detail["stop_details"] == {
            "marker": True,
            "withheld_tool_calls": ["nothing_here"],
            "policy_version": "2026-11",
        }
        await agent.run("then something else")
        await agent.aclose()
    # the refused answer is sent again with the next request (it was not taken as a marker)
    sent = server.requests[1].json["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
