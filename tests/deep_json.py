"""Hostile bodies with JSON nested deeper than Python can parse, written here so the
tests do not depend on ``../shared/cases`` (the kinds are those of
``hostile/make.py``: ``openai_deep_json_event.sse`` and ``anthropic_deep_tool_input.sse``).
:func:`measure` runs one case through an agent (``python tests/deep_json.py CASE``, in
a fresh process, for its peak memory); ``bench/hostile_structure.py`` prints the figures.
"""

from __future__ import annotations

import json
from typing import Any

DEPTH = 10_000  # far past Python's recursion limit (1,000)


def nested(depth: int) -> str:
    """``[[[...]]]``: ``depth`` arrays inside each other, as JSON text."""
    return "[" * depth + "]" * depth


def openai_deep_json_event(depth: int = DEPTH) -> bytes:
    """A Chat Completions stream whose one content chunk also carries an ``extra``
    field nested ``depth`` levels deep, then ``[DONE]``."""
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}],
    }
    line = json.dumps(chunk)[:-1] + ', "extra": ' + nested(depth) + "}"
    return f"data: {line}\n\ndata: [DONE]\n\n".encode()


def _sse(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {data if isinstance(data, str) else json.dumps(data)}\n\n"


def anthropic_deep_tool_input(depth: int = DEPTH, tool: str = "archive") -> bytes:
    """A Messages stream: one ``tool_use`` block of ``tool`` whose input JSON is
    ``{"items": <depth levels>}``, streamed as one ``input_json_delta``, then
    ``stop_reason: tool_use``."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_d",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 5, "output_tokens": 1},
        },
    }
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_d", "name": tool, "input": {}},
    }
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": '{"items": ' + nested(depth) + "}"},
    }
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": 30},
    }
    return "".join(
        [
            _sse("message_start", start),
            _sse("content_block_start", block),
            _sse("content_block_delta", delta),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse("message_delta", end),
            _sse("message_stop", {"type": "message_stop"}),
        ]
    ).encode()


def measure(case: str) -> dict[str, float | str]:
    """One agent run of ``case`` (``"baseline"``, ``"openai_deep_json_event"``,
    ``"anthropic_deep_tool_input"``) on a ReplayServer into a SQLite session, with a
    heartbeat every 10 ms: milliseconds of the loop thread's CPU time, peak RSS growth
    (MB; meaningful in a fresh process), the longest heartbeat gap (ms of the loop
    thread's CPU time between two turns: what a blocked loop computes, which other
    processes on a loaded machine cannot stretch) and the outcome."""
    import resource
    import tempfile
    import time
    from pathlib import Path

    import anyio

    from zett_agent import AgentClient, Model, create_agent
    from zett_agent.testing import ReplayServer, Reply

    def archive(items: list[object]) -> str:
        """Archive items."""
        return "archived"

    done = Reply.sse(
        [
            ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message",
             "role": "assistant", "model": "m", "content": [], "stop_reason": None,
             "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
             "usage": {"output_tokens": 1}}),
            ("message_stop", {"type": "message_stop"}),
        ]
    )  # fmt: skip
    sse = "text/event-stream"
    if case == "openai_deep_json_event":
        provider, replies = "openai", [Reply([openai_deep_json_event()], content_type=sse)]
    elif case == "anthropic_deep_tool_input":
        body = anthropic_deep_tool_input()
        provider, replies = "anthropic", [Reply([body], content_type=sse), done]
    else:  # the same answer with a 10-level input
        body = anthropic_deep_tool_input(10)
        provider, replies = "anthropic", [Reply([body], content_type=sse), done]

    gaps: list[float] = []

    async def heartbeat() -> None:
        last = time.thread_time()
        while True:
            await anyio.sleep(0.01)
            now = time.thread_time()
            gaps.append(now - last)
            last = now

    async def main() -> tuple[float, str]:
        with ReplayServer(replies) as server, tempfile.TemporaryDirectory() as folder:
            agent = await create_agent(
                Model(provider, "m", base_url=server.url, api_key="k"), tools=[archive]
            )
            async with anyio.create_task_group() as group:
                group.start_soon(heartbeat)
                started = time.thread_time()
                async with AgentClient(agent, Path(folder) / "s.sqlite3", session_id="s") as client:
                    final = await client.run("go")
                    stored = len(await client.messages())
                elapsed = time.thread_time() - started
                group.cancel_scope.cancel()
            await agent.aclose()
        stop = final.stop.reason.value if final.stop else "none"
        return elapsed, f"stop={stop} stored={stored}"

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    elapsed, outcome = anyio.run(main)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "case": case,
        "ms": elapsed * 1000,
        "peak_mb_above_start": (after - before) / 1024,
        "max_stall_ms": max(gaps) * 1000 if gaps else 0.0,
        "outcome": outcome,
    }


if __name__ == "__main__":  # python tests/deep_json.py CASE: measure it in this process
    import sys

    print(json.dumps(measure(sys.argv[1])))
