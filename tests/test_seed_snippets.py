"""Code written from the seed guide (001) and API page (002) runs unchanged.

Each test holds a snippet of the seed as it is written there (only the model is
the offline ScriptedModel, and prints become assertions)."""

from __future__ import annotations

import pytest

from zett_agent import (
    AgentClient,
    AgentEventDispatcher,
    AgentEventType,
    AgentRunConfig,
    AgentStopError,
    StopInfo,
    StopReason,
    create_agent,
)
from zett_agent.extensions import RefusalReplay, RefusalReplayExtension
from zett_agent.testing import ScriptedModel, reply

CYBER = StopInfo(StopReason.REFUSAL, "refusal", "cyber", "This request was declined.")


async def test_check_how_it_ended() -> None:
    agent = await create_agent(ScriptedModel(reply("", stop=CYBER)))
    seen = []
    # --- seed 001, "Check how it ended"
    message = await agent.run("Summarize this repository")

    if message.stop is not None:
        # Not a normal ending: the text may be missing, partial, or a refusal.
        seen.append((message.stop.reason, message.stop.category, message.stop.message))
    # ---
    assert seen == [(StopReason.REFUSAL, "cyber", "This request was declined.")]


async def test_raise_for_stop_as_written() -> None:
    agent = await create_agent(ScriptedModel(reply("", stop=CYBER)))
    with pytest.raises(AgentStopError) as caught:
        message = (await agent.run("...")).raise_for_stop()  # raises AgentStopError  # noqa: F841
    assert caught.value.stop == CYBER


async def test_hear_about_it_as_it_happens_on_a_client() -> None:
    notices: list[str] = []

    def show_notice(line: str) -> None:
        notices.append(line)

    client = AgentClient(await create_agent(ScriptedModel(reply("", stop=CYBER))))
    # --- seed 001, "Hear about it as it happens"
    async for event in client.stream("Summarize this repository"):
        if event.type == AgentEventType.MODEL_STOPPED:
            show_notice(event.stop.describe())  # e.g. "refusal (cyber): ..."
    # ---
    assert notices == ["refusal (cyber): This request was declined."]


async def test_dispatcher_and_refusal_replay_extension() -> None:
    heard: list[str] = []

    class Notices(AgentEventDispatcher):
        def on_model_stopped_event(self, event: object) -> None:
            heard.append(event.stop.describe())  # type: ignore[attr-defined]

    model = ScriptedModel(reply("", stop=CYBER), reply("fine"))
    # --- seed 001, "Choose whether the model reads a refusal again"
    agent = await create_agent(
        model, extensions=[RefusalReplayExtension(replay=RefusalReplay.DROP)]
    )
    # ---
    await agent.run("first", dispatcher=Notices())
    await agent.run("second")
    assert heard == ["refusal (cyber): This request was declined."]
    assert [type(m).__name__ for m in model.requests[1].messages] == ["UserMessage", "UserMessage"]


async def test_stop_info_api_page_example() -> None:
    agent = await create_agent(ScriptedModel(reply("", stop=CYBER)), config=AgentRunConfig("doc"))
    declined = []
    # --- seed 002, StopInfo "Examples"
    message = await agent.run("...")
    if message.stop is not None and message.stop.reason is StopReason.REFUSAL:
        declined.append(("Declined:", message.stop.category, message.stop.message))
    # ---
    assert declined == [("Declined:", "cyber", "This request was declined.")]
    assert (message.stop.ok, message.stop.refused, message.stop.truncated) == (False, True, False)
