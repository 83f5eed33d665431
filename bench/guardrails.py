"""What an input guardrail adds to a run's latency (guardrail 1 s, model 1 s).

    python bench/guardrails.py [--seconds 1.0] [--rounds 5] [--smoke]

The model is a real socket (:class:`zett_agent.testing.ReplayServer`) whose answer
takes ``--seconds`` (five SSE chunks, a fifth of it apart: OpenAI Chat Completions,
a ``write_note`` call and then, after its result, a text answer); the guardrail
sleeps ``--seconds`` and passes. Four variants, alternating in every round, each
timed in this process with ``time.perf_counter`` from ``agent.run`` to its end and
to the first TOOL_CALL_STARTED:

* ``no guardrail``: the baseline;
* ``guardrail``: the input guardrail beside the first model call (the default);
* ``guardrail before the model``: awaited before the call (what a durable run
  does, ``Agent.guardrails_before_model``), the sum of both latencies;
* ``tripwire``: the guardrail trips after ``--seconds``: the run ends, no tool.

A figure is the median over the rounds; the ratios are to ``no guardrail`` of the
same round. The target: ``guardrail`` / ``no guardrail`` <= 1.1 for the first tool
call (the model's answer and the guardrail overlap).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from zett_agent import Agent, AgentEventType, AgentRunConfig, Model, Tripwire  # noqa: E402
from zett_agent.testing import RecordedRequest, ReplayServer, Reply  # noqa: E402

VARIANTS = ("no guardrail", "guardrail", "guardrail before the model", "tripwire")


def write_note(text: str) -> str:
    """Write a note (instant).

    Args:
        text: the note.
    """
    return "noted"


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    body = {
        "id": "cc-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def _answer(seconds: float, with_call: bool) -> Reply:
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    chunks = [_chunk({"role": "assistant", "content": "Writing"}), _chunk({"content": " it."})]
    if with_call:
        call = {"name": "write_note", "arguments": '{"text": "x"}'}
        chunks.append(
            _chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": call}]})
        )
    else:
        chunks.append(_chunk({"content": " Done."}))
    chunks.append(_chunk({}, "tool_calls" if with_call else "stop", usage=usage))
    chunks.append(b"data: [DONE]\n\n")
    # five chunks, four gaps: the answer takes `seconds` from the first byte
    return Reply(chunks, content_type="text/event-stream", delay=seconds / 4)


async def one_run(url: str, variant: str, seconds: float) -> tuple[float, float | None]:
    async def slow(message: Any) -> Tripwire | None:
        await asyncio.sleep(seconds)
        return Tripwire("no") if variant == "tripwire" else None

    guardrails = [] if variant == "no guardrail" else [slow]
    model = Model("openai", "m", base_url=url, api_key="k", max_retries=0)
    config = AgentRunConfig("bench", telemetry=False, input_guardrails=guardrails)
    agent = Agent(model, config, [write_note])
    agent.guardrails_before_model = variant == "guardrail before the model"
    start = time.perf_counter()
    first_tool: float | None = None
    async for event in agent.stream("note x"):
        if event.type is AgentEventType.TOOL_CALL_STARTED and first_tool is None:
            first_tool = time.perf_counter() - start
    total = time.perf_counter() - start
    await agent.aclose()
    return total, first_tool


def _route(seconds: float) -> Any:
    def route(request: RecordedRequest) -> Reply:
        answered = any(m.get("role") == "tool" for m in request.json["messages"])
        return _answer(seconds, with_call=not answered)

    return route


async def measure(seconds: float, rounds: int) -> dict[str, dict[str, float | None]]:
    totals: dict[str, list[float]] = {v: [] for v in VARIANTS}
    tools: dict[str, list[float]] = {v: [] for v in VARIANTS}
    ratios: dict[str, list[float]] = {v: [] for v in VARIANTS}
    tool_ratios: dict[str, list[float]] = {v: [] for v in VARIANTS}
    with ReplayServer(route=_route(seconds)) as server:
        await one_run(server.url, "no guardrail", seconds / 10)  # warm: imports, pool
        for n in range(rounds):
            order = VARIANTS[n % len(VARIANTS) :] + VARIANTS[: n % len(VARIANTS)]
            got = {v: await one_run(server.url, v, seconds) for v in order}
            base_total, base_tool = got["no guardrail"]
            for variant, (total, tool) in got.items():
                totals[variant].append(total)
                ratios[variant].append(total / base_total)
                if tool is not None and base_tool is not None:
                    tools[variant].append(tool)
                    tool_ratios[variant].append(tool / base_tool)

    def median(values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    return {
        v: {
            "total_s": median(totals[v]),
            "total_ratio": median(ratios[v]),
            "first_tool_s": median(tools[v]),
            "first_tool_ratio": median(tool_ratios[v]),
        }
        for v in VARIANTS
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="0.1 s, 1 round (CI)")
    args = parser.parse_args()
    seconds, rounds = (0.1, 1) if args.smoke else (args.seconds, args.rounds)
    figures = asyncio.run(measure(seconds, rounds))
    print(f"guardrail {seconds:g} s, model {seconds:g} s; medians of {rounds} rounds")
    print(f"{'variant':<28} {'run s':>7} {'ratio':>6} {'1st tool s':>11} {'ratio':>6}")

    def shown(value: float | None, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    for variant, f in figures.items():
        print(
            f"{variant:<28} {shown(f['total_s'], '7.3f')} {shown(f['total_ratio'], '6.2f')} "
            f"{shown(f['first_tool_s'], '11.3f')} {shown(f['first_tool_ratio'], '6.2f')}"
        )


if __name__ == "__main__":
    main()
