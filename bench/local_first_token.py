"""Time to first visible token on the local model with tools offered (issue 16,
item 4). A script, not a test.

    .venv/bin/python bench/local_first_token.py [--tokens 96] [--repeats 3]

One llama.cpp server is started (``LocalLlamaModel``, SmolLM2-135M) and reused, so
start-up is not counted. Every request offers the demo tools (``get_weather``,
``get_time``) with automatic tool choice, as ``zett run`` does by default, and asks
for text the model answers without a tool. Two ways, measured in the same run:

* before — the request sent non-streaming (what zett did before: llama.cpp's
  server cannot stream once the model has chosen a tool): the first visible
  token is the whole answer, when it arrives.
* after  — the request streamed (zett's default now): the first visible token is
  the first text delta. A tool choice would be sent again whole (see
  ``zett_agent.local``); this prompt is answered with text.

Also the time to the whole answer for both. Figures are the best of ``--repeats``
(interference only adds time); the ratio is before / after.
"""

from __future__ import annotations

import argparse
import time

import anyio

from zett_agent.demo_tools import DEMO_TOOLS
from zett_agent.local import LocalLlamaModel
from zett_agent.messages import UserMessage
from zett_agent.protocols.base import ModelRequest, ModelResponse, TextDelta
from zett_agent.tools import as_tool

PROMPT = "Write a short poem about the sea."


async def first_and_total(model: LocalLlamaModel, request: ModelRequest) -> tuple[float, float]:
    """Seconds to the first visible text and to the final response."""
    start = time.perf_counter()
    first: float | None = None
    async for item in model.stream(request):
        if first is None and isinstance(item, TextDelta) and item.text:
            first = time.perf_counter() - start
        if isinstance(item, ModelResponse):
            total = time.perf_counter() - start
            if not item.text or item.tool_calls:
                raise SystemExit(f"the model did not answer with text: {item.stop_info}")
            return (first if first is not None else total), total
    raise SystemExit("no response")


async def main(tokens: int, repeats: int) -> None:
    tools = [as_tool(tool).spec for tool in DEMO_TOOLS]
    request = ModelRequest(
        model="smollm2",
        messages=[UserMessage(PROMPT)],
        tools=tools,
        tool_choice="auto",
        max_tokens=tokens,
        temperature=0.0,
    )
    server = LocalLlamaModel("smollm2")
    try:
        await server.ensure_ready()
        before_model = LocalLlamaModel("smollm2", base_url=server.base_url, stream=False)
        after_model = LocalLlamaModel("smollm2", base_url=server.base_url)
        await first_and_total(after_model, request)  # warm-up (prompt cache, page cache)
        before: list[tuple[float, float]] = []
        after: list[tuple[float, float]] = []
        for _ in range(repeats):
            before.append(await first_and_total(before_model, request))
            after.append(await first_and_total(after_model, request))
        await before_model.aclose()
        await after_model.aclose()
    finally:
        await server.aclose()
    b_first, b_total = min(f for f, _ in before), min(t for _, t in before)
    a_first, a_total = min(f for f, _ in after), min(t for _, t in after)
    print(f"local model, tools offered (auto), max_tokens={tokens}, best of {repeats}")
    print(f"{'':8} {'first visible token':>20} {'whole answer':>14}")
    print(f"{'before':8} {b_first * 1000:>17.0f} ms {b_total * 1000:>11.0f} ms   (non-streamed)")
    print(f"{'after':8} {a_first * 1000:>17.0f} ms {a_total * 1000:>11.0f} ms   (streamed)")
    print(f"first visible token: {b_first / a_first:.1f}x sooner")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    anyio.run(main, args.tokens, args.repeats)
