"""``zett serve`` and a typed result: ``data-output`` parts while the answer streams
(partial, one id, so a page keeps one part and replaces it) and the final value,
and the same final part when the session is restored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip("starlette")

from zett_agent import AgentClient, create_agent
from zett_agent.serve import UIMessageStream, ui_messages
from zett_agent.testing import ScriptedModel, reply

OK = '{"name": "Paris", "population": 2102650}'


class City(BaseModel):
    name: str
    population: int


async def test_partial_and_final_outputs_are_data_output_parts(tmp_path: Path) -> None:
    agent = await create_agent(ScriptedModel(reply(OK, chunk=5)), output_type=City)
    client = AgentClient(agent, tmp_path / "s.sqlite3", session_id="s")
    encoder = UIMessageStream("a1")
    chunks: list[dict[str, Any]] = [*encoder.start()]
    async for event in client.stream("The capital of France?"):
        chunks += encoder.feed(event)
    chunks += encoder.finish()
    outputs = [c for c in chunks if c["type"] == "data-output"]
    assert len(outputs) >= 2 and {c["id"] for c in outputs} == {"output"}
    assert all(c["data"]["partial"] for c in outputs[:-1])
    assert outputs[-1]["data"] == {
        "value": {"name": "Paris", "population": 2102650},
        "partial": False,
    }
    assert chunks[-1]["type"] == "finish" and chunks[-1]["finishReason"] == "stop"
    restored = ui_messages(await client.store.rows("s"), agent.continue_prompt)
    parts = [p for p in restored[-1]["parts"] if p["type"] == "data-output"]
    assert parts == [outputs[-1]]
    await client.aclose()
