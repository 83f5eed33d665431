"""Many agents built from "provider:model" strings share one TLS context; each model
keeps its own bounded pool, closed by ``Agent.aclose()``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zett_agent import create_agent
from zett_agent.model import Model, ModelTransport, shared_ssl_context
from zett_agent.testing import ReplayServer, Reply

SRC = str(Path(__file__).parent.parent / "src")


def _pool(model: Model) -> ModelTransport:
    transport = model._client._transport
    assert isinstance(transport, ModelTransport)  # the model's own pool (zett_agent.model._pool)
    return transport


async def test_models_share_one_tls_context_and_own_their_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-000000")
    a = await create_agent("openai:gpt-x")
    b = await create_agent("anthropic:claude-x", max_connections=3)
    pa, pb = _pool(a.model), _pool(b.model)  # type: ignore[arg-type]
    assert pa is not pb
    assert pa._context() is pb._context() is shared_ssl_context()  # made by the first request
    assert pb.limits.max_connections == 3
    await a.aclose()
    assert a.model._client.is_closed and not b.model._client.is_closed  # type: ignore[attr-defined]
    body = {"id": "m", "type": "message", "role": "assistant", "model": "c",
            "content": [{"type": "text", "text": "still here"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 2}}  # fmt: skip
    with ReplayServer([Reply.json(body)]) as server:
        c = await create_agent("anthropic:claude-x", base_url=server.url, stream=False)
        assert (await c.run("hi")).text == "still here"  # the shared context still serves
        await c.aclose()
    await b.aclose()


SCRIPT = """
import asyncio, os, sys
os.environ["OPENAI_API_KEY"] = "sk-test-000000"
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
async def main():
    from zett_agent import create_agent
    await (await create_agent("openai:gpt-x")).aclose()  # imports, the shared context
    base = rss()
    agents = [await create_agent("openai:gpt-x") for _ in range(500)]
    grown = rss() - base
    for agent in agents:
        await agent.aclose()
    print(grown)
asyncio.run(main())
"""


def test_500_agents_from_strings_cost_little_memory() -> None:
    """Each agent used to load its own CA bundle into its own TLS context (~0.8 MB):
    500 agents grew RSS by ~400 MB. Now they share one."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": SRC},
        check=True,
    )
    grown = float(done.stdout.strip())
    assert grown < 40, grown
