"""The local model: tokens per second through zett vs the llama.cpp server queried
directly (issue "Measured"). A script, not a test.

    .venv/bin/python bench/local_model.py [--tokens 128] [--repeats 3]

One llama.cpp server is started (``LocalLlamaModel``, SmolLM2-135M) and reused by
every client, so start-up is not counted. Each client streams the same request
(temperature 0, no tools) and counts content chunks: the server streams one token
per chunk. Figures are the best of ``--repeats`` runs (interference only adds time):

* direct   — httpx + httpx-sse + json.loads against /v1/chat/completions
* model    — zett ``Model.stream()`` into a ModelResponse with its StopInfo
* agent    — zett ``agent.stream()``, every AgentEvent consumed
* zett run — the ``zett run --json --tools none`` command as a subprocess, pointed
  at the same server with ZETT_LLAMACPP_BASE_URL (includes Python start-up)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable

import anyio
import httpx
from httpx_sse import aconnect_sse

from zett_agent import AgentEventType, AgentRunConfig, Model, UserMessage, create_agent
from zett_agent._exchange import ModelRequest, TextDelta
from zett_agent.model import LocalLlamaModel

PROMPT = "Write a long story about a lighthouse keeper."


async def direct(base: str, tokens: int) -> int:
    body = {
        "model": "smollm2",
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": tokens,
        "temperature": 0,
        "stream": True,
    }
    count = 0
    async with (
        httpx.AsyncClient(timeout=120) as client,
        aconnect_sse(client, "POST", f"{base}/chat/completions", json=body) as source,
    ):
        async for event in source.aiter_sse():
            if event.data.strip() == "[DONE]":
                break
            delta = json.loads(event.data)["choices"][0]["delta"]
            count += bool(delta.get("content"))
    return count


async def model_layer(base: str, tokens: int) -> int:
    model = Model("llamacpp", "smollm2", base_url=base)
    request = ModelRequest("smollm2", [UserMessage(PROMPT)], max_tokens=tokens, temperature=0)
    count = 0
    async for item in model.stream(request):
        count += isinstance(item, TextDelta)
    await model.aclose()
    return count


async def agent_run(base: str, tokens: int) -> int:
    config = AgentRunConfig("bench", max_tokens=tokens, temperature=0)
    agent = await create_agent(Model("llamacpp", "smollm2", base_url=base), config)
    count = 0
    async for event in agent.stream(PROMPT):
        count += event.type is AgentEventType.TEXT_DELTA
    await agent.aclose()
    return count


async def zett_run(base: str, tokens: int) -> int:
    command = [sys.executable, "-m", "zett_agent.cli", "run", "--json", "--tools", "none"]
    command += ["--max-tokens", str(tokens), PROMPT]
    env = {**os.environ, "ZETT_LLAMACPP_BASE_URL": base}
    done = await anyio.run_process(command, env=env, check=False)
    records = [json.loads(line) for line in done.stdout.decode().splitlines() if line.strip()]
    return sum(r["type"] == "text_delta" for r in records)


async def best(
    run: Callable[[str, int], Awaitable[int]], base: str, tokens: int, repeats: int
) -> tuple[float, int]:
    times, count = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        count = await run(base, tokens)
        times.append(time.perf_counter() - start)
    return min(times), count


async def main(tokens: int, repeats: int) -> None:
    server = LocalLlamaModel("smollm2")
    await server.ensure_ready()
    base = server.base_url
    try:
        await direct(base, 8)  # warm the model
        rows = {}
        for name, run in [
            ("direct", direct),
            ("model", model_layer),
            ("agent", agent_run),
            ("zett run", zett_run),
        ]:
            rows[name] = await best(run, base, tokens, repeats)
    finally:
        await server.aclose()
    floor = rows["direct"][1] / rows["direct"][0]
    print(f"local model: SmolLM2-135M, {tokens} tokens, best of {repeats}")
    print(f"  {'client':10} {'seconds':>8} {'tokens':>7} {'tokens/s':>9} {'vs direct':>10}")
    for name, (seconds, count) in rows.items():
        rate = count / seconds if seconds else 0.0
        print(f"  {name:10} {seconds:8.2f} {count:7d} {rate:9.1f} {rate / floor:10.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    anyio.run(main, options.tokens, options.repeats)
