"""Time to first visible token on the local model with tools offered (issue 16,
item 4). A script, not a test.

    .venv/bin/python bench/local_first_token.py [--tokens 96] [--repeats 3]

One llama.cpp server is started (``LocalLlamaModel``, SmolLM2-135M) and reused, so
start-up is not counted. Every request offers the demo tools (``get_weather``,
``get_time``), as ``zett run`` does by default. Two ways, measured in the same run:

* before -- the request sent non-streaming (what zett did before for any request
  offering tools): the first visible token is the whole answer, when it arrives.
* after  -- the request streamed (zett's default now): the first visible token is
  the first text delta. When the model chose a tool the server sends an empty
  stream and zett asks again non-streaming (``zett_agent.model._local``).

Two cases:

* text -- ``zett run "Tell me about Paris"``: no ``tool_choice`` is sent, which
  llama-cpp-python's chat format reads as "show the model no tools", so the
  model answers with text.
* tool -- the same with ``tool_choice="auto"`` (``--tool-choice auto``): SmolLM2
  chooses ``get_time``; the figure is the time to the tool call (the streamed
  attempt is wasted, so "after" is slower here).

Figures are the best of ``--repeats`` (interference only adds time).
"""

from __future__ import annotations

import argparse
import time

import anyio

from zett_agent import UserMessage
from zett_agent._exchange import ModelRequest, ModelResponse, TextDelta
from zett_agent.demo_tools import DEMO_TOOLS
from zett_agent.model import LocalLlamaModel
from zett_agent.tools import as_tool

PROMPT = "Tell me about Paris"


async def first_and_total(model: LocalLlamaModel, request: ModelRequest) -> tuple[float, float]:
    """Seconds to the first visible output (text, or the tool call) and to the
    final response."""
    start = time.perf_counter()
    first: float | None = None
    async for item in model.stream(request):
        if first is None and isinstance(item, TextDelta) and item.text:
            first = time.perf_counter() - start
        if isinstance(item, ModelResponse):
            total = time.perf_counter() - start
            if not item.text and not item.tool_calls:
                raise SystemExit(f"an empty answer: {item.stop_info}")
            return (first if first is not None else total), total
    raise SystemExit("no response")


def request_for(tokens: int, tool_choice: str | None) -> ModelRequest:
    return ModelRequest(
        model="smollm2",
        messages=[UserMessage(PROMPT)],
        tools=[as_tool(tool).spec for tool in DEMO_TOOLS],
        tool_choice=tool_choice,
        max_tokens=tokens,
    )


async def main(tokens: int, repeats: int) -> None:
    cases = {"text": request_for(tokens, None), "tool": request_for(tokens, "auto")}
    results: dict[str, dict[str, list[tuple[float, float]]]] = {}
    server = LocalLlamaModel("smollm2")
    try:
        await server.ensure_ready()
        before_model = LocalLlamaModel("smollm2", base_url=server.base_url, stream=False)
        after_model = LocalLlamaModel("smollm2", base_url=server.base_url)
        for name, request in cases.items():
            await first_and_total(after_model, request)  # warm-up (prompt cache)
            runs: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
            for _ in range(repeats):
                runs["before"].append(await first_and_total(before_model, request))
                runs["after"].append(await first_and_total(after_model, request))
            results[name] = runs
        await before_model.aclose()
        await after_model.aclose()
    finally:
        await server.aclose()
    print(f"local model (SmolLM2-135M), demo tools offered, max_tokens={tokens}, best of {repeats}")
    print(f"{'case':6} {'':7} {'first visible':>14} {'whole answer':>13}")
    for name, runs in results.items():
        for way in ("before", "after"):
            first = min(f for f, _ in runs[way])
            total = min(t for _, t in runs[way])
            print(f"{name:6} {way:7} {first * 1000:>11.0f} ms {total * 1000:>10.0f} ms")
        ratio = min(f for f, _ in runs["before"]) / min(f for f, _ in runs["after"])
        print(f"{name:6} first visible output before/after: {ratio:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    anyio.run(main, args.tokens, args.repeats)
