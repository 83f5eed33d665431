"""Deep JSON from a provider (issue 12, "untrusted structure"): time, memory and the
longest event-loop stall of one agent run, against a normal tool-call run measured
in the same way in the same invocation.

Each case runs in its own process (so peak RSS is its own): an agent on a
ReplayServer (real socket), a SQLite session store in a temporary folder, a
heartbeat coroutine every 10 ms. Prints one line per case and the ratios to the
baseline. A script, not a test::

    PYTHONPATH=src python bench/hostile_structure.py
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = ["baseline", "openai_deep_json_event", "anthropic_deep_tool_input"]
ROOT = Path(__file__).resolve().parents[1]


def child(case: str) -> dict[str, float | str]:
    import anyio

    sys.path.insert(0, str(ROOT / "tests"))
    from deep_json import anthropic_deep_tool_input, openai_deep_json_event
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
        last = time.perf_counter()
        while True:
            await anyio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async def main() -> tuple[float, str]:
        with ReplayServer(replies) as server, tempfile.TemporaryDirectory() as folder:
            agent = await create_agent(
                Model(provider, "m", base_url=server.url, api_key="k"), tools=[archive]
            )
            async with anyio.create_task_group() as group:
                group.start_soon(heartbeat)
                started = time.perf_counter()
                async with AgentClient(agent, Path(folder) / "s.sqlite3", session_id="s") as client:
                    final = await client.run("go")
                    stored = len(await client.messages())
                elapsed = time.perf_counter() - started
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


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2])))
        return
    rows = []
    for case in CASES:
        out = subprocess.run(
            [sys.executable, __file__, "--child", case], capture_output=True, text=True, check=True
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = rows[0]
    for row in rows:
        print(
            f"{row['case']:28} {row['ms']:8.1f} ms ({row['ms'] / base['ms']:.2f}x)"
            f"  peak +{row['peak_mb_above_start']:6.1f} MB  max stall {row['max_stall_ms']:6.1f} ms"
            f"  {row['outcome']}"
        )


if __name__ == "__main__":
    main()
